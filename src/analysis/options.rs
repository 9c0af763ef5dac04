//! What an analysis looks for: latencies between two events, how their
//! ends are matched, and the limits ([`AnalysisOptions`]).

use super::*;

/// Which events a latency measures, and how a start finds its end.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer, LatencySpec, MatchKey};
/// use qtrace::classes::{system, Catalog};
/// use qtrace::Event;
///
/// // From a task's activation to its dispatch, matched by task (argument 0).
/// let spec = LatencySpec { from: system::ACTIVATE, to: system::SCHEDULE, key: MatchKey::Arg(0) };
/// let options = AnalysisOptions { latency: Some(spec), ..AnalysisOptions::default() };
/// let mut a = Analyzer::new(&Catalog::builtin(), options);
/// for e in [
///     Event::new(0, system::ACTIVATE, 0, [1, 0]),
///     Event::new(50, system::ACTIVATE, 0, [2, 0]),
///     Event::new(250, system::SCHEDULE, 0, [2, 0]),
///     Event::new(400, system::SCHEDULE, 0, [1, 0]),
/// ] {
///     a.push(&e);
/// }
/// let latency = a.finish().latency.unwrap();
/// let s = latency.samples.summary();
/// assert_eq!((s.count, s.min, s.max), (2, 200, 400));
/// assert_eq!((latency.lossy, latency.unmatched_ends, latency.open_starts), (0, 0, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySpec {
    /// The event that starts an interval.
    pub from: EventId,
    /// The event that ends it.
    pub to: EventId,
    /// What a start and an end must share.
    pub key: MatchKey,
}

/// What a latency's start and end events must have in common.
///
/// ```
/// use qtrace::analysis::{AnalysisOptions, Analyzer, LatencySpec, MatchKey};
/// use qtrace::classes::{user, Catalog};
/// use qtrace::Event;
///
/// // A request (user0) and its reply (user1) on the same thread (source).
/// let spec = LatencySpec { from: user::USER0, to: user::USER1, key: MatchKey::Source };
/// let options = AnalysisOptions { latency: Some(spec), ..AnalysisOptions::default() };
/// let mut a = Analyzer::new(&Catalog::builtin(), options);
/// for e in [
///     Event::new(0, user::USER0, 7, [0, 0]),
///     Event::new(10, user::USER0, 8, [0, 0]),
///     Event::new(30, user::USER1, 8, [0, 0]), // thread 8: 20 ns
///     Event::new(100, user::USER1, 7, [0, 0]), // thread 7: 100 ns
/// ] {
///     a.push(&e);
/// }
/// let s = a.finish().latency.unwrap().samples.summary();
/// assert_eq!((s.count, s.min, s.max), (2, 20, 100));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKey {
    /// The same source (CPU or thread).
    Source,
    /// The same value of argument slot 0 or 1 (e.g. the task of system events).
    Arg(usize),
    /// Nothing: each end closes the oldest open start.
    Any,
}

/// Tuning of the analysis.
///
/// ```
/// use qtrace::analysis::AnalysisOptions;
///
/// let options = AnalysisOptions { interrupt_max_ns: 5_000, ..AnalysisOptions::default() };
/// assert_eq!(options.latency, None);
/// assert_eq!(AnalysisOptions::default().interrupt_max_ns, 1_000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalysisOptions {
    /// Longest interrupt handler, in ns (it ends earlier at the next event of
    /// the same source). Default 1 µs, as the exports.
    pub interrupt_max_ns: u64,
    /// An optional latency between two events.
    pub latency: Option<LatencySpec>,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            interrupt_max_ns: 1_000,
            latency: None,
        }
    }
}
