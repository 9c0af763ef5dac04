//! Checks of the records' own words at recovery time (FORMAT.md 6.4,
//! "Records"). The producers write no integrity data per record (a checksum
//! would cost every event on the hot path), so these checks use only what
//! the writers already guarantee: the flags values a tracer writes, the
//! links between the records of a combine run, and the time order of a
//! shard's records under a clock that never steps back. Each is sound for
//! every file a tracer writes; a record that fails is left out and marked.

use crate::model::combine::{BEGIN, COMBINE, END, INDEX_MASK as INDEX};
use crate::model::event::Event;

/// The check a record failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    /// Flags a tracer never writes.
    Flags,
    /// Out of time order with its neighbours (a shard).
    Time,
    /// A combine run's records that do not link up.
    Run,
}

/// How far back (in clock ticks) a record's time may be from an older
/// record's of the same shard, by the trace header's clock kind; `None`
/// when the clock may step back (`manual`, a kind this code does not know)
/// and times prove nothing. `monotonic` never steps back (POSIX
/// CLOCK_MONOTONIC, Rust's `Instant`). `tsc` is used only where the kernel
/// trusts it as its clock source (counters synchronised across CPUs), but
/// a thread that moves to another CPU may read a counter a little behind:
/// 1 ms is far above any skew such a machine shows (sub-microsecond).
pub(super) fn time_tolerance(clock_kind: &str) -> Option<u64> {
    match clock_kind {
        "monotonic" => Some(0),
        "tsc" => Some(TSC_TOLERANCE),
        _ => None,
    }
}

/// The backward step a `tsc` clock may show between CPUs (1 ms).
pub(super) const TSC_TOLERANCE: u64 = 1_000_000;

/// The flags values a tracer writes into a ring (FORMAT.md 1.4, 1.8): 0 for
/// an event, a combine run's begin record (`0x6000`, `0x7000` when it is the
/// whole run) and its continuations (`0x4000 | i`, `0x5000 | i` for the last,
/// index 1 to 256: a run is at most 257 records).
pub(super) fn flags_written(flags: u16) -> bool {
    match flags {
        0 | 0x6000 | 0x7000 => true,
        f => f & !(END | INDEX) == COMBINE && (1..=256).contains(&(f & INDEX)),
    }
}

fn continuation(e: &Event) -> bool {
    e.flags & COMBINE != 0 && e.flags & INDEX != 0
}

fn open_run(e: &Event) -> bool {
    e.flags & COMBINE != 0 && e.flags & END == 0
}

/// Whether `next` is the record of `prev`'s run that follows it.
fn continues(prev: &Event, next: &Event) -> bool {
    open_run(prev)
        && continuation(next)
        && (prev.flags & INDEX) + 1 == next.flags & INDEX
        && (prev.time, prev.id, prev.source) == (next.time, next.id, next.source)
        && (prev.flags & BEGIN != 0) == (prev.flags & INDEX == 0)
}

