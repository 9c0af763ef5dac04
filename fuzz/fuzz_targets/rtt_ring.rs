//! Arbitrary RTT control blocks and counter sequences (FORMAT.md 10.7):
//! never a panic; a parsed block obeys its invariants; every take returns
//! at most the buffer's size, and taken + lost only grow by what the
//! counters allow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qtrace_core::stream::{RttCursor, RttHeader, RTT_HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = RttHeader::parse(data) {
        assert!(h.size.is_power_of_two() && h.wr_off < h.size);
        assert!(h.reserved.wrapping_sub(h.committed) <= h.size);
    }
    // The rest: a 64-byte buffer, then (committed, reserved) pairs.
    let Some(rest) = data.get(RTT_HEADER_LEN..) else {
        return;
    };
    let buf = [0x55u8; 64];
    let mut cursor = RttCursor::new();
    for pair in rest.chunks_exact(8) {
        let c = u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]);
        let r = u32::from_le_bytes([pair[4], pair[5], pair[6], pair[7]]);
        let before = (cursor.taken(), cursor.lost());
        match cursor.take(c, &buf, r) {
            Ok(t) => {
                let n = (t.first.len() + t.second.len()) as u64;
                assert!(n <= 64);
                assert_eq!(cursor.taken(), before.0 + n);
                assert_eq!(cursor.lost(), before.1 + t.lost);
            }
            Err(_) => assert_eq!((cursor.taken(), cursor.lost()), before),
        }
    }
});
