//! Column buffers: rows are appended field by field, then taken as one
//! Arrow record batch per table. Strings are interned as they come (keys
//! into a dictionary that only grows), so the Parquet writer receives
//! dictionary arrays.
//!
//! This file holds what the tables share (the interner, the column buffer
//! [`Col`], the run and position columns); each table's rows and columns are
//! in a file of their own: `events.rs`, `losses.rs`, `payloads.rs`,
//! `streams.rs`, `jobs.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::{
    ArrowPrimitiveType, Float64Type, Int32Type, Int64Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, DictionaryArray, PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, BooleanBufferBuilder, NullBuffer, ScalarBuffer,
};
use arrow_schema::ArrowError;

use crate::schema::Table;
mod events;
mod jobs;
mod losses;
mod payloads;
mod streams;
#[cfg(test)]
mod tests;

pub use events::*;
pub use jobs::*;
pub use losses::*;
pub use payloads::*;
pub use streams::*;

/// A growing dictionary of strings: each distinct string gets the next key.
#[derive(Debug, Default)]
pub struct Interner {
    keys: HashMap<String, i32>,
    values: Vec<String>,
}

impl Interner {
    /// The key of `s`, added if new.
    pub fn key(&mut self, s: &str) -> i32 {
        if let Some(&k) = self.keys.get(s) {
            return k;
        }
        let k = self.values.len() as i32;
        self.values.push(s.to_string());
        self.keys.insert(s.to_string(), k);
        k
    }

    fn array(&self) -> ArrayRef {
        Arc::new(StringArray::from_iter_values(&self.values))
    }
}

/// A column of `T`, possibly with nulls (the validity is built only once a
/// null arrives).
#[derive(Debug)]
pub struct Col<T: ArrowNativeType> {
    values: Vec<T>,
    valid: Option<Vec<bool>>,
}

impl<T: ArrowNativeType> Default for Col<T> {
    fn default() -> Self {
        Col {
            values: Vec::new(),
            valid: None,
        }
    }
}

impl<T: ArrowNativeType> Col<T> {
    /// Appends a value.
    #[inline]
    pub fn push(&mut self, v: T) {
        self.values.push(v);
        if let Some(valid) = &mut self.valid {
            valid.push(true);
        }
    }

    /// Appends a value or a null.
    #[inline]
    pub fn push_opt(&mut self, v: Option<T>) {
        match v {
            Some(v) => self.push(v),
            None => {
                let n = self.values.len();
                self.valid.get_or_insert_with(|| vec![true; n]).push(false);
                self.values.push(T::default());
            }
        }
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    fn take(&mut self) -> (Vec<T>, Option<NullBuffer>) {
        // The next batch is about as long: room for it at once, not grown
        // by doubling (a copy of the rows at each step, measured as 6 % of
        // a conversion's CPU).
        let room = self.values.len();
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(room));
        let nulls = self
            .valid
            .take()
            .map(|v| NullBuffer::new(BooleanBuffer::from(v)));
        (values, nulls)
    }

    fn primitive<A>(&mut self) -> ArrayRef
    where
        A: ArrowPrimitiveType<Native = T>,
    {
        let (values, nulls) = self.take();
        Arc::new(PrimitiveArray::<A>::new(ScalarBuffer::from(values), nulls))
    }
}

impl Col<i32> {
    fn dictionary(&mut self, dict: &Interner) -> Result<ArrayRef, ArrowError> {
        let (keys, nulls) = self.take();
        dictionary(keys, nulls, dict.array())
    }
}

/// A dictionary array of `keys` (with `nulls`) into `strings`.
fn dictionary(
    keys: Vec<i32>,
    nulls: Option<NullBuffer>,
    strings: ArrayRef,
) -> Result<ArrayRef, ArrowError> {
    let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(keys), nulls);
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys, strings,
    )?))
}

/// The columns every table starts with.
#[derive(Debug, Default)]
struct Common {
    run: Col<i32>,
    host: Col<i32>,
    sender: Col<u32>,
}

/// Which run a row belongs to, as keys of the table set's string dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunKeys {
    /// Key of the run's name.
    pub run: i32,
    /// Key of its host.
    pub host: i32,
    /// Its sender id, for received streams.
    pub sender: Option<u32>,
}

impl Common {
    #[inline]
    fn push(&mut self, k: &RunKeys) {
        self.run.push(k.run);
        self.host.push(k.host);
        self.sender.push_opt(k.sender);
    }

    fn arrays(&mut self, d: &Interner) -> Result<Vec<ArrayRef>, ArrowError> {
        Ok(vec![
            self.run.dictionary(d)?,
            self.host.dictionary(d)?,
            self.sender.primitive::<UInt32Type>(),
        ])
    }
}

