//! Ring-file bytes into the crash recovery: never a panic, memory bounded
//! by the input (the layout is checked against the length before any ring
//! is read), counts that never exceed the attempts and obey the queues'
//! equations, hoops records that add up to the loss, and a damaged file
//! never written as complete; every record kept carries flags a tracer
//! writes, and each record left out by a check of its words (FORMAT.md 6.4)
//! is one mark.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::classes::tracer::HOOPS;
use qtrace::storage;

fuzz_target!(|data: &[u8]| {
    let Ok(rec) = storage::recover_bytes(data) else {
        return;
    };
    let c = rec.counts;
    assert!(c.recovered <= c.attempts);
    assert_eq!(c.attempts, c.accepted + c.dropped);
    assert!(c.recovered + c.unreadable <= c.accepted);
    // Every recovered event is in the trace, with its hoops records.
    assert!(rec.events.len() as u64 >= c.recovered);
    // A damaged file ends with its mark and is never complete; a clean one
    // is complete. (The rings' own records may carry any flags, so only
    // the last record is the mark.)
    if !rec.damage.is_empty() {
        let last = rec.events.last().expect("the damage mark");
        assert!(last.id == HOOPS && last.flags == storage::DAMAGED && last.args[0] == 0);
    }
    assert_eq!(rec.is_complete(), rec.damage.is_empty());
    // The hoops records add up to the loss; every record kept from a ring
    // carries flags a tracer writes (FORMAT.md 6.4), every other is a mark.
    let hoops: u64 = rec.events.iter().filter(|e| e.id == HOOPS && e.source == u32::MAX && e.flags & !3 == 0).map(|e| e.args[0]).sum();
    assert!(hoops >= c.lost());
    for e in &rec.events {
        let written = matches!(e.flags, 0 | 0x6000 | 0x7000)
            || (e.flags & !0x11ff == 0x4000 && (1..=256).contains(&(e.flags & 0x1ff)));
        assert!(written || (e.id == HOOPS && matches!(e.flags, 1..=3)), "{e:?}");
    }
    let marks = rec.events.iter().filter(|e| e.id == HOOPS && e.flags == 3).count();
    let damaged: usize = rec.damage.iter().filter(|d| matches!(d.kind, storage::DamageKind::RecordFlags { .. } | storage::DamageKind::RecordTime { .. } | storage::DamageKind::RunBroken { .. })).count();
    assert_eq!(marks, damaged);
    // Every damage names a byte inside the file (or its end).
    for d in &rec.damage {
        assert!(d.offset <= data.len() as u64);
    }
});
