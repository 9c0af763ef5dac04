//! Converting traces into the formats that existing viewers read:
//! [CTF 1.8](ctf) for babeltrace2 and Trace Compass,
//! [Perfetto's protobuf trace](perfetto) and
//! [Chrome Trace Event JSON](chrome) for Perfetto and `chrome://tracing`, and
//! an [SVG timeline](svg) for any browser. Every converter carries the
//! arguments `qtrace dump` shows, by the same names ([`args`]);
//! [`split::SplitByTime`] cuts a conversion into standalone time slices.
//!
//! The converters are *streaming*: they take events one at a time
//! ([`EventSink::push`]) and keep only a bounded amount of state (one packet
//! buffer per CTF stream; the open intervals of the Chrome timeline), so a
//! trace larger than memory converts fine. What a converter needs besides the
//! events is the trace's [`Catalog`] (names of events and arguments) and the
//! clock origin (the Unix time, in nanoseconds, of the trace's time zero).
//!
//! Loss records are in-band, as everywhere in qtrace: an event with
//! `id == classes::tracer::HOOPS` says that `args[0]` events were lost at that
//! point. CTF expresses them as the packet context's `events_discarded`
//! counter, Chrome JSON as global instant markers, Perfetto as `hoops`
//! instants plus a `lost events` counter track, the SVG timeline as red
//! lines across every row.
//!
//! Several trace files of one run (one per queue) are merged in time order by
//! [`MergedReader`](crate::reader::MergedReader), whose events go to a
//! converter as they come.
//!
//! ```
//! use qtrace::classes::{system, Catalog};
//! use qtrace::export::{self, chrome::ChromeWriter, EventSink};
//! use qtrace::Event;
//!
//! let catalog = Catalog::builtin();
//! let events = vec![
//!     Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
//!     Event::new(5_000, system::SCHEDULE, 0, [4, 0]),
//! ];
//! let mut json = Vec::new();
//! let stats = export::convert(ChromeWriter::new(&catalog, 0, &mut json)?, events)?;
//! assert_eq!(stats.events, 2);
//! assert_eq!(stats.slices, 2); // task 3 from 1 µs to 5 µs, task 4 from 5 µs to the end
//! assert!(String::from_utf8(json).unwrap().contains(r#""name":"task 3""#));
//! # Ok::<(), qtrace::Error>(())
//! ```
//!
//! [`Catalog`]: crate::model::classes::Catalog

pub mod args;
mod by_source;
pub mod chrome;
pub mod ctf;
mod error;
pub mod perfetto;
mod slices;
pub mod split;
pub mod svg;

use crate::reader::TimeMerge;
use crate::Event;
pub use error::ExportError;

/// What a conversion did, counted.
///
/// ```
/// use qtrace::classes::{system, tracer, Catalog};
/// use qtrace::export::{self, chrome::ChromeWriter};
/// use qtrace::Event;
///
/// let events = [
///     Event::new(0, system::SCHEDULE, 0, [1, 0]),
///     Event::new(5, tracer::HOOPS, 0, [3, 0]), // 3 events lost here
///     Event::new(9, system::SCHEDULE, 1, [2, 0]),
/// ];
/// let stats = export::convert(ChromeWriter::new(&Catalog::builtin(), 0, Vec::new())?, events)?;
/// assert_eq!((stats.events, stats.hoops, stats.lost, stats.sources), (2, 1, 3, 2));
/// # Ok::<(), qtrace::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvertStats {
    /// Events converted, hoops records excepted (what `qtrace stats` counts
    /// as events).
    pub events: u64,
    /// Hoops (loss) records among them.
    pub hoops: u64,
    /// Events lost according to those records (the sum of their `args[0]`).
    pub lost: u64,
    /// Distinct sources (CTF streams, Chrome threads, Perfetto source tracks)
    /// that carried events.
    pub sources: u64,
    /// Records whose event number the catalog does not define (converted as
    /// `unknown` events that keep the raw number).
    pub unknown: u64,
    /// CTF: packets written.
    pub packets: u64,
    /// CTF: events whose timestamp was earlier than the previous event of the
    /// same stream and was raised to it (CTF streams must not go back in
    /// time), or later than readers can place (babeltrace2 holds times as
    /// signed 64-bit ns since the Unix epoch: past year 2262) and was
    /// lowered to that.
    pub clamped: u64,
    /// Chrome and Perfetto: duration events (task, semaphore and interrupt
    /// slices) written; SVG: running and blocked spans drawn.
    pub slices: u64,
    /// Chrome and Perfetto: begin/end events that found no partner, or that
    /// exceeded the bounded state, and were shown as instants only; SVG: rows
    /// past the row limit.
    pub unpaired: u64,
}