/// A run's keys and queue as one number (bits 0-31 the run, 32-63 the
/// host, 64 whether a sender and 65-96 it, 97 whether a queue and 98-113
/// it): the events rows' segment, compared in one go a row (the reading
/// loop caches it with the run's keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment(u128);

impl Segment {
    /// The segment of `k`'s rows written by `queue`.
    pub fn of(k: &RunKeys, queue: Option<u16>) -> Self {
        let sender = k.sender.map_or(0, |s| 1 | u128::from(s) << 1);
        let queue = queue.map_or(0, |q| 1 | u128::from(q) << 1);
        Segment(
            u128::from(k.run as u32) | u128::from(k.host as u32) << 32 | sender << 64 | queue << 97,
        )
    }

    /// Its keys and queue.
    fn keys(self) -> (RunKeys, Option<u16>) {
        let v = self.0;
        let sender = (v >> 64) as u64 & 0x1_FFFF_FFFF;
        let queue = (v >> 97) as u64 & 0x1_FFFF;
        let k = RunKeys {
            run: v as u32 as i32,
            host: (v >> 32) as u32 as i32,
            sender: (sender & 1 == 1).then_some((sender >> 1) as u32),
        };
        (k, (queue & 1 == 1).then_some((queue >> 1) as u16))
    }
}

/// The columns that stay the same over a run's rows (run, host, sender,
/// queue), held as runs of rows: one comparison a row instead of four
/// pushes, the columns filled at once when the batch is taken.
#[derive(Debug, Default)]
struct Segments {
    /// Each segment and its rows.
    runs: Vec<(Segment, usize)>,
}

impl Segments {
    #[inline]
    fn push(&mut self, s: Segment) {
        match self.runs.last_mut() {
            Some((ls, n)) if *ls == s => *n += 1,
            _ => self.runs.push((s, 1)),
        }
    }

    /// The run and host arrays (Int32 keys), the sender array and the
    /// queue array.
    fn arrays(&mut self, scratch: &mut Scratch) -> [ArrayRef; 4] {
        let segments = std::mem::take(&mut self.runs);
        let total = segments.iter().map(|s| s.1).sum();
        let mut run = room(&mut scratch.run, total);
        let mut host = room(&mut scratch.host, total);
        let mut sender = room(&mut scratch.sender, total);
        let mut queue = room(&mut scratch.queue, total);
        // Validity a segment at a time, as bits (a converted file's sender
        // is null on every row: no byte a row set then packed).
        let mut sender_valid = BooleanBufferBuilder::new(total);
        let mut queue_valid = BooleanBufferBuilder::new(total);
        for (s, n) in segments {
            let (k, q) = s.keys();
            run.resize(run.len() + n, k.run);
            host.resize(host.len() + n, k.host);
            sender.resize(sender.len() + n, k.sender.unwrap_or_default());
            sender_valid.append_n(n, k.sender.is_some());
            queue.resize(queue.len() + n, q.unwrap_or_default());
            queue_valid.append_n(n, q.is_some());
        }
        let nulls = |mut b: BooleanBufferBuilder| {
            let v = NullBuffer::new(b.finish());
            (v.null_count() > 0).then_some(v)
        };
        [
            Arc::new(PrimitiveArray::<Int32Type>::from(run)),
            Arc::new(PrimitiveArray::<Int32Type>::from(host)),
            Arc::new(PrimitiveArray::<UInt32Type>::new(
                ScalarBuffer::from(sender),
                nulls(sender_valid),
            )),
            Arc::new(PrimitiveArray::<UInt16Type>::new(
                ScalarBuffer::from(queue),
                nulls(queue_valid),
            )),
        ]
    }
}

/// Where a row is in its run and when.
#[derive(Clone, Copy, Debug)]
pub struct At {
    /// Its position among the run's rows.
    pub seq: u64,
    /// Its time, ns.
    pub time_ns: i64,
    /// Its time on the receiver's clock, ns.
    pub aligned_ns: i64,
}

#[derive(Debug, Default)]
struct Position {
    seq: Col<u64>,
    time: Col<i64>,
    aligned: Col<i64>,
}

impl Position {
    #[inline]
    fn push(&mut self, at: &At) {
        self.seq.push(at.seq);
        self.time.push(at.time_ns);
        self.aligned.push(at.aligned_ns);
    }

    fn arrays(&mut self) -> Vec<ArrayRef> {
        vec![
            self.seq.primitive::<UInt64Type>(),
            self.time.primitive::<Int64Type>(),
            self.aligned.primitive::<Int64Type>(),
        ]
    }
}
