//! Which events of a catalog are flows, and how a reader pairs their
//! records into instances (FORMAT.md 1.3.3): in one class, an event
//! `S.flow_begin` and an event `S.flow_end` (and, if there is one,
//! `S.flow_step`), each with the argument names `flow` and `origin`, form
//! the flow `class:S`. One instance is the pair (origin, id) of a record's
//! `[arg1, arg0]`: a begin opens it, steps pass through it, an end closes
//! it, from whatever source each is logged.
//!
//! Used by the Perfetto and Chrome exports, so both draw the same arrows.

use std::collections::BTreeMap;

use qtrace_core::classes::flow::{FlowId, FlowPhase};

use super::Catalog;
use crate::{Event, EventId};

/// Most instances open at once that a reader follows; a begin past it
/// opens nothing (counted as unpaired).
pub const MAX_OPEN_FLOWS: usize = 1 << 16;

/// The flows of a catalog: their names (`class:S`) and, per event, its flow
/// and phase.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowTable {
    names: Vec<String>,
    by_event: Vec<Option<(u32, FlowPhase)>>,
}

impl FlowTable {
    /// The flows of `catalog`: every `S.flow_begin` of a class with an
    /// `S.flow_end` in the same class, both with the flow argument names.
    pub fn new(catalog: &Catalog) -> Self {
        let mut table = FlowTable {
            names: Vec::new(),
            by_event: vec![None; catalog.event_count()],
        };
        for class in catalog.classes() {
            // The class's flow events by (stem, phase): one walk, so a
            // catalog of many events costs no more than its size.
            let mut by_name = std::collections::HashMap::new();
            for id in class.events() {
                if let Some(key) = catalog.flow_of(id) {
                    by_name.entry(key).or_insert(id);
                }
            }
            let find = |stem: &str, phase: FlowPhase| by_name.get(&(stem, phase)).copied();
            for id in class.events() {
                let Some((stem, FlowPhase::Begin)) = catalog.flow_of(id) else {
                    continue;
                };
                if find(stem, FlowPhase::Begin) != Some(id) {
                    continue; // a second event of the same name
                }
                let Some(end) = find(stem, FlowPhase::End) else {
                    continue;
                };
                let index = table.names.len() as u32;
                table.by_event[id.0 as usize] = Some((index, FlowPhase::Begin));
                table.by_event[end.0 as usize] = Some((index, FlowPhase::End));
                if let Some(step) = find(stem, FlowPhase::Step) {
                    table.by_event[step.0 as usize] = Some((index, FlowPhase::Step));
                }
                table.names.push(format!("{}:{stem}", class.name));
            }
        }
        table
    }

    /// Whether the catalog has no flow.
    #[cfg_attr(not(test), allow(dead_code))] // the tests use it
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Flow `i`'s name (`class:S`).
    pub fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    /// The flow and phase of event `id`, if it is a flow event.
    #[inline]
    pub fn lookup(&self, id: EventId) -> Option<(usize, FlowPhase)> {
        self.by_event
            .get(id.0 as usize)
            .copied()
            .flatten()
            .map(|(i, p)| (i as usize, p))
    }

    /// A tracker that pairs this table's records.
    pub fn tracker(self) -> FlowTracker {
        FlowTracker {
            table: self,
            open: BTreeMap::new(),
            next: 1,
            unpaired: 0,
        }
    }
}

/// One flow record, paired: its flow, phase and instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowStep {
    /// Its flow's index in the [`FlowTable`].
    pub flow: usize,
    pub phase: FlowPhase,
    /// The (origin, id) the record names.
    pub id: FlowId,
    /// The instance's number, from 1 in the order instances begin (what
    /// the Perfetto export writes as the flow id); `None` for a step or end
    /// that no open instance takes, or a begin past [`MAX_OPEN_FLOWS`].
    pub instance: Option<u64>,
}

/// Pairs flow records into instances (see the [module documentation](self)).
#[derive(Debug)]
pub struct FlowTracker {
    table: FlowTable,
    /// Open instances: (flow, origin, id) → number.
    open: BTreeMap<(usize, u32, u64), u64>,
    next: u64,
    unpaired: u64,
}

