//! The control protocol's request and reply parsers (FORMAT.md §9) on
//! arbitrary bytes: never a panic; what parses emits back to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use qtrace::control::{Reply, Request};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Request::parse(data) {
        assert_eq!(Request::parse(&r.emit()), Ok(r));
    }
    let _ = Reply::parse(data);
});
