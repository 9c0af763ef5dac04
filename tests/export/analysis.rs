//! `qtrace::analysis` on a small hand-built trace whose every figure is worked
//! out by hand in the comments: CPU time, response times, preemptions,
//! blocking on a semaphore, idle time, an interrupt, a latency, and a loss
//! inside measured intervals (left out of the figures and counted apart).

use qtrace::analysis::{AnalysisOptions, Analyzer, LatencySpec, MatchKey, Report};
use qtrace::classes::{lowlevel, semaphore, system, tracer, Catalog};
use qtrace::Event;

use crate::common::analysis_trace;
use analysis_trace::trace;

fn analyse(latency: Option<LatencySpec>) -> Report {
    let mut a = Analyzer::new(
        &Catalog::builtin(),
        AnalysisOptions {
            latency,
            ..AnalysisOptions::default()
        },
    );
    for e in trace() {
        a.push(&e);
    }
    a.finish()
}

#[test]
fn tasks_have_exact_cpu_time_response_preemptions_and_blocking() {
    let r = analyse(None);
    assert_eq!((r.events, r.hoops, r.lost), (16, 1, 4));
    assert_eq!((r.first_ns, r.last_ns, r.span_ns()), (0, 1_000, 1_000));
    let t1 = &r.tasks[&1];
    assert_eq!((t1.activations, t1.dispatches), (1, 3));
    assert_eq!((t1.cpu_ns, t1.cpu_lossy), (350, 1)); // 250 + 100; 800..1000 saw the loss
    assert_eq!((t1.response.len(), t1.response_lossy), (0, 1));
    assert_eq!(t1.preemptions, 1);
    assert_eq!(
        (t1.blocked_waits, t1.blocked_ns, t1.blocked_lossy),
        (1, 250, 0)
    );
    assert_eq!(t1.unmatched, 0);

    let t2 = &r.tasks[&2];
    assert_eq!((t2.activations, t2.dispatches, t2.cpu_ns), (2, 2, 250));
    let s = t2.response.summary();
    assert_eq!(
        (s.count, s.min, s.mean, s.p99, s.max),
        (2, 150, 160, 170, 170)
    );
    assert_eq!((t2.preemptions, t2.blocked_waits), (0, 0));

    let t3 = &r.tasks[&3];
    assert_eq!((t3.activations, t3.dispatches, t3.cpu_ns), (0, 1, 60));
}

#[test]
fn cpus_split_time_into_busy_idle_and_lossy() {
    let r = analyse(None);
    let c0 = &r.cpus[&0];
    // busy 250 + 100 + 100 + 150; idle 100 + 50 + 50; 800..1000 saw the loss.
    assert_eq!(
        (c0.busy_ns, c0.idle_ns, c0.lossy_ns, c0.dispatches),
        (600, 200, 200, 5)
    );
    assert_eq!(c0.utilisation(), 75.0);
    let c1 = &r.cpus[&1];
    assert_eq!((c1.busy_ns, c1.idle_ns, c1.lossy_ns), (60, 200, 740));
    assert_eq!(r.cpus.len(), 2);
}

#[test]
fn interrupts_count_and_time_their_handlers() {
    let r = analyse(None);
    let irq = &r.interrupts[&5];
    assert_eq!(irq.count, 1);
    let s = irq.handler.summary();
    assert_eq!((s.count, s.min, s.max), (1, 50, 50));
}

#[test]
fn latency_between_two_events_matched_by_task() {
    let r = analyse(Some(LatencySpec {
        from: system::ACTIVATE,
        to: system::ENDCYCLE,
        key: MatchKey::Arg(0),
    }));
    let l = r.latency.unwrap();
    let s = l.samples.summary();
    assert_eq!((s.count, s.min, s.max), (2, 150, 170));
    assert_eq!((l.lossy, l.unmatched_ends, l.open_starts), (1, 0, 0));
    assert_eq!(l.samples.histogram(), [(256, 2)]);
}

