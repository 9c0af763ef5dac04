//! `qtrace::classes!`, `event!` and `scope!`: the ids and tables they
//! declare, the exact records they log, nested scopes timed by a manual
//! clock, the process-wide tracer, and the typed errors of `define_classes`.

use qtrace::classes::{CatalogError, ClassSpec};
use qtrace::clock::ManualClock;
use qtrace::{ClassId, ConfigError, EventId, Tracer};

use crate::common::scope_classes::{disk, net, recorded, tracer, CATALOG};

#[test]
fn ids_are_fixed_at_compile_time() {
    assert_eq!(net::CLASS, ClassId(5));
    assert_eq!(disk::CLASS, ClassId(6));
    assert_eq!(net::RX.id(), EventId(0x17));
    assert_eq!(net::TX.id(), EventId(0x18));
    assert_eq!(net::IDLE.id(), EventId(0x19));
    assert_eq!(net::REQUEST.begin(), EventId(0x1a));
    assert_eq!(net::REQUEST.end(), EventId(0x1b));
    assert_eq!(
        (net::FIRST, net::LAST, net::COUNT),
        (EventId(0x17), EventId(0x1b), 5)
    );
    assert_eq!(disk::READ.id(), EventId(0x1c));
    assert_eq!(disk::FLUSH.begin(), EventId(0x1d));
    assert_eq!(disk::SYNC.begin(), EventId(0x1f));
    assert_eq!(disk::LAST, EventId(0x21));
    assert_eq!(CATALOG.event_count(), 0x22);

    let t = Tracer::new();
    t.define_classes(&CATALOG).unwrap();
    let c = t.catalog();
    let names: Vec<_> = (0x17..0x22)
        .map(|i| {
            let e = c.event(EventId(i)).unwrap();
            (e.class.0, e.name.as_str(), e.args.join(","))
        })
        .collect();
    assert_eq!(
        names,
        [
            (5, "rx", "len,port".to_string()),
            (5, "tx", "len,port".into()),
            (5, "idle", "".into()),
            (5, "request.begin", "conn".into()),
            (5, "request.end", "code".into()),
            (6, "read", "block".into()),
            (6, "flush.begin", "".into()),
            (6, "flush.end", "code".into()),
            (6, "sync.flow_begin", "flow,origin".into()),
            (6, "sync.flow_step", "flow,origin".into()),
            (6, "sync.flow_end", "flow,origin".into()),
        ]
    );
    assert_eq!(c.class(net::CLASS).unwrap().description, "network stack");
    // A run-time class still comes after.
    let more = t
        .define_class(ClassSpec::new("late", "run time").event("x", "", &[]))
        .unwrap();
    assert_eq!(more.id, ClassId(7));
    assert_eq!(more.event("x"), Some(EventId(0x22)));
}

#[test]
fn event_logs_exactly_what_log_event_logs() {
    let time = ManualClock::new(1_000);
    let (t, q) = tracer(&time);
    let (len, port) = (1500u32, 80u16);
    qtrace::event!(t, net::RX, len, port);
    time.advance(10);
    qtrace::event!(&t, net::TX, 40, 443u64,);
    time.advance(10);
    qtrace::event!(t, net::IDLE);
    qtrace::event!(t, disk::READ, -1i64); // cast with `as u64`
    t.log_event(net::RX.id(), [len as u64, port as u64]);
    assert_eq!(
        recorded(&t, q),
        [
            (1_000, EventId(0x17), [1500, 80]),
            (1_010, EventId(0x18), [40, 443]),
            (1_020, EventId(0x19), [0, 0]),
            (1_020, EventId(0x1c), [u64::MAX, 0]),
            (1_020, EventId(0x17), [1500, 80]),
        ]
    );
}

