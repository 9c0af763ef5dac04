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
//! [`Catalog`]: crate::classes::Catalog

pub mod args;
mod by_source;
pub mod chrome;
pub mod ctf;
mod error;
pub mod perfetto;
mod slices;
pub mod split;
pub mod svg;
pub(crate) mod wakes;

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
    /// exceeded the bounded state, and were shown as instants only (flow
    /// steps and ends of no open instance, FORMAT.md 1.3.3, among them);
    /// SVG: rows past the row limit.
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

/// Replaces every character outside `[A-Za-z0-9_]` by `_`.
pub(crate) fn identifier_chars(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}