#[test]
fn extreme_values_do_not_panic() {
    let m = u64::MAX;
    let mut a = Analyzer::new(
        &Catalog::builtin(),
        AnalysisOptions {
            interrupt_max_ns: m,
            latency: Some(LatencySpec {
                from: system::ACTIVATE,
                to: system::ENDCYCLE,
                key: MatchKey::Arg(1),
            }),
        },
    );
    for e in [
        Event::new(m, system::ACTIVATE, u32::MAX, [m, m]),
        Event::new(0, system::SCHEDULE, 0, [m, 0]), // back in time
        Event::new(m, lowlevel::INTERRUPT, 0, [m, 0]),
        Event::new(m, semaphore::WAIT, 0, [m, m]),
        Event::new(m, tracer::HOOPS, u32::MAX, [m, m]),
        Event::new(m, tracer::HOOPS, u32::MAX, [m, m]),
        Event::new(m, system::ENDCYCLE, 0, [m, m]),
        Event::new(3, qtrace::EventId(u16::MAX), 0, [m, m]),
    ] {
        a.push(&e);
    }
    let r = a.finish();
    assert_eq!((r.events, r.hoops, r.lost), (6, 2, m));
    assert_eq!(r.latency.unwrap().lossy, 1);
}

/// Interrupts pending on many sources at once (more than the analyzer lists
/// apart from its map), then on few again: every handler ends at the next
/// event of its own source, whatever the other sources do in between.
#[test]
fn interrupts_pending_on_many_sources_end_at_their_own_source() {
    let catalog = Catalog::builtin();
    let mut a = Analyzer::new(
        &catalog,
        AnalysisOptions {
            interrupt_max_ns: 1_000_000,
            latency: None,
        },
    );
    let mut want = std::collections::BTreeMap::new();
    let mut t = 0;
    // Rounds of 20, 3 and 12 sources: irq s*100 + round on source s, then an
    // event of a source with nothing pending, then each source's next event
    // in reverse order.
    for (round, n) in [(0u64, 20u32), (1, 3), (2, 12)] {
        let start = t;
        for s in 0..n {
            t += 10;
            a.push(&Event::new(
                t,
                lowlevel::INTERRUPT,
                s,
                [u64::from(s) * 100 + round, 0],
            ));
        }
        t += 5;
        a.push(&Event::new(t, system::ACTIVATE, 999, [7, 0]));
        for s in (0..n).rev() {
            t += 3;
            a.push(&Event::new(t, system::ACTIVATE, s, [7, 0]));
            let irq_at = start + 10 * (u64::from(s) + 1);
            want.insert(u64::from(s) * 100 + round, t - irq_at);
        }
    }
    let r = a.finish();
    assert_eq!(r.interrupts.len(), want.len());
    for (irq, handled) in want {
        let got = r.interrupts[&irq].handler.summary();
        assert_eq!(
            (r.interrupts[&irq].count, got.count, got.min, got.max),
            (1, 1, handled, handled),
            "irq {irq}"
        );
    }
}

/// User events, which the analysis counts and otherwise leaves, still set
/// the first time, keep the times in order, end a pending interrupt of
/// their own source (only theirs), and are measured as a latency's ends.
#[test]
fn user_events_count_keep_time_and_end_their_sources_interrupt() {
    use qtrace::classes::user;
    let mut a = Analyzer::new(
        &Catalog::builtin(),
        AnalysisOptions {
            latency: Some(LatencySpec {
                from: user::USER1,
                to: user::USER2,
                key: MatchKey::Any,
            }),
            ..AnalysisOptions::default()
        },
    );
    for e in [
        Event::new(50, user::USER0, 0, [0, 0]),
        Event::new(100, lowlevel::INTERRUPT, 1, [3, 0]),
        Event::new(120, user::USER0, 0, [0, 0]),
        Event::new(130, user::USER0, 1, [0, 0]),
        Event::new(90, user::USER0, 2, [0, 0]),
        Event::new(140, user::USER1, 2, [0, 0]),
        Event::new(200, user::USER2, 2, [0, 0]),
    ] {
        a.push(&e);
    }
    let r = a.finish();
    assert_eq!((r.events, r.first_ns, r.last_ns), (7, 50, 200));
    let irq = &r.interrupts[&3];
    let s = irq.handler.summary();
    assert_eq!(
        (irq.count, s.count, s.min),
        (1, 1, 30),
        "ended at 130, by source 1"
    );
    let s = r.latency.unwrap().samples.summary();
    assert_eq!((s.count, s.min), (1, 60));
}
