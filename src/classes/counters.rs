//! Which events of a catalog are counters (FORMAT.md 1.3.2): an event named
//! `S.counter` whose first argument name is a kind (`u64`, `i64`, `f64`)
//! and whose second, if any, is the unit. The counter is named `class:S`.
//! Used by `analyze` and the Perfetto and Chrome exports, so every reader
//! sees the same counters.

use qtrace_core::classes::counter::{CounterKind, COUNTER_SUFFIX};

use super::Catalog;
use crate::EventId;

/// One counter: its name (`class:S`), kind and unit (`""` for none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    pub name: String,
    pub kind: CounterKind,
    pub unit: String,
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
                unit: "tasks".into()
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
    }
}
