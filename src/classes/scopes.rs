//! Which events of a catalog are scopes, and how a reader pairs them
//! (FORMAT.md 1.3.1): an event named `S.begin` and an event named `S.end`
//! of the same class form the scope `class:S`; on each source, an `S.end`
//! closes the innermost open `S.begin`, and the scopes opened inside it
//! that are still open end with it (their own ends were lost). A scope
//! still open at the end of the trace ends there.
//!
//! Used by `analyze` and by the Perfetto and Chrome exports, so every
//! reader draws the same scopes.
//!
//! (An example: the test `pairs_a_begin_and_an_end`.)

use std::collections::BTreeMap;

use super::Catalog;
use crate::{Event, EventId};

/// The scopes of a catalog: for each, its name (`class:S`) and its two
/// events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScopeTable {
    /// `(name, begin, end)`, in the order of their begin events.
    scopes: Vec<(String, EventId, EventId)>,
    /// Per event number: `Some((scope, is_begin))`.
    by_event: Vec<Option<(u32, bool)>>,
}

impl ScopeTable {
    /// The scopes of `catalog`: every `S.begin` of a class with an `S.end`
    /// in the same class.
    pub fn new(catalog: &Catalog) -> Self {
        let mut table = ScopeTable {
            scopes: Vec::new(),
            by_event: vec![None; catalog.event_count()],
        };
        for class in catalog.classes() {
            for id in class.events() {
                let Some(e) = catalog.event(id) else { continue };
                let Some(stem) = e.name.strip_suffix(".begin") else {
                    continue;
                };
                let end_name = format!("{stem}.end");
                let end = class
                    .events()
                    .find(|&x| catalog.event_name(x) == Some(end_name.as_str()));
                if let Some(end) = end {
                    let index = table.scopes.len() as u32;
                    table
                        .scopes
                        .push((format!("{}:{stem}", class.name), id, end));
                    table.by_event[id.0 as usize] = Some((index, true));
                    table.by_event[end.0 as usize] = Some((index, false));
                }
            }
        }
        table
    }

    /// How many scopes.
    pub fn len(&self) -> usize {
        self.scopes.len()
    }

    /// Whether the catalog has no scope.
    #[cfg_attr(not(test), allow(dead_code))] // the tests use it
    pub fn is_empty(&self) -> bool {
        self.scopes.is_empty()
    }

    /// The name of scope `scope` (`class:S`).
    pub fn name(&self, scope: usize) -> Option<&str> {
        self.scopes.get(scope).map(|s| s.0.as_str())
    }

    /// The begin and end events of scope `scope`.
    pub fn events(&self, scope: usize) -> Option<(EventId, EventId)> {
        self.scopes.get(scope).map(|s| (s.1, s.2))
    }

    /// `Some((scope, true))` for a begin event, `Some((scope, false))` for
    /// an end event.
    pub fn lookup(&self, id: EventId) -> Option<(usize, bool)> {
        self.by_event
            .get(id.0 as usize)
            .copied()
            .flatten()
            .map(|(s, b)| (s as usize, b))
    }

    /// A tracker pairing this table's events, following at most
    /// `max_depth` open scopes per source (deeper begins are counted in
    /// [`ScopeTracker::unpaired`] and open nothing).
    pub fn tracker(&self, max_depth: usize) -> ScopeTracker {
        ScopeTracker {
            table: self.clone(),
            max_depth: max_depth.max(1),
            open: BTreeMap::new(),
            unpaired: 0,
        }
    }
}

/// One step of the pairing, in the order a writer draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Scope `scope` opens on `source` at `t` with the begin's `args`, at
    /// nesting `depth` (0: outermost); `first` on the source's first scope.
    Begin {
        /// The source (thread or CPU).
        source: u32,
        /// The scope's index in the [`ScopeTable`].
        scope: usize,
        /// How many scopes are open around it.
        depth: usize,
        /// The begin time (never earlier than the source's previous step).
        t: u64,
        /// The begin event's arguments.
        args: [u64; 2],
        /// Whether it is the first scope of this source.
        first: bool,
    },
    /// Scope `scope` on `source`, opened at `begin`, ends at `t`: `code` is
    /// the end event's argument 0, or `None` when no end event was seen (an
    /// outer scope ended, or the trace did).
    End {
        /// The source.
        source: u32,
        /// The scope's index.
        scope: usize,
        /// Its nesting depth.
        depth: usize,
        /// When it began.
        begin: u64,
        /// When it ends.
        t: u64,
        /// The end event's code, if it was seen.
        code: Option<u64>,
    },
}

