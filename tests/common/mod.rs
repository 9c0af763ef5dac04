//! Test helpers: a queue type that records every event it is given, so tests
//! can see exactly where each event went.

#![allow(dead_code)]

use std::sync::Arc;

use parking_lot::Mutex;
use qtrace::queue::{AtomicCounters, Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::{ConfigError, Event};

/// Where a recorder's events end up: shared with the test.
pub type Log = Arc<Mutex<Vec<Event>>>;

/// A queue type whose queues push every event into the `Log` given as their
/// parameter.
#[derive(Default)]
pub struct Recorder;

impl QueueType for Recorder {
    type Params = Log;
    const NAME: &'static str = "recorder";
    fn create(&self, log: Log, _ctx: &QueueContext) -> Result<AnyQueue, ConfigError> {
        Ok(AnyQueue::custom(RecorderQueue {
            log,
            counters: AtomicCounters::default(),
        }))
    }
}

/// The queue a `Recorder` creates.
pub struct RecorderQueue {
    log: Log,
    counters: AtomicCounters,
}

impl Queue for RecorderQueue {
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }
    fn post(&self, _r: Reservation, event: &Event) {
        // A test helper may lock; built-in queues never do.
        self.log.lock().push(*event);
        self.counters.add_accepted(1);
        self.counters.add_delivered(1);
    }
    fn counters(&self) -> QueueCounters {
        self.counters.snapshot()
    }
}

/// A new empty log.
pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// The event ids in a log, in order.
pub fn ids(log: &Log) -> Vec<u16> {
    log.lock().iter().map(|e| e.id.0).collect()
}

// The helpers that only some tests use, each declared here once: a layer's
// binary (`tests/<layer>/main.rs`) declares `mod common;` once, and its
// files say `use crate::common::temp_dirs;`.
pub mod analysis_trace;
pub mod babeltrace2;
pub mod child_test;
pub mod combine_runs;
pub mod default_queues;
pub mod loopback;
pub mod manual_tracer;
pub mod memory_tracer;
pub mod net_class;
#[cfg(feature = "export")]
pub mod perfetto_decode;

/// A zlib stream inflated (the Perfetto export's chunks, for
/// `perfetto_decode`), by zlib-rs: the library's own dependency under
/// `export`, not a dev-dependency, which the README's first command
/// (`cargo run --example`) would compile too. The command's tests, which
/// include `perfetto_decode` as well, have their own (`flate2`).
#[cfg(feature = "export")]
pub fn inflate(z: &[u8]) -> Vec<u8> {
    let mut room = 16 * z.len().max(64);
    loop {
        let mut plain = vec![0; room];
        match zlib_rs::decompress_slice(&mut plain, z, Default::default()) {
            (out, zlib_rs::ReturnCode::Ok) => return out.to_vec(),
            (_, zlib_rs::ReturnCode::BufError) => room *= 4,
            (_, code) => panic!("not a zlib stream: {code:?}"),
        }
    }
}
pub mod read_all;
pub mod scope_classes;
pub mod temp_dirs;
pub mod tmpfs;
pub mod udp_sender;
