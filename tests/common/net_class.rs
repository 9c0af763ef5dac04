//! The user class `net` that example traces in tests define
//! (`tests/wire/fuzz_corpus.rs` and `cli/tests/read/cli.rs` use this file as
//! `common::…`).

use qtrace::classes::ClassSpec;

/// Class `net` ("network stack"): `rx(len, port)` "a packet arrived" and
/// `tx(len)` "a packet left", in that order (the first two user event ids).
pub fn net_class() -> ClassSpec {
    ClassSpec::new("net", "network stack")
        .event("rx", "a packet arrived", &["len", "port"])
        .event("tx", "a packet left", &["len"])
}
