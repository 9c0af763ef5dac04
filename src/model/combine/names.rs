//! The run-time names a trace carries (sources, tasks, events), gathered
//! by readers ([`Names`]).

use crate::model::event::{Event, EventId};

use super::{
    is_combine, Assembler, Item, Payload, PayloadState, NAME_EVENT, NAME_EVENT_ID, NAME_SOURCE,
    NAME_TASK,
};

/// Names learned from name records ([`NAME_EVENT`]): sources and task ids,
/// at most [`Names::MAX`] of each (later ones are ignored and counted).
///
/// ```
/// use qtrace::combine::{Names, Run, NAME_SOURCE};
///
/// let run = Run::name(0, 0, NAME_SOURCE, 3, b"worker-3");
/// let names = Names::gather((0..run.len()).map(|i| run.record(i)));
/// assert_eq!(names.source(3), Some("worker-3"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Names {
    sources: std::collections::HashMap<u32, String>,
    tasks: std::collections::HashMap<u64, String>,
    events: std::collections::HashMap<u16, String>,
    /// Names ignored because a table was full.
    pub ignored: u64,
}

impl Names {
    /// Names kept per kind, at most.
    pub const MAX: usize = 65536;

    /// No names.
    pub fn new() -> Self {
        Names::default()
    }

    /// Learns the name `p` carries if it is a whole name record; returns
    /// `Some((kind, subject))` for any name record (whole or not), `None` for
    /// other payloads. A cut name record teaches nothing.
    pub fn learn(&mut self, p: &Payload) -> Option<(u8, u64)> {
        let (kind, subject) = p.name_of()?;
        if p.state == PayloadState::Complete {
            let name = p.text().into_owned();
            let full = match kind {
                NAME_SOURCE => insert(&mut self.sources, subject as u32, name),
                NAME_TASK => insert(&mut self.tasks, subject, name),
                NAME_EVENT_ID => insert(&mut self.events, subject as u16, name),
                _ => false,
            };
            self.ignored += full as u64;
        }
        Some((kind, subject))
    }

    /// Every name the name records among `records` carry (a first pass over
    /// a trace, for a reader that needs names before the records they name).
    pub fn gather(records: impl IntoIterator<Item = Event>) -> Self {
        let mut names = Names::new();
        let mut asm = Assembler::new();
        let mut learn = |item: Item| {
            if let Item::Payload(p) = item {
                names.learn(&p);
            }
        };
        for e in records {
            if is_combine(&e) && e.id == NAME_EVENT {
                asm.push(e, &mut learn);
            }
        }
        asm.finish(&mut learn);
        names
    }

    /// Whether no name was learned.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty() && self.tasks.is_empty() && self.events.is_empty()
    }

    /// The name of `source`, if one was learned.
    pub fn source(&self, source: u32) -> Option<&str> {
        self.sources.get(&source).map(String::as_str)
    }

    /// The run-time name of event `id`, if one was learned.
    pub fn event(&self, id: EventId) -> Option<&str> {
        self.events.get(&id.0).map(String::as_str)
    }

    /// The name of task `task`, if one was learned.
    pub fn task(&self, task: u64) -> Option<&str> {
        self.tasks.get(&task).map(String::as_str)
    }
}

/// Inserts unless the table is full (a new key beyond [`Names::MAX`]);
/// returns whether it was full.
fn insert<K: std::hash::Hash + Eq>(
    map: &mut std::collections::HashMap<K, String>,
    k: K,
    v: String,
) -> bool {
    if map.len() >= Names::MAX && !map.contains_key(&k) {
        return true;
    }
    map.insert(k, v);
    false
}