/// A streaming converter: feed it events in time order, then finish it.
///
/// Implemented by [`ctf::CtfWriter`], [`chrome::ChromeWriter`],
/// [`perfetto::PerfettoWriter`], [`svg::SvgTimeline`] and
/// [`split::SplitByTime`]. Memory use does not grow with the number of events
/// pushed.
///
/// A sink of your own converts like the built-in ones:
///
/// ```
/// use qtrace::classes::system;
/// use qtrace::export::{self, ConvertStats, EventSink, ExportError};
/// use qtrace::Event;
///
/// /// Counts the events of each source.
/// #[derive(Default)]
/// struct PerSource(std::collections::BTreeMap<u32, u64>);
///
/// impl EventSink for PerSource {
///     fn push(&mut self, event: &Event) -> Result<(), ExportError> {
///         *self.0.entry(event.source).or_default() += 1;
///         Ok(())
///     }
///     fn finish(&mut self) -> Result<ConvertStats, ExportError> {
///         Ok(ConvertStats { events: self.0.values().sum(), ..ConvertStats::default() })
///     }
/// }
///
/// let mut sink = PerSource::default();
/// let events = [0, 1, 1].map(|s| Event::new(0, system::SCHEDULE, s, [1, 0]));
/// assert_eq!(export::convert(&mut sink, events)?.events, 3);
/// assert_eq!(sink.0[&1], 2);
/// # Ok::<(), ExportError>(())
/// ```
pub trait EventSink {
    /// Converts one event.
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the output cannot be written
    /// ([`ExportError::Io`]) or the event is pushed after
    /// [`EventSink::finish`].
    fn push(&mut self, event: &Event) -> Result<(), ExportError>;

    /// Flushes everything, closes what is open and returns the counts. Pushing
    /// after `finish` is an error.
    ///
    /// # Errors
    ///
    /// [`ExportError::Io`] when the output cannot be written; an error when
    /// the sink was already finished.
    fn finish(&mut self) -> Result<ConvertStats, ExportError>;
}

/// A sink borrowed mutably is a sink, so that it can be converted into and
/// still be looked at afterwards (`export::convert(&mut split, events)`).
impl<T: EventSink + ?Sized> EventSink for &mut T {
    fn push(&mut self, event: &Event) -> Result<(), ExportError> {
        (**self).push(event)
    }

    fn finish(&mut self) -> Result<ConvertStats, ExportError> {
        (**self).finish()
    }
}

/// Feeds every event of `events` to `sink` and finishes it.
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::export::{self, chrome::ChromeWriter};
/// use qtrace::Event;
///
/// let events = (0..10).map(|t| Event::new(t * 1_000, system::SCHEDULE, 0, [t % 3, 0]));
/// let stats = export::convert(ChromeWriter::new(&Catalog::builtin(), 0, Vec::new())?, events)?;
/// assert_eq!((stats.events, stats.slices), (10, 10));
/// # Ok::<(), qtrace::Error>(())
/// ```
///
/// # Errors
///
/// The first error of [`EventSink::push`] or [`EventSink::finish`]; the
/// events after it are not read.
pub fn convert<S: EventSink>(
    mut sink: S,
    events: impl IntoIterator<Item = Event>,
) -> Result<ConvertStats, ExportError> {
    for e in events {
        sink.push(&e)?;
    }
    sink.finish()
}

/// Merges several event streams, each in time order, into one in time order
/// (ties go to the earlier input). Memory: one pending event per input.
///
/// Items are `Result`s so that a reader's errors pass through at the point
/// they occur.
///
/// Deprecated: qtrace has one time merge,
/// [`MergedReader`](crate::reader::MergedReader) (the same k-way merge, and
/// it puts files with different clocks on one time line first). This type is
/// a thin wrapper around that merge, kept for one release.
///
/// ```
/// # #![allow(deprecated)]
/// use qtrace::export::merge_events;
/// use qtrace::{Event, EventId};
///
/// let a = vec![Event::new(1, EventId(4), 0, [0, 0]), Event::new(5, EventId(4), 0, [0, 0])];
/// let b = vec![Event::new(2, EventId(4), 1, [0, 0]), Event::new(5, EventId(4), 1, [0, 0])];
/// let times: Vec<(u64, u32)> = merge_events(vec![a.into_iter(), b.into_iter()])
///     .map(|e| (e.time, e.source))
///     .collect();
/// assert_eq!(times, [(1, 0), (2, 1), (5, 0), (5, 1)]);
/// ```
#[doc(hidden)]
#[deprecated(
    note = "use qtrace::reader::MergedReader, the one time merge (for events already in memory: a stable sort by time)"
)]
pub struct MergeByTime<I> {
    inputs: Vec<I>,
    merge: TimeMerge,
}

