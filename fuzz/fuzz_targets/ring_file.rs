//! Ring-file bytes into the crash recovery: never a panic, memory bounded
//! by the input (the layout is checked against the length before any ring
//! is read), and counts that never exceed the attempts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::storage;

fuzz_target!(|data: &[u8]| {
    let Ok(rec) = storage::recover_bytes(data) else {
        return;
    };
    let c = rec.counts;
    assert!(c.recovered <= c.attempts);
    // Every recovered event is in the trace, with its hoops records.
    assert!(rec.events.len() as u64 >= c.recovered);
});