impl FlowTracker {
    /// The flows followed.
    pub fn table(&self) -> &FlowTable {
        &self.table
    }

    /// Flow records no instance took: steps and ends of no open instance,
    /// begins past [`MAX_OPEN_FLOWS`].
    pub fn unpaired(&self) -> u64 {
        self.unpaired
    }

    /// Instances begun and not ended (so far).
    #[cfg_attr(not(test), allow(dead_code))] // the tests use it
    pub fn open(&self) -> usize {
        self.open.len()
    }

    /// The flow step `e` is, if it is a flow record. A begin of an instance
    /// already open begins a new one (the old one never ends).
    pub fn push(&mut self, e: &Event) -> Option<FlowStep> {
        let (flow, phase) = self.table.lookup(e.id)?;
        let id = FlowId::from_args(e.args);
        let key = (flow, id.origin, id.id);
        let instance = match phase {
            FlowPhase::Begin => {
                if self.open.len() >= MAX_OPEN_FLOWS && !self.open.contains_key(&key) {
                    None
                } else {
                    let n = self.next;
                    self.next += 1;
                    self.open.insert(key, n);
                    Some(n)
                }
            }
            FlowPhase::Step => self.open.get(&key).copied(),
            FlowPhase::End => self.open.remove(&key),
        };
        if instance.is_none() {
            self.unpaired += 1;
        }
        Some(FlowStep {
            flow,
            phase,
            id,
            instance,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::ClassSpec;

    #[test]
    fn pairs_instances_by_flow_origin_and_id() {
        let mut catalog = Catalog::builtin();
        let c = catalog
            .define(
                ClassSpec::new("net", "network")
                    .flow("packet", "a packet")
                    .event("rx.flow_begin", "wrong names", &["flow"])
                    .event("half.flow_begin", "no end", &["flow", "origin"])
                    .flow("call", "a call"),
            )
            .unwrap();
        let ev = |n: &str| c.event(n).unwrap();
        let mut t = FlowTable::new(&catalog).tracker();
        assert_eq!(t.table().name(0), Some("net:packet"));
        assert_eq!(t.table().name(1), Some("net:call"));
        assert_eq!(t.table().name(2), None);
        assert_eq!(t.table().lookup(ev("rx.flow_begin")), None);
        assert_eq!(t.table().lookup(ev("half.flow_begin")), None);
        let (b, s, e) = (
            ev("packet.flow_begin"),
            ev("packet.flow_step"),
            ev("packet.flow_end"),
        );
        let mut run = |id, src, args: [u64; 2]| {
            t.push(&Event::new(0, id, src, args))
                .map(|st| (st.flow, st.phase, st.instance))
        };
        // Source 0 and source 1 both choose id 5: two instances.
        assert_eq!(run(b, 0, [5, 0]), Some((0, FlowPhase::Begin, Some(1))));
        assert_eq!(run(b, 1, [5, 1]), Some((0, FlowPhase::Begin, Some(2))));
        // A step on source 2 of (origin 0, id 5); an end on source 3.
        assert_eq!(run(s, 2, [5, 0]), Some((0, FlowPhase::Step, Some(1))));
        assert_eq!(run(e, 3, [5, 0]), Some((0, FlowPhase::End, Some(1))));
        // Ended: a second end and a step take nothing.
        assert_eq!(run(e, 3, [5, 0]), Some((0, FlowPhase::End, None)));
        assert_eq!(run(s, 3, [5, 0]), Some((0, FlowPhase::Step, None)));
        // Another flow with the same (origin, id) is another instance.
        assert_eq!(
            run(ev("call.flow_begin"), 1, [5, 1]),
            Some((1, FlowPhase::Begin, Some(3)))
        );
        assert_eq!(run(e, 0, [5, 1]), Some((0, FlowPhase::End, Some(2))));
        assert_eq!(run(ev("rx.flow_begin"), 0, [1, 0]), None);
        assert_eq!((t.unpaired(), t.open()), (2, 1));
        assert!(FlowTable::new(&Catalog::builtin()).is_empty());
    }
}
