//! The classes the macro and scope tests declare with `qtrace::classes!`
//! (tests/model/macros.rs, tests/export/scopes.rs), a tracer that knows
//! them with one fixed queue, and that queue's records.

use qtrace::clock::{Clock, ManualClock};
use qtrace::queues::{Fixed, FixedParams};
use qtrace::{Config, EventId, QueueHandle, Tracer};

qtrace::classes! {
    /// This test's classes.
    pub static CATALOG;

    /// The network stack.
    pub mod net: "network stack" {
        /// A packet arrived.
        event RX = "rx": "a packet was received" (len, port);
        event TX = "tx": "a packet was sent" (len, port);
        event IDLE = "idle": "nothing to do" ();
        scope REQUEST = "request": "one request served" (conn);
    }

    /// The disk.
    pub mod disk: "block device" {
        event READ = "read": "a block was read" (block);
        scope FLUSH = "flush": "a cache flush" ();
        flow SYNC = "sync": "a write on its way to the device" ();
    }
}

pub fn tracer(time: &ManualClock) -> (Tracer, QueueHandle) {
    // Its fixed queue saves queue0-fixed.qtr at shutdown: into a scratch
    // folder of this call, never the checkout's qtrace-out.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = super::temp_dirs::fresh_dir("scopes", &n.to_string());
    let tracer = Tracer::with_config(
        Config::default()
            .with_clock(Clock::manual(time))
            .with_output_dir(out),
    );
    tracer.define_classes(&CATALOG).unwrap();
    let q = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(64))
        .unwrap();
    tracer.assign_class(net::CLASS, q).unwrap();
    tracer.assign_class(disk::CLASS, q).unwrap();
    tracer.activate().unwrap();
    (tracer, q)
}

pub fn recorded(tracer: &Tracer, q: QueueHandle) -> Vec<(u64, EventId, [u64; 2])> {
    tracer
        .queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events()
        .iter()
        .map(|e| (e.time, e.id, e.args))
        .collect()
}
