//! `StaticCatalog::new` refuses every table FORMAT.md 1.3 calls corrupt (at
//! compile time in a `static`; here called at run time to see the panic),
//! so a firmware's dump always reads back. (The tables are leaked to get
//! `'static` ones at run time, so Miri, whose leak check would fail them,
//! skips this file: it holds no unsafe code of its own.)

use qtrace_core::classes::{BuiltinClass, BuiltinEvent, ClassId};
use qtrace_core::encode::catalog::{buffer_len, emit, CatalogSource};
use qtrace_core::{EventId, StaticCatalog};

const E0: EventId = EventId::FIRST_USER_DEFINED;
const E1: EventId = EventId(E0.0 + 1);

fn class(
    id: u16,
    name: &'static str,
    description: &'static str,
    events: Vec<BuiltinEvent>,
) -> &'static [BuiltinClass] {
    Box::leak(Box::new([BuiltinClass {
        id: ClassId(id),
        name,
        description,
        events: events.leak(),
    }]))
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_good_table_encodes_with_the_user_class_after_the_builtins() {
    let user = class(
        5,
        "motor",
        "the motor",
        vec![
            BuiltinEvent::new(E0, "step", "one step", &["pos", "speed"]),
            BuiltinEvent::new(E1, "stall", "", &[]),
        ],
    );
    let c = StaticCatalog::new(user);
    assert_eq!((c.class_count(), c.event_count()), (6, 25));
    let entry = c.event(5, 0).unwrap();
    assert_eq!(
        (entry.name, entry.arg_count, entry.args),
        ("step", 2, ["pos", "speed"])
    );
    assert_eq!(c.event(5, 2), None);
    let mut bytes = Vec::new();
    emit(&c, &mut |b: &[u8]| bytes.extend_from_slice(b));
    assert_eq!(bytes.len(), buffer_len(&c));
    assert_eq!(&bytes[..2], &[0, 6]);
    // The last class: "motor", "the motor", 2 events, "step" "one step" 2 args...
    let tail: &[u8] =
        b"\0\x05motor\0\x09the motor\0\x02\0\x04step\0\x08one step\x02\0\x03pos\0\x05speed\0\x05stall\0\0\0";
    assert!(bytes.ends_with(tail));
}

macro_rules! refused {
    ($name:ident, $msg:literal, $user:expr) => {
        #[test]
        #[cfg_attr(miri, ignore)]
        #[should_panic(expected = $msg)]
        fn $name() {
            let _ = StaticCatalog::new($user);
        }
    };
}

refused!(
    class_numbering,
    "user classes are numbered 5, 6, 7, ...",
    class(6, "a", "", vec![BuiltinEvent::new(E0, "e", "", &[])])
);
refused!(
    event_numbering,
    "events are numbered consecutively from 0x17",
    class(5, "a", "", vec![BuiltinEvent::new(E1, "e", "", &[])])
);
refused!(
    class_name,
    "a class name is 1-64 bytes",
    class(5, "a b", "", vec![BuiltinEvent::new(E0, "e", "", &[])])
);
refused!(
    builtin_class_name_repeated,
    "class names are unique",
    class(5, "system", "", vec![BuiltinEvent::new(E0, "e", "", &[])])
);
refused!(
    no_events,
    "a class has at least one event",
    class(5, "a", "", vec![])
);
refused!(
    event_name,
    "an event name is 1-64 bytes",
    class(5, "a", "", vec![BuiltinEvent::new(E0, "", "", &[])])
);
refused!(
    description_lines,
    "a description is one line",
    class(
        5,
        "a",
        "",
        vec![BuiltinEvent::new(E0, "e", "two\nlines", &[])]
    )
);
refused!(
    event_name_repeated,
    "event names are unique within their class",
    class(
        5,
        "a",
        "",
        vec![
            BuiltinEvent::new(E0, "e", "", &[]),
            BuiltinEvent::new(E1, "e", "", &[])
        ]
    )
);
refused!(
    three_args,
    "an event has at most two arguments",
    class(
        5,
        "a",
        "",
        vec![BuiltinEvent::new(E0, "e", "", &["x", "y", "z"])]
    )
);
refused!(
    arg_name_repeated,
    "argument names are unique within their event",
    class(
        5,
        "a",
        "",
        vec![BuiltinEvent::new(E0, "e", "", &["x", "x"])]
    )
);
