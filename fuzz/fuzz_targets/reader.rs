//! Trace-file bytes into the reader: never a panic, bounded memory, and every
//! header it accepts re-encodes to a header that reads back equal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace::reader::TraceReader;
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
    let mut events = 0usize;
    for item in reader {
        match item {
            Ok(e) => {
                // Naming any id is total.
                let _ = header.catalog().event_name(e.id);
                let _ = header.catalog().class_of(e.id);
                events += 1;
            }
            Err(err) => {
                assert_eq!(err.offset() as usize, start + 32 * events);
                assert!(err.wire_error().is_some_and(|w| w.is_truncated()));
            }
        }
    }
    assert_eq!(events, (data.len() - start) / 32);
});
