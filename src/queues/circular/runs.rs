//! A snapshot's usual case, written as runs: when the shared ring holds
//! nothing, every ring is a shard, whose records sit on consecutive tickets
//! with times that do not go back. The shards are copied once, already in
//! 32-byte records ([`ShardRing::read_encoded`]), and the merge by time
//! is a sequence of runs, each written straight from its copy: in a
//! 32-byte file with no second copy and no encoding pass (a run of 1 MiB or
//! more bypasses the file's buffer); in a compact file (the default) each
//! record is decoded from the copy into the chunk being encoded. The file
//! is byte for byte what [`super::merge`] and `write_trace_from` write for
//! the same records, in either form (issue 36; the tests compare the two).
//!
//! [`ShardRing::read_encoded`]: crate::ring::shard::ShardRing::read_encoded

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::BufWriter;
use std::path::Path;

use super::merge::{cut_by, first_failing, Key};
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::storage::save::{create_locked, hoops, save_header};
use crate::wire::record::RECORD_LEN;
use crate::wire::{QueueTotals, TraceWriter};

/// Records handed to one `write` at most (1 MiB, past the file's buffer,
/// so it passes them through). Measured (issue 36): a whole 32 MiB run in
/// one `write` cost the kernel's copy up to 100 ms at times, 128 KiB
/// pieces a quarter more CPU than 1 MiB ones.
const WRITE_RECORDS: usize = 32768;

/// One shard's records as copied: in the file's encoding, on consecutive
/// tickets from `first`, times not going back.
pub(super) struct Copied<'a> {
    pub(super) records: &'a [[u8; RECORD_LEN]],
    pub(super) first: u64,
    /// The ring's number in the merge's order (0 is the shared ring, `k` the
    /// `k`th shard in use): it breaks ties of time and ticket.
    pub(super) ring: usize,
    /// Whether its producer overwrote every record copied (`records` is
    /// then empty and the tickets below `first` are lost to the snapshot).
    pub(super) lapped: bool,
}

impl Copied<'_> {
    fn time(&self, j: usize) -> u64 {
        let r = &self.records[j];
        u64::from_be_bytes([r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]])
    }

    /// The merge's sort key of record `j` (as [`super::merge`]'s).
    fn key(&self, j: usize) -> Key {
        (self.time(j), self.first + j as u64, self.ring, 1)
    }
}

