//! A queue's files list every class defined in phase 1, also the classes
//! defined after the queue was created: the tracer's catalog is final at
//! phase 2 and queues take it from the context `activate` gets — for the
//! file written at shutdown and for snapshots (flight-recorder saves, the
//! panic save) alike. Before this, a fixed or circular queue's snapshot used
//! the catalog of `create_queue` and lacked later classes.

use qtrace::classes::ClassSpec;
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams, Online, OnlineParams};
use qtrace::reader::TraceReader;
use qtrace::{Config, QueueHandle, Tracer};

/// A tracer saving to `dir` with a fixed and a circular queue of 16 events
/// each, created before any class of the test is defined; not activated.
/// Returns (tracer, fixed, circular).
fn fixed_and_circular(dir: &std::path::Path) -> (Tracer, QueueHandle, QueueHandle) {
    let tracer = Tracer::with_config(Config::default().with_output_dir(dir));
    let fixed = tracer
        .create_queue::<Fixed>(FixedParams::default().with_capacity(16))
        .unwrap();
    let circular = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(16))
        .unwrap();
    (tracer, fixed, circular)
}

/// Creates one queue of each file-writing kind, *then* defines a class,
/// logs one of its events into every queue, shuts down, and reads each file
/// back: the class and event names are in it, and the event is.
#[test]
fn classes_defined_after_create_queue_are_in_every_queues_file() {
    let dir = tempfile::tempdir().unwrap();
    let (tracer, fixed, circular) = fixed_and_circular(dir.path());
    let online = tracer
        .create_queue::<Online>(OnlineParams::default())
        .unwrap();
    let net = tracer
        .define_class(
            ClassSpec::new("net", "network stack")
                .event("rx0", "a packet arrived on port 0", &["len"])
                .event("rx1", "a packet arrived on port 1", &["len"])
                .event("rx2", "a packet arrived on port 2", &["len"]),
        )
        .unwrap();
    let queues = [fixed, circular, online];
    let events: Vec<_> = ["rx0", "rx1", "rx2"]
        .iter()
        .map(|name| net.event(name).unwrap())
        .collect();
    for (&q, &id) in queues.iter().zip(&events) {
        tracer.assign_event(id, q).unwrap();
    }
    tracer.activate().unwrap();
    for (&q, &id) in queues.iter().zip(&events) {
        tracer.log_event(id, [1500, q.0 as u64]);
    }
    let report = tracer.shutdown().unwrap();
    assert_eq!(report.queues.len(), 3);
    for ((q, &id), queue) in queues.iter().zip(&events).zip(&report.queues) {
        assert_eq!(queue.handle, *q);
        let path = &queue.status.files[0];
        let reader = TraceReader::open(path).unwrap();
        let catalog = reader.catalog().clone();
        assert_eq!(
            catalog.event_name(id),
            Some(format!("rx{}", q.0).as_str()),
            "queue {q} ({}): {} lacks the class defined after create_queue",
            queue.type_name,
            path.display()
        );
        assert_eq!(catalog.class(net.id).map(|c| c.name.as_str()), Some("net"));
        let logged: Vec<_> = reader
            .map(Result::unwrap)
            .filter(|e| catalog.event(e.id).is_some() && e.id == id)
            .collect();
        assert_eq!(logged.len(), 1, "queue {q}: {}", path.display());
        assert_eq!(logged[0].args, [1500, q.0 as u64]);
    }
}

/// The flight-recorder path: `snapshot` while the tracer runs.
#[test]
fn snapshots_list_classes_defined_after_create_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (tracer, fixed, circular) = fixed_and_circular(dir.path());
    let late = tracer
        .define_class(
            ClassSpec::new("late", "defined after the queues")
                .event("a", "into the fixed queue", &["x"])
                .event("b", "into the circular queue", &["x"]),
        )
        .unwrap();
    let (a, b) = (late.event("a").unwrap(), late.event("b").unwrap());
    tracer.assign_event(a, fixed).unwrap();
    tracer.assign_event(b, circular).unwrap();
    tracer.activate().unwrap();
    tracer.log_event(a, [7, 0]);
    tracer.log_event(b, [8, 0]);

    let fixed_file = dir.path().join("fixed-snapshot.qtr");
    let circular_file = dir.path().join("circular-snapshot.qtr");
    let q = tracer.queue(fixed).unwrap();
    assert_eq!(q.as_fixed().unwrap().snapshot(&fixed_file).unwrap(), 1);
    let q = tracer.queue(circular).unwrap();
    assert_eq!(
        q.as_circular().unwrap().snapshot(&circular_file).unwrap(),
        1
    );

    for (path, id, name, arg) in [(&fixed_file, a, "a", 7), (&circular_file, b, "b", 8)] {
        let reader = TraceReader::open(path).unwrap();
        let catalog = reader.catalog().clone();
        assert_eq!(catalog.event_name(id), Some(name), "{}", path.display());
        assert_eq!(
            catalog.class(late.id).map(|c| c.name.as_str()),
            Some("late")
        );
        let events: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(events.len(), 1, "{}: {events:?}", path.display());
        assert_eq!((events[0].id, events[0].args), (id, [arg, 0]));
    }
    tracer.shutdown().unwrap();
}
