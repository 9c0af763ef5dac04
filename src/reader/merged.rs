//! Several trace files read as one, in time order: [`MergedReader`].
//!
//! A run of a traced program often leaves one file per queue (and `qtrace
//! recv` one per receiver); reading them together means putting their
//! events on one time line and merging them. Each file's times count
//! *ticks* since *its own* clock origin (FORMAT.md, the header), so the
//! merged reader first maps every time to nanoseconds since the earliest
//! origin of the files read together, then does a k-way merge.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::merge::TimeMerge;
use super::{Completeness, ReadError, TraceReader};
use crate::wire::header::NANOS_PER_SECOND;
use crate::Event;

/// Trace readers merged in time order, streaming.
///
/// Events come out with their times in **nanoseconds since the earliest
/// clock origin** of the inputs ([`MergedReader::base_unix_ns`]): each
/// input's ticks are scaled to nanoseconds (saturating at `u64::MAX`) and
/// shifted by the distance from that earliest origin to its own. Each input
/// must be in time order (as every qtrace queue writes it); events with equal
/// times come out in input order (all of the first input's, then the
/// second's …), so the merge is a stable sort of the inputs' concatenation.
///
/// Memory is bounded whatever the files' sizes: one pending event per input
/// plus each [`TraceReader`]'s own read-ahead block.
///
/// Errors pass through where they occur: a damaged input yields its events
/// up to the damage, then one [`ReadError`] (naming the file and byte
/// offset) after its last good event in merged order, and then nothing more;
/// the other inputs go on. Hoops (loss) records, unclosed-stream marks and
/// other control records are events like any other and keep their place.
/// Once an input has ended, [`MergedReader::completeness`] says whether it
/// was complete, cut short or damaged.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::reader::MergedReader;
/// use qtrace::wire::{create_trace_file, TraceHeader};
/// use qtrace::Event;
///
/// let dir = std::env::temp_dir().join(format!("qtrace-merged-doc-{}", std::process::id()));
/// // Two files whose clocks started 1 µs apart, each counting ns.
/// let write = |name: &str, origin: u64, times: &[u64]| -> std::io::Result<std::path::PathBuf> {
///     let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
///         .with_clock("manual", 1_000_000_000, origin)
///         .expect("a valid clock");
///     let path = dir.join(name);
///     let mut w = create_trace_file(&path, &header).map_err(std::io::Error::other)?;
///     for &t in times {
///         w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?;
///     }
///     w.finish()?;
///     Ok(path)
/// };
/// let a = write("a.qtr", 5_000, &[0, 2_000, 3_000])?;
/// let b = write("b.qtr", 6_000, &[0, 2_000])?; // b's 0 is a's 1000
///
/// let mut merged = MergedReader::open([&a, &b])?;
/// assert_eq!(merged.base_unix_ns(), 5_000);
/// let mut got = Vec::new();
/// while let Some((input, event)) = merged.next_with_input() {
///     got.push((input, event?.time));
/// }
/// // Equal times (3000 in both) keep the order of the inputs.
/// assert_eq!(got, [(0, 0), (1, 1_000), (0, 2_000), (0, 3_000), (1, 3_000)]);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct MergedReader<R = BufReader<File>> {
    inputs: Vec<Input<R>>,
    /// The earliest clock origin (Unix ns).
    base: u64,
    /// The k-way merge of the inputs' rebased events.
    merge: TimeMerge,
}

/// The inputs (each its file, if it has one, and its shift onto the merged
/// time line) and the earliest clock origin.
impl<R: Read> std::fmt::Debug for MergedReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inputs: Vec<_> = self
            .inputs
            .iter()
            .map(|i| (i.reader.path(), i.shift))
            .collect();
        f.debug_struct("MergedReader")
            .field("inputs", &inputs)
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

/// One input: its reader and how its times map onto the merged line.
struct Input<R> {
    reader: TraceReader<R>,
    /// Nanoseconds from the earliest origin to this input's origin.
    shift: u64,
    /// The input's ticks are nanoseconds already (no division per event).
    in_ns: bool,
}

