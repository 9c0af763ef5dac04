//! Combine runs in tests (the library's `tests/export/combine.rs` and the command's
//! `cli/tests/export/combine.rs` use this file as `common::…`): the payload
//! logged for each length, and the tracers both sides log them through.

use std::path::{Path, PathBuf};

use qtrace::classes::user;
use qtrace::queues::{Fixed, FixedParams};
use qtrace::{Config, QueueHandle, Tracer};

/// The payload logged for length `len`: distinct for every length.
pub fn payload(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| b'a' + ((i * 7 + len) % 26) as u8)
        .collect()
}

/// A tracer saving to `d` with a fixed queue of `capacity` records taking
/// `user1`, activated.
pub fn fixed_tracer(d: &Path, capacity: usize) -> Tracer {
    fixed_tracer_in(d, FixedParams::default().with_capacity(capacity))
}

/// [`fixed_tracer`] with the queue's parameters `params`.
pub fn fixed_tracer_in(d: &Path, params: FixedParams) -> Tracer {
    let tracer = Tracer::with_config(Config::default().with_output_dir(d));
    let q = tracer.create_queue::<Fixed>(params).unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.activate().unwrap();
    tracer
}

/// A tracer saving to `d` with two fixed queues of 64 records, the first
/// taking `user0` and the second `user1`, activated; this thread named
/// source 7 "worker-7" and task 3 named "idle task" (both names go to every
/// queue), then `user0 [1, 0]` and `user1 [2, 0]` logged. Returns the tracer
/// and the second queue.
pub fn two_queues_with_names(d: &Path) -> (Tracer, QueueHandle) {
    let tracer = Tracer::with_config(Config::default().with_output_dir(d));
    let q0 = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(64))
        .unwrap();
    let q1 = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(64))
        .unwrap();
    tracer.assign_event(user::USER0, q0).unwrap();
    tracer.assign_event(user::USER1, q1).unwrap();
    tracer.activate().unwrap();
    qtrace::source::set_current(7);
    assert_eq!(tracer.name_thread("worker-7").unwrap(), 7);
    tracer.name_task(3, "idle task").unwrap();
    tracer.log_event(user::USER0, [1, 0]);
    tracer.log_event(user::USER1, [2, 0]);
    (tracer, q1)
}

/// The file of a fixed queue (64 records, in `d`) holding two runs, `user1`
/// "whole" (arg 1) and 64 bytes of "y" (arg 2, 5 records), cut as by a crash
/// while it was written: it ends 2 records into the second run (4 records
/// kept, no close run). In 32-byte records (`with_compact(false)`), cut
/// at a record's end.
pub fn file_cut_inside_a_run(d: &Path) -> PathBuf {
    let tracer = fixed_tracer_in(
        d,
        FixedParams::default().with_capacity(64).with_compact(false),
    );
    tracer.log_event_str(user::USER1, 1, "whole");
    tracer.log_event_str(user::USER1, 2, &"y".repeat(64)); // 5 records
    let report = tracer.shutdown().unwrap();
    let file = report.queues[0].status.files[0].clone();
    // The runs' 2 + 5 records, then the close run's 3.
    let bytes = std::fs::read(&file).unwrap();
    let records_at = bytes.len() - 32 * (2 + 5 + 3);
    std::fs::write(&file, &bytes[..records_at + 32 * 4]).unwrap();
    file
}
