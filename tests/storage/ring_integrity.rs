//! Corrupted ring files and their exact verdicts (FORMAT.md 4.5 and 6.4):
//! real ring files left by a tracer that never shut down, each corrupted
//! one way (a foreign byte order, bit flips, counters against capacity and
//! against each other, cut and lengthened files), then recovered. A damaged
//! ring is read with its damage listed by offset, its good records still
//! recovered, and its trace written without the close run, so it never
//! reads as complete.

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::storage::{self, DamageKind, RingFileError, DAMAGED};
use qtrace::{Config, QueueHandle, Tracer};

/// The three queues these tests corrupt, in this order (files
/// `queue0-circular.ring`, `queue1-circular.ring`, `queue2-fixed.ring`): a
/// circular queue of `sharded = (capacity, shards)` taking `user0`, a
/// circular queue of 64 without shards (its shared ring) taking `user1`, and
/// a fixed queue of `fixed` taking `user2`.
fn three_queues(
    t: &Tracer,
    sharded: (usize, usize),
    fixed: usize,
) -> (QueueHandle, QueueHandle, QueueHandle) {
    let circular = |capacity, shards| {
        t.create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(capacity)
                .with_shards(shards),
        )
        .unwrap()
    };
    let queues = (
        circular(sharded.0, sharded.1),
        circular(64, 0),
        t.create_queue::<Fixed>(FixedParams::default().with_capacity(fixed))
            .unwrap(),
    );
    t.assign_event(user::USER0, queues.0).unwrap();
    t.assign_event(user::USER1, queues.1).unwrap();
    t.assign_event(user::USER2, queues.2).unwrap();
    queues
}

/// The ring files of three queues of a tracer that is never shut down:
/// a circular queue whose events go to one shard (100 logged, capacity 64),
/// a circular queue without shards (100 logged into its shared ring of 64)
/// and a fixed queue of 32 (20 logged).
fn ring_files() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(0);
    let t: &'static Tracer = Box::leak(Box::new(Tracer::with_config(
        Config::default()
            .with_output_dir(dir.path())
            .with_clock(Clock::manual(&clock)),
    )));
    three_queues(t, (64, 1), 32);
    t.activate().unwrap();
    for i in 0..100u64 {
        clock.advance(10);
        t.log_event(user::USER0, [i, 0]);
        t.log_event(user::USER1, [i, 0]);
        if i < 20 {
            t.log_event(user::USER2, [i, 0]);
        }
    }
    let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
    (
        read("queue0-circular.ring"),
        read("queue1-circular.ring"),
        read("queue2-fixed.ring"),
    )
}

fn get(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}
fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

