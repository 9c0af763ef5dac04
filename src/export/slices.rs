//! The slices the timeline exporters draw, derived once for all of them:
//! the [Chrome](super::chrome) and [Perfetto](super::perfetto) writers feed
//! their events to a [`Slices`] and draw the [`Edge`]s it returns, each in its
//! own format.
//!
//! - **Task running**: a `system:schedule` on a source begins the `task N`
//!   slice of that source (N = its `task` argument) and ends the one before;
//!   the last one ends at the end of the trace.
//! - **Interrupt**: a `lowlevel:interrupt` begins an `irq N` slice on its
//!   source that ends at the source's next event, at most
//!   [`SliceOptions::interrupt_max_ns`] later, so it nests in the task slice it
//!   interrupted.
//! - **Semaphore held**: a `semaphore:wait` or `semaphore:waitnb` of task T on
//!   semaphore S opens a wait of the pair (T, S); a `semaphore:signal` of the
//!   same pair closes the innermost open one (last in, first out). A blocking
//!   `wait` never signalled is held until the end of the trace; a `waitnb`
//!   never signalled most likely failed and draws nothing (counted as
//!   unpaired).
//!
//! - **Scope**: an `S.begin` and the `S.end` of the same class and source
//!   that closes it (FORMAT.md 1.3.1, paired by
//!   [`ScopeTracker`](crate::classes::scopes::ScopeTracker)): a slice named
//!   `class:S` on the source's *scope* track, apart from its task and
//!   interrupt slices (a task switch inside a scope would otherwise cross
//!   it); scopes of one source nest. An end that closes nothing is counted
//!   as unpaired; a scope still open at the end of the trace ends there.
//!
//! Times never go back on a source or on a pair: a time earlier than the
//! previous one there is raised to it, so every source's and every pair's
//! slices nest whatever the input order (merged or damaged files).
//!
//! # Memory
//!
//! Per source: the open task and pending interrupt; per pair: its open waits.
//! At most [`SliceOptions::max_tracks`] sources and as many pairs are
//! followed, and at most [`SliceOptions::max_open_waits`] open waits a pair;
//! what falls outside is counted in [`Slices::unpaired`] and the writers show
//! it as instants.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, VecDeque};

use super::by_source::BySource;
use crate::classes::scopes::{ScopeTable, ScopeTracker, Step};
use crate::classes::{lowlevel, semaphore, system};
use crate::Event;

/// Most scopes open at once on one source that the exporters follow.
pub(crate) const MAX_SCOPE_DEPTH: usize = 256;

/// Limits of the slice derivation, shared by the exporters' options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SliceOptions {
    /// Longest interrupt slice, in nanoseconds.
    pub interrupt_max_ns: u64,
    /// Most sources, and most task/semaphore pairs, followed.
    pub max_tracks: usize,
    /// Most open (unsignalled) waits per pair.
    pub max_open_waits: usize,
}

/// One step of a slice, in the order the writers must draw them. Times are
/// already raised so that they never go back on their source or pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// The `task` slice of `source` begins at `t` (the pushed schedule).
    TaskBegin { source: u32, task: u64, t: u64 },
    /// The `task` slice of `source` ends at `t`.
    TaskEnd { source: u32, task: u64, t: u64 },
    /// The `irq` slice of `source` begins at `t` (the pushed interrupt).
    IrqBegin { source: u32, irq: u64, t: u64 },
    /// The `irq` slice of `source` ends at `t`.
    IrqEnd { source: u32, irq: u64, t: u64 },
    /// A wait of pair `(task, sem)` opened at `t` (the pushed wait or
    /// waitnb). `pair` numbers the pair densely from 0 in order of first
    /// wait; `new` is true on its first wait.
    WaitOpen {
        task: u64,
        sem: u64,
        pair: usize,
        new: bool,
        t: u64,
        blocking: bool,
    },
    /// The innermost open wait of pair `pair`, opened at `begin` by a
    /// blocking `wait` or a `waitnb`, closed at `end`: by the pushed
    /// `semaphore:signal` (`signalled`) or, for a blocking wait, by the end
    /// of the trace.
    Held {
        task: u64,
        sem: u64,
        pair: usize,
        begin: u64,
        end: u64,
        blocking: bool,
        signalled: bool,
    },
    /// Scope `scope` (its index in the [`ScopeTable`]) opens on the scope
    /// track of `source` at `t`, `depth` scopes deep, with the begin's
    /// `args`; `first` when it is the source's first scope (the writer makes
    /// the track).
    ScopeBegin {
        source: u32,
        scope: usize,
        depth: usize,
        t: u64,
        args: [u64; 2],
        first: bool,
    },
    /// The innermost open scope of `source` (opened at `begin`) ends at
    /// `t`; `code` is its end event's argument 0, `None` when it ended with
    /// an outer scope or with the trace.
    ScopeEnd {
        source: u32,
        scope: usize,
        depth: usize,
        begin: u64,
        t: u64,
        code: Option<u64>,
    },
}

