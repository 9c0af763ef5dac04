//! Combine runs: payloads longer than one record (strings, bytes, names),
//! carried as consecutive 32-byte records flagged begin / continuation / end
//! in the record's `flags` field (QNX Neutrino's *combine events*).
//!
//! A run of a payload of `len` bytes is `1 + ⌈len / 16⌉` records, all with
//! the same `time`, `id` and `source`:
//!
//! - the **begin** record (index 0): `flags = COMBINE | BEGIN` (`| END` when
//!   the payload is empty), `args[0] = checksum << 32 | logged length`,
//!   `args[1]` = the event's own argument (0 for [`crate::Tracer::log_str`]);
//! - **continuation** records (index 1, 2, …): `flags = COMBINE | index`
//!   (`| END` on the last), `args` = the next 16 payload bytes, big-endian
//!   (the first byte is the top byte of `args[0]`), zero-padded in the last.
//!
//! The logged length may exceed [`MAX_PAYLOAD`]: the payload was then cut to
//! its first [`MAX_PAYLOAD`] bytes when it was logged, and readers say so. The
//! checksum (FORMAT.md §1.8) covers the stored bytes, so a reader that
//! reassembled a run from every record can prove it is the payload that was
//! logged. FORMAT.md §1.8 is the specification.
//!
//! In this folder: the writer's side (`run.rs`), the reader's reassembly
//! (`assembler.rs`), the names a trace carries as readers gather them
//! (`names.rs`), and the names the tracer keeps for its saved files
//! (`recorded.rs`); the flags and limits of FORMAT.md §1.8 here.
//!
//! Readers reassemble runs with an [`Assembler`]: a run cut by a loss, an
//! overwrite (a circular queue may evict a run's head) or a crash comes out
//! as a [`Payload`] whose [`PayloadState`] says what is missing; it is never
//! shown as a complete payload.
//!
//! ```
//! use qtrace::combine::{Assembler, Item, PayloadState, Run};
//! use qtrace::EventId;
//!
//! let run = Run::new(1_000, EventId(0x17), 3, 7, b"hello, combine events");
//! assert_eq!(run.len(), 3); // the begin record and two of 16 bytes
//! let mut items = Vec::new();
//! let mut asm = Assembler::new();
//! for i in 0..run.len() {
//!     asm.push(run.record(i), &mut |item| items.push(item));
//! }
//! asm.finish(&mut |item| items.push(item));
//! let Item::Payload(p) = &items[0] else { panic!() };
//! assert_eq!((p.bytes.as_slice(), p.arg, p.state), (&b"hello, combine events"[..], Some(7), PayloadState::Complete));
//!
//! // The same run without its begin record (overwritten): partial, marked.
//! let mut items = Vec::new();
//! for i in 1..run.len() {
//!     asm.push(run.record(i), &mut |item| items.push(item));
//! }
//! let Item::Payload(p) = &items[0] else { panic!() };
//! assert_eq!(p.state, PayloadState::Cut { received: 2, expected: None });
//! ```

use crate::model::event::{Event, EventId};

mod assembler;
mod names;
mod recorded;
mod run;

pub use assembler::{Assembler, Item, Payload, PayloadState};
pub use names::Names;
pub use recorded::RecordedNames;
pub use run::Run;

/// `flags` bit 14: the record belongs to a combine run.
pub(crate) const COMBINE: u16 = 0x4000;
/// `flags` bit 13: the run's first record.
pub(crate) const BEGIN: u16 = 0x2000;
/// `flags` bit 12: the run's last record.
pub(crate) const END: u16 = 0x1000;
/// `flags` bits 0–8: the record's index in its run (0 for the begin record).
pub(crate) const INDEX_MASK: u16 = 0x01ff;
/// `flags` bit 15: control records (with `id = 0`, the close run); a record
/// with this bit is never part of a combine run.
pub(crate) const CONTROL: u16 = 0x8000;

/// The largest payload a run carries, in bytes (4 KiB). A longer payload is
/// cut to this length when it is logged; the begin record keeps its logged
/// length so readers show the cut.
pub const MAX_PAYLOAD: usize = 4096;
/// Payload bytes per continuation record.
pub(crate) const BYTES_PER_RECORD: usize = 16;
/// The most records one run takes: `1 + MAX_PAYLOAD / 16` = 257.
pub const MAX_RECORDS: usize = 1 + MAX_PAYLOAD / BYTES_PER_RECORD;

