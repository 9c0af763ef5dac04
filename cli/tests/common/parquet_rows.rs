//! Reads the Parquet tables back (the arrow reader of the `parquet` crate,
//! not qtrace's code): every row of a table as a JSON object, column name
//! to value, so tests compare them with `qtrace dump --json`.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Map, Value};

/// Every `*.parquet` file under `dir` (any depth), sorted.
pub fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(parquet_files(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The file's key-value metadata.
pub fn metadata(file: &Path) -> Vec<(String, Option<String>)> {
    let f = std::fs::File::open(file).unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    b.metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|kv| {
            kv.iter()
                .map(|k| (k.key.clone(), k.value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// One value of `array` at `i` as JSON.
fn value(array: &dyn Array, i: usize) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::UInt16 => json!(array.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => json!(array.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => json!(array.as_primitive::<UInt64Type>().value(i)),
        DataType::Int64 => json!(array.as_primitive::<Int64Type>().value(i)),
        DataType::Float64 => json!(array.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => json!(array.as_boolean().value(i)),
        DataType::Utf8 => json!(array.as_string::<i32>().value(i)),
        DataType::Binary => {
            let b = array.as_binary::<i32>().value(i);
            json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>())
        }
        DataType::Dictionary(_, _) => {
            let d = array.as_dictionary::<Int32Type>();
            let k = d.keys().value(i) as usize;
            value(d.values().as_ref(), k)
        }
        t => panic!("column type {t} not expected in qtrace's tables"),
    }
}

/// Every row of the batches as a JSON object.
pub fn rows_of(batches: &[RecordBatch]) -> Vec<Map<String, Value>> {
    let mut rows = Vec::new();
    for b in batches {
        let schema = b.schema();
        for i in 0..b.num_rows() {
            let mut row = Map::new();
            for (f, c) in schema.fields().iter().zip(b.columns()) {
                row.insert(f.name().clone(), value(c.as_ref(), i));
            }
            rows.push(row);
        }
    }
    rows
}

/// Every row of every part of `table` under `root`.
pub fn table_rows(root: &Path, table: &str) -> Vec<Map<String, Value>> {
    let mut batches = Vec::new();
    for file in parquet_files(&root.join(table)) {
        let f = std::fs::File::open(&file).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
        for b in reader {
            batches.push(b.unwrap());
        }
    }
    rows_of(&batches)
}
