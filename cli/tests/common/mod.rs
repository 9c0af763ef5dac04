//! The command's test helpers, declared once per test binary
//! (`cli/tests/<group>/main.rs` has `mod common;`): the command's own
//! (`success`, `recv`) and the library's test helpers they share
//! (`tests/common/`).

#![allow(dead_code)]

pub mod args_trace;
pub mod main_job;
pub mod online_writer;
pub mod parquet_rows;
pub mod queue_counters_file;
pub mod recv;
pub mod success;

#[path = "../../../tests/common/analysis_trace.rs"]
pub mod analysis_trace;
#[path = "../../../tests/common/babeltrace2.rs"]
pub mod babeltrace2;
#[path = "../../../tests/common/combine_runs.rs"]
pub mod combine_runs;
#[path = "../../../tests/common/default_queues.rs"]
pub mod default_queues;
#[path = "../../../tests/common/loopback.rs"]
pub mod loopback;
#[path = "../../../tests/common/manual_tracer.rs"]
pub mod manual_tracer;
#[path = "../../../tests/common/net_class.rs"]
pub mod net_class;
#[path = "../../../tests/common/perfetto_decode.rs"]
pub mod perfetto_decode;

/// A zlib stream inflated (the Perfetto export's chunks, for
/// `perfetto_decode`), by `flate2` with miniz_oxide: a decoder
/// independent of the zlib-rs that wrote them.
#[allow(dead_code)]
pub fn inflate(z: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(z), &mut plain)
        .expect("a zlib stream");
    plain
}
#[path = "../../../tests/common/read_all.rs"]
pub mod read_all;
#[path = "../../../tests/common/temp_dirs.rs"]
pub mod temp_dirs;
#[path = "../../../tests/common/tmpfs.rs"]
pub mod tmpfs;
#[path = "../../../tests/common/udp_sender.rs"]
pub mod udp_sender;
