//! Column buffers: rows are appended field by field, then taken as one
//! Arrow record batch per table. Strings are interned as they come (keys
//! into a dictionary that only grows), so the Parquet writer receives
//! dictionary arrays.

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

/// One events row (besides the run and position).
#[derive(Clone, Copy, Debug)]
pub struct EventRow {
    /// The record's source.
    pub source: u32,
    /// Its event id.
    pub event_id: u16,
    /// Key of its class name, if known.
    pub class: Option<i32>,
    /// Key of its event name, if known.
    pub event: Option<i32>,
    /// Its arguments.
    pub args: [u64; 2],
    /// Its flags.
    pub flags: u16,
    /// The queue that wrote it, if known.
    pub queue: Option<u16>,
}

/// One events row with its class and event keys as [`EventCols`] holds
/// them (-1: none), as the reading loop caches them: no `Option` made and
/// unmade a row (its queue is in its [`Segment`]).
#[derive(Clone, Copy, Debug)]
pub struct KeyedRow {
    /// The record's source.
    pub source: u32,
    /// Its event id.
    pub event_id: u16,
    /// Keys of its class and event names, -1 for none.
    pub names: [i32; 2],
    /// Its arguments.
    pub args: [u64; 2],
    /// Its flags.
    pub flags: u16,
}

/// One events row as held until its batch is taken: its place and fields
/// (the run's are in [`Segments`]), a dictionary key of -1 for a null.
#[derive(Clone, Copy, Debug)]
struct Held {
    seq: u64,
    time_ns: i64,
    aligned_ns: i64,
    args: [u64; 2],
    source: u32,
    class: i32,
    event: i32,
    event_id: u16,
    flags: u16,
}

/// The events table's rows: held as rows (one store a row on the thread
/// that reads or receives) and turned into columns by
/// [`EventRows::batch`], on the encoder's thread.
#[derive(Debug, Default)]
pub struct EventCols {
    /// Run, host, sender and queue.
    same: Segments,
    rows: Vec<Held>,
}

impl EventCols {
    /// Appends a row.
    #[inline]
    pub fn push(&mut self, k: &RunKeys, at: &At, r: &EventRow) {
        self.push_keyed(
            Segment::of(k, r.queue),
            at,
            &KeyedRow {
                source: r.source,
                event_id: r.event_id,
                names: [r.class.unwrap_or(-1), r.event.unwrap_or(-1)],
                args: r.args,
                flags: r.flags,
            },
        );
    }

