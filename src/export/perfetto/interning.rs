//! Per packet sequence state: its id, incremental clock, default track and
//! interning tables (event names, categories, annotation and slice names,
//! each written once in the `interned_data` of the packet that first uses
//! it), and switching the sequence written on.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use super::protobuf::{put_bytes, put_message, put_uint};
use super::schema::field;
use super::writer::PerfettoWriter;

/// One packet sequence: its id, incremental clock, default track and
/// interning tables (the trace processor keeps all of them per sequence).
#[derive(Debug, Default)]
pub(super) struct Sequence {
    /// `trusted_packet_sequence_id`.
    pub(super) id: u64,
    /// Time of the incremental clock (the latest delta-encoded packet).
    pub(super) clock: u64,
    /// `TrackEventDefaults.track_uuid`: events on it omit `track_uuid`.
    pub(super) track: Option<u64>,
    /// Per catalog event id: interned iids of its name and category.
    pub(super) event_iids: HashMap<u16, (u64, u64)>,
    /// Per catalog event id: interned iids of its two argument names (0: not yet).
    pub(super) arg_iids: HashMap<u16, [u64; 2]>,
    pub(super) names: Interner,
    pub(super) categories: Interner,
    pub(super) annotation_names: Interner,
    /// Slice names interned so far (at most `max_interned`).
    pub(super) slice_names: usize,
}

/// Interned strings of one kind.
#[derive(Debug, Default)]
pub(super) struct Interner {
    pub(super) ids: HashMap<String, u64>,
}

/// Appends an interned-string entry (`{iid, name}`) to `interned`.
fn put_interned(interned: &mut Vec<u8>, scratch: &mut Vec<u8>, kind: u32, iid: u64, name: &str) {
    put_message(interned, kind, scratch, |m| {
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
        scratch: &mut Vec<u8>,
    ) -> Option<u64> {
        if let Some(&iid) = self.ids.get(name) {
            return Some(iid);
        }
        if !allow_new {
            return None;
        }
        let iid = self.ids.len() as u64 + 1;
        self.ids.insert(name.to_string(), iid);
        put_interned(interned, scratch, kind, iid, name);
        Some(iid)
    }
}

impl<W: Write> PerfettoWriter<W> {
    /// Interns a slice name made by `name` (formatted into a reused string).
    pub(super) fn slice_name(&mut self, name: std::fmt::Arguments<'_>) -> Option<u64> {
        self.text.clear();
        let _ = self.text.write_fmt(name);
        let before = self.st.names.ids.len();
        let iid = self.st.names.get(
            &self.text,
            self.st.slice_names < self.options.max_interned,
            field::EVENT_NAMES,
            &mut self.interned,
            &mut self.scratch,
        );
        if self.st.names.ids.len() > before {
            self.st.slice_names += 1;
        }
        iid
    }

    /// The iid of a slice category (`task`, `interrupt`, `semaphore`).
    pub(super) fn category(&mut self, name: &str) -> u64 {
        self.st
            .categories
            .get(
                name,
                true,
                field::EVENT_CATEGORIES,
                &mut self.interned,
                &mut self.scratch,
            )
            .unwrap_or(0)
    }

    /// The sequence of `source` (the shared one if it has none).
    pub(super) fn sequence_of(&self, source: u32) -> usize {
        self.sources.get(&source).map_or(0, |&(_, seq)| seq)
    }

    /// Makes `seq` the packet sequence written on.
    pub(super) fn enter(&mut self, seq: usize) {
        if seq != self.cur {
            std::mem::swap(&mut self.st, &mut self.seqs[self.cur]);
            std::mem::swap(&mut self.st, &mut self.seqs[seq]);
            self.cur = seq;
        }
    }
}