/// Checks one ring's readable records (`(ticket, record)`, sorted by
/// ticket) and returns the index of each that fails with the check it
/// failed, in the order found. In order: the flags (every ring); the time
/// order (a shard, when `tolerance` is known); the links of combine runs
/// between records of consecutive tickets (every ring). A record that
/// failed one check takes no part in the later ones.
pub(super) fn check(
    found: &[(u64, Event)],
    shard: bool,
    tolerance: Option<u64>,
) -> Vec<(usize, Fault)> {
    let mut faults = Vec::new();
    let mut bad = vec![false; found.len()];
    let mut any = false;
    // 1. Flags a tracer never writes.
    for (i, (_, e)) in found.iter().enumerate() {
        if !flags_written(e.flags) {
            bad[i] = true;
            any = true;
            faults.push((i, Fault::Flags));
        }
    }
    // 2. A shard's times by ticket: a record out of order with a neighbour
    //    whose two neighbours are in order with each other is the one at
    //    fault (the first and last records count their missing neighbour
    //    as in order). Judged on the times as read, all at once.
    if let (true, Some(w)) = (shard, tolerance) {
        // The records that passed 1 (all of them, as a rule: no copy then).
        let live: Vec<usize> = if any {
            (0..found.len()).filter(|&i| !bad[i]).collect()
        } else {
            Vec::new()
        };
        let n = if any { live.len() } else { found.len() };
        let index = |k: usize| if any { live[k] } else { k };
        let time = |k: usize| found[index(k)].1.time;
        let before = |a: u64, b: u64| a <= b.saturating_add(w); // a may precede b
        let mut late = Vec::new();
        for k in 0..n {
            let t = time(k);
            let after_prev = k == 0 || before(time(k - 1), t);
            let before_next = k + 1 == n || before(t, time(k + 1));
            if after_prev && before_next {
                continue;
            }
            if k == 0 || k + 1 == n || before(time(k - 1), time(k + 1)) {
                late.push(index(k));
            }
        }
        for i in late {
            bad[i] = true;
            faults.push((i, Fault::Time));
        }
    }
    // 3. Combine runs: records of consecutive tickets where the second is a
    //    continuation or the first an unfinished run must link up. At fault:
    //    the continuation, unless the record after it continues it (then the
    //    one before); else the unfinished run's record.
    let mut prev: Option<usize> = None;
    for i in 0..found.len() {
        if bad[i] {
            prev = None;
            continue;
        }
        let (ticket, n) = &found[i];
        if let Some(p) = prev.filter(|&p| found[p].0 + 1 == *ticket) {
            let p_ev = &found[p].1;
            let fault = if continuation(n) {
                // The one at fault is the one its other neighbour does not
                // vouch for: `p` when the record after `n` continues `n`.
                let vouched = found
                    .get(i + 1)
                    .filter(|x| x.0 == ticket + 1 && !bad[i + 1])
                    .is_some_and(|x| continues(n, &x.1));
                (!continues(p_ev, n)).then_some(if vouched { p } else { i })
            } else {
                open_run(p_ev).then_some(p)
            };
            if let Some(j) = fault {
                bad[j] = true;
                faults.push((j, Fault::Run));
                if j == i {
                    prev = None;
                    continue;
                }
            }
        }
        prev = Some(i);
    }
    faults
}