impl<R: Read> Input<R> {
    #[inline]
    fn rebase(&self, mut e: Event) -> Event {
        let ns = if self.in_ns {
            e.time
        } else {
            self.reader.header().ticks_to_ns(e.time)
        };
        e.time = ns.saturating_add(self.shift);
        e
    }

    /// The next event, rebased; read-ahead events first (no `Result` to
    /// build per event).
    #[inline]
    fn next(&mut self) -> Option<Result<Event, ReadError>> {
        if let Some(e) = self.reader.next_buffered() {
            return Some(Ok(self.rebase(e)));
        }
        self.reader.next().map(|r| r.map(|e| self.rebase(e)))
    }
}

impl MergedReader<BufReader<File>> {
    /// Opens every file of `paths` and merges them (inputs are numbered in
    /// the order of `paths`, from 0).
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::reader::MergedReader;
    /// use qtrace::wire::{create_trace_file, TraceHeader};
    /// use qtrace::Event;
    ///
    /// let dir = std::env::temp_dir().join(format!("qtrace-merged-open-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// let mut paths = Vec::new();
    /// for (q, times) in [[1, 4], [2, 3]].iter().enumerate() {
    ///     let path = dir.join(format!("queue{q}.qtr"));
    ///     let mut w = create_trace_file(&path, &header)?;
    ///     for &t in times {
    ///         w.write_event(&Event::new(t, system::SCHEDULE, q as u32, [t, 0]))?;
    ///     }
    ///     w.finish()?;
    ///     paths.push(path);
    /// }
    /// let merged = MergedReader::open(&paths)?;
    /// let times: Vec<u64> = merged.map(|e| e.map(|e| e.time)).collect::<Result<_, _>>()?;
    /// assert_eq!(times, [1, 2, 3, 4]);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The first file that cannot be opened ([`ReadError::Open`]) or whose
    /// header is not a valid qtrace header ([`ReadError::Format`], naming
    /// the file and byte offset); files after it are not opened.
    pub fn open<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<Self, ReadError> {
        let readers = paths
            .into_iter()
            .map(TraceReader::open)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MergedReader::new(readers))
    }
}