#[test]
fn nested_scopes_log_begin_then_end_with_code() {
    let time = ManualClock::new(0);
    let (t, q) = tracer(&time);
    {
        let _request = qtrace::scope!(t, net::REQUEST, 7);
        time.advance(100);
        {
            let flush = qtrace::scope!(t, disk::FLUSH);
            time.advance(50);
            qtrace::event!(t, disk::READ, 3);
            time.advance(50);
            flush.end_with(5);
        }
        time.advance(100);
        let mut inner = t.scope(net::REQUEST.begin(), net::REQUEST.end(), [8, 0]);
        inner.set_code(2);
        time.advance(1);
    }
    assert_eq!(
        recorded(&t, q),
        [
            (0, net::REQUEST.begin(), [7, 0]),
            (100, disk::FLUSH.begin(), [0, 0]),
            (150, disk::READ.id(), [3, 0]),
            (200, disk::FLUSH.end(), [5, 0]),
            (300, net::REQUEST.begin(), [8, 0]),
            (301, net::REQUEST.end(), [2, 0]), // the inner one drops first
            (301, net::REQUEST.end(), [0, 0]),
        ]
    );
}

#[test]
fn guard_is_small() {
    assert!(std::mem::size_of::<qtrace::scope::ScopeGuard<'static>>() <= 24);
}

#[test]
fn define_classes_is_idempotent_and_typed_when_ids_are_taken() {
    let t = Tracer::new();
    t.define_classes(&CATALOG).unwrap();
    let before = t.catalog();
    t.define_classes(&CATALOG).unwrap();
    assert_eq!(*t.catalog(), *before);

    // A run-time class took id 5 first.
    let t = Tracer::new();
    t.define_class(ClassSpec::new("other", "first").event("x", "", &[]))
        .unwrap();
    match t.define_classes(&CATALOG) {
        Err(ConfigError::Catalog(CatalogError::IdTaken { name, id, taken_by })) => {
            assert_eq!(
                (name.as_str(), id, taken_by.as_str()),
                ("net", ClassId(5), "other")
            );
        }
        other => panic!("{other:?}"),
    }
    // Nothing was added.
    assert_eq!(t.catalog().classes().len(), 6);

    // The same name, defined differently.
    let t = Tracer::new();
    t.define_class(ClassSpec::new("net", "network stack").event("rx", "", &[]))
        .unwrap();
    let err = t.define_classes(&CATALOG).unwrap_err();
    assert!(
        err.to_string().contains("already defined differently"),
        "{err}"
    );

    // After phase 1.
    let t = Tracer::new();
    t.activate().unwrap();
    assert!(matches!(
        t.define_classes(&CATALOG),
        Err(ConfigError::AfterPhase2 { .. })
    ));
}

#[test]
fn global_form_logs_to_the_installed_tracer() {
    use qtrace::global::Global;
    // Before install: no-ops.
    qtrace::event!(Global, net::RX, 1, 2);
    drop(qtrace::scope!(Global, disk::FLUSH));
    let early = Global.flow_begin(disk::SYNC, 1); // not logged, but named
    assert_eq!(
        early,
        qtrace::macros::FlowId::new(qtrace::source::current(), 1)
    );

    let time = ManualClock::new(5);
    let (t, q) = tracer(&time);
    let t = qtrace::global::install(t).unwrap();
    qtrace::event!(Global, net::RX, 1, 2);
    {
        let _f = qtrace::scope!(Global, disk::FLUSH);
        time.advance(9);
    }
    qtrace::source::set_current(6);
    let w = Global.flow_begin(disk::SYNC, 40);
    Global.flow_step(disk::SYNC, w);
    Global.flow_end(disk::SYNC, qtrace::macros::FlowId::new(2, 41));
    assert_eq!(
        recorded(t, q),
        [
            (5, net::RX.id(), [1, 2]),
            (5, disk::FLUSH.begin(), [0, 0]),
            (14, disk::FLUSH.end(), [0, 0]),
            (14, disk::SYNC.begin(), [40, 6]),
            (14, disk::SYNC.step(), [40, 6]),
            (14, disk::SYNC.end(), [41, 2]),
        ]
    );
}