/// A shard whose counters disagree: how far its records provably go.
/// `smaller` and `larger` are its two counters; `record(t)` reads the
/// record in the slot of ticket `t`. Starting after the smaller counter's
/// newest record (time `T`), the next slots are taken as newer tickets while
/// each holds a record a tracer writes (not all zeros, flags of 1.4) whose
/// time is past `T + tolerance` (so it cannot be an older ticket of this
/// shard) and not behind the one taken before it; at most up to the larger
/// counter and one ring's worth. Then, if that count is below one ring's
/// worth and every slot past it holds a record, the ring went round: one
/// ring's worth more (when the larger counter allows it). Returns the count
/// of tickets written.
pub(super) fn provable_end(
    smaller: u64,
    larger: u64,
    capacity: u64,
    tolerance: u64,
    record: impl Fn(u64) -> [u64; 4],
) -> u64 {
    let floor = smaller
        .checked_sub(1)
        .map(|t| Event::from_words(record(t)).time.saturating_add(tolerance));
    let mut prev: Option<u64> = None;
    let mut end = smaller;
    while end < larger && end - smaller < capacity {
        let w = record(end);
        let e = Event::from_words(w);
        let newer = floor.map_or(true, |f| e.time > f);
        let ordered = prev.map_or(true, |p| e.time.saturating_add(tolerance) >= p);
        if w == [0; 4] || !flags_written(e.flags) || !newer || !ordered {
            break;
        }
        prev = Some(e.time);
        end += 1;
    }
    // Short of one ring's worth, yet every slot past the end is written
    // (a new file is zeros): the ring went round, so the count is at least
    // one ring more (the smallest count the slots allow).
    let written = |t: u64| {
        let w = record(t);
        w != [0; 4] && flags_written(Event::from_words(w).flags)
    };
    if end < capacity && end + capacity <= larger && (end..capacity).all(written) {
        end += capacity;
    }
    end
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::EventId;

    fn found(times: &[u64]) -> Vec<(u64, Event)> {
        times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                (
                    i as u64 + 10,
                    Event::new(t, EventId(0x0b), 1, [i as u64, 0]),
                )
            })
            .collect()
    }

    /// The tickets of the records that fail, by ticket.
    fn failing(f: &[(u64, Event)], shard: bool, w: Option<u64>) -> Vec<u64> {
        let mut t: Vec<u64> = check(f, shard, w).iter().map(|(i, _)| f[*i].0).collect();
        t.sort_unstable();
        t
    }

    fn bad_times(times: &[u64], w: u64) -> Vec<u64> {
        failing(&found(times), true, Some(w))
    }

    /// A name run of `n` records at tickets 20.. (time 7, source 3).
    fn run(n: u16) -> Vec<(u64, Event)> {
        (0..n)
            .map(|i| {
                let mut e = Event::new(7, EventId(0), 3, [u64::from(i), 0]);
                e.flags = match i {
                    0 if n == 1 => 0x7000,
                    0 => 0x6000,
                    i if i + 1 == n => 0x5000 | i,
                    i => 0x4000 | i,
                };
                (20 + u64::from(i), e)
            })
            .collect()
    }

    fn bad_links(f: &[(u64, Event)]) -> Vec<u64> {
        failing(f, false, None)
    }

    #[test]
    fn the_record_that_breaks_a_run_is_the_one_marked() {
        assert_eq!(bad_links(&run(4)), [] as [u64; 0]);
        assert_eq!(bad_links(&run(1)), [] as [u64; 0]);
        // Its head overwritten, its tail not yet written: not broken.
        assert_eq!(bad_links(&run(4)[1..3]), [] as [u64; 0]);
        // A wrong id in the begin record, in a continuation, in the last.
        for (k, want) in [(0, 20), (1, 21), (3, 23)] {
            let mut f = run(4);
            f[k].1.id = EventId(8);
            assert_eq!(bad_links(&f), [want], "id of record {k}");
        }
        // The end flag lost: the record after it is no continuation.
        let mut f = run(3);
        f[2].1.flags = 0x4002;
        f.push((23, Event::new(9, EventId(0x0b), 3, [0, 0])));
        assert_eq!(bad_links(&f), [22]);
        // A continuation's index off: it, not its neighbours.
        let mut f = run(5);
        f[2].1.flags = 0x4003;
        assert_eq!(bad_links(&f), [22]);
        // A gap in the tickets: nothing to link.
        let mut f = run(4);
        f.remove(1);
        assert_eq!(bad_links(&f), [] as [u64; 0]);
    }

    #[test]
    fn flags_a_tracer_writes() {
        for f in [0, 0x6000, 0x7000, 0x4001, 0x4100, 0x5001, 0x5100] {
            assert!(flags_written(f), "{f:#x}");
        }
        for f in [
            1, 2, 0x4000, 0x5000, 0x2000, 0x8001, 0x4101, 0x6001, 0x4201, 0x4401,
        ] {
            assert!(!flags_written(f), "{f:#x}");
        }
        // Every single-bit flip of an event's flags (0) is caught.
        assert!((0..16).all(|b| !flags_written(1 << b)));
    }

    #[test]
    fn the_record_out_of_order_is_the_one_marked() {
        assert_eq!(bad_times(&[10, 20, 30, 40, 50], 0), [] as [u64; 0]);
        assert_eq!(bad_times(&[10, 20, 30, 30, 30], 0), [] as [u64; 0]);
        // Too late, too early, in the middle and at both ends.
        assert_eq!(bad_times(&[10, 20, 1 << 40, 40, 50], 0), [12]);
        assert_eq!(bad_times(&[10, 20, 3, 40, 50], 0), [12]);
        assert_eq!(bad_times(&[1 << 40, 20, 30, 40, 50], 0), [10]);
        assert_eq!(bad_times(&[10, 20, 30, 40, 5], 0), [14]);
        // The newest record too late, the oldest too early: nothing to see.
        assert_eq!(bad_times(&[10, 20, 30, 40, 1 << 40], 0), [] as [u64; 0]);
        // Two neighbours out of order with each other: both marked.
        assert_eq!(bad_times(&[10, 20, 35, 30, 50], 0), [12, 13]);
        // Within the tolerance: in order.
        assert_eq!(bad_times(&[10, 20, 35, 30, 50], 5), [] as [u64; 0]);
        // No tolerance known (a manual clock): times are not checked.
        let f = found(&[10, 20, 1 << 40, 40, 50]);
        assert!(check(&f, true, None).is_empty());
        assert!(check(&f, false, Some(0)).is_empty());
    }
}
