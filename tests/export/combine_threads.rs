//! Combine runs from several threads into a circular queue that overwrites
//! them: no reader ever shows a wrong payload, and every run that did not
//! survive whole is marked cut.

use std::sync::Barrier;

use proptest::prelude::*;
use qtrace::classes::user;
use qtrace::combine::{Assembler, Item, PayloadState};
use qtrace::queues::{Circular, CircularParams};
use qtrace::{Config, Tracer};

/// The payload of run `k` of thread `t`.
fn payload(t: u64, k: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(31) ^ t.wrapping_mul(101) ^ k.wrapping_mul(7)) as u8)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn interleaved_runs_in_an_overwriting_circular_queue(
        lens in prop::collection::vec(prop::collection::vec(0usize..400, 1..40), 2..4),
        capacity_log in 5u32..9,
        shards in prop::sample::select(vec![0usize, 1, 4]),
    ) {
        let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
        let tracer = Tracer::with_config(Config::default().with_output_dir(out.path()));
        let q = tracer.create_queue::<Circular>(CircularParams::default().with_capacity(1 << capacity_log).with_shards(shards)).unwrap();
        tracer.assign_event(user::USER2, q).unwrap();
        tracer.activate().unwrap();
        let circular = tracer.queue(q).unwrap().as_circular().unwrap();
        let barrier = Barrier::new(lens.len() + 1);
        let snapshots = std::thread::scope(|s| {
            for (t, lens) in lens.iter().enumerate() {
                let (tracer, barrier) = (&tracer, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for (k, &len) in lens.iter().enumerate() {
                        let (t, k) = (t as u64, k as u64);
                        tracer.log_event_bytes(user::USER2, t << 32 | k, &payload(t, k, len));
                    }
                });
            }
            barrier.wait();
            // Snapshots while the producers run, then one after.
            vec![circular.snapshot_events(), circular.snapshot_events()]
        });
        let mut all = snapshots;
        all.push(circular.snapshot_events());
        for records in all {
            let mut items = Vec::new();
            let mut asm = Assembler::new();
            for e in records {
                asm.push(e, &mut |i| items.push(i));
            }
            asm.finish(&mut |i| items.push(i));
            for item in &items {
                let Item::Payload(p) = item else { continue };
                match (p.state, p.arg) {
                    (PayloadState::Complete, Some(arg)) => {
                        let (t, k) = (arg >> 32, arg & 0xffff_ffff);
                        let len = lens[t as usize][k as usize];
                        prop_assert_eq!(&p.bytes, &payload(t, k, len));
                    }
                    (PayloadState::Complete, None) => prop_assert!(false, "whole without its head"),
                    (PayloadState::Cut { expected: Some(n), received }, Some(arg)) => {
                        // Marked, and what it shows is a prefix of the run.
                        let (t, k) = (arg >> 32, arg & 0xffff_ffff);
                        let want = payload(t, k, lens[t as usize][k as usize]);
                        prop_assert!(received < n);
                        prop_assert!(want.starts_with(&p.bytes), "{:?}", p);
                    }
                    (PayloadState::Cut { expected: None, .. }, None) => {}
                    (PayloadState::Mismatch, _) => {
                        prop_assert!(false, "records of two runs mixed: {:?}", p)
                    }
                    _ => prop_assert!(false, "inconsistent payload {:?}", p),
                }
            }
        }
        // After the producers: every run's records are either all there
        // (a whole payload) or the run is gone or shown cut; the newest run
        // of each thread is whole unless it was longer than the queue.
        let c = tracer.shutdown().unwrap().queues[0].counters;
        prop_assert!(c.is_consistent());
    }
}
