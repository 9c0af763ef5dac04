//! Reading a store back in tests: the `parquet` crate's arrow reader (not
//! qtrace's code) over the parts the store's own `scan` finds.

pub mod datagrams;

use std::path::Path;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// Every row of `table` under the store `root`, as the batches of its
/// finished parts (temps of unfinished parts left out), in part order.
#[allow(dead_code)] // not every test reads a store back
pub fn batches(root: &Path, table: &str) -> Vec<RecordBatch> {
    qtrace_store::scan(root)
        .unwrap()
        .into_iter()
        .filter(|f| f.table.name() == table && !f.temp)
        .flat_map(|f| {
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f.path).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .map(Result::unwrap)
        })
        .collect()
}
