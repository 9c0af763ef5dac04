//! The jobs table's columns (`crate::jobs`).

#[allow(unused_imports)]
use super::*;

/// The jobs table's columns (`crate::jobs`): one row per endcycle that
/// ends a job, at the endcycle's place in its run.
#[derive(Debug, Default)]
pub struct JobCols {
    common: Common,
    at: Position,
    task: Col<u64>,
    activated: Col<i64>,
    lossy: Vec<bool>,
}

impl JobCols {
    /// Appends a row: `task`'s job activated at `activated_ns` ended at
    /// `at`; `lossy` when a hoops record came between.
    pub fn push(&mut self, k: &RunKeys, at: &At, task: u64, activated_ns: i64, lossy: bool) {
        self.common.push(k);
        self.at.push(at);
        self.task.push(task);
        self.activated.push(activated_ns);
        self.lossy.push(lossy);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.task.len()
    }

    /// Takes the rows as a batch.
    pub fn batch(&mut self, d: &Interner) -> Result<RecordBatch, ArrowError> {
        let mut a = self.common.arrays(d)?;
        a.extend(self.at.arrays());
        a.extend([
            self.task.primitive::<UInt64Type>(),
            self.activated.primitive::<Int64Type>(),
            Arc::new(BooleanArray::from(std::mem::take(&mut self.lossy))) as ArrayRef,
        ]);
        RecordBatch::try_new(Table::Jobs.schema(), a)
    }
}