/// Pairs scope events per source (see the [module documentation](self)).
#[derive(Clone, Debug)]
pub struct ScopeTracker {
    table: ScopeTable,
    max_depth: usize,
    /// Per source: the latest time, and the open scopes `(scope, begin)`,
    /// innermost last.
    open: BTreeMap<u32, (u64, Vec<(usize, u64)>)>,
    unpaired: u64,
}

impl ScopeTracker {
    /// The table it pairs.
    pub fn table(&self) -> &ScopeTable {
        &self.table
    }

    /// Ends that closed nothing, and begins past the depth limit.
    pub fn unpaired(&self) -> u64 {
        self.unpaired
    }

    /// Appends what `e` opens or closes to `steps` (nothing for an event
    /// that is not a scope's). A time earlier than the source's previous
    /// step is raised to it, so slices always nest.
    pub fn push(&mut self, e: &Event, steps: &mut Vec<Step>) {
        let Some((scope, is_begin)) = self.table.lookup(e.id) else {
            return;
        };
        let first = !self.open.contains_key(&e.source);
        let (last, stack) = self.open.entry(e.source).or_default();
        *last = (*last).max(e.time);
        let t = *last;
        if is_begin {
            if stack.len() >= self.max_depth {
                self.unpaired += 1;
                return;
            }
            steps.push(Step::Begin {
                source: e.source,
                scope,
                depth: stack.len(),
                t,
                args: e.args,
                first,
            });
            stack.push((scope, t));
            return;
        }
        let Some(at) = stack.iter().rposition(|&(s, _)| s == scope) else {
            self.unpaired += 1;
            return;
        };
        while stack.len() > at {
            let (s, begin) = stack.pop().expect("len > at");
            let depth = stack.len();
            let code = (depth == at).then_some(e.args[0]);
            steps.push(Step::End {
                source: e.source,
                scope: s,
                depth,
                begin,
                t,
                code,
            });
        }
    }

    /// Ends every open scope at `end` (the trace's last time), innermost
    /// first.
    pub fn finish(&mut self, end: u64, steps: &mut Vec<Step>) {
        for (&source, (last, stack)) in &mut self.open {
            let t = (*last).max(end);
            while let Some((scope, begin)) = stack.pop() {
                steps.push(Step::End {
                    source,
                    scope,
                    depth: stack.len(),
                    begin,
                    t,
                    code: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::ClassSpec;

    /// (Was the module's doc example while the module was public.)
    #[test]
    fn pairs_a_begin_and_an_end() {
        let mut catalog = Catalog::builtin();
        let app = catalog
            .define(
                ClassSpec::new("app", "the application")
                    .event("load.begin", "loading", &["file"])
                    .event("load.end", "loaded", &["code"]),
            )
            .unwrap();
        let (begin, end) = (
            app.event("load.begin").unwrap(),
            app.event("load.end").unwrap(),
        );
        let table = ScopeTable::new(&catalog);
        assert_eq!(table.name(0), Some("app:load"));

        let mut tracker = table.tracker(64);
        let mut steps = Vec::new();
        tracker.push(&Event::new(10, begin, 1, [7, 0]), &mut steps);
        tracker.push(&Event::new(30, end, 1, [0, 0]), &mut steps);
        assert_eq!(
            steps,
            [
                Step::Begin {
                    source: 1,
                    scope: 0,
                    depth: 0,
                    t: 10,
                    args: [7, 0],
                    first: true
                },
                Step::End {
                    source: 1,
                    scope: 0,
                    depth: 0,
                    begin: 10,
                    t: 30,
                    code: Some(0)
                },
            ]
        );
        assert!(!table.is_empty());
    }
}
