//! Trace-file bytes into the reader: never a panic, bounded memory, and every
//! header it accepts re-encodes to a header that reads back equal. Compact
//! files (version 2, FORMAT.md 1.11) go through the chunk decoder: every
//! error names a byte inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::TraceHeader;

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = TraceReader::new(data) else {
        return;
    };
    let header = reader.header().clone();
    let start = reader.header_len() as usize;
    assert!(start <= data.len());
    let bytes = header.to_bytes();
    let (back, len) = TraceHeader::decode(&bytes).expect("a re-encoded header decodes");
    assert_eq!(back, header);
    assert_eq!(len, bytes.len());
    let mut reader = reader;
    let mut events = 0usize;
    for item in reader.by_ref() {
        match item {
            Ok(e) => {
                // Naming any id is total.
                let _ = header.catalog().event_name(e.id);
                let _ = header.catalog().class_of(e.id);
                events += 1;
            }
            Err(err) if header.is_compact() => {
                assert!(err.offset() as usize >= start && err.offset() as usize <= data.len());
                assert!(err.wire_error().is_some());
            }
            Err(err) => {
                assert_eq!(err.offset() as usize, start + 32 * events);
                assert!(err.wire_error().is_some_and(|w| w.is_truncated()));
            }
        }
    }
    // The end is always settled; a final close run is not yielded.
    let end = reader.completeness().expect("settled at the end");
    assert_eq!(reader.records_read(), events as u64);
    let run = match end {
        Completeness::Complete(_) | Completeness::Mismatch { .. } => 3,
        _ => 0,
    };
    assert_eq!(end.is_complete().is_none(), !header.closes());
    if header.is_compact() {
        // At least 2 bytes a decoded record, and 48 a chunk.
        assert!(2 * (events + run) <= data.len() - start);
        return;
    }
    assert_eq!(events + run, (data.len() - start) / 32);
});
