//! A tracer streaming over UDP in tests (the library's `tests/receiver/stream_end.rs`
//! and the command's `cli/tests/recv/stream_end.rs` use this file as
//! `common::…`).

use std::thread;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::{Udp, UdpParams};
use qtrace::{QueueHandle, Tracer};

/// A tracer with one UDP queue made from `params` taking the user class,
/// activated.
pub fn udp_tracer(params: UdpParams) -> (Tracer, QueueHandle) {
    let tracer = Tracer::new();
    let q = tracer.create_queue::<Udp>(params).unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    (tracer, q)
}

/// Logs `n` events `user0` (values `from..from + n`), `batch` at a time with
/// a pause between batches, so a loopback receiver keeps up.
pub fn log_paced(tracer: &Tracer, from: u64, n: u64, batch: u64) {
    for i in from..from + n {
        tracer.log_event(user::USER0, [i, 0]);
        if (i + 1) % batch == 0 {
            thread::sleep(Duration::from_micros(500));
        }
    }
}
