//! Arbitrary bytes after a valid compact trace-file header (version 2,
//! FORMAT.md 1.11): the chunk reader never panics, yields at most one
//! error, then `None`, and always settles the file's completeness.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use qtrace::classes::Catalog;
use qtrace::clock::{Clock, ManualClock};
use qtrace::reader::TraceReader;
use qtrace::wire::TraceHeader;

fn header() -> &'static [u8] {
    static HEADER: OnceLock<Vec<u8>> = OnceLock::new();
    HEADER.get_or_init(|| {
        TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
            .with_close_run(true)
            .with_compact(true)
            .to_bytes()
    })
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = header().to_vec();
    bytes.extend_from_slice(data);
    let mut reader = TraceReader::new(&bytes[..]).expect("the header is valid");
    let (mut events, mut errors) = (0u64, 0u32);
    for item in reader.by_ref() {
        match item {
            Ok(_) => events += 1,
            Err(e) => {
                errors += 1;
                assert!(e.offset() as usize >= header().len() && e.offset() as usize <= bytes.len());
            }
        }
    }
    assert!(errors <= 1);
    assert_eq!(reader.records_read(), events);
    assert!(reader.completeness().is_some());
    assert!(2 * events <= data.len() as u64);
});