    /// Appends a row of `segment` (its run's keys and queue) whose name
    /// keys are held as they come (-1: none).
    #[inline]
    pub fn push_keyed(&mut self, segment: Segment, at: &At, r: &KeyedRow) {
        self.same.push(segment);
        let [class, event] = r.names;
        self.rows.push(Held {
            seq: at.seq,
            time_ns: at.time_ns,
            aligned_ns: at.aligned_ns,
            args: r.args,
            source: r.source,
            class,
            event,
            event_id: r.event_id,
            flags: r.flags,
        });
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Takes the rows, to be made a batch by [`EventRows::batch`]; the
    /// next rows go to `spare` (an earlier batch's buffer, empty, given
    /// back by [`EventRows::keyed`]) when there is one.
    pub fn take(&mut self, d: &Interner, spare: Option<Spare>) -> EventRows {
        // The next batch is about as long: room for it at once. A spare's
        // pages are already mapped: a fresh buffer's first writes fault
        // (a page each 4 KiB, measured as a sixth of a receiving
        // thread's time), and its free gives the pages back.
        let room = self.rows.len();
        let next = match spare {
            Some(Spare(mut v)) if v.capacity() >= room => {
                v.clear();
                v
            }
            _ => Vec::with_capacity(room),
        };
        EventRows {
            same: std::mem::take(&mut self.same),
            rows: std::mem::replace(&mut self.rows, next),
            strings: d.array(),
        }
    }

    /// Takes the rows as a batch (on this thread).
    #[cfg(test)]
    pub fn batch(&mut self, d: &Interner) -> Result<RecordBatch, ArrowError> {
        self.take(d, None).batch()
    }
}

/// An events rows buffer made columns and emptied, to be filled again
/// ([`EventCols::take`]).
#[derive(Debug)]
pub struct Spare(Vec<Held>);

/// The events columns' buffers of an encoder thread, given back after each
/// batch is written ([`Scratch::give_back`]) and filled again by the next
/// ([`EventRows::keyed`]): fresh buffers of a batch's size (3.5 MiB for
/// 64 Ki rows) were mapped and faulted in page by page at their first
/// writes, and unmapped when freed.
#[derive(Debug, Default)]
pub struct Scratch {
    run: Vec<i32>,
    host: Vec<i32>,
    sender: Vec<u32>,
    seq: Vec<u64>,
    time: Vec<i64>,
    aligned: Vec<i64>,
    source: Vec<u32>,
    event_id: Vec<u16>,
    class: Vec<i32>,
    event: Vec<i32>,
    arg0: Vec<u64>,
    arg1: Vec<u64>,
    flags: Vec<u16>,
    queue: Vec<u16>,
}

/// `v`, emptied, with room for `n` values.
fn room<T>(v: &mut Vec<T>, n: usize) -> Vec<T> {
    let mut v = std::mem::take(v);
    v.clear();
    v.reserve(n);
    v
}

/// The values buffer of `a` as a vector, when nothing else holds it (else
/// an empty one: the next batch allocates).
fn back<T: ArrowNativeType>(a: ArrayRef) -> Vec<T> {
    let data = a.to_data();
    drop(a);
    let values = data.buffers().first().cloned();
    drop(data);
    values.and_then(|b| b.into_vec().ok()).unwrap_or_default()
}

impl Scratch {
    /// Takes back the buffers of `columns`, an events batch as
    /// [`EventRows::keyed`] made it (its arrays in the table's order).
    pub fn give_back(&mut self, columns: Vec<ArrayRef>) {
        let Ok::<[ArrayRef; 14], _>(
            [run, host, sender, seq, time, aligned, source, event_id, class, event, arg0, arg1, flags, queue],
        ) = columns.try_into()
        else {
            return;
        };
        self.run = back(run);
        self.host = back(host);
        self.sender = back(sender);
        self.seq = back(seq);
        self.time = back(time);
        self.aligned = back(aligned);
        self.source = back(source);
        self.event_id = back(event_id);
        self.class = back(class);
        self.event = back(event);
        self.arg0 = back(arg0);
        self.arg1 = back(arg1);
        self.flags = back(flags);
        self.queue = back(queue);
    }
}

/// Events rows taken from [`EventCols`], with the dictionary's strings as
/// they were then.
#[derive(Debug)]
pub struct EventRows {
    same: Segments,
    rows: Vec<Held>,
    strings: ArrayRef,
}

impl EventRows {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows as a batch of columns.
    #[cfg(test)]
    pub fn batch(self) -> Result<RecordBatch, ArrowError> {
        let (columns, _, strings, _) = self.keyed(&mut Scratch::default());
        let schema = Table::Events.schema();
        let columns = columns
            .into_iter()
            .zip(schema.fields())
            .map(|(c, f)| match f.data_type() {
                arrow_schema::DataType::Dictionary(..) => {
                    let keys = c.as_any().downcast_ref::<PrimitiveArray<Int32Type>>();
                    let keys = keys.expect("keyed: name columns are Int32").clone();
                    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
                        keys,
                        strings.clone(),
                    )?) as ArrayRef)
                }
                _ => Ok(c),
            })
            .collect::<Result<Vec<_>, ArrowError>>()?;
        RecordBatch::try_new(schema, columns)
    }

    /// The rows as the events table's columns, its name columns as Int32
    /// keys (nulls keyed 0) into the strings returned, for
    /// [`crate::part::PartWriter::write_keyed`]; the number of rows; and
    /// the rows' buffer, emptied, for the next rows.
    /// Its buffers are `scratch`'s when it has them.
    pub fn keyed(mut self, scratch: &mut Scratch) -> (Vec<ArrayRef>, usize, ArrayRef, Spare) {
        let [run, host, sender, queue] = self.same.arrays(scratch);
        let mut a = vec![run, host, sender];
        let rows = &self.rows;
        let n = rows.len();
        let s = scratch;
        let mut seq = room(&mut s.seq, n);
        let mut time = room(&mut s.time, n);
        let mut aligned = room(&mut s.aligned, n);
        let mut source = room(&mut s.source, n);
        let mut event_id = room(&mut s.event_id, n);
        let mut class = room(&mut s.class, n);
        let mut event = room(&mut s.event, n);
        let mut arg0 = room(&mut s.arg0, n);
        let mut arg1 = room(&mut s.arg1, n);
        let mut flags = room(&mut s.flags, n);
        let mut nulls = false;
        // A column at a time over rows that stay in the cache (56 KiB): a
        // tight loop each, and the rows read from memory once.
        for c in rows.chunks(1024) {
            seq.extend(c.iter().map(|r| r.seq));
            time.extend(c.iter().map(|r| r.time_ns));
            aligned.extend(c.iter().map(|r| r.aligned_ns));
            source.extend(c.iter().map(|r| r.source));
            event_id.extend(c.iter().map(|r| r.event_id));
            class.extend(c.iter().map(|r| r.class.max(0)));
            event.extend(c.iter().map(|r| r.event.max(0)));
            arg0.extend(c.iter().map(|r| r.args[0]));
            arg1.extend(c.iter().map(|r| r.args[1]));
            flags.extend(c.iter().map(|r| r.flags));
            nulls |= c.iter().any(|r| (r.class | r.event) < 0);
        }
        let valid = |f: fn(&Held) -> i32| {
            let v = NullBuffer::from_iter(rows.iter().map(|r| f(r) >= 0));
            (v.null_count() > 0).then_some(v)
        };
        let (class_nulls, event_nulls) = if nulls {
            (valid(|r| r.class), valid(|r| r.event))
        } else {
            (None, None)
        };
        fn prim<T: ArrowPrimitiveType>(v: Vec<T::Native>) -> ArrayRef {
            Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), None))
        }
        a.extend([
            prim::<UInt64Type>(seq),
            prim::<Int64Type>(time),
            prim::<Int64Type>(aligned),
            prim::<UInt32Type>(source),
            prim::<UInt16Type>(event_id),
            Arc::new(PrimitiveArray::<Int32Type>::new(
                ScalarBuffer::from(class),
                class_nulls,
            )),
            Arc::new(PrimitiveArray::<Int32Type>::new(
                ScalarBuffer::from(event),
                event_nulls,
            )),
            prim::<UInt64Type>(arg0),
            prim::<UInt64Type>(arg1),
            prim::<UInt16Type>(flags),
            queue,
        ]);
        let mut rows = self.rows;
        rows.clear();
        (a, n, self.strings, Spare(rows))
    }
}

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

