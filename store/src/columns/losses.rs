//! The losses table's columns.

#[allow(unused_imports)]
use super::*;

/// One losses row.
#[derive(Clone, Copy, Debug)]
pub struct LossRow {
    /// Events lost there.
    pub count: u64,
    /// Key of the kind's word.
    pub kind: i32,
    /// The queue that lost them, if known.
    pub queue: Option<u16>,
    /// Unclosed-stream marks: the events the stream accounted for.
    pub accounted: Option<u64>,
}

/// The losses table's columns.
#[derive(Debug, Default)]
pub struct LossCols {
    common: Common,
    at: Position,
    count: Col<u64>,
    kind: Col<i32>,
    queue: Col<u16>,
    accounted: Col<u64>,
}

impl LossCols {
    /// Appends a row.
    pub fn push(&mut self, k: &RunKeys, at: &At, r: &LossRow) {
        self.common.push(k);
        self.at.push(at);
        self.count.push(r.count);
        self.kind.push(r.kind);
        self.queue.push_opt(r.queue);
        self.accounted.push_opt(r.accounted);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.count.len()
    }

    /// Takes the rows as a batch.
    pub fn batch(&mut self, d: &Interner) -> Result<RecordBatch, ArrowError> {
        let mut a = self.common.arrays(d)?;
        a.extend(self.at.arrays());
        a.extend([
            self.count.primitive::<UInt64Type>(),
            self.kind.dictionary(d)?,
            self.queue.primitive::<UInt16Type>(),
            self.accounted.primitive::<UInt64Type>(),
        ]);
        RecordBatch::try_new(Table::Losses.schema(), a)
    }
}