impl Edge {
    /// The edge of a scope step.
    fn scope(step: Step) -> Edge {
        match step {
            Step::Begin {
                source,
                scope,
                depth,
                t,
                args,
                first,
            } => Edge::ScopeBegin {
                source,
                scope,
                depth,
                t,
                args,
                first,
            },
            Step::End {
                source,
                scope,
                depth,
                begin,
                t,
                code,
            } => Edge::ScopeEnd {
                source,
                scope,
                depth,
                begin,
                t,
                code,
            },
        }
    }
}

/// Whether a source is followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Followed, seen before.
    Known,
    /// Followed from this event on: the writer makes its track.
    New,
    /// Past [`SliceOptions::max_tracks`]: its events draw no slices.
    Untracked,
}

/// Times on one source or pair never go back.
#[derive(Debug, Default)]
struct Clamp(u64);

impl Clamp {
    fn at(&mut self, t: u64) -> u64 {
        self.0 = self.0.max(t);
        self.0
    }
}

#[derive(Debug, Default)]
struct SourceState {
    clamp: Clamp,
    task: Option<u64>,
    /// The pending interrupt: (start, irq).
    irq: Option<(u64, u64)>,
}

#[derive(Debug)]
struct Pair {
    index: usize,
    clamp: Clamp,
    /// Open waits, innermost last: (time, blocking `wait` rather than `waitnb`).
    open: VecDeque<(u64, bool)>,
}

/// The slice derivation (see the [module documentation](self)).
#[derive(Debug)]
pub(crate) struct Slices {
    options: SliceOptions,
    sources: BySource<SourceState>,
    pairs: BTreeMap<(u64, u64), Pair>,
    unpaired: u64,
    scopes: ScopeTracker,
    steps: Vec<Step>,
}

impl Slices {
    pub(crate) fn new(options: SliceOptions) -> Self {
        Slices {
            options,
            sources: BySource::default(),
            pairs: BTreeMap::new(),
            unpaired: 0,
            scopes: ScopeTable::default().tracker(MAX_SCOPE_DEPTH),
            steps: Vec::new(),
        }
    }

    /// Draws the scopes of `table` too.
    pub(crate) fn with_scopes(mut self, table: &ScopeTable) -> Self {
        self.scopes = table.tracker(MAX_SCOPE_DEPTH);
        self
    }

    /// The scopes drawn.
    pub(crate) fn scope_table(&self) -> &ScopeTable {
        self.scopes.table()
    }

    fn scope_edges(&mut self, edges: &mut Vec<Edge>) {
        edges.extend(self.steps.drain(..).map(Edge::scope));
    }

    /// Events that lost their slice: schedules and interrupts of untracked
    /// sources, waits past the limits, signals with no open wait, waitnbs
    /// never signalled.
    pub(crate) fn unpaired(&self) -> u64 {
        self.unpaired + self.scopes.unpaired()
    }

    /// Registers `source` (call it for every event before [`push`](Self::push)).
    pub(crate) fn source(&mut self, source: u32) -> Source {
        if self.sources.contains_key(source) {
            Source::Known
        } else if self.sources.len() >= self.options.max_tracks {
            Source::Untracked
        } else {
            self.sources.insert(source, SourceState::default());
            Source::New
        }
    }

