//! The events table's columns: rows appended with their run and position,
//! taken as one record batch (and reusable buffers: [`Spare`], [`Scratch`]).

#[allow(unused_imports)]
use super::*;

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
pub(super) struct Held {
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
    pub(super) rows: Vec<Held>,
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
pub struct Spare(pub(super) Vec<Held>);

/// The events columns' buffers of an encoder thread, given back after each
/// batch is written ([`Scratch::give_back`]) and filled again by the next
/// ([`EventRows::keyed`]): fresh buffers of a batch's size (3.5 MiB for
/// 64 Ki rows) were mapped and faulted in page by page at their first
/// writes, and unmapped when freed.
#[derive(Debug, Default)]
pub struct Scratch {
    pub(super) run: Vec<i32>,
    pub(super) host: Vec<i32>,
    pub(super) sender: Vec<u32>,
    pub(super) seq: Vec<u64>,
    pub(super) time: Vec<i64>,
    pub(super) aligned: Vec<i64>,
    pub(super) source: Vec<u32>,
    pub(super) event_id: Vec<u16>,
    pub(super) class: Vec<i32>,
    pub(super) event: Vec<i32>,
    arg0: Vec<u64>,
    arg1: Vec<u64>,
    pub(super) flags: Vec<u16>,
    pub(super) queue: Vec<u16>,
}

/// `v`, emptied, with room for `n` values.
pub(super) fn room<T>(v: &mut Vec<T>, n: usize) -> Vec<T> {
    let mut v = std::mem::take(v);
    v.clear();
    v.reserve(n);
    v
}

/// The values buffer of `a` as a vector, when nothing else holds it (else
/// an empty one: the next batch allocates).
pub(super) fn back<T: ArrowNativeType>(a: ArrayRef) -> Vec<T> {
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
