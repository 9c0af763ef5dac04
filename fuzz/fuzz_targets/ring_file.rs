//! Ring-file bytes into the crash recovery: never a panic, memory bounded
//! by the input (the layout is checked against the length before any ring
//! is read), counts that never exceed the attempts and obey the queues'
//! equations, hoops records that add up to the loss, and a damaged file
//! never written as complete.
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
    // Every damage names a byte inside the file (or its end).
    for d in &rec.damage {
        assert!(d.offset <= data.len() as u64);
    }
});