/// One payloads row.
#[derive(Clone, Debug)]
pub struct PayloadRow<'a> {
    /// The run's source.
    pub source: u32,
    /// The event the payload belongs to.
    pub event_id: u16,
    /// Key of the class name, if known.
    pub class: Option<i32>,
    /// Key of the event name, if known (none for name records).
    pub event: Option<i32>,
    /// Key of `str`, `bytes` or `name`.
    pub kind: i32,
    /// The event's own argument, if its begin record arrived.
    pub arg0: Option<u64>,
    /// Name records: key of what is named.
    pub name_of: Option<i32>,
    /// Name records: the number named.
    pub subject: Option<u64>,
    /// The payload as text (valid UTF-8).
    pub text: Option<&'a str>,
    /// The payload's bytes (not UTF-8).
    pub bytes: Option<&'a [u8]>,
    /// Whether the payload is whole.
    pub complete: bool,
    /// Key of `complete`, `partial` or `corrupt`.
    pub state: i32,
    /// Partial runs: records received.
    pub received: Option<u32>,
    /// Partial runs: records expected, if known.
    pub expected: Option<u32>,
    /// The length as logged, if known.
    pub logged_len: Option<u32>,
}

/// The payloads table's columns.
#[derive(Debug, Default)]
pub struct PayloadCols {
    common: Common,
    at: Position,
    source: Col<u32>,
    event_id: Col<u16>,
    class: Col<i32>,
    event: Col<i32>,
    kind: Col<i32>,
    arg0: Col<u64>,
    name_of: Col<i32>,
    subject: Col<u64>,
    text: Vec<Option<String>>,
    bytes: Vec<Option<Vec<u8>>>,
    complete: Vec<bool>,
    state: Col<i32>,
    received: Col<u32>,
    expected: Col<u32>,
    logged_len: Col<u32>,
}

impl PayloadCols {
    /// Appends a row.
    pub fn push(&mut self, k: &RunKeys, at: &At, r: &PayloadRow<'_>) {
        self.common.push(k);
        self.at.push(at);
        self.source.push(r.source);
        self.event_id.push(r.event_id);
        self.class.push_opt(r.class);
        self.event.push_opt(r.event);
        self.kind.push(r.kind);
        self.arg0.push_opt(r.arg0);
        self.name_of.push_opt(r.name_of);
        self.subject.push_opt(r.subject);
        self.text.push(r.text.map(str::to_string));
        self.bytes.push(r.bytes.map(<[u8]>::to_vec));
        self.complete.push(r.complete);
        self.state.push(r.state);
        self.received.push_opt(r.received);
        self.expected.push_opt(r.expected);
        self.logged_len.push_opt(r.logged_len);
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.complete.len()
    }