    /// Whether `source` is followed.
    pub(crate) fn knows(&self, source: u32) -> bool {
        self.sources.contains_key(source)
    }

    /// `t` raised to the latest time of `source` (which it becomes); `None`
    /// for an untracked source.
    pub(crate) fn at(&mut self, source: u32, t: u64) -> Option<u64> {
        self.sources.get_mut(source).map(|s| s.clamp.at(t))
    }

    /// Appends to `edges` what event `e` ends and begins.
    pub(crate) fn push(&mut self, e: &Event, edges: &mut Vec<Edge>) {
        let tracked = self.sources.contains_key(e.source);
        if tracked {
            self.close_irq(e.source, e.time, edges);
        }
        match e.id {
            system::SCHEDULE | lowlevel::INTERRUPT if !tracked => self.unpaired += 1,
            system::SCHEDULE => {
                self.close_task(e.source, e.time, edges);
                if let Some(st) = self.sources.get_mut(e.source) {
                    st.task = Some(e.args[0]);
                    edges.push(Edge::TaskBegin {
                        source: e.source,
                        task: e.args[0],
                        t: st.clamp.at(e.time),
                    });
                }
            }
            lowlevel::INTERRUPT => {
                if let Some(st) = self.sources.get_mut(e.source) {
                    st.irq = Some((e.time, e.args[0]));
                    edges.push(Edge::IrqBegin {
                        source: e.source,
                        irq: e.args[0],
                        t: st.clamp.at(e.time),
                    });
                }
            }
            semaphore::WAIT => self.wait(e, true, edges),
            semaphore::WAITNB => self.wait(e, false, edges),
            semaphore::SIGNAL => self.signal(e, edges),
            _ => {
                self.scopes.push(e, &mut self.steps);
                self.scope_edges(edges);
            }
        }
    }

    /// Appends the ends of every open slice at `end` (the trace's last time).
    pub(crate) fn finish(&mut self, end: u64, edges: &mut Vec<Edge>) {
        let sources: Vec<u32> = self.sources.keys().collect();
        for s in sources {
            self.close_irq(s, end, edges);
            self.close_task(s, end, edges);
        }
        for (&(task, sem), p) in &mut self.pairs {
            while let Some((begin, blocking)) = p.open.pop_back() {
                if blocking {
                    edges.push(Edge::Held {
                        task,
                        sem,
                        pair: p.index,
                        begin,
                        end: end.max(begin),
                        blocking,
                        signalled: false,
                    });
                } else {
                    self.unpaired += 1;
                }
            }
        }
        self.scopes.finish(end, &mut self.steps);
        self.scope_edges(edges);
    }

    fn close_irq(&mut self, source: u32, t: u64, edges: &mut Vec<Edge>) {
        let cap = self.options.interrupt_max_ns;
        if let Some(st) = self.sources.get_mut(source) {
            if let Some((start, irq)) = st.irq.take() {
                let t = st.clamp.at(t.min(start.saturating_add(cap)));
                edges.push(Edge::IrqEnd { source, irq, t });
            }
        }
    }

    fn close_task(&mut self, source: u32, t: u64, edges: &mut Vec<Edge>) {
        if let Some(st) = self.sources.get_mut(source) {
            if let Some(task) = st.task.take() {
                let t = st.clamp.at(t);
                edges.push(Edge::TaskEnd { source, task, t });
            }
        }
    }