impl<R: Read> MergedReader<R> {
    /// Merges `readers` (inputs are numbered in their order, from 0). Events
    /// the readers have already yielded are not seen again.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::reader::{MergedReader, TraceReader};
    /// use qtrace::wire::{TraceHeader, TraceWriter};
    /// use qtrace::Event;
    ///
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// let file = |times: &[u64]| -> std::io::Result<Vec<u8>> {
    ///     let mut w = TraceWriter::new(Vec::new(), &header)?;
    ///     for &t in times {
    ///         w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?;
    ///     }
    ///     w.finish()
    /// };
    /// let (a, b) = (file(&[1, 4])?, file(&[2, 3])?);
    /// let merged = MergedReader::new(vec![TraceReader::new(&a[..])?, TraceReader::new(&b[..])?]);
    /// assert_eq!(merged.len(), 2);
    /// let times: Vec<u64> = merged.map(|e| e.map(|e| e.time)).collect::<Result<_, _>>()?;
    /// assert_eq!(times, [1, 2, 3, 4]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(readers: Vec<TraceReader<R>>) -> Self {
        let base = readers
            .iter()
            .map(|r| r.header().clock_origin_unix_ns())
            .min()
            .unwrap_or(0);
        let n = readers.len();
        let inputs = readers
            .into_iter()
            .map(|reader| Input {
                shift: reader.header().clock_origin_unix_ns() - base,
                in_ns: reader.header().ticks_per_second() == NANOS_PER_SECOND,
                reader,
            })
            .collect();
        MergedReader {
            inputs,
            base,
            merge: TimeMerge::new(n),
        }
    }

    /// The earliest clock origin of the inputs, in ns since the Unix epoch
    /// (0 when there is no input): the merged times count from it.
    pub fn base_unix_ns(&self) -> u64 {
        self.base
    }

    /// The number of inputs.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Whether there is no input.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Input `input`'s reader: its header, catalog, path, counts.
    ///
    /// # Panics
    /// When `input` is not below [`MergedReader::len`].
    pub fn reader(&self, input: usize) -> &TraceReader<R> {
        &self.inputs[input].reader
    }

    /// The inputs' readers, in input order.
    pub fn readers(&self) -> impl ExactSizeIterator<Item = &TraceReader<R>> {
        self.inputs.iter().map(|i| &i.reader)
    }

    /// A time of input `input`, in its own ticks (a close record's time, for
    /// instance), on the merged time line: ns since
    /// [`MergedReader::base_unix_ns`], saturating.
    ///
    /// # Panics
    /// When `input` is not below [`MergedReader::len`].
    pub fn merged_time(&self, input: usize, ticks: u64) -> u64 {
        let i = &self.inputs[input];
        i.reader.header().ticks_to_ns(ticks).saturating_add(i.shift)
    }

    /// Whether input `input` was complete: `None` until it has ended (all
    /// its events yielded, or its error), then what its end says
    /// ([`TraceReader::completeness`]).
    ///
    /// # Panics
    /// When `input` is not below [`MergedReader::len`].
    pub fn completeness(&self, input: usize) -> Option<Completeness> {
        self.inputs[input].reader.completeness()
    }

    /// The next event when it can be had without building a `Result`: with
    /// one input (so the event is input 0's), its reader's read-ahead event
    /// ([`TraceReader::next_buffered`]), rebased; with several, always
    /// `None`. `None` means "call
    /// [`MergedReader::next_with_input`]", not the end. A loop that tries
    /// this first yields the same events in the same order as
    /// `next_with_input` alone, faster on one file (no `Result` to build and
    /// unpack per event).
    ///
    /// ```
    /// # use qtrace::classes::{system, Catalog};
    /// # use qtrace::clock::{Clock, ManualClock};
    /// # use qtrace::reader::{MergedReader, TraceReader};
    /// # use qtrace::wire::{TraceHeader, TraceWriter};
    /// # use qtrace::Event;
    /// # let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// # let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// # for t in 0..3 { w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?; }
    /// # let bytes = w.finish()?;
    /// let mut merged = MergedReader::new(vec![TraceReader::new(&bytes[..])?]);
    /// let mut times = Vec::new();
    /// loop {
    ///     let e = match merged.next_buffered() {
    ///         Some(e) => e,
    ///         None => match merged.next_with_input() {
    ///             Some((_input, e)) => e?,
    ///             None => break,
    ///         },
    ///     };
    ///     times.push(e.time);
    /// }
    /// assert_eq!(times, [0, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn next_buffered(&mut self) -> Option<Event> {
        match self.inputs.as_mut_slice() {
            [only] => only.reader.next_buffered().map(|e| only.rebase(e)),
            _ => None,
        }
    }

    /// Appends to `out` at most `limit` events already read ahead, the ones
    /// [`MergedReader::next_buffered`] would yield one by one (one input:
    /// its [`TraceReader::read_buffered`], times on the merged line), and
    /// returns how many; `0` means "call [`Iterator::next`]" (always, with
    /// several inputs: they are merged an event at a time).
    ///
    /// ```
    /// # use qtrace::classes::{system, Catalog};
    /// # use qtrace::clock::{Clock, ManualClock};
    /// # use qtrace::reader::{MergedReader, TraceReader};
    /// # use qtrace::wire::{TraceHeader, TraceWriter};
    /// # use qtrace::Event;
    /// # let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// # let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// # for t in 0..3 { w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?; }
    /// # let bytes = w.finish()?;
    /// let mut merged = MergedReader::new(vec![TraceReader::new(&bytes[..])?]);
    /// let mut batch = Vec::new();
    /// loop {
    ///     if merged.read_buffered(&mut batch, 4096) == 0 {
    ///         match merged.next() {
    ///             Some(e) => batch.push(e?),
    ///             None => break,
    ///         }
    ///     }
    /// }
    /// assert_eq!(batch.iter().map(|e| e.time).collect::<Vec<_>>(), [0, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_buffered(&mut self, out: &mut Vec<Event>, limit: usize) -> usize {
        let [only] = self.inputs.as_mut_slice() else {
            return 0;
        };
        let start = out.len();
        let n = only.reader.read_buffered(out, limit);
        if !only.in_ns || only.shift != 0 {
            for e in &mut out[start..] {
                *e = only.rebase(*e);
            }
        }
        n
    }

    /// Calls `f(input, item)` for every item [`MergedReader::next_with_input`]
    /// would yield (the event borrowed), in the same order, until the inputs end or `f` returns an
    /// error (which is returned; the items after it stay unread). Through
    /// one file, its reader is held in a local for the whole loop and
    /// read-ahead events need no `Result` on the way; a loop that can take
    /// events in runs is faster still with [`MergedReader::read_buffered`]
    /// (no event handed over one at a time).
    ///
    /// ```
    /// # use qtrace::classes::{system, Catalog};
    /// # use qtrace::clock::{Clock, ManualClock};
    /// # use qtrace::reader::{MergedReader, TraceReader};
    /// # use qtrace::wire::{TraceHeader, TraceWriter};
    /// # use qtrace::Event;
    /// # let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// # let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// # for t in 0..3 { w.write_event(&Event::new(t, system::SCHEDULE, 0, [t, 0]))?; }
    /// # let bytes = w.finish()?;
    /// let mut merged = MergedReader::new(vec![TraceReader::new(&bytes[..])?]);
    /// let mut times = Vec::new();
    /// merged.try_for_each_with_input(|_input, item| {
    ///     times.push(item?.time);
    ///     Ok::<(), qtrace::reader::ReadError>(())
    /// })?;
    /// assert_eq!(times, [0, 1, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The first error `f` returns.
    #[inline]
    pub fn try_for_each_with_input<E>(
        &mut self,
        mut f: impl FnMut(usize, Result<&Event, ReadError>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.inputs.len() != 1 {
            while let Some((i, item)) = self.next_with_input() {
                match item {
                    Ok(e) => f(i, Ok(&e))?,
                    Err(err) => f(i, Err(err))?,
                }
            }
            return Ok(());
        }
        // One input: out of the vector into a local for the loop, so that
        // its reader's position is not reloaded from the heap around every
        // call of `f` (measured: `qtrace dump` of one file); put back after.
        let mut only = self.inputs.pop().expect("one input");
        let result = (|| loop {
            if let Some(e) = only.reader.next_buffered() {
                f(0, Ok(&only.rebase(e)))?;
                continue;
            }
            match only.next() {
                Some(Ok(e)) => f(0, Ok(&e))?,
                Some(Err(err)) => f(0, Err(err))?,
                None => return Ok(()),
            }
        })();
        self.inputs.push(only);
        result
    }

    /// The next event in time order and the input it came from, or an
    /// input's error at the point it occurred; `None` once every input has
    /// ended.
    ///
    /// # Errors
    /// The item is `Err` when an input cannot be read on: a damaged record
    /// ([`ReadError::Format`]) or an I/O error ([`ReadError::Io`]). That input
    /// then ends; the others go on.
    pub fn next_with_input(&mut self) -> Option<(usize, Result<Event, ReadError>)> {
        if let [only] = self.inputs.as_mut_slice() {
            // One input: nothing to merge, no heap per event.
            return only.next().map(|r| (0, r));
        }
        // A reader ends after its error, so an input pulled again after
        // one is then done.
        let inputs = &mut self.inputs;
        self.merge.next(|idx| inputs[idx].next())
    }
}