/// The event of name records: `tracer:reserved` (id 0) with the combine
/// flags and without the control bit (15). `args[1]` of the begin record is
/// `kind << 56 | subject` ([`NAME_SOURCE`], [`NAME_TASK`]).
pub const NAME_EVENT: EventId = EventId(0);
/// Name kind: the name of a source (a thread or CPU number); subject = the
/// source number.
pub const NAME_SOURCE: u8 = 1;
/// Name kind: the name of a task id (the system class's task argument);
/// subject = the task id.
pub const NAME_TASK: u8 = 2;

/// Name kind: a run-time name of an event id (the `tracing` bridge's
/// callsites); subject = the event id.
pub const NAME_EVENT_ID: u8 = 3;

/// Whether `e` is a record of a combine run (bit 14 set, bit 15 clear).
#[inline]
pub const fn is_combine(e: &Event) -> bool {
    e.flags & (COMBINE | CONTROL) == COMBINE
}

/// Records a payload of `len` bytes (after the cut to [`MAX_PAYLOAD`]) takes.
#[inline]
pub const fn records_for(len: usize) -> usize {
    let len = if len > MAX_PAYLOAD { MAX_PAYLOAD } else { len };
    1 + len.div_ceil(BYTES_PER_RECORD)
}

/// The 32-bit checksum of a stored payload, as the begin record carries it.
///
/// The payload is taken as big-endian 64-bit words (the last zero-padded);
/// `h` starts at `len`; for each word `w`,
/// `h = (h.rotate_left(5) ^ w) * 0x517cc1b727220a95` (wrapping); the
/// checksum is `(h >> 32) ^ (h & 0xffffffff)`.
///
pub(crate) fn checksum(payload: &[u8]) -> u32 {
    let mut h = payload.len() as u64;
    let mut chunks = payload.chunks_exact(8);
    for c in &mut chunks {
        h = mix(h, u64::from_be_bytes(c.try_into().expect("8 bytes")));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_be_bytes(w));
    }
    ((h >> 32) ^ (h & 0xffff_ffff)) as u32
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (Was the doc example of the then public `checksum`.)
    #[test]
    fn checksum_of_empty_is_zero_and_differs_by_content() {
        assert_eq!(checksum(b""), 0);
        assert_ne!(checksum(b"a"), checksum(b"b"));
    }

    fn run_records(time: u64, source: u32, text: &[u8]) -> Vec<Event> {
        let run = Run::new(time, EventId(0x0c), source, 9, text);
        (0..run.len()).map(|i| run.record(i)).collect()
    }

    fn assemble(records: &[Event]) -> Vec<Item> {
        let mut items = Vec::new();
        let mut asm = Assembler::new();
        for e in records {
            asm.push(*e, &mut |i| items.push(i));
        }
        asm.finish(&mut |i| items.push(i));
        items
    }

    fn payload(item: &Item) -> &Payload {
        match item {
            Item::Payload(p) => p,
            Item::Event(e) => panic!("not a payload: {e:?}"),
        }
    }

    #[test]
    fn records_are_byte_exact() {
        let r = run_records(5, 2, b"0123456789abcdefXY");
        assert_eq!(r.len(), 3);
        let sum = checksum(b"0123456789abcdefXY") as u64;
        assert_eq!(sum, 0x8240_856d); // FORMAT.md §1.8's worked example
        assert_eq!(r[0].flags, 0x6000);
        assert_eq!(r[0].args, [sum << 32 | 18, 9]);
        assert_eq!(r[1].flags, 0x4001);
        assert_eq!(r[1].args, [0x3031_3233_3435_3637, 0x3839_6162_6364_6566]);
        assert_eq!(r[2].flags, 0x5002);
        assert_eq!(r[2].args, [0x5859_0000_0000_0000, 0]);
        assert!(r
            .iter()
            .all(|e| (e.time, e.source, e.id) == (5, 2, EventId(0x0c))));
        // The empty payload: one record, begin and end.
        let r = run_records(5, 2, b"");
        assert_eq!((r.len(), r[0].flags, r[0].args), (1, 0x7000, [0, 9]));
        assert_eq!(records_for(0), 1);
        assert_eq!(records_for(MAX_PAYLOAD), MAX_RECORDS);
        assert_eq!(records_for(MAX_PAYLOAD + 1), MAX_RECORDS);
    }

    #[test]
    fn whole_runs_and_other_records_keep_their_order() {
        let other = Event::new(4, EventId(0x0b), 1, [1, 2]);
        let mut records = vec![other];
        records.extend(run_records(5, 2, b"hello"));
        records.push(other);
        let items = assemble(&records);
        assert_eq!(items.len(), 3);
        assert_eq!(items[0], Item::Event(other));
        assert_eq!(payload(&items[1]).bytes, b"hello");
        assert_eq!(payload(&items[1]).state, PayloadState::Complete);
        assert_eq!(items[2], Item::Event(other));
    }

    #[test]
    fn a_missing_middle_record_keeps_the_prefix_and_marks_the_cut() {
        let text: Vec<u8> = (0..40).collect();
        let mut r = run_records(5, 2, &text);
        r.remove(2);
        let items = assemble(&r);
        assert_eq!(items.len(), 1);
        let p = payload(&items[0]);
        assert_eq!(p.bytes, &text[..16]);
        assert_eq!(
            p.state,
            PayloadState::Cut {
                received: 3,
                expected: Some(4)
            }
        );
    }

    #[test]
    fn a_missing_end_is_cut_at_finish_or_by_the_next_run() {
        let r = run_records(5, 2, &[7; 40]);
        let items = assemble(&r[..3]);
        assert_eq!(
            payload(&items[0]).state,
            PayloadState::Cut {
                received: 3,
                expected: Some(4)
            }
        );
        let mut records = r[..2].to_vec();
        records.extend(run_records(6, 2, b"next"));
        let items = assemble(&records);
        assert_eq!(items.len(), 2);
        assert!(matches!(payload(&items[0]).state, PayloadState::Cut { .. }));
        assert_eq!(payload(&items[1]).bytes, b"next");
    }

    #[test]
    fn runs_of_different_sources_interleave() {
        let a = run_records(5, 1, &[1; 33]);
        let b = run_records(5, 2, &[2; 33]);
        let records: Vec<Event> = a.iter().zip(&b).flat_map(|(x, y)| [*x, *y]).collect();
        let items = assemble(&records);
        assert_eq!(items.len(), 2);
        assert_eq!(payload(&items[0]).bytes, [1; 33]);
        assert_eq!(payload(&items[1]).bytes, [2; 33]);
        assert!(items
            .iter()
            .all(|i| payload(i).state == PayloadState::Complete));
    }

    #[test]
    fn mixed_runs_of_one_source_are_never_shown_whole() {
        // Two runs with the same time, id and source: records swapped.
        let a = run_records(5, 1, &[1; 32]);
        let b = run_records(5, 1, &[2; 32]);
        let items = assemble(&[b[0], a[1], a[2], a[0], b[1], b[2]]);
        assert!(items
            .iter()
            .all(|i| payload(i).state != PayloadState::Complete));
        // A changed byte is caught by the checksum.
        let mut r = run_records(5, 1, b"checksummed payload");
        r[1].args[0] ^= 1;
        assert_eq!(payload(&assemble(&r)[0]).state, PayloadState::Mismatch);
    }

    #[test]
    fn control_records_are_not_runs() {
        let mut close = Event::new(5, EventId(0), crate::model::event::TRACER_SOURCE, [1, 2]);
        close.flags = 0x8001 | COMBINE;
        assert_eq!(assemble(&[close]), [Item::Event(close)]);
    }

    #[test]
    fn open_runs_are_bounded() {
        let records: Vec<Event> = (0..Assembler::MAX_PENDING as u32 + 1)
            .map(|s| run_records(5, s, &[0; 20])[0])
            .collect();
        let mut items = Vec::new();
        let mut asm = Assembler::new();
        for e in &records {
            asm.push(*e, &mut |i| items.push(i));
        }
        // The oldest was closed as cut to make room.
        assert_eq!(items.len(), 1);
        assert_eq!(payload(&items[0]).source, 0);
        asm.finish(&mut |i| items.push(i));
        assert_eq!(items.len(), Assembler::MAX_PENDING + 1);
    }

    #[test]
    fn names_are_learned_from_whole_name_records() {
        let run = Run::name(1, 4, NAME_TASK, 12, b"idle");
        let items = assemble(&(0..run.len()).map(|i| run.record(i)).collect::<Vec<_>>());
        let mut names = Names::new();
        assert_eq!(names.learn(payload(&items[0])), Some((NAME_TASK, 12)));
        assert_eq!(names.task(12), Some("idle"));
        assert_eq!(names.source(4), None);
    }
}
