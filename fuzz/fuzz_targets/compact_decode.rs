//! Arbitrary bytes as a stream of compact chunks (FORMAT.md 8): never a
//! panic; a truncated chunk is reported only when bytes are missing; and
//! every chunk whose records all decode re-encodes to a chunk that decodes
//! to the same header and records; the batch decoder (`Records::fill`)
//! yields what the iterator does, the error included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace_core::compact::{Chunk, ChunkEncoder, DecodeError, HEADER_LEN, MAX_RECORD_LEN};
use qtrace_core::Event;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while !rest.is_empty() {
        let chunk = match Chunk::new_checked(rest) {
            Ok(chunk) => chunk,
            Err(DecodeError::Truncated { needed, available }) => {
                assert!(needed > available && available == rest.len());
                return;
            }
            Err(_) => return,
        };
        assert!(chunk.len() >= HEADER_LEN && chunk.len() <= rest.len());
        let mut events: Vec<Event> = Vec::new();
        let mut whole = true;
        for r in chunk.records() {
            match r {
                Ok(e) => events.push(e),
                Err(DecodeError::Corrupt { offset, .. }) => {
                    assert!(offset >= HEADER_LEN && offset <= chunk.len());
                    whole = false;
                }
                Err(e) => panic!("{e:?} from the records of a whole chunk"),
            }
        }
        assert!(events.len() <= chunk.count() as usize);
        let mut records = chunk.records();
        let mut batch = vec![Event::default(); 5];
        let mut filled = Vec::new();
        loop {
            let n = records.fill(&mut batch);
            filled.extend_from_slice(&batch[..n]);
            if n < batch.len() {
                break;
            }
        }
        assert_eq!(filled, events);
        assert_eq!(records.next().is_some(), !whole);
        if whole {
            assert_eq!(events.len(), chunk.count() as usize);
            let mut buf = vec![0u8; HEADER_LEN + MAX_RECORD_LEN * events.len()];
            let mut enc = ChunkEncoder::new(&mut buf, chunk.header()).unwrap();
            for e in &events {
                enc.push(e).expect("48 + 39 n bytes hold n records");
            }
            let n = enc.finish();
            let again = Chunk::new_checked(&buf[..n]).unwrap();
            let back: Vec<Event> = again.records().map(|r| r.unwrap()).collect();
            assert_eq!(back, events);
            let mut h = chunk.header();
            if let Some(first) = events.first() {
                h.base_time = first.time;
            }
            assert_eq!(again.header(), h);
        }
        rest = &rest[chunk.len()..];
    }
});
