//! Which events of a catalog are counters (FORMAT.md 1.3.2): an event named
//! `S.counter` whose first argument name is a kind (`u64`, `i64`, `f64`)
//! and whose second, if any, is the unit. The counter is named `class:S`.
//! Used by `analyze` and the Perfetto and Chrome exports, so every reader
//! sees the same counters.

use qtrace_core::classes::counter::{CounterKind, COUNTER_SUFFIX};

use super::Catalog;
use crate::{Event, EventId};

/// One counter: its name (`class:S`), kind and unit (`""` for none), and
/// whether it is a queue counter (FORMAT.md 1.3.4: the reserved class
/// `qtrace`), whose records' `arg1` is the sampling queue's handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    pub name: String,
    pub kind: CounterKind,
    pub unit: String,
    pub per_queue: bool,
}

/// The reserved class of the queue counters (FORMAT.md 1.3.4).
pub(crate) const QUEUE_COUNTERS_CLASS: &str = "qtrace";

impl CounterInfo {
    /// The queue whose series record `e` (of this counter) is in: its
    /// `arg1` for a queue counter (one series per queue), else `None`
    /// (`arg1` is ignored).
    #[inline]
    pub fn queue(&self, e: &Event) -> Option<u64> {
        self.per_queue.then_some(e.args[1])
    }

    /// The name of the series of `queue` (as [`CounterInfo::queue`] says):
    /// `class:S`, and ` (queue N)` after it for a queue counter's.
    pub fn series_name(&self, queue: Option<u64>) -> String {
        match queue {
            Some(q) => format!("{} (queue {q})", self.name),
            None => self.name.clone(),
        }
    }
}

/// The counters of a catalog, in event order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CounterTable {
    counters: Vec<CounterInfo>,
    /// Per event number: its counter's index.
    by_event: Vec<Option<u32>>,
}

impl CounterTable {
    /// The counters of `catalog`.
    pub fn new(catalog: &Catalog) -> Self {
        let mut table = CounterTable {
            counters: Vec::new(),
            by_event: vec![None; catalog.event_count()],
        };
        for e in catalog.events() {
            let Some((kind, unit)) = catalog.counter_of(e.id) else {
                continue;
            };
            let stem = &e.name[..e.name.len() - COUNTER_SUFFIX.len()];
            let class = catalog.class(e.class).map_or("", |c| c.name.as_str());
            table.by_event[e.id.0 as usize] = Some(table.counters.len() as u32);
            table.counters.push(CounterInfo {
                name: format!("{class}:{stem}"),
                kind,
                unit: unit.to_string(),
                per_queue: class == QUEUE_COUNTERS_CLASS,
            });
        }
        table
    }

    /// Whether the catalog has no counter.
    #[cfg_attr(not(test), allow(dead_code))] // the tests use it
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// The counters, in event order.
    pub fn counters(&self) -> &[CounterInfo] {
        &self.counters
    }

    /// The index of the counter event `id` is, if it is one.
    #[inline]
    pub fn lookup(&self, id: EventId) -> Option<usize> {
        self.by_event
            .get(id.0 as usize)
            .copied()
            .flatten()
            .map(|i| i as usize)
    }

    /// Counter `i`.
    pub fn get(&self, i: usize) -> Option<&CounterInfo> {
        self.counters.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::ClassSpec;

    #[test]
    fn finds_counters_by_name_and_kind() {
        let mut catalog = Catalog::builtin();
        let c = catalog
            .define(
                ClassSpec::new("sched", "scheduler")
                    .counter("ready", "ready tasks", CounterKind::U64, "tasks")
                    .event("tick", "a tick", &["n"])
                    // Not counters: no kind, or a bare suffix.
                    .event("odd.counter", "no kind", &["len"])
                    .event(".counter", "no stem", &["u64"])
                    .counter("load", "load", CounterKind::F64, ""),
            )
            .unwrap();
        let t = CounterTable::new(&catalog);
        assert_eq!(t.counters().len(), 2);
        assert_eq!(
            t.get(0),
            Some(&CounterInfo {
                name: "sched:ready".into(),
                kind: CounterKind::U64,
                unit: "tasks".into(),
                per_queue: false,
            })
        );
        assert_eq!(t.get(1).unwrap().name, "sched:load");
        assert_eq!(t.get(1).unwrap().unit, "");
        assert_eq!(t.lookup(c.event("ready.counter").unwrap()), Some(0));
        assert_eq!(t.lookup(c.event("load.counter").unwrap()), Some(1));
        assert_eq!(t.lookup(c.event("odd.counter").unwrap()), None);
        assert_eq!(t.lookup(c.event(".counter").unwrap()), None);
        assert_eq!(t.lookup(c.event("tick").unwrap()), None);
        assert!(CounterTable::new(&Catalog::builtin()).is_empty());
        // The reserved class's counters have one series per queue (arg1).
        let q = catalog
            .define(ClassSpec::new(QUEUE_COUNTERS_CLASS, "queues").counter(
                "queue.fill",
                "fill",
                CounterKind::U64,
                "events",
            ))
            .unwrap();
        let t = CounterTable::new(&catalog);
        let i = t.lookup(q.event("queue.fill.counter").unwrap()).unwrap();
        let info = t.get(i).unwrap();
        let e = Event::new(
            5,
            q.event("queue.fill.counter").unwrap(),
            0xffff_ffff,
            [7, 3],
        );
        assert_eq!(info.queue(&e), Some(3));
        assert_eq!(
            info.series_name(info.queue(&e)),
            "qtrace:queue.fill (queue 3)"
        );
        let e = Event::new(5, c.event("ready.counter").unwrap(), 1, [7, 3]);
        assert_eq!(t.get(0).unwrap().queue(&e), None);
        assert_eq!(t.get(0).unwrap().series_name(None), "sched:ready");
    }
}
