//! Splitting one conversion into time slices, each a complete output of its
//! own (for viewers that cannot open one big file: Perfetto's UI runs out of
//! browser memory near 2 GB of JSON).
//!
//! [`SplitByTime`] wraps a factory of sinks: events of the window
//! `[k × window, (k + 1) × window)` go to the `k`-th sink, which is created
//! when the first such event arrives and finished when an event of a later
//! window does. Each part is finished like any conversion, so it opens on its
//! own; a slice open at a window's end is closed there, and the next part
//! starts with no slice open (the task running across the boundary shows from
//! its next `schedule` on). An event earlier than the current window (input
//! that goes back in time) stays in the current part.
//!
//! ```
//! use qtrace::classes::{system, Catalog};
//! use qtrace::export::{self, chrome::ChromeWriter, split::SplitByTime};
//! use qtrace::Event;
//!
//! let catalog = Catalog::builtin();
//! // One Chrome document per microsecond of trace (files, in `qtrace convert --split`).
//! let mut split = SplitByTime::new(1_000, |_part, _start_ns| {
//!     ChromeWriter::new(&catalog, 0, Vec::new())
//! })?;
//! let events = [0, 400, 1_500, 3_200].map(|t| Event::new(t, system::SCHEDULE, 0, [1, 0]));
//! let stats = export::convert(&mut split, events)?;
//! assert_eq!(stats.events, 4);
//! // (window, start ns) of each part; the empty window 2 has no part.
//! assert_eq!(split.parts().collect::<Vec<_>>(), [(0, 0), (1, 1_000), (3, 3_000)]);
//! # Ok::<(), qtrace::Error>(())
//! ```

use super::{ConvertStats, EventSink};
use crate::export::ExportError;
use crate::Event;

/// Feeds each time window's events to a sink of its own (see the [module
/// documentation](self)).
///
/// ```
/// use qtrace::classes::{system, Catalog};
/// use qtrace::export::{self, perfetto::PerfettoWriter, split::SplitByTime};
/// use qtrace::Event;
///
/// let catalog = Catalog::builtin();
/// // One Perfetto trace per millisecond, kept in memory here.
/// let mut split = SplitByTime::new(1_000_000, |_part, _start_ns| {
///     PerfettoWriter::new(&catalog, 0, Vec::new())
/// })?;
/// let events = [0, 2_500_000].map(|t| Event::new(t, system::SCHEDULE, 0, [1, 0]));
/// export::convert(&mut split, events)?;
/// assert_eq!(split.parts().map(|(k, _)| k).collect::<Vec<_>>(), [0, 2]);
/// # Ok::<(), qtrace::Error>(())
/// ```
pub struct SplitByTime<S, F> {
    window_ns: u64,
    make: F,
    current: Option<(u64, S)>,
    parts: Vec<(u64, u64)>,
    total: ConvertStats,
    finished: bool,
}

/// The window, the parts written so far and the totals (not the sinks).
impl<S, F> std::fmt::Debug for SplitByTime<S, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SplitByTime")
            .field("window_ns", &self.window_ns)
            .field("current", &self.current.as_ref().map(|(k, _)| k))
            .field("parts", &self.parts)
            .field("total", &self.total)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl<S, F> SplitByTime<S, F>
where
    S: EventSink,
    F: FnMut(u64, u64) -> Result<S, ExportError>,
{
    /// Splits into windows of `window_ns` nanoseconds; `make(k, start_ns)`
    /// creates the sink of window `k`, which starts at `start_ns`.
    ///
    /// # Errors
    /// [`ExportError::InvalidExportOption`] if `window_ns` is 0.
    pub fn new(window_ns: u64, make: F) -> Result<Self, ExportError> {
        if window_ns == 0 {
            return Err(ExportError::InvalidExportOption {
                option: "SplitByTime window",
                reason: "must be at least 1 ns".to_string(),
            });
        }
        Ok(SplitByTime {
            window_ns,
            make,
            current: None,
            parts: Vec::new(),
            total: ConvertStats::default(),
            finished: false,
        })
    }

    /// The parts made so far: (window number, start in ns).
    pub fn parts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.parts.iter().copied()
    }

    fn close_current(&mut self) -> Result<(), ExportError> {
        if let Some((_, mut sink)) = self.current.take() {
            let s = sink.finish()?;
            add(&mut self.total, &s);
        }
        Ok(())
    }
}