/// FORMAT.md 6.1: FNV-1a 64 over the header and the trace header, the
/// checksum field (offset 80) read as zeros.
fn checksum(b: &[u8]) -> u64 {
    checksum_of(b, get(b, 56))
}
fn checksum_of(b: &[u8], trace_len: u64) -> u64 {
    let end = 128 + trace_len as usize;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, &x) in b[..end].iter().enumerate() {
        let x = if (80..88).contains(&i) { 0 } else { x };
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Offsets from the header (FORMAT.md 6.2): (body B, slots, shard blocks, shard records).
fn layout(b: &[u8]) -> (usize, usize, usize, usize) {
    let body = get(b, 48) as usize;
    let cap = get(b, 24) as usize;
    let slots = body + 512;
    let shards = (slots + cap * 64 + 127) & !127;
    let records = (shards + get(b, 32) as usize * 384 + 4095) & !4095;
    (body, slots, shards, records)
}

/// The verdict on a ring file's bytes: the error and its offset, or what
/// was recovered, the damage (offset and kind) and the written trace's
/// completeness.
fn verdict(b: &[u8]) -> String {
    let rec = match storage::recover_bytes(b) {
        Ok(r) => r,
        Err(e) => return format!("error at {}: {e:?}", e.offset()),
    };
    let c = rec.counts;
    assert_eq!(c.attempts, c.accepted + c.dropped);
    assert_eq!(c.accepted, c.recovered + c.overwritten + c.unreadable);
    let hoops: u64 = rec
        .events
        .iter()
        .filter(|e| e.id == HOOPS)
        .map(|e| e.args[0])
        .sum();
    assert_eq!(hoops, c.lost(), "the hoops records add up to the loss");
    let marked = rec.events.iter().filter(|e| e.flags == DAMAGED).count();
    assert_eq!(marked, usize::from(!rec.damage.is_empty()));
    // The written trace: complete only when nothing is damaged.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.qtr");
    storage::write_trace(&rec, &path).unwrap();
    let mut r = TraceReader::open(&path).unwrap();
    for e in r.by_ref() {
        e.unwrap();
    }
    let complete = matches!(r.completeness().unwrap(), Completeness::Complete(_));
    assert_eq!(complete, rec.damage.is_empty());
    let damage: Vec<String> = rec
        .damage
        .iter()
        .map(|d| format!("{}:{:?}", d.offset, d.kind))
        .collect();
    format!(
        "recovered {} of {} (dropped {}, unreadable {}), damage {damage:?}, {}",
        c.recovered,
        c.attempts,
        c.dropped,
        c.unreadable,
        if complete { "complete" } else { "not complete" }
    )
}

/// Every integer of a shared-ring-only circular ring file converted to the
/// other byte order: what a machine of the other order would have written.
fn to_foreign_order(native: &[u8]) -> Vec<u8> {
    let mut b = native.to_vec();
    let (body, slots, shards, records) = layout(native);
    let cap = get(native, 24) as usize;
    let blocks = get(native, 32) as usize;
    let k = get(native, 40) as usize;
    let swap32 = |b: &mut Vec<u8>, at: usize| b[at..at + 4].reverse();
    let swap64 = |b: &mut Vec<u8>, at: usize| b[at..at + 8].reverse();
    for at in [8, 12, 16, 20, 72] {
        swap32(&mut b, at);
    }
    for at in (24..72).step_by(8) {
        swap64(&mut b, at);
    }
    swap64(&mut b, body); // tail
    swap64(&mut b, body + 128); // dropped
    for i in 0..cap {
        for w in 0..5 {
            swap64(&mut b, slots + i * 64 + w * 8);
        }
    }
    for s in 0..blocks {
        for at in [0, 128, 136] {
            swap64(&mut b, shards + s * 384 + at);
        }
    }
    for r in 0..blocks * k {
        for w in 0..4 {
            swap64(&mut b, records + r * 32 + w * 8);
        }
    }
    // The checksum of the converted bytes, stored in the new order.
    let sum = checksum_of(&b, get(native, 56)).swap_bytes();
    put(&mut b, 80, sum);
    b
}

#[test]
fn sixteen_corrupted_ring_files_and_their_exact_verdicts() {
    let (sharded, shared, fixed) = ring_files();
    let (_, _, shards, records) = layout(&sharded);
    let (sbody, sslots, _, _) = layout(&shared);
    let (fbody, fslots, _, _) = layout(&fixed);
    let file_len = sharded.len();
    assert_eq!(get(&sharded, 64) as usize, file_len);
    let mut cases: Vec<(&str, Vec<u8>, String)> = Vec::new();
    let mut case = |name: &'static str, b: Vec<u8>, expect: String| cases.push((name, b, expect));

    // 0. The files as written.
    case(
        "sharded, as written",
        sharded.clone(),
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [], complete".into(),
    );
    case(
        "shared ring, as written",
        shared.clone(),
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [], complete".into(),
    );
    case(
        "fixed, as written",
        fixed.clone(),
        "recovered 20 of 20 (dropped 0, unreadable 0), damage [], complete".into(),
    );

    // 1. Not a ring file: the magic.
    let mut b = sharded.clone();
    b[0] = b'Q';
    case("magic", b, "error at 0: NotARingFile".into());
    // 2. An order mark of neither order.
    let mut b = sharded.clone();
    b[12..16].copy_from_slice(&[1, 1, 2, 2]);
    case(
        "order mark",
        b,
        format!("error at 12: ByteOrder({})", 0x0202_0101),
    );
    // 3. The order mark flipped alone: the header reads in the other order.
    let mut b = sharded.clone();
    b[12..16].reverse();
    case(
        "order mark flipped alone",
        b,
        "error at 8: Version(33554432)".into(),
    );
    // 4. A real file of the other byte order reads exactly as the native one.
    let foreign = to_foreign_order(&shared);
    assert_ne!(foreign, shared);
    case(
        "foreign byte order, whole file",
        foreign.clone(),
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [], complete".into(),
    );
    // 5. The other byte order with the tail left unconverted (the probe's
    //    1.6·10^19 "lost" events): the tail is far past the slots' tickets.
    let mut b = foreign.clone();
    b[sbody..sbody + 8].reverse();
    case("foreign byte order, tail not converted", b, format!(
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{sbody}:CounterOutOfRange {{ value: {} }}\"], not complete",
        100u64.swap_bytes()
    ));
    // 5b. A tail past the slots by more than a ring's worth (and no drops).
    let mut b = shared.clone();
    put(&mut b, sbody, 100 + 64 + 1);
    case("tail far ahead of the slots", b, format!(
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{sbody}:TailAheadOfSlots {{ tail: 165, newest: 99 }}\"], not complete"
    ));
    // 6. A version this code does not read.
    let mut b = sharded.clone();
    b[8..12].copy_from_slice(&9u32.to_ne_bytes());
    case("version", b, "error at 8: Version(9)".into());
    // 7. A capacity that is not a power of two.
    let mut b = sharded.clone();
    put(&mut b, 24, 65);
    case("capacity 65", b, "error at 24: Header { offset: 24, what: \"a circular queue's capacity is a power of two\" }".into());
    // 8. The file length field against the layout.
    let mut b = sharded.clone();
    put(&mut b, 64, file_len as u64 + 4096);
    case(
        "file length field",
        b,
        "error at 64: Header { offset: 64, what: \"file length field disagrees with the layout\" }"
            .into(),
    );
    // 9. Cut short.
    case(
        "cut",
        sharded[..file_len - 1].to_vec(),
        format!(
            "error at {}: Truncated {{ needed: {file_len}, present: {} }}",
            file_len - 1,
            file_len - 1
        ),
    );
    // 10. Longer than its layout.
    let mut b = sharded.clone();
    b.extend_from_slice(&[0xaa; 100]);
    case("longer", b, format!("recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{file_len}:LongerThanLayout {{ layout: {file_len} }}\"], not complete"));
    // 11. A bit flip in the process id: the header checksum.
    let mut b = sharded.clone();
    b[72] ^= 0x10;
    let stored = get(&b, 80);
    let computed = checksum(&b);
    case("bit flip in the process id", b, format!("recovered 64 of 100 (dropped 0, unreadable 0), damage [\"80:HeaderChecksum {{ stored: {stored}, computed: {computed} }}\"], not complete"));
    // 12. A bit flip in the catalog's names (inside the trace header).
    let mut b = sharded.clone();
    let at = 128
        + b[128..128 + get(&b, 56) as usize]
            .windows(5)
            .position(|w| w == b"user0")
            .expect("a name in the catalog");
    b[at] ^= 0x20;
    let computed = checksum(&b);
    case("bit flip in a name", b, format!("recovered 64 of 100 (dropped 0, unreadable 0), damage [\"80:HeaderChecksum {{ stored: {stored}, computed: {computed} }}\"], not complete"));
    // 13. A shard's claimed counter corrupted high (the probe's "hid all
    //     good events"): the committed counter is trusted, every record kept.
    let mut b = sharded.clone();
    put(&mut b, shards + 128, 100 | 1 << 62);
    case("shard claimed corrupted", b, format!(
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{}:ShardCounters {{ shard: 0, claimed: {}, committed: 100, taken: 100 }}\"], not complete",
        shards + 128, 100u64 | 1 << 62
    ));
    // 14. A shard's committed counter corrupted high.
    let mut b = sharded.clone();
    put(&mut b, shards + 136, 100 | 1 << 40);
    case("shard committed corrupted", b, format!(
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{}:ShardCounters {{ shard: 0, claimed: 100, committed: {}, taken: 100 }}\"], not complete",
        shards + 128, 100u64 | 1 << 40
    ));
    // 15. The shared ring's drop counter above its attempts.
    let mut b = shared.clone();
    put(&mut b, sbody + 128, 101);
    case("dropped above attempts", b, format!("recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{}:DroppedAboveAttempts {{ attempts: 100, dropped: 101 }}\"], not complete", sbody + 128));
    // 16. The drop counter below the attempts but above what the slots allow.
    let mut b = shared.clone();
    put(&mut b, sbody + 128, 50);
    case("dropped above the free attempts", b, format!("recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{}:DroppedAboveAttempts {{ attempts: 36, dropped: 50 }}\"], not complete", sbody + 128));
    // 17. The tail behind a ticket in a slot.
    let mut b = shared.clone();
    put(&mut b, sbody, 90);
    case("tail behind the slots", b, format!("recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{sbody}:TailBehindSlots {{ tail: 90, newest: 99 }}\"], not complete"));
    // 18. A bit flip in a slot's sequence word (its ticket names another slot).
    let mut b = shared.clone();
    let word = get(&b, sslots + 5 * 64);
    put(&mut b, sslots + 5 * 64, word ^ 1 << 3);
    case("bit flip in a sequence word", b, format!("recovered 63 of 100 (dropped 0, unreadable 1), damage [\"{}:Slot {{ index: 5, word: {} }}\"], not complete", sslots + 5 * 64, word ^ 1 << 3));
    // 19. A slot in state 3.
    let mut b = shared.clone();
    put(&mut b, sslots + 7 * 64, word | 3);
    let w7 = word | 3;
    case("slot state 3", b, format!("recovered 63 of 100 (dropped 0, unreadable 1), damage [\"{}:Slot {{ index: 7, word: {w7} }}\"], not complete", sslots + 7 * 64));
    // 20. A fixed queue's tail below a written slot.
    let mut b = fixed.clone();
    put(&mut b, fbody, 10);
    case("fixed tail below its slots", b, format!("recovered 20 of 20 (dropped 0, unreadable 0), damage [\"{fbody}:FixedBeyondTail {{ index: 19, tail: 10 }}\"], not complete"));
    // 21. A fixed slot in an unknown state.
    let mut b = fixed.clone();
    put(&mut b, fslots + 3 * 64, 7);
    case("fixed slot state 7", b, format!("recovered 19 of 20 (dropped 0, unreadable 1), damage [\"{}:Slot {{ index: 3, word: 7 }}\"], not complete", fslots + 3 * 64));
    // 22. A bit flip in a record's argument: no integrity data covers a
    //     record's words (a checksum per record would cost on the hot path),
    //     so it is recovered as written by the flip. The known limit.
    let mut b = sharded.clone();
    let at = records + 8 * 32 + 16;
    b[at] ^= 1;
    case(
        "bit flip in a record's argument (undetected)",
        b,
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [], complete".into(),
    );

    assert!(cases.len() >= 16);
    let mut failures = Vec::new();
    for (name, bytes, expect) in &cases {
        let got = verdict(bytes);
        if &got != expect {
            failures.push(format!("{name}:\n  expected {expect}\n  got      {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn errors_name_their_offsets_in_order() {
    // The first check that fails is the one reported (FORMAT.md 4.5).
    let (sharded, _, _) = ring_files();
    let mut b = sharded.clone();
    b[0] = 0;
    b[12] = 0xee;
    assert_eq!(
        storage::recover_bytes(&b).unwrap_err(),
        RingFileError::NotARingFile
    );
    let mut b = sharded.clone();
    put(&mut b, 24, 0);
    put(&mut b, 64, 1);
    let e = storage::recover_bytes(&b).unwrap_err();
    assert_eq!(e.offset(), 24, "{e}");
    assert!(matches!(
        DamageKind::LongerThanLayout { layout: 0 },
        DamageKind::LongerThanLayout { .. }
    ));
}

/// `ring_file` fuzz target, first minute with the new checks: a shared
/// ring whose tail and drop counter are both `u64::MAX` (consistent with each
/// other: every attempt dropped) beside a shard with records made the
/// saturating sums of attempts break `attempts = accepted + dropped`
/// (accepted 0, 64 recovered). No counter may now exceed 2^55; the tail is
/// taken from the slots and the damage listed.
#[test]
fn fuzz_finding_counters_that_sum_past_u64() {
    let (sharded, _, _) = ring_files();
    let (body, _, _, _) = layout(&sharded);
    let mut b = sharded.clone();
    put(&mut b, body, u64::MAX);
    put(&mut b, body + 128, u64::MAX);
    assert_eq!(
        verdict(&b),
        format!(
            "recovered 64 of 100 (dropped 0, unreadable 0), damage [\"{body}:CounterOutOfRange {{ value: {m} }}\", \"{}:DroppedAboveAttempts {{ attempts: 0, dropped: {m} }}\"], not complete",
            body + 128,
            m = u64::MAX
        )
    );
}

/// A pipe that sends a real ring file and then zeros without end: the
/// recovery reads the header, then the layout's length and one byte more,
/// and stops — the file is longer than its layout (damage), its records
/// are recovered, and memory stays bounded by the layout.
#[test]
fn an_endless_pipe_is_read_only_to_its_layout() {
    use std::io::Write;
    let (sharded, _, _) = ring_files();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ring.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let len = sharded.len() as u64;
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            f.write_all(&sharded).unwrap();
            let zeros = [0u8; 65536];
            let mut sent = 0u64;
            // Until the reader closes its end (EPIPE).
            while f.write_all(&zeros).is_ok() {
                sent += zeros.len() as u64;
                assert!(sent < 1 << 30, "the reader kept reading");
            }
        })
    };
    assert!(
        storage::writer_alive(&fifo).is_none(),
        "a pipe is not read for the check"
    );
    let rec = storage::recover_file(&fifo).unwrap();
    writer.join().unwrap();
    assert_eq!(rec.counts.recovered, 64);
    assert_eq!(rec.damage.len(), 1);
    assert_eq!(rec.damage[0].offset, len);
    assert_eq!(
        rec.damage[0].kind,
        DamageKind::LongerThanLayout { layout: len }
    );
}

// ----- the records' own words (FORMAT.md 6.4, "Records") ------------------

/// A ring file of one shard (capacity 64) under the monotonic clock: 100
/// events of `user0` (ticket `i`, argument `i`, at least 2 µs apart), with a
/// 3-record run of `user1` (`0123456789abcdefXY`) 2 µs after event 80, at
/// tickets 81–83; 103 records, the window holds tickets 39–102.
fn monotonic_ring() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let t: &'static Tracer = Box::leak(Box::new(Tracer::with_config(
        Config::default()
            .with_output_dir(dir.path())
            .with_clock(Clock::monotonic()),
    )));
    let q = t
        .create_queue::<Circular>(CircularParams::default().with_capacity(64).with_shards(1))
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    for i in 0..100u64 {
        std::thread::sleep(std::time::Duration::from_micros(2));
        t.log_event(user::USER0, [i, 0]);
        if i == 80 {
            std::thread::sleep(std::time::Duration::from_micros(2));
            t.log_str(user::USER1, "0123456789abcdefXY");
        }
    }
    std::fs::read(dir.path().join("queue0-circular.ring")).unwrap()
}