/// Writes the trace of `rings` merged by time (then ticket, then ring), the
/// newest `capacity` records kept, a hoops record before each ring's first
/// kept record for the tickets before it (or, when none is kept, one after
/// its newest for them all; when none was copied, one stamped now, as
/// the merge's trailing hoops record of an empty ring): the header, the
/// names prologue,
/// the records, the close run with `totals`. Returns the records written
/// (hoops included), as `write_trace_from` does.
pub(super) fn write_runs(
    path: &Path,
    ctx: &QueueContext,
    rings: &[Copied<'_>],
    capacity: usize,
    totals: QueueTotals,
    compact: bool,
) -> Result<u64, ConfigError> {
    let lens: Vec<usize> = rings.iter().map(|c| c.records.len()).collect();
    let total: usize = lens.iter().sum();
    let skip = if total > capacity {
        cut_by(&lens, |i, j| rings[i].key(j), total - capacity)
    } else {
        vec![0; rings.len()]
    };
    // Each ring's head: its first kept record, or for a ring whose records
    // are all cut, the hoops record for them all, stamped with the newest's
    // time and after every record of that time (the merge's trailing hoops
    // record).
    // A ring whose copy its producer lapped has the hoops record for all its
    // tickets before `first` too, stamped now.
    let mut now = None;
    let mut heads: BinaryHeap<Reverse<(Key, usize)>> = (0..rings.len())
        .filter(|&i| lens[i] > 0 || (rings[i].lapped && rings[i].first > 0))
        .map(|i| match (lens[i], skip[i] < lens[i]) {
            (0, _) => {
                let t = *now.get_or_insert_with(|| ctx.clock.now());
                Reverse(((t, u64::MAX, rings[i].ring, 0), i))
            }
            (_, true) => Reverse((rings[i].key(skip[i]), i)),
            (_, false) => Reverse(((rings[i].time(lens[i] - 1), u64::MAX, rings[i].ring, 0), i)),
        })
        .collect();
    let first = heads
        .peek()
        .map_or_else(|| ctx.clock.now(), |Reverse((k, _))| k.0);
    let file = create_locked(path)?;
    let io = |what: &'static str| move |e| ConfigError::io(what, path, e);
    // Small runs gathered into writes of 64 KiB, longer ones written as
    // they are, in pieces.
    let mut w = TraceWriter::new(
        BufWriter::with_capacity(1 << 16, file),
        &save_header(ctx, compact),
    )
    .map_err(io("write the header of trace file"))?;
    w.write_events(&ctx.names.records(first))
        .map_err(io("write trace file"))?;
    let mut at = skip.clone();
    let mut written = 0u64;
    while let Some(Reverse((key, i))) = heads.pop() {
        let (c, a) = (&rings[i], at[i]);
        let ticket = c.first + a as u64;
        if a == lens[i] {
            w.write_events(&[hoops(key.0, ticket, ctx.handle)])
                .map_err(io("write trace file"))?;
            written += 1;
            continue;
        }
        if a == skip[i] && ticket > 0 {
            w.write_events(&[hoops(key.0, ticket, ctx.handle)])
                .map_err(io("write trace file"))?;
            written += 1;
        }
        // The run: this ring's records up to the next head of another.
        let end = match heads.peek() {
            None => lens[i],
            Some(&Reverse(bound)) => run_end(a, lens[i], |j| (c.key(j), i) < bound),
        };
        for chunk in c.records[a..end].chunks(WRITE_RECORDS) {
            w.write_encoded(chunk.as_flattened(), chunk.len() as u64, 0)
                .map_err(io("write trace file"))?;
        }
        written += (end - a) as u64;
        at[i] = end;
        if end < lens[i] {
            heads.push(Reverse((c.key(end), i)));
        }
    }
    w.finish_with_close(ctx.clock.now(), totals)
        .map_err(io("close trace file"))?;
    Ok(written)
}

/// The first `j` in `a + 1..len` where `below(j)` fails (`len` if none),
/// `below` holding on a prefix ([`first_failing`] from `a + 1`).
fn run_end(a: usize, len: usize, below: impl Fn(usize) -> bool) -> usize {
    first_failing(a + 1, len, below)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::classes::{user, Catalog};
    use crate::model::clock::{Clock, ManualClock};
    use crate::model::event::Event;
    use crate::model::handle::QueueHandle;
    use crate::queues::circular::merge::merge;
    use crate::ring::Ticketed;
    use crate::storage::save::{write_trace_from, BATCH};
    use crate::wire::record::emit;
    use std::sync::Arc;

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Shard-like rings: consecutive tickets from a random first one, times
    /// that do not go back and repeat within and across rings.
    fn shards(rng: &mut Rng) -> Vec<Vec<Ticketed>> {
        (0..1 + rng.next(4))
            .map(|i| {
                let (first, mut time) = (rng.next(4) * rng.next(3), rng.next(6));
                (0..rng.next(50))
                    .map(|k| {
                        time += rng.next(3);
                        let ticket = first + k;
                        let event = Event::new(time, user::USER0, i as u32, [ticket, i]);
                        Ticketed { ticket, event }
                    })
                    .collect()
            })
            .collect()
    }

    /// A circular queue's context writing into `dir`, on a manual clock at
    /// 4242.
    fn context(dir: &std::path::Path) -> QueueContext {
        QueueContext {
            handle: QueueHandle(3),
            type_name: "circular",
            output_dir: dir.to_path_buf(),
            catalog: Arc::new(Catalog::builtin()),
            clock: Clock::manual(&ManualClock::new(4242)),
            names: Default::default(),
        }
    }

    /// Each ring's records in the file's encoding, as `read_encoded` copies.
    fn encode(rings: &[Vec<Ticketed>]) -> Vec<Vec<[u8; RECORD_LEN]>> {
        rings
            .iter()
            .map(|r| {
                r.iter()
                    .map(|t| {
                        let mut bytes = [0u8; RECORD_LEN];
                        emit(&t.event, &mut bytes);
                        bytes
                    })
                    .collect()
            })
            .collect()
    }

    /// The runs' view of the rings' `encoded` copies (shards 1, 2, …).
    fn copies<'a>(
        encoded: &'a [Vec<[u8; RECORD_LEN]>],
        rings: &[Vec<Ticketed>],
    ) -> Vec<Copied<'a>> {
        encoded
            .iter()
            .zip(rings)
            .enumerate()
            .map(|(k, (e, r))| Copied {
                records: e,
                first: r.first().map_or(0, |t| t.ticket),
                ring: k + 1,
                lapped: false,
            })
            .collect()
    }

    /// Runs write byte for byte the file the merge writes (through
    /// `write_trace_from`, as a snapshot did before runs), cut or not, in
    /// 32-byte records and in compact chunks, and say the same number of
    /// records.
    #[test]
    fn runs_write_the_bytes_of_the_merge() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path());
        let (a, b) = (dir.path().join("runs.qtr"), dir.path().join("merge.qtr"));
        let totals = QueueTotals {
            accepted: 9,
            dropped: 1,
            overwritten: 2,
            delivered: 3,
        };
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut cuts, mut hoops) = (0, 0);
        for case in 0..600 {
            let rings = shards(&mut rng);
            let total: usize = rings.iter().map(Vec::len).sum();
            let capacity = 1 + rng.next(total as u64 + 6) as usize;
            cuts += usize::from(total > capacity);
            let encoded = encode(&rings);
            let copied = copies(&encoded, &rings);
            // Both forms: 32-byte records and compact chunks.
            let compact = case % 2 == 1;
            let n = write_runs(&a, &ctx, &copied, capacity, totals, compact).unwrap();
            // The merge's input: the (empty) shared ring, then the shards.
            let mut input = vec![(Vec::new(), None)];
            input.extend(rings.into_iter().map(|r| (r, None)));
            let mut merged = merge(input, capacity, ctx.handle, || ctx.clock.now());
            let fill = |batch: &mut Vec<Event>| merged.fill(batch, BATCH);
            let m = write_trace_from(&b, &ctx, fill, totals, compact).unwrap();
            assert_eq!(n, m, "case {case}");
            let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
            assert_eq!(a, b, "case {case}");
            let reader = crate::reader::TraceReader::new(&a[..]).unwrap();
            assert_eq!(reader.header().is_compact(), compact, "case {case}");
            hoops += reader
                .filter(|e| e.as_ref().unwrap().id == crate::classes::tracer::HOOPS)
                .count();
        }
        // Cut cases and hoops records were written.
        assert!(cuts > 150 && hoops > 300, "{cuts} cut, {hoops} hoops");
    }

    /// A shard whose copy its producer lapped whole (no record copied,
    /// tickets before `first`) is one hoops record for all its events,
    /// stamped now, in the runs as in the merge, byte for byte (32-byte
    /// records and compact chunks).
    #[test]
    fn a_lapped_shard_is_one_hoops_record_in_runs_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path());
        let (a, b) = (dir.path().join("runs.qtr"), dir.path().join("merge.qtr"));
        let totals = QueueTotals::default();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..100 {
            let rings = shards(&mut rng);
            let lapped = 1 + rng.next(5000);
            let encoded = encode(&rings);
            let mut copied = copies(&encoded, &rings);
            // The lapped shard among the others.
            let at = rng.next(copied.len() as u64 + 1) as usize;
            copied.insert(
                at,
                Copied {
                    records: &[],
                    first: lapped,
                    ring: at + 1,
                    lapped: true,
                },
            );
            for (k, c) in copied.iter_mut().enumerate() {
                c.ring = k + 1;
            }
            let total: usize = rings.iter().map(Vec::len).sum();
            let capacity = total + 1;
            let compact = case % 2 == 1;
            let n = write_runs(&a, &ctx, &copied, capacity, totals, compact).unwrap();
            let mut input = vec![(Vec::new(), None)];
            let mut rest: Vec<(Vec<Ticketed>, Option<u64>)> =
                rings.into_iter().map(|r| (r, None)).collect();
            rest.insert(at, (Vec::new(), Some(lapped)));
            input.extend(rest);
            let mut merged = merge(input, capacity, ctx.handle, || ctx.clock.now());
            let fill = |batch: &mut Vec<Event>| merged.fill(batch, BATCH);
            let m = write_trace_from(&b, &ctx, fill, totals, compact).unwrap();
            assert_eq!(n, m, "case {case}");
            let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
            assert_eq!(a, b, "case {case}");
            let lost: Vec<Event> = crate::reader::TraceReader::new(&a[..])
                .unwrap()
                .map(Result::unwrap)
                .filter(|e| e.id == crate::classes::tracer::HOOPS && e.time == 4242)
                .filter(|e| e.args == [lapped, 3])
                .collect();
            assert_eq!(lost.len(), 1, "case {case}");
        }
    }

    #[test]
    fn a_run_ends_where_its_test_fails() {
        for len in 1..40 {
            for a in 0..len {
                for end in a + 1..=len {
                    assert_eq!(run_end(a, len, |j| j < end), end, "{a} {len} {end}");
                }
            }
        }
    }
}
