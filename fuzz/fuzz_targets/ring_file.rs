//! Ring-file bytes into the crash recovery: never a panic, memory bounded
//! by the input (the layout is checked against the length before any ring
//! is read), counts that never exceed the attempts and obey the queues'
//! equations, hoops records that add up to the loss, and a damaged file
//! never written as complete.
#![no_main]

use libfuzzer_sys::fuzz_target;
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
    // A damaged file is marked and never complete; a clean one is.
    let marked = rec.events.iter().any(|e| e.flags == storage::DAMAGED);
    assert_eq!(marked, !rec.damage.is_empty());
    assert_eq!(rec.is_complete(), rec.damage.is_empty());
    // Every damage names a byte inside the file (or its end).
    for d in &rec.damage {
        assert!(d.offset <= data.len() as u64);
    }
});
