//! An `EventId` from another tracer's catalog: what it means here is its
//! number in this tracer's catalog (documented on `EventId`).

use crate::common;

use common::{ids, log, Recorder};
use qtrace::classes::{user, ClassSpec};
use qtrace::{ConfigError, Tracer};

#[test]
fn a_foreign_id_is_its_number_here() {
    // Tracer A defines two classes, tracer B only the second.
    let a = Tracer::new();
    let disk = a
        .define_class(ClassSpec::new("disk", "disk").event("read", "a read", &[]))
        .unwrap();
    let net_a = a
        .define_class(ClassSpec::new("net", "network").event("rx", "a packet", &[]))
        .unwrap();
    let b = Tracer::new();
    b.register_queue_type(Recorder).unwrap();
    let net_b = b
        .define_class(ClassSpec::new("net", "network").event("rx", "a packet", &[]))
        .unwrap();
    let rx_a = net_a.event("rx").unwrap();
    let read_a = disk.event("read").unwrap();
    let rx_b = net_b.event("rx").unwrap();
    assert_eq!((read_a.0, rx_a.0, rx_b.0), (0x17, 0x18, 0x17));

    let events = log();
    let q = b.create_queue::<Recorder>(events.clone()).unwrap();
    b.assign_class(net_b.id, q).unwrap();
    b.assign_event(user::USER0, q).unwrap();
    // A's "disk read" has the number of B's "net rx": B takes it for that.
    b.trace_event(read_a).unwrap();
    // A's "net rx" is past the end of B's catalog: configuration refuses it.
    let e = b.assign_event(rx_a, q).unwrap_err();
    assert!(
        matches!(e, ConfigError::EventOutOfRange { defined: 0x18, .. }),
        "{e:?}"
    );
    b.activate().unwrap();
    b.log_event(read_a, [1, 0]); // recorded as B's net rx
    b.log_event(rx_a, [2, 0]); // no event of B has this number: nothing
    b.log_event(user::USER0, [3, 0]); // built-in ids mean the same everywhere
    b.shutdown().unwrap();
    assert_eq!(ids(&events), [0x17, user::USER0.0]);
    assert_eq!(
        events.lock().iter().map(|e| e.args[0]).collect::<Vec<_>>(),
        [1, 3]
    );
}
