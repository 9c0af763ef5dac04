//! Arbitrary bytes as a firmware byte stream (FORMAT.md 10): never a panic,
//! in any split of the input; every frame between two delimiters is counted
//! good or bad; a good frame re-encodes to the same bytes; the counts do not
//! depend on how the bytes were split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace_core::compact::Chunk;
use qtrace_core::stream::{encode_frame, max_encoded_len, FrameDecoder, FrameKind};

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |&b| b as usize % 64 + 1);
    let mut whole = Vec::new();
    let mut buf = [0u8; 1024];
    let mut d = FrameDecoder::new(&mut buf);
    d.feed(data, |f| {
        if let Ok(f) = f {
            let mut out = vec![0u8; max_encoded_len(f.body.len() + 5) + 1];
            let n = encode_frame(f.kind, f.body, &mut out).unwrap();
            assert_eq!(out[n - 1], 0);
            assert!(!out[..n - 1].contains(&0));
            if f.kind == FrameKind::Chunk {
                if let Ok(c) = Chunk::new_checked(f.body) {
                    for r in c.records() {
                        let _ = r;
                    }
                }
            }
        }
        whole.push(f.map(|f| (f.kind, f.body.to_vec())));
    });
    let counts = d.counts();
    assert_eq!(counts.frames + counts.bad, whole.len() as u64);
    let mut buf2 = [0u8; 1024];
    let mut d2 = FrameDecoder::new(&mut buf2);
    let mut pieces = Vec::new();
    for p in data.chunks(split) {
        d2.feed(p, |f| pieces.push(f.map(|f| (f.kind, f.body.to_vec()))));
    }
    assert_eq!(pieces, whole);
    assert_eq!(d2.counts(), counts);
});