#[allow(deprecated)]
impl<I, E> MergeByTime<I>
where
    I: Iterator<Item = Result<Event, E>>,
{
    /// Merges `inputs`.
    pub fn new(inputs: Vec<I>) -> Self {
        let merge = TimeMerge::new(inputs.len());
        MergeByTime { inputs, merge }
    }

    /// The next item and the index (in the vector given to
    /// [`MergeByTime::new`]) of the input it came from.
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use qtrace::export::MergeByTime;
    /// use qtrace::{Event, EventId};
    ///
    /// let ev = |t| Ok::<_, ()>(Event::new(t, EventId(4), 0, [0, 0]));
    /// let mut m = MergeByTime::new(vec![vec![ev(5)].into_iter(), vec![ev(1)].into_iter()]);
    /// assert_eq!(m.next_with_input().map(|(i, e)| (i, e.unwrap().time)), Some((1, 1)));
    /// assert_eq!(m.next_with_input().map(|(i, e)| (i, e.unwrap().time)), Some((0, 5)));
    /// assert!(m.next_with_input().is_none());
    /// ```
    pub fn next_with_input(&mut self) -> Option<(usize, Result<Event, E>)> {
        let inputs = &mut self.inputs;
        self.merge.next(|idx| inputs[idx].next())
    }
}

/// Merges event streams that cannot fail (each in time order) into one in
/// time order: [`MergeByTime`] for plain events.
#[doc(hidden)]
#[deprecated(
    note = "use qtrace::reader::MergedReader, the one time merge (for events already in memory: a stable sort by time)"
)]
#[allow(deprecated)]
pub fn merge_events<J>(inputs: Vec<J>) -> impl Iterator<Item = Event>
where
    J: Iterator<Item = Event>,
{
    let ok: fn(Event) -> Result<Event, std::convert::Infallible> = Ok;
    MergeByTime::new(inputs.into_iter().map(|j| j.map(ok)).collect()).map(|r| match r {
        Ok(e) => e,
        Err(never) => match never {},
    })
}

#[allow(deprecated)]
impl<I, E> Iterator for MergeByTime<I>
where
    I: Iterator<Item = Result<Event, E>>,
{
    type Item = Result<Event, E>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_with_input().map(|(_, item)| item)
    }
}

/// Replaces every character outside `[A-Za-z0-9_]` by `_`.
pub(crate) fn identifier_chars(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
#[allow(deprecated)] // the tests of the deprecated wrapper test the shared merge too
mod tests {
    use super::*;
    use crate::EventId;

    fn ev(time: u64, source: u32) -> Event {
        Event::new(time, EventId(4), source, [0, 0])
    }

    #[test]
    fn merge_interleaves_and_breaks_ties_by_input() {
        let a = vec![ev(1, 0), ev(3, 0), ev(3, 0), ev(9, 0)];
        let b = vec![ev(0, 1), ev(3, 1), ev(10, 1)];
        let c: Vec<Event> = vec![];
        let got: Vec<(u64, u32)> = merge_events(vec![a.into_iter(), b.into_iter(), c.into_iter()])
            .map(|e| (e.time, e.source))
            .collect();
        assert_eq!(
            got,
            [(0, 1), (1, 0), (3, 0), (3, 0), (3, 1), (9, 0), (10, 1)]
        );
    }

    #[test]
    fn merge_passes_errors_through_in_place() {
        let a: Vec<Result<Event, &str>> = vec![Ok(ev(1, 0)), Err("bad"), Ok(ev(4, 0))];
        let b: Vec<Result<Event, &str>> = vec![Ok(ev(2, 1))];
        let got: Vec<Result<u64, &str>> = MergeByTime::new(vec![a.into_iter(), b.into_iter()])
            .map(|r| r.map(|e| e.time))
            .collect();
        assert_eq!(got, [Ok(1), Err("bad"), Ok(2), Ok(4)]);
    }

    proptest::proptest! {
        #[test]
        fn merge_equals_stable_sort(inputs in proptest::collection::vec(
            proptest::collection::vec(0u64..50, 0..20), 0..5)
        ) {
            let streams: Vec<Vec<Event>> = inputs
                .iter()
                .enumerate()
                .map(|(i, times)| {
                    let mut t = times.clone();
                    t.sort();
                    t.into_iter().map(|x| ev(x, i as u32)).collect()
                })
                .collect();
            let mut expected: Vec<Event> = streams.iter().flatten().copied().collect();
            expected.sort_by_key(|e| (e.time, e.source));
            let got: Vec<Event> =
                merge_events(streams.into_iter().map(|s| s.into_iter()).collect())
                    .collect();
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
