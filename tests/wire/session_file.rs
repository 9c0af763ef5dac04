//! FORMAT.md 3.7's session file: the worked example, byte for byte.

use qtrace::receiver::{ReceiverConfig, ReceiverCore};

use crate::format::format_md_example;

#[test]
fn the_session_file_example_loads_and_is_written_back_byte_for_byte() {
    let bytes = format_md_example("session-file");
    assert_eq!(bytes.len(), 72);
    let mut core = ReceiverCore::new(ReceiverConfig::default());
    assert_eq!(core.load_sessions(&bytes), Ok(2));
    assert_eq!(core.session_file(), bytes);
    // The first bad field is named by its offset (FORMAT.md 3.7's order).
    let mut bad = bytes.clone();
    bad[51] = 0x2a; // the second id no longer above the first
    assert_eq!(core.load_sessions(&bad).unwrap_err().offset(), 48);
    let mut bad = bytes.clone();
    bad[47] = 1; // an ended entry with a number
    assert_eq!(core.load_sessions(&bad).unwrap_err().offset(), 40);
}
