//! The receiver's session file (FORMAT.md 3.7) on arbitrary bytes:
//! never a panic; a file that loads and lists at most 16,384 ids is
//! written back byte for byte.
#![no_main]
use libfuzzer_sys::fuzz_target;
use qtrace::receiver::{ReceiverConfig, ReceiverCore};

fuzz_target!(|data: &[u8]| {
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    if let Ok(ids) = core.load_sessions(data) {
        let listed = u32::from_be_bytes([data[8], data[9], data[10], data[11]]) as usize;
        if listed <= 16_384 {
            assert_eq!(ids, listed);
            assert_eq!(core.session_file(), data);
        }
    }
});