impl<R: Read> Iterator for MergedReader<R> {
    type Item = Result<Event, ReadError>;

    /// [`MergedReader::next_with_input`] without the input's number.
    fn next(&mut self) -> Option<Self::Item> {
        self.next_with_input().map(|(_, item)| item)
    }
}

impl<R: Read> std::iter::FusedIterator for MergedReader<R> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{system, tracer, Catalog};
    use crate::model::clock::{Clock, ManualClock};
    use crate::model::event::TRACER_SOURCE;
    use crate::wire::{QueueTotals, TraceHeader, TraceWriter};
    use crate::EventId;

    /// A closed trace (in memory) with clock `ticks_per_second` and
    /// `origin`, holding one `schedule` event per time, `source` = `tag`
    /// and `args[0]` = the event's position.
    fn trace(ticks_per_second: u64, origin: u64, tag: u32, times: &[u64]) -> Vec<u8> {
        let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
            .with_clock("manual", ticks_per_second, origin)
            .unwrap()
            .with_close_run(true);
        let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
        for (i, &t) in times.iter().enumerate() {
            w.write_event(&Event::new(t, system::SCHEDULE, tag, [i as u64, 0]))
                .unwrap();
        }
        let last = times.last().copied().unwrap_or(0);
        w.finish_with_close(last, QueueTotals::default()).unwrap()
    }

    fn merged(files: &[Vec<u8>]) -> MergedReader<&[u8]> {
        MergedReader::new(
            files
                .iter()
                .map(|b| TraceReader::new(&b[..]).unwrap())
                .collect(),
        )
    }

    /// (input, time, source, args[0]) of every item; errors as input
    /// `usize::MAX - input`.
    fn drain(m: &mut MergedReader<&[u8]>) -> Vec<(usize, u64, u32, u64)> {
        let mut out = Vec::new();
        while let Some((i, r)) = m.next_with_input() {
            match r {
                Ok(e) => out.push((i, e.time, e.source, e.args[0])),
                Err(_) => out.push((usize::MAX - i, 0, 0, 0)),
            }
        }
        out
    }

    /// One input on a clock of microseconds, its origin after another's:
    /// `read_buffered` gives what `next` gives (times rebased), in runs of
    /// any length; with two inputs it gives nothing and `next` merges.
    #[test]
    fn read_buffered_rebases_one_input_and_leaves_several_to_next() {
        let times: Vec<u64> = (0..50).map(|i| i * 3).collect();
        let file = trace(1_000_000, 2_000, 0, &times);
        let want: Vec<Event> = merged(std::slice::from_ref(&file))
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(want[1].time, 3_000, "microseconds scaled to ns");
        for limit in [1, 7, 4096] {
            let mut m = merged(std::slice::from_ref(&file));
            let mut got = Vec::new();
            loop {
                if m.read_buffered(&mut got, limit) > 0 {
                    continue;
                }
                match m.next() {
                    Some(e) => got.push(e.unwrap()),
                    None => break,
                }
            }
            assert_eq!(got, want, "runs of {limit}");
        }
        let two = [file.clone(), trace(1_000_000, 1_000, 1, &[1, 2])];
        let mut m = merged(&two);
        let mut out = Vec::new();
        assert_eq!(m.read_buffered(&mut out, 100), 0);
        assert!(out.is_empty());
        assert_eq!(m.count(), 52, "the 50 and the 2, merged");
    }

    #[test]
    fn equal_times_come_out_in_input_order_and_empty_inputs_are_skipped() {
        let files = [
            trace(1_000_000_000, 100, 0, &[1, 3, 3, 9]),
            trace(1_000_000_000, 100, 1, &[]),
            trace(1_000_000_000, 100, 2, &[0, 3, 10]),
            trace(1_000_000_000, 100, 3, &[3]),
        ];
        let mut m = merged(&files);
        assert_eq!(m.len(), 4);
        assert_eq!(
            drain(&mut m),
            [
                (2, 0, 2, 0),
                (0, 1, 0, 0),
                (0, 3, 0, 1),
                (0, 3, 0, 2),
                (2, 3, 2, 1),
                (3, 3, 3, 0),
                (0, 9, 0, 3),
                (2, 10, 2, 2),
            ]
        );
        for i in 0..4 {
            assert!(
                matches!(m.completeness(i), Some(Completeness::Complete(_))),
                "input {i}: {:?}",
                m.completeness(i)
            );
        }
        assert!(m.next_with_input().is_none(), "fused");
    }

    #[test]
    fn times_are_ns_since_the_earliest_origin() {
        // a: µs ticks from origin 1000 ns; b: ns from origin 500 ns; c: 3 GHz
        // ticks from origin 2000 ns.
        let files = [
            trace(1_000_000, 1_000, 0, &[0, 2]),
            trace(1_000_000_000, 500, 1, &[0, 1_500, 2_500]),
            trace(3_000_000_000, 2_000, 2, &[3, u64::MAX]),
        ];
        let mut m = merged(&files);
        assert_eq!(m.base_unix_ns(), 500);
        assert_eq!(m.merged_time(0, 2), 2_500);
        assert_eq!(m.merged_time(2, 3), 1_501);
        let got: Vec<(usize, u64)> = drain(&mut m).iter().map(|r| (r.0, r.1)).collect();
        // u64::MAX ticks at 3 GHz is about 6.1e18 ns: no saturation, but the
        // sum with the shift stays exact.
        let far = (u64::MAX as u128 * 1_000_000_000 / 3_000_000_000) as u64 + 1_500;
        assert_eq!(
            got,
            [
                (1, 0),
                (0, 500),
                (1, 1_500),
                (2, 1_501),
                (0, 2_500),
                (1, 2_500),
                (2, far)
            ]
        );
    }

    #[test]
    fn times_past_u64_max_ns_saturate() {
        // One tick a second: u64::MAX ticks is past u64::MAX ns. And a shift
        // of 5 ns added to u64::MAX - 1.
        let files = [
            trace(1, 100, 0, &[u64::MAX]),
            trace(1_000_000_000, 105, 1, &[3, u64::MAX - 1]),
        ];
        let mut m = merged(&files);
        assert_eq!(m.merged_time(0, u64::MAX), u64::MAX);
        assert_eq!(m.merged_time(1, u64::MAX - 1), u64::MAX);
        let got: Vec<(usize, u64)> = drain(&mut m).iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(got, [(1, 8), (0, u64::MAX), (1, u64::MAX)]);
    }

    #[test]
    fn a_damaged_input_yields_its_events_then_one_error_and_the_others_go_on() {
        let good = trace(1_000_000_000, 0, 0, &[1, 4, 6]);
        let mut bad = trace(1_000_000_000, 0, 1, &[2, 3, 5]);
        // Cut inside the third record (the close run follows it).
        let len = bad.len() - 32 * 3 - 32 + 10;
        bad.truncate(len);
        let files = [good, bad];
        let mut m = merged(&files);
        assert_eq!(
            drain(&mut m),
            [
                (0, 1, 0, 0),
                (1, 2, 1, 0),
                (1, 3, 1, 1),
                (usize::MAX - 1, 0, 0, 0),
                (0, 4, 0, 1),
                (0, 6, 0, 2),
            ]
        );
        assert!(matches!(m.completeness(0), Some(Completeness::Complete(_))));
        assert_eq!(
            m.completeness(1),
            Some(Completeness::Cut {
                records: 2,
                lost: 0
            })
        );
    }

    #[test]
    fn one_input_reads_as_its_reader_and_hoops_keep_their_place() {
        let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
            .with_clock("manual", 1_000_000_000, 7)
            .unwrap();
        let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
        let events = [
            Event::new(1, system::SCHEDULE, 0, [1, 0]),
            Event::new(2, tracer::HOOPS, TRACER_SOURCE, [5, 0]),
            Event::new(3, EventId(0x0b), 0, [2, 0]),
        ];
        w.write_events(&events).unwrap();
        let bytes = w.finish().unwrap();
        let mut m = MergedReader::new(vec![TraceReader::new(&bytes[..]).unwrap()]);
        assert_eq!(m.base_unix_ns(), 7);
        let got: Vec<Event> = m.by_ref().map(Result::unwrap).collect();
        assert_eq!(got, events);
        assert_eq!(m.completeness(0), Some(Completeness::Unknown));
    }

    #[test]
    fn next_buffered_then_next_with_input_yields_what_next_with_input_alone_does() {
        let times: Vec<u64> = (0..5_000).map(|t| t * 3).collect();
        for files in [
            vec![trace(1_000_000, 40, 0, &times)],
            vec![
                trace(1_000_000_000, 40, 0, &times),
                trace(1_000_000_000, 41, 1, &times),
            ],
        ] {
            let want = drain(&mut merged(&files));
            let mut m = merged(&files);
            let mut got = Vec::new();
            loop {
                if let Some(e) = m.next_buffered() {
                    got.push((0, e.time, e.source, e.args[0]));
                    continue;
                }
                match m.next_with_input() {
                    Some((i, Ok(e))) => got.push((i, e.time, e.source, e.args[0])),
                    Some((_, Err(e))) => panic!("{e}"),
                    None => break,
                }
            }
            assert_eq!(got.len(), 5_000 * files.len());
            assert_eq!(got, want);
        }
    }

    #[test]
    fn try_for_each_yields_what_next_with_input_does_and_stops_at_the_first_error() {
        let times: Vec<u64> = (0..3_000).map(|t| t * 2).collect();
        let mut cut = trace(1_000_000_000, 0, 1, &[1, 2, 3]);
        cut.truncate(cut.len() - 32 * 3 - 32 + 5);
        for files in [
            vec![trace(1_000_000, 9, 0, &times)],
            vec![cut.clone()],
            vec![trace(1_000_000_000, 0, 0, &times), cut.clone()],
            vec![],
        ] {
            let want = drain(&mut merged(&files));
            let mut m = merged(&files);
            let mut got = Vec::new();
            m.try_for_each_with_input(|i, item| {
                got.push(match item {
                    Ok(e) => (i, e.time, e.source, e.args[0]),
                    Err(_) => (usize::MAX - i, 0, 0, 0),
                });
                Ok::<(), ()>(())
            })
            .unwrap();
            assert_eq!(got, want);
            assert!(m.next_with_input().is_none(), "every input read to its end");
            for i in 0..files.len() {
                assert!(m.completeness(i).is_some(), "input {i} ended");
            }
        }
        // `f`'s error stops the loop where it is returned; the reader goes on
        // from there.
        let files = [trace(1_000_000_000, 0, 0, &[1, 2, 3, 4])];
        let mut m = merged(&files);
        let mut seen = 0;
        let r = m.try_for_each_with_input(|_, item| {
            seen += 1;
            if item.map_err(drop)?.time == 2 {
                Err(())
            } else {
                Ok(())
            }
        });
        assert_eq!((r, seen), (Err(()), 2));
        assert_eq!(m.len(), 1);
        assert_eq!(m.next().map(|e| e.unwrap().time), Some(3));
    }

    #[test]
    fn no_input_is_empty() {
        let mut m: MergedReader<&[u8]> = MergedReader::new(Vec::new());
        assert!(m.is_empty());
        assert_eq!(m.base_unix_ns(), 0);
        assert!(m.next().is_none());
    }

    #[test]
    fn open_names_the_file_that_cannot_be_opened() {
        let missing = std::env::temp_dir().join("qtrace-merged-no-such-file.qtr");
        let err = match MergedReader::open([&missing]) {
            Err(e) => e,
            Ok(_) => panic!("opened a missing file"),
        };
        assert!(matches!(err, ReadError::Open { ref path, .. } if *path == missing));
    }
}