    fn wait(&mut self, e: &Event, blocking: bool, edges: &mut Vec<Edge>) {
        let (task, sem) = (e.args[0], e.args[1]);
        let count = self.pairs.len();
        // One walk of the map, whether the pair is new or not.
        let (p, new) = match self.pairs.entry((task, sem)) {
            Entry::Occupied(p) => (p.into_mut(), false),
            Entry::Vacant(_) if count >= self.options.max_tracks => {
                self.unpaired += 1;
                return;
            }
            Entry::Vacant(v) => {
                let p = v.insert(Pair {
                    index: count,
                    clamp: Clamp::default(),
                    open: VecDeque::new(),
                });
                (p, true)
            }
        };
        if p.open.len() >= self.options.max_open_waits.max(1) {
            self.unpaired += 1;
            if p.open.front().is_some_and(|&(_, b)| !b) {
                // Forget the oldest open waitnb (most likely it failed).
                p.open.pop_front();
            } else {
                // The oldest is a blocking wait (a writer may have drawn its
                // begin): this wait opens nothing.
                return;
            }
        }
        let t = p.clamp.at(e.time);
        p.open.push_back((t, blocking));
        edges.push(Edge::WaitOpen {
            task,
            sem,
            pair: p.index,
            new,
            t,
            blocking,
        });
    }