/// Adds the counts of one part to the total (`sources`: the most of any part).
fn add(total: &mut ConvertStats, s: &ConvertStats) {
    total.events += s.events;
    total.hoops += s.hoops;
    total.lost = total.lost.saturating_add(s.lost);
    total.sources = total.sources.max(s.sources);
    total.unknown += s.unknown;
    total.packets += s.packets;
    total.clamped += s.clamped;
    total.slices += s.slices;
    total.unpaired += s.unpaired;
}

impl<S, F> EventSink for SplitByTime<S, F>
where
    S: EventSink,
    F: FnMut(u64, u64) -> Result<S, ExportError>,
{
    fn push(&mut self, e: &Event) -> Result<(), ExportError> {
        if self.finished {
            return Err(ExportError::ConverterFinished);
        }
        let window = e.time / self.window_ns;
        let later = self.current.as_ref().map_or(true, |(w, _)| window > *w);
        if later {
            self.close_current()?;
            let start = window * self.window_ns;
            let sink = (self.make)(window, start)?;
            self.parts.push((window, start));
            self.current = Some((window, sink));
        }
        match &mut self.current {
            Some((_, sink)) => sink.push(e),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<ConvertStats, ExportError> {
        if !self.finished {
            self.finished = true;
            self.close_current()?;
        }
        Ok(self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{system, Catalog};
    use crate::export::chrome::ChromeWriter;
    use std::cell::RefCell;
    use std::rc::Rc;

    #[test]
    fn each_part_is_a_complete_chrome_document() {
        let catalog = Catalog::builtin();
        type Buf = Rc<RefCell<Vec<u8>>>;
        let outputs: Rc<RefCell<Vec<Buf>>> = Rc::default();
        struct Shared(Rc<RefCell<Vec<u8>>>);
        impl std::io::Write for Shared {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.borrow_mut().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let outs = outputs.clone();
        let mut split = SplitByTime::new(1_000, |_, _| {
            let buf = Rc::new(RefCell::new(Vec::new()));
            outs.borrow_mut().push(buf.clone());
            ChromeWriter::new(&catalog, 0, Shared(buf))
        })
        .unwrap();
        for (t, task) in [(100, 1), (900, 2), (1_100, 3), (5_000, 4), (4_000, 5)] {
            split
                .push(&Event::new(t, system::SCHEDULE, 0, [task, 0]))
                .unwrap();
        }
        let stats = split.finish().unwrap();
        assert_eq!((stats.events, stats.slices, stats.sources), (5, 5, 1));
        assert_eq!(
            split.parts().collect::<Vec<_>>(),
            [(0, 0), (1, 1_000), (5, 5_000)]
        );
        let tasks: Vec<Vec<String>> = outputs
            .borrow()
            .iter()
            .map(|buf| {
                let doc: serde_json::Value = serde_json::from_slice(&buf.borrow()).unwrap();
                doc["traceEvents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["ph"] == "B")
                    .map(|e| e["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .collect();
        // The event at 4 µs came after the 5 µs one: it stays in that part.
        assert_eq!(
            tasks,
            [
                vec!["task 1", "task 2"],
                vec!["task 3"],
                vec!["task 4", "task 5"]
            ]
        );
        assert!(matches!(
            SplitByTime::new(0, |_, _| ChromeWriter::new(&catalog, 0, Vec::new())),
            Err(ExportError::InvalidExportOption { .. })
        ));
    }
}
