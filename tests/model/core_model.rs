//! Property test: random sequences of registry operations and logged events,
//! checked against a simple reference model of routing and masks. Every event
//! must reach exactly the queue the model predicts, in order.

use crate::common;

use common::{log, Log, Recorder};
use proptest::prelude::*;
use qtrace::classes::{Catalog, ClassSpec};
use qtrace::ClassId;
use qtrace::{EventId, QueueHandle, Tracer};

#[derive(Clone, Debug)]
enum Op {
    AssignEvent(u16, u16),
    AssignClass(u16, u16),
    TraceEvent(u16),
    NotraceEvent(u16),
    TraceClass(u16),
    NotraceClass(u16),
    Suspend,
    Resume,
    Log(u16, u64),
}

/// The reference model: plain vectors and the rules written out longhand.
struct Model {
    queue_of: Vec<Option<u16>>,
    event_on: Vec<bool>,
    class_on: Vec<bool>,
    class_of: Vec<u16>,
    suspended: bool,
    queues: u16,
    delivered: Vec<Vec<(u16, u64)>>,
}

// 23 built-in events + one user class of 3 events = 26 events, 6 classes.
const EVENTS: u16 = 26;
const CLASSES: u16 = 6;

fn op(queues: u16) -> impl Strategy<Value = Op> {
    // Ids slightly out of range exercise the error paths too.
    let ev = 0..EVENTS + 2;
    let cl = 0..CLASSES + 1;
    let q = 0..queues + 1;
    prop_oneof![
        (ev.clone(), q.clone()).prop_map(|(e, q)| Op::AssignEvent(e, q)),
        (cl.clone(), q).prop_map(|(c, q)| Op::AssignClass(c, q)),
        ev.clone().prop_map(Op::TraceEvent),
        ev.clone().prop_map(Op::NotraceEvent),
        cl.clone().prop_map(Op::TraceClass),
        cl.prop_map(Op::NotraceClass),
        Just(Op::Suspend),
        Just(Op::Resume),
        (ev.clone(), any::<u64>()).prop_map(|(e, a)| Op::Log(e, a)),
        (ev, any::<u64>()).prop_map(|(e, a)| Op::Log(e, a)),
    ]
}

fn scenario() -> impl Strategy<Value = (u16, Vec<Op>)> {
    (1u16..4).prop_flat_map(|queues| (Just(queues), prop::collection::vec(op(queues), 0..200)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, ..ProptestConfig::default() })]

    #[test]
    fn routing_matches_model((queues, ops) in scenario()) {
        let tracer = Tracer::new();
        tracer.register_queue_type(Recorder).unwrap();
        tracer
            .define_class(
                ClassSpec::new("extra", "user-defined")
                    .event("a", "a", &[])
                    .event("b", "b", &[])
                    .event("c", "c", &[]),
            )
            .unwrap();
        let logs: Vec<Log> = (0..queues).map(|_| log()).collect();
        for l in &logs {
            tracer.create_queue::<Recorder>(l.clone()).unwrap();
        }
        let catalog: std::sync::Arc<Catalog> = tracer.catalog();
        prop_assert_eq!(catalog.event_count(), EVENTS as usize);
        let mut m = Model {
            queue_of: vec![None; EVENTS as usize],
            event_on: vec![true; EVENTS as usize],
            class_on: vec![true; CLASSES as usize],
            class_of: catalog.events().iter().map(|e| e.class.0).collect(),
            suspended: false,
            queues,
            delivered: vec![Vec::new(); queues as usize],
        };
        // Half the runs go through phase 2 first; routing must not care.
        if ops.len() % 2 == 0 {
            tracer.activate().unwrap();
        }
        for op in ops {
            match op {
                Op::AssignEvent(e, q) => {
                    let r = tracer.assign_event(EventId(e), QueueHandle(q));
                    let ok = e < EVENTS && q < m.queues;
                    prop_assert_eq!(r.is_ok(), ok, "{:?}", r);
                    if ok { m.queue_of[e as usize] = Some(q); }
                }
                Op::AssignClass(c, q) => {
                    let r = tracer.assign_class(ClassId(c), QueueHandle(q));
                    let ok = c < CLASSES && q < m.queues;
                    prop_assert_eq!(r.is_ok(), ok, "{:?}", r);
                    if ok {
                        for e in 0..EVENTS {
                            if m.class_of[e as usize] == c { m.queue_of[e as usize] = Some(q); }
                        }
                    }
                }
                Op::TraceEvent(e) | Op::NotraceEvent(e) => {
                    let on = matches!(op, Op::TraceEvent(_));
                    let r = if on { tracer.trace_event(EventId(e)) } else { tracer.notrace_event(EventId(e)) };
                    prop_assert_eq!(r.is_ok(), e < EVENTS);
                    if e < EVENTS { m.event_on[e as usize] = on; }
                }
                Op::TraceClass(c) | Op::NotraceClass(c) => {
                    let on = matches!(op, Op::TraceClass(_));
                    let r = if on { tracer.trace_class(ClassId(c)) } else { tracer.notrace_class(ClassId(c)) };
                    prop_assert_eq!(r.is_ok(), c < CLASSES);
                    if c < CLASSES { m.class_on[c as usize] = on; }
                }
                Op::Suspend => { tracer.suspend().unwrap(); m.suspended = true; }
                Op::Resume => { tracer.resume().unwrap(); m.suspended = false; }
                Op::Log(e, a) => {
                    tracer.log_event(EventId(e), [a, 0]);
                    if e < EVENTS && !m.suspended && m.event_on[e as usize]
                        && m.class_on[m.class_of[e as usize] as usize]
                    {
                        if let Some(q) = m.queue_of[e as usize] {
                            m.delivered[q as usize].push((e, a));
                        }
                    }
                }
            }
        }
        for (q, l) in logs.iter().enumerate() {
            let got: Vec<(u16, u64)> = l.lock().iter().map(|ev| (ev.id.0, ev.args[0])).collect();
            prop_assert_eq!(&got, &m.delivered[q], "queue {}", q);
        }
    }
}
