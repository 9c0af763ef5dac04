//! The streams table's columns: one row per run.

#[allow(unused_imports)]
use super::*;

/// One streams row: a run's facts (in a store, over one part).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamRow {
    /// The input file or the store's folder.
    pub path: String,
    /// The part these counts are over (0 for a conversion).
    pub part: u64,
    /// First and last row times.
    pub first_ns: Option<i64>,
    /// Last row time.
    pub last_ns: Option<i64>,
    /// Records read.
    pub records: u64,
    /// Events rows.
    pub events: u64,
    /// Sum of the losses rows' counts.
    pub lost: u64,
    /// Whether the run says it is complete.
    pub complete: bool,
    /// `complete`, `cut`, `damaged`, `unknown`, `open`, `closed`, `unclosed`.
    pub verdict: String,
    /// The queue's close record: events accepted.
    pub accepted: Option<u64>,
    /// Events dropped.
    pub dropped: Option<u64>,
    /// Events overwritten.
    pub overwritten: Option<u64>,
    /// Events delivered.
    pub delivered: Option<u64>,
    /// Received streams: datagrams accepted.
    pub datagrams: Option<u64>,
    /// Datagrams lost in transit.
    pub lost_datagrams: Option<u64>,
    /// Events the sender reported dropped.
    pub sender_dropped: Option<u64>,
    /// Events the sender never sent.
    pub unsent: Option<u64>,
    /// Events the sender logged (from its close datagram).
    pub logged: Option<u64>,
    /// Estimated sender-to-receiver clock offset.
    pub clock_offset_ns: Option<i64>,
    /// Bound on that estimate's error.
    pub clock_offset_bound_ns: Option<i64>,
    /// Estimated drift.
    pub clock_drift_ppm: Option<f64>,
    /// The Unix time (ns) of `time_ns` 0: the clock origin.
    pub origin_unix_ns: Option<i64>,
}

/// The streams table's columns.
#[derive(Debug, Default)]
pub struct StreamCols {
    common: Common,
    rows: Vec<StreamRow>,
}

impl StreamCols {
    /// Appends a row.
    pub fn push(&mut self, k: &RunKeys, r: StreamRow) {
        self.common.push(k);
        self.rows.push(r);
    }

    /// Takes the rows as a batch.
    pub fn batch(&mut self, d: &Interner) -> Result<RecordBatch, ArrowError> {
        let mut a = self.common.arrays(d)?;
        let rows = std::mem::take(&mut self.rows);
        let u = |f: fn(&StreamRow) -> Option<u64>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<PrimitiveArray<UInt64Type>>())
        };
        let i = |f: fn(&StreamRow) -> Option<i64>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<PrimitiveArray<Int64Type>>())
        };
        a.extend([
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.path))) as ArrayRef,
            u(|r| Some(r.part)),
            i(|r| r.first_ns),
            i(|r| r.last_ns),
            u(|r| Some(r.records)),
            u(|r| Some(r.events)),
            u(|r| Some(r.lost)),
            Arc::new(BooleanArray::from(
                rows.iter().map(|r| r.complete).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.verdict),
            )),
            u(|r| r.accepted),
            u(|r| r.dropped),
            u(|r| r.overwritten),
            u(|r| r.delivered),
            u(|r| r.datagrams),
            u(|r| r.lost_datagrams),
            u(|r| r.sender_dropped),
            u(|r| r.unsent),
            u(|r| r.logged),
            i(|r| r.clock_offset_ns),
            i(|r| r.clock_offset_bound_ns),
            Arc::new(
                rows.iter()
                    .map(|r| r.clock_drift_ppm)
                    .collect::<PrimitiveArray<Float64Type>>(),
            ),
            i(|r| r.origin_unix_ns),
        ]);
        RecordBatch::try_new(Table::Streams.schema(), a)
    }
}