/// The offset of shard 0's record of `ticket` (capacity 64).
fn rec_at(b: &[u8], ticket: usize) -> usize {
    layout(b).3 + (ticket % 64) * 32
}

#[test]
fn bit_flips_in_records_and_counters_and_their_exact_verdicts() {
    let m = monotonic_ring();
    let (_, _, shards, _) = layout(&m);
    let (sharded, shared, fixed) = ring_files(); // the manual clock
    let (_, sslots, _, _) = layout(&shared);
    let (_, fslots, _, _) = layout(&fixed);
    let at50 = rec_at(&m, 50);
    let time = |b: &[u8], t: usize| get(b, rec_at(b, t));
    let t50 = time(&m, 50);
    // The times as logged: increasing by ticket, at least 2 µs apart outside
    // the run, the run's records at one time.
    for t in 40..=102 {
        let gap = time(&m, t) - time(&m, t - 1);
        assert!(
            if (82..=84).contains(&t) {
                gap == 0 || t == 84 && gap >= 2000
            } else {
                gap >= 2000
            },
            "ticket {t}: gap {gap}"
        );
    }
    let whole = "recovered 64 of 103 (dropped 0, unreadable 0), damage [], complete".to_string();
    let one = |d: String| {
        format!("recovered 63 of 103 (dropped 0, unreadable 1), damage [{d}], not complete")
    };
    let flip = |b: &[u8], at: usize, bit: u32| {
        let mut b = b.to_vec();
        let v = get(&b, at) ^ 1 << bit;
        put(&mut b, at, v);
        b
    };
    let mut cases: Vec<(&str, Vec<u8>, String)> = vec![("as written", m.clone(), whole.clone())];
    let mut case = |name: &'static str, b: Vec<u8>, expect: String| cases.push((name, b, expect));

    // Time (word 0) of a plain event: a high bit set or the highest set bit
    // cleared puts it out of order; a low bit keeps it between its
    // neighbours (2 µs away): not caught.
    case(
        "time bit 40 set",
        flip(&m, at50, 40),
        one(format!(
            "\"{at50}:RecordTime {{ ticket: 50, time: {} }}\"",
            t50 ^ 1 << 40
        )),
    );
    let top = 63 - t50.leading_zeros();
    case(
        "time's top bit cleared",
        flip(&m, at50, top),
        one(format!(
            "\"{at50}:RecordTime {{ ticket: 50, time: {} }}\"",
            t50 ^ 1 << top
        )),
    );
    case("time bit 3 (undetected)", flip(&m, at50, 3), whole.clone());
    // The newest record may be late by any amount: nothing after it to see.
    case(
        "newest record's time bit 40 (undetected)",
        flip(&m, rec_at(&m, 102), 40),
        whole.clone(),
    );
    // The oldest record's time bit 40: out of order with the next.
    let at39 = rec_at(&m, 39);
    case(
        "oldest record's time bit 40",
        flip(&m, at39, 40),
        one(format!(
            "\"{at39}:RecordTime {{ ticket: 39, time: {} }}\"",
            time(&m, 39) ^ 1 << 40
        )),
    );
    // Word 1 of a plain event: id (bits 0–15), flags (16–31), source (32–63).
    case(
        "id bit 0 (undetected)",
        flip(&m, at50 + 8, 0),
        whole.clone(),
    );
    case(
        "flags bit 3",
        flip(&m, at50 + 8, 16 + 3),
        one(format!(
            "\"{}:RecordFlags {{ ticket: 50, flags: 8 }}\"",
            at50 + 8
        )),
    );
    case(
        "flags bit 14",
        flip(&m, at50 + 8, 16 + 14),
        one(format!(
            "\"{}:RecordFlags {{ ticket: 50, flags: 16384 }}\"",
            at50 + 8
        )),
    );
    case(
        "source bit 0 (undetected)",
        flip(&m, at50 + 8, 32),
        whole.clone(),
    );
    // Arguments (words 2, 3) of a plain event: nothing to check them by.
    case(
        "arg0 bit 0 (undetected)",
        flip(&m, at50 + 16, 0),
        whole.clone(),
    );
    case(
        "arg1 bit 63 (undetected)",
        flip(&m, at50 + 24, 63),
        whole.clone(),
    );
    // The run (tickets 81 begin, 82, 83 end): its records share time, id
    // and source, and their flags chain.
    let (at81, at82, at83) = (rec_at(&m, 81), rec_at(&m, 82), rec_at(&m, 83));
    case(
        "run continuation's id",
        flip(&m, at82 + 8, 0),
        one(format!(
            "\"{}:RunBroken {{ ticket: 82, flags: 16385 }}\"",
            at82 + 8
        )),
    );
    case(
        "run begin's source",
        flip(&m, at81 + 8, 32),
        one(format!(
            "\"{}:RunBroken {{ ticket: 81, flags: 24576 }}\"",
            at81 + 8
        )),
    );
    // A low bit of the end record's time set (a bit that was 0: the time
    // moves up, within the 2 µs before the next event): in time order, but
    // no longer the run's time. Cleared instead (the time moves down), it
    // is out of order with the record before it.
    let t83 = time(&m, 83);
    match (0..=10).find(|b| t83 & 1 << b == 0) {
        Some(b) => case(
            "run end's time, a low bit set",
            flip(&m, at83, b),
            one(format!(
                "\"{}:RunBroken {{ ticket: 83, flags: 20482 }}\"",
                at83 + 8
            )),
        ),
        None => case(
            "run end's time, bit 0 cleared",
            flip(&m, at83, 0),
            one(format!(
                "\"{at83}:RecordTime {{ ticket: 83, time: {} }}\"",
                t83 ^ 1
            )),
        ),
    }
    let low_one = t83.trailing_zeros();
    case(
        "run end's time, its lowest 1 cleared",
        flip(&m, at83, low_one),
        one(format!(
            "\"{at83}:RecordTime {{ ticket: 83, time: {} }}\"",
            t83 ^ 1 << low_one
        )),
    );
    case(
        "run end's end flag",
        flip(&m, at83 + 8, 16 + 12),
        one(format!(
            "\"{}:RunBroken {{ ticket: 83, flags: 16386 }}\"",
            at83 + 8
        )),
    );
    // A payload byte: the run's checksum shows it to readers (`[CORRUPT]`),
    // the recovery does not check it.
    case(
        "run payload bit (undetected here)",
        flip(&m, at82 + 16, 0),
        whole.clone(),
    );

    // Shard counters (claimed at +128, committed at +136).
    let mut b = m.clone();
    put(&mut b, shards + 136, 93);
    case(
        "committed 10 low: the 10 newer records are proven by their times",
        b,
        one(format!(
            "\"{}:ShardCounters {{ shard: 0, claimed: 103, committed: 93, taken: 102 }}\"",
            shards + 128
        )),
    );
    let mut b = m.clone();
    put(&mut b, shards + 136, 39);
    case(
        "committed a ring's worth low: the ring went round",
        b,
        one(format!(
            "\"{}:ShardCounters {{ shard: 0, claimed: 103, committed: 39, taken: 102 }}\"",
            shards + 128
        )),
    );
    let mut b = m.clone();
    put(&mut b, shards + 128, 7);
    case("claimed low", b, format!(
        "recovered 64 of 103 (dropped 0, unreadable 0), damage [\"{}:ShardCounters {{ shard: 0, claimed: 7, committed: 103, taken: 103 }}\"], not complete", shards + 128));
    let mut b = m.clone();
    put(&mut b, shards + 128, 103 + 20);
    case("claimed high", b, format!(
        "recovered 64 of 103 (dropped 0, unreadable 0), damage [\"{}:ShardCounters {{ shard: 0, claimed: 123, committed: 103, taken: 103 }}\"], not complete", shards + 128));
    // The manual clock proves nothing by time: the smaller counter is kept
    // (and the slots of tickets 90–99 read as 26–35).
    let (_, _, mshards, _) = layout(&sharded);
    let mut b = sharded.clone();
    put(&mut b, mshards + 136, 90);
    case("manual clock, committed low: the smaller kept", b, format!(
        "recovered 64 of 90 (dropped 0, unreadable 0), damage [\"{}:ShardCounters {{ shard: 0, claimed: 100, committed: 90, taken: 90 }}\"], not complete", mshards + 128));
    // The manual clock's own file: a time flip is not caught, a flags flip is.
    let mat = layout(&sharded).3 + 20 * 32;
    case(
        "manual clock, time bit 40 (undetected)",
        flip(&sharded, mat, 40),
        "recovered 64 of 100 (dropped 0, unreadable 0), damage [], complete".into(),
    );
    // Flags in the shared ring (slot 5 holds ticket 69) and a fixed queue.
    let s5 = sslots + 5 * 64 + 8;
    case("shared ring record's flags", flip(&shared, s5 + 8, 16), format!(
        "recovered 63 of 100 (dropped 0, unreadable 1), damage [\"{}:RecordFlags {{ ticket: 69, flags: 1 }}\"], not complete", s5 + 8));
    let f3 = fslots + 3 * 64 + 8;
    case("fixed record's flags", flip(&fixed, f3 + 8, 31), format!(
        "recovered 19 of 20 (dropped 0, unreadable 1), damage [\"{}:RecordFlags {{ ticket: 3, flags: 32768 }}\"], not complete", f3 + 8));

    let mut failures = Vec::new();
    for (name, bytes, expect) in &cases {
        let got = verdict(bytes);
        if &got != expect {
            failures.push(format!("{name}:\n  expected {expect}\n  got      {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Moves this thread to `cpu` (a migration between CPUs, as the scheduler
/// makes them; a `tsc` clock may read a little behind on the new one).
fn move_to_cpu(cpu: usize) {
    // SAFETY: a zeroed set with one CPU, for this thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// No false alarms: real queues written by several threads — two waves of
/// three, so shards pass to new threads and one thread of each wave logs
/// into the shared ring; names, combine runs of several lengths, events
/// from another source number; threads moved between CPUs every 100
/// events — under every clock kind (a manual clock moved by the logging
/// threads, now and then back), then read from their ring files: every record
/// passes, the counts are the queues' own, the trace reads complete.
#[test]
fn healthy_rings_under_every_clock_kind_read_complete() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let manual = ManualClock::new(1_000);
    let mut clocks = vec![("monotonic", Clock::monotonic())];
    match Clock::tsc() {
        Ok(c) => clocks.push(("tsc", c)),
        Err(e) => eprintln!("no tsc clock on this machine, not checked: {e}"),
    }
    clocks.push(("manual", Clock::manual(&manual)));
    for (kind, clock) in clocks {
        for round in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let t: &'static Tracer = Box::leak(Box::new(Tracer::with_config(
                Config::default()
                    .with_output_dir(dir.path())
                    .with_clock(clock.clone()),
            )));
            let (sharded, shared, fixed) = three_queues(t, (256, 2), 8192);
            t.activate().unwrap();
            for wave in 0..2u64 {
                let threads: Vec<_> = (0..3u64)
                    .map(|k| {
                        let manual = (kind == "manual").then(|| manual.clone());
                        std::thread::spawn(move || {
                            t.name_thread(&format!("w{wave}-{k}")).unwrap();
                            for i in 0..1500u64 {
                                // The manual clock moves as the threads log,
                                // and now and then back.
                                if let Some(m) = &manual {
                                    if i % 200 == 199 {
                                        m.set(m.now().saturating_sub(500));
                                    } else {
                                        m.advance(5);
                                    }
                                }
                                if cpus > 1 && i % 100 == 0 {
                                    move_to_cpu((i / 100 + k) as usize % cpus);
                                }
                                t.log_event(user::USER0, [i, k]);
                                if i % 7 == 0 {
                                    let text = "x".repeat((i % 41) as usize);
                                    t.log_str(user::USER0, &text);
                                    t.log_str(user::USER2, &text);
                                }
                                if i % 11 == 0 {
                                    t.log_event_from(99, user::USER0, [i, k]);
                                }
                                if i % 3 == 0 {
                                    t.log_event(user::USER1, [i, k]);
                                }
                                if i % 5 == 0 {
                                    t.log_event(user::USER2, [i, k]);
                                }
                            }
                        })
                    })
                    .collect();
                for h in threads {
                    h.join().unwrap();
                }
            }
            for (q, name) in [
                (sharded, "queue0-circular.ring"),
                (shared, "queue1-circular.ring"),
                (fixed, "queue2-fixed.ring"),
            ] {
                let bytes = std::fs::read(dir.path().join(name)).unwrap();
                let rec = storage::recover_bytes(&bytes).unwrap();
                assert_eq!(rec.header.clock_kind(), kind);
                assert!(
                    rec.damage.is_empty(),
                    "{kind} clock, round {round}, {name}: {:?}",
                    rec.damage
                );
                let c = t.counters(q).unwrap();
                assert_eq!(
                    (
                        rec.counts.attempts,
                        rec.counts.dropped,
                        rec.counts.unreadable
                    ),
                    (c.accepted + c.dropped, c.dropped, 0),
                    "{kind} clock, round {round}, {name}"
                );
                assert!(verdict(&bytes).ends_with("damage [], complete"));
            }
        }
    }
}

/// Every single-bit flip in the words of 63 committed shard records (all
/// but the newest: tickets 39–101, the run at 81–83) and in the shard's two
/// counters, each recovered alone: which are caught (the recovery lists
/// damage) and which are not. RELIABILITY.md quotes the totals printed.
#[test]
fn every_bit_flip_of_a_shard_caught_or_not() {
    let m = monotonic_ring();
    let (_, _, shards, _) = layout(&m);
    let caught = |at: usize, bit: u32| {
        let mut b = m.clone();
        let v = get(&b, at) ^ 1 << bit;
        put(&mut b, at, v);
        !storage::recover_bytes(&b).unwrap().damage.is_empty()
    };
    // (field, plain or run, bits) -> caught of tried
    let mut table: std::collections::BTreeMap<(&str, bool), (u32, u32)> = Default::default();
    for t in 39..=101usize {
        let run = (81..=83).contains(&t);
        let at = rec_at(&m, t);
        for (field, word, bits) in [
            ("time", 0, 0..64),
            ("id", 1, 0..16),
            ("flags", 1, 16..32),
            ("source", 1, 32..64),
            ("arg0", 2, 0..64),
            ("arg1", 3, 0..64),
        ] {
            for bit in bits {
                let c = caught(at + 8 * word, bit);
                let e = table.entry((field, run)).or_default();
                e.0 += u32::from(c);
                e.1 += 1;
                // What is certain: a plain event's flags, and time bits from
                // 32 (4.3 s, past any gap here) are always caught; its id,
                // source, arguments and time bits below 11 (1 µs, within the
                // 2 µs between events) never; a run record's time, id and
                // source always (they differ from the rest of the run).
                let expect = match (field, run) {
                    ("flags", _) => Some(true),
                    ("time", false) if bit >= 32 => Some(true),
                    ("time", false) if bit <= 10 => Some(false),
                    ("time" | "id" | "source", true) => Some(true),
                    ("id" | "source" | "arg0" | "arg1", false) => Some(false),
                    _ => None,
                };
                if let Some(x) = expect {
                    assert_eq!(c, x, "ticket {t} {field} bit {bit}");
                }
            }
        }
    }
    let mut counters = (0, 0);
    for at in [shards + 128, shards + 136] {
        for bit in 0..64 {
            counters.0 += u32::from(caught(at, bit));
            counters.1 += 1;
        }
    }
    let (mut all, mut tried) = counters;
    for ((field, run), (c, n)) in &table {
        eprintln!(
            "{field:>6} {}: {c} of {n} caught",
            if *run { "run  " } else { "plain" }
        );
        all += c;
        tried += n;
    }
    eprintln!("counters: {} of {} caught", counters.0, counters.1);
    eprintln!("all: {all} of {tried} caught");
    // A committed counter one below claimed reads as a record being
    // written (6.3): that flip is not damage; every other one is.
    assert_eq!(counters, (127, 128));
}