    fn signal(&mut self, e: &Event, edges: &mut Vec<Edge>) {
        let (task, sem) = (e.args[0], e.args[1]);
        let held = self.pairs.get_mut(&(task, sem)).and_then(|p| {
            let (begin, blocking) = p.open.pop_back()?;
            Some(Edge::Held {
                task,
                sem,
                pair: p.index,
                begin,
                end: p.clamp.at(e.time),
                blocking,
                signalled: true,
            })
        });
        match held {
            Some(edge) => edges.push(edge),
            None => self.unpaired += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::user;

    const OPTIONS: SliceOptions = SliceOptions {
        interrupt_max_ns: 1_000,
        max_tracks: 8,
        max_open_waits: 4,
    };

    /// Every edge of `events` (each source registered first, as the writers
    /// do), then of the finish at the last event's time, and the unpaired count.
    fn run(options: SliceOptions, events: &[Event]) -> (Vec<Edge>, u64) {
        let mut s = Slices::new(options);
        let mut edges = Vec::new();
        let mut end = 0;
        for e in events {
            end = end.max(e.time);
            s.source(e.source);
            s.push(e, &mut edges);
        }
        s.finish(end, &mut edges);
        (edges, s.unpaired())
    }

    #[test]
    fn interrupt_nests_in_the_task_slice_it_interrupted() {
        let (edges, unpaired) = run(
            OPTIONS,
            &[
                Event::new(100, system::SCHEDULE, 0, [3, 0]),
                Event::new(200, lowlevel::INTERRUPT, 0, [9, 0]),
                Event::new(5_000, user::USER0, 0, [1, 0]), // past the 1 µs cap
                Event::new(6_000, lowlevel::INTERRUPT, 0, [9, 0]),
                Event::new(6_300, system::SCHEDULE, 0, [4, 0]), // ends irq and task 3
            ],
        );
        assert_eq!(
            edges,
            [
                Edge::TaskBegin {
                    source: 0,
                    task: 3,
                    t: 100
                },
                Edge::IrqBegin {
                    source: 0,
                    irq: 9,
                    t: 200
                },
                Edge::IrqEnd {
                    source: 0,
                    irq: 9,
                    t: 1_200
                },
                Edge::IrqBegin {
                    source: 0,
                    irq: 9,
                    t: 6_000
                },
                Edge::IrqEnd {
                    source: 0,
                    irq: 9,
                    t: 6_300
                },
                Edge::TaskEnd {
                    source: 0,
                    task: 3,
                    t: 6_300
                },
                Edge::TaskBegin {
                    source: 0,
                    task: 4,
                    t: 6_300
                },
                Edge::TaskEnd {
                    source: 0,
                    task: 4,
                    t: 6_300
                },
            ]
        );
        assert_eq!(unpaired, 0);
    }

    #[test]
    fn unmatched_ends_draw_nothing_and_are_counted() {
        let (edges, unpaired) = run(
            OPTIONS,
            &[
                Event::new(10, semaphore::SIGNAL, 0, [1, 2]), // no wait at all
                Event::new(20, semaphore::WAITNB, 0, [1, 2]),
                Event::new(30, semaphore::SIGNAL, 1, [1, 3]), // another semaphore
                Event::new(40, semaphore::SIGNAL, 1, [1, 2]), // pairs with the waitnb
                Event::new(50, semaphore::SIGNAL, 1, [1, 2]), // nothing left open
                Event::new(60, semaphore::WAITNB, 0, [1, 2]), // never signalled
            ],
        );
        let pair = |t, new| Edge::WaitOpen {
            task: 1,
            sem: 2,
            pair: 0,
            new,
            t,
            blocking: false,
        };
        assert_eq!(
            edges,
            [
                pair(20, true),
                Edge::Held {
                    task: 1,
                    sem: 2,
                    pair: 0,
                    begin: 20,
                    end: 40,
                    blocking: false,
                    signalled: true,
                },
                pair(60, false),
            ]
        );
        // Three signals with nothing open, one waitnb never signalled.
        assert_eq!(unpaired, 4);
    }

    #[test]
    fn waits_pair_last_in_first_out_and_a_loss_between_keeps_them_open() {
        let (edges, unpaired) = run(
            OPTIONS,
            &[
                Event::new(100, semaphore::WAIT, 0, [5, 1]),
                Event::new(200, semaphore::WAIT, 1, [5, 1]),
                // A loss between begin and end: the waits stay open, the
                // hoops record draws nothing.
                Event::new(
                    300,
                    crate::classes::tracer::HOOPS,
                    crate::model::event::TRACER_SOURCE,
                    [7, 0],
                ),
                Event::new(250, semaphore::SIGNAL, 0, [5, 1]), // back in time: raised
                Event::new(400, semaphore::WAIT, 0, [6, 1]),
            ],
        );
        let held = |begin, end, signalled| Edge::Held {
            task: 5,
            sem: 1,
            pair: 0,
            begin,
            end,
            blocking: true,
            signalled,
        };
        assert_eq!(
            edges,
            [
                Edge::WaitOpen {
                    task: 5,
                    sem: 1,
                    pair: 0,
                    new: true,
                    t: 100,
                    blocking: true
                },
                Edge::WaitOpen {
                    task: 5,
                    sem: 1,
                    pair: 0,
                    new: false,
                    t: 200,
                    blocking: true
                },
                held(200, 250, true), // the innermost
                Edge::WaitOpen {
                    task: 6,
                    sem: 1,
                    pair: 1,
                    new: true,
                    t: 400,
                    blocking: true
                },
                held(100, 400, false), // held to the end of the trace
                Edge::Held {
                    task: 6,
                    sem: 1,
                    pair: 1,
                    begin: 400,
                    end: 400,
                    blocking: true,
                    signalled: false,
                },
            ]
        );
        assert_eq!(unpaired, 0);
    }

    #[test]
    fn limits_count_what_loses_its_slice() {
        let options = SliceOptions {
            max_tracks: 1,
            max_open_waits: 1,
            ..OPTIONS
        };
        let (edges, unpaired) = run(
            options,
            &[
                Event::new(1, system::SCHEDULE, 0, [1, 0]),
                Event::new(2, system::SCHEDULE, 1, [2, 0]), // second source: untracked
                Event::new(3, semaphore::WAITNB, 0, [1, 1]),
                Event::new(4, semaphore::WAIT, 0, [1, 1]), // full: forgets the waitnb
                Event::new(5, semaphore::WAIT, 0, [1, 1]), // full of a blocking wait
                Event::new(6, semaphore::WAIT, 0, [2, 2]), // second pair: untracked
            ],
        );
        assert_eq!(
            edges,
            [
                Edge::TaskBegin {
                    source: 0,
                    task: 1,
                    t: 1
                },
                Edge::WaitOpen {
                    task: 1,
                    sem: 1,
                    pair: 0,
                    new: true,
                    t: 3,
                    blocking: false
                },
                Edge::WaitOpen {
                    task: 1,
                    sem: 1,
                    pair: 0,
                    new: false,
                    t: 4,
                    blocking: true
                },
                Edge::TaskEnd {
                    source: 0,
                    task: 1,
                    t: 6
                },
                Edge::Held {
                    task: 1,
                    sem: 1,
                    pair: 0,
                    begin: 4,
                    end: 6,
                    blocking: true,
                    signalled: false,
                },
            ]
        );
        assert_eq!(unpaired, 4);
    }
}
