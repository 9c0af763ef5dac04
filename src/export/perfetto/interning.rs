//! Per packet sequence state: its id, incremental clock, default track and
//! interning tables (event names, categories, annotation and slice names,
//! each written once in the `interned_data` of the packet that first uses
//! it).

use std::collections::HashMap;

/// The tables are looked up on every event: FxHash (one multiplication a
/// word) instead of SipHash. Keys come from the trace's catalog and
/// arguments, so a hostile trace could make a table slow, never wrong.
type Fx = rustc_hash::FxBuildHasher;

use super::protobuf::{put_bytes, put_message, put_uint};
use super::schema::field;

/// One packet sequence: its id, incremental clock, default track and
/// interning tables (the trace processor keeps all of them per sequence).
#[derive(Debug, Default)]
pub(super) struct Sequence {
    /// `trusted_packet_sequence_id`.
    pub(super) id: u64,
    /// This sequence's packets not yet written (each with its `Trace.packet`
    /// key and length): a chunk holds one sequence's packets, which deflate
    /// better than the sequences interleaved (docs/benchmarks-history.md, "Perfetto:
    /// a chunk per sequence").
    pub(super) chunk: Vec<u8>,
    /// Time of the incremental clock (the latest delta-encoded packet).
    pub(super) clock: u64,
    /// `TrackEventDefaults.track_uuid`: events on it omit `track_uuid`.
    pub(super) track: Option<u64>,
    /// Per catalog event id: interned iids of its name and category (0: not yet).
    pub(super) event_iids: ById<(u64, u64)>,
    /// Per catalog event id: interned iids of its two argument names (0: not yet).
    pub(super) arg_iids: ById<[u64; 2]>,
    pub(super) names: Interner,
    pub(super) categories: Interner,
    pub(super) annotation_names: Interner,
    /// Slice names interned so far (at most `max_interned`).
    pub(super) slice_names: usize,
    /// The iids of numbered slice names already interned (`task 3`, …): a
    /// slice begin then neither formats nor hashes its name.
    pub(super) numbered: HashMap<(Prefix, u64), u64, Fx>,
    /// The iids of the slices' categories and of the semaphore slices'
    /// annotation names once interned (0: not yet), by slot of [`FIXED`]:
    /// a slice begin then hashes no string (hashing them was 4 % of the
    /// converting thread's instructions).
    pub(super) fixed: [u64; FIXED.len()],
}

/// The strings a slice begin or end interns on every sequence: its
/// category (slots 0-3, in the categories' table) and the semaphore
/// slices' annotation names (slots 4-5, in the annotation names' table).
const FIXED: [&str; 6] = [
    "task",
    "interrupt",
    "semaphore",
    "scope",
    "source",
    "signal source",
];

/// The slot of category `name` in [`FIXED`] (`None` for any other string).
#[inline]
pub(super) fn fixed_category(name: &str) -> Option<usize> {
    match name {
        "task" => Some(0),
        "interrupt" => Some(1),
        "semaphore" => Some(2),
        "scope" => Some(3),
        _ => None,
    }
}

/// The slot of annotation name `name` in [`FIXED`] (`None` for any other
/// string).
#[inline]
pub(super) fn fixed_annotation(name: &str) -> Option<usize> {
    match name {
        "source" => Some(4),
        "signal source" => Some(5),
        _ => None,
    }
}

#[cfg(test)]
#[test]
fn fixed_names_index_their_own_slot() {
    for (k, name) in FIXED.iter().enumerate() {
        assert_eq!(fixed_category(name).or(fixed_annotation(name)), Some(k));
    }
    // A category is never taken for an annotation name, nor the reverse
    // (an argument named `task`, a class named `source`).
    assert_eq!(fixed_annotation("task"), None);
    assert_eq!(fixed_category("source"), None);
    assert_eq!(fixed_category("user"), None);
}

/// The word before the number of a numbered slice name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Prefix {
    Task,
    Irq,
    Sem,
    Source,
}

impl Prefix {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Prefix::Task => "task",
            Prefix::Irq => "irq",
            Prefix::Sem => "sem",
            Prefix::Source => "source",
        }
    }
}

/// Event ids below this are looked up in a vector (the built-in classes'
/// ids are small); the others hashed, so that a trace of many sources and
/// large ids cannot make each sequence's table large.
const DENSE_IDS: usize = 256;

/// A value per catalog event id, looked up on every event: indexed for
/// small ids, hashed above [`DENSE_IDS`].
#[derive(Debug, Default)]
pub(super) struct ById<T> {
    dense: Vec<T>,
    sparse: HashMap<usize, T, Fx>,
}

impl<T: Copy + Default> ById<T> {
    /// The value of `id` (the default if none was set).
    #[inline]
    pub(super) fn get(&self, id: usize) -> T {
        match self.dense.get(id) {
            Some(&v) => v,
            None if id < DENSE_IDS => T::default(),
            None => self.sparse.get(&id).copied().unwrap_or_default(),
        }
    }

    pub(super) fn set(&mut self, id: usize, value: T) {
        if id < DENSE_IDS {
            if self.dense.len() <= id {
                self.dense.resize(id + 1, T::default());
            }
            self.dense[id] = value;
        } else {
            self.sparse.insert(id, value);
        }
    }
}

/// Interned strings of one kind.
#[derive(Debug, Default)]
pub(super) struct Interner {
    pub(super) ids: HashMap<String, u64, Fx>,
}

/// Appends an interned-string entry (`{iid, name}`) to `interned`.
fn put_interned(interned: &mut Vec<u8>, kind: u32, iid: u64, name: &str) {
    put_message(interned, kind, |m| {
        put_uint(m, field::IID, iid);
        put_bytes(m, field::INTERNED_NAME, name.as_bytes());
    });
}

impl Interner {
    /// The iid of `name`, interning it (into `interned`) if new and `allow_new`;
    /// `None` for a new name that may not be interned.
    pub(super) fn get(
        &mut self,
        name: &str,
        allow_new: bool,
        kind: u32,
        interned: &mut Vec<u8>,
    ) -> Option<u64> {
        if let Some(&iid) = self.ids.get(name) {
            return Some(iid);
        }
        if !allow_new {
            return None;
        }
        let iid = self.ids.len() as u64 + 1;
        self.ids.insert(name.to_string(), iid);
        put_interned(interned, kind, iid, name);
        Some(iid)
    }
}