    /// Payload bytes held (to flush long texts early).
    pub fn bytes_held(&self) -> usize {
        let t: usize = self.text.iter().flatten().map(String::len).sum();
        let b: usize = self.bytes.iter().flatten().map(Vec::len).sum();
        t + b
    }

    /// Takes the rows as a batch.
    pub fn batch(&mut self, d: &Interner) -> Result<RecordBatch, ArrowError> {
        let mut a = self.common.arrays(d)?;
        a.extend(self.at.arrays());
        let text: StringArray = std::mem::take(&mut self.text).into_iter().collect();
        let bytes: BinaryArray = std::mem::take(&mut self.bytes).into_iter().collect();
        let complete = BooleanArray::from(std::mem::take(&mut self.complete));
        a.extend([
            self.source.primitive::<UInt32Type>(),
            self.event_id.primitive::<UInt16Type>(),
            self.class.dictionary(d)?,
            self.event.dictionary(d)?,
            self.kind.dictionary(d)?,
            self.arg0.primitive::<UInt64Type>(),
            self.name_of.dictionary(d)?,
            self.subject.primitive::<UInt64Type>(),
            Arc::new(text) as ArrayRef,
            Arc::new(bytes) as ArrayRef,
            Arc::new(complete) as ArrayRef,
            self.state.dictionary(d)?,
            self.received.primitive::<UInt32Type>(),
            self.expected.primitive::<UInt32Type>(),
            self.logged_len.primitive::<UInt32Type>(),
        ]);
        RecordBatch::try_new(Table::Payloads.schema(), a)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    /// A segment gives back the keys and queue it was made of, at their
    /// extremes too; any one field differing makes another segment.
    #[test]
    fn a_segment_holds_its_keys_and_queue() {
        let keys = [
            RunKeys {
                run: 0,
                host: 0,
                sender: None,
            },
            RunKeys {
                run: i32::MAX,
                host: 7,
                sender: Some(0),
            },
            RunKeys {
                run: 3,
                host: i32::MAX,
                sender: Some(u32::MAX),
            },
        ];
        let queues = [None, Some(0), Some(u16::MAX)];
        let mut seen = Vec::new();
        for k in keys {
            for q in queues {
                let s = Segment::of(&k, q);
                assert_eq!(s.keys(), (k, q));
                assert!(!seen.contains(&s));
                seen.push(s);
            }
        }
    }

    /// Rows of two runs (one with a sender and a queue, one without), a
    /// null class and event among them: each column holds each row's value
    /// in order, the nulls where they were, across the runs' segments and
    /// across two batches taken from the same columns.
    /// The encoder's buffers come back after a batch (`Scratch`) and the
    /// rows' buffer too (`Spare`); batches made in reused buffers are the
    /// same columns as in fresh ones.
    #[test]
    fn reused_buffers_make_the_same_columns() {
        let mut d = Interner::default();
        let k = RunKeys {
            run: d.key("a.qtr"),
            host: d.key("h"),
            sender: Some(1),
        };
        let name = d.key("n");
        let fill = |cols: &mut EventCols, from: u64| {
            for i in from..from + 300 {
                let at = At {
                    seq: i,
                    time_ns: i as i64 * 7,
                    aligned_ns: i as i64 * 7 + 1,
                };
                let row = EventRow {
                    source: i as u32,
                    event_id: 2,
                    class: Some(name),
                    event: (i % 3 != 0).then_some(name),
                    args: [i, i & 0xff],
                    flags: i as u16,
                    queue: Some((i / 100) as u16),
                };
                cols.push(&k, &at, &row);
            }
        };
        let mut scratch = Scratch::default();
        let mut cols = EventCols::default();
        fill(&mut cols, 0);
        let (first, _, _, spare) = cols.take(&d, None).keyed(&mut scratch);
        let rows_buffer = spare.0.as_ptr();
        scratch.give_back(first);
        assert!(scratch.seq.capacity() >= 300 && scratch.queue.capacity() >= 300);
        let seq_buffer = scratch.seq.as_ptr();
        fill(&mut cols, 1000);
        let taken = cols.take(&d, Some(spare));
        fill(&mut cols, 0);
        assert_eq!(cols.rows.as_ptr(), rows_buffer);
        let (reused, ..) = taken.keyed(&mut scratch);
        let (fresh, ..) = {
            let mut again = EventCols::default();
            fill(&mut again, 1000);
            again.take(&d, None).keyed(&mut Scratch::default())
        };
        assert_eq!(reused.len(), fresh.len());
        for (r, f) in reused.iter().zip(&fresh) {
            assert_eq!(r.to_data(), f.to_data());
        }
        assert_eq!(reused[3].to_data().buffers()[0].as_ptr(), seq_buffer.cast());
    }

    #[test]
    fn events_rows_become_columns_in_order_with_their_runs_and_nulls() {
        let mut d = Interner::default();
        let a = RunKeys {
            run: d.key("a.qtr"),
            host: d.key("h1"),
            sender: Some(7),
        };
        let b = RunKeys {
            run: d.key("b.qtr"),
            host: d.key("h2"),
            sender: None,
        };
        let name = d.key("schedule");
        let mut cols = EventCols::default();
        let rows: Vec<(RunKeys, Option<u16>, Option<i32>)> = vec![
            (a, Some(3), Some(name)),
            (a, Some(3), None),
            (b, None, Some(name)),
            (a, Some(4), Some(name)),
            (a, Some(4), Some(name)),
        ];
        for round in 0..2u64 {
            for (i, (k, queue, class)) in rows.iter().enumerate() {
                let i = i as u64 + 10 * round;
                let at = At {
                    seq: i,
                    time_ns: -(i as i64),
                    aligned_ns: i as i64 * 3,
                };
                let row = EventRow {
                    source: i as u32 + 100,
                    event_id: i as u16 + 1,
                    class: *class,
                    event: class.map(|_| d.key("x")).or(Some(name)).filter(|_| i != 3),
                    args: [i, u64::MAX - i],
                    flags: 0x8000 | i as u16,
                    queue: *queue,
                };
                cols.push(k, &at, &row);
            }
            assert_eq!(cols.len(), 5);
            let batch = cols.batch(&d).unwrap();
            assert_eq!(cols.len(), 0);
            let col = |n: &str| batch.column_by_name(n).unwrap().clone();
            let strings = |n: &str| -> Vec<Option<String>> {
                let c = col(n);
                let dict = c.as_dictionary::<Int32Type>();
                let values = dict.values().as_string::<i32>();
                dict.keys()
                    .iter()
                    .map(|k| k.map(|k| values.value(k as usize).to_string()))
                    .collect()
            };
            let s = |v: &str| Some(v.to_string());
            assert_eq!(
                strings("run"),
                [s("a.qtr"), s("a.qtr"), s("b.qtr"), s("a.qtr"), s("a.qtr")]
            );
            assert_eq!(
                strings("host"),
                [s("h1"), s("h1"), s("h2"), s("h1"), s("h1")]
            );
            let want_event: Vec<_> = (0..5u64)
                .map(|j| {
                    let i = j + 10 * round;
                    (i != 3).then(|| {
                        if rows[j as usize].2.is_some() {
                            "x"
                        } else {
                            "schedule"
                        }
                    })
                })
                .map(|v| v.map(str::to_string))
                .collect();
            assert_eq!(strings("event"), want_event, "round {round}");
            assert_eq!(
                strings("class"),
                [
                    s("schedule"),
                    None,
                    s("schedule"),
                    s("schedule"),
                    s("schedule")
                ]
            );
            let sender: Vec<Option<u32>> =
                col("sender").as_primitive::<UInt32Type>().iter().collect();
            assert_eq!(sender, [Some(7), Some(7), None, Some(7), Some(7)]);
            let queue: Vec<Option<u16>> =
                col("queue").as_primitive::<UInt16Type>().iter().collect();
            assert_eq!(queue, [Some(3), Some(3), None, Some(4), Some(4)]);
            let base = 10 * round;
            let seq: Vec<u64> = col("seq").as_primitive::<UInt64Type>().values().to_vec();
            assert_eq!(seq, (base..base + 5).collect::<Vec<_>>());
            let time: Vec<i64> = col("time_ns").as_primitive::<Int64Type>().values().to_vec();
            assert_eq!(
                time,
                (base..base + 5).map(|i| -(i as i64)).collect::<Vec<_>>()
            );
            let aligned = col("aligned_ns");
            let aligned = aligned.as_primitive::<Int64Type>().values();
            assert_eq!(aligned[4], (base as i64 + 4) * 3);
            let arg1 = col("arg1");
            assert_eq!(
                arg1.as_primitive::<UInt64Type>().value(2),
                u64::MAX - base - 2
            );
            let flags = col("flags");
            assert_eq!(
                flags.as_primitive::<UInt16Type>().value(1),
                0x8000 | (base as u16 + 1)
            );
            let source = col("source");
            assert_eq!(
                source.as_primitive::<UInt32Type>().value(0),
                base as u32 + 100
            );
            let ids = col("event_id");
            assert_eq!(ids.as_primitive::<UInt16Type>().value(4), base as u16 + 5);
            assert_eq!(col("arg0").null_count(), 0);
        }
    }
}
