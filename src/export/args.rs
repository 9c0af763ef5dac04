//! The arguments of an event as readers show them: the catalog's declared
//! arguments, by name, always; an argument slot the catalog does not declare
//! only when it is non-zero, named `arg0` or `arg1`.
//!
//! `qtrace dump` and every converter use this one rule, so an argument that
//! `dump` shows is carried by CTF, Chrome JSON and Perfetto under the same
//! name (a built-in `system:schedule` declares only `task`; a non-zero second
//! argument still shows, as `arg1`).
//!
//! ```
//! use qtrace::classes::{system, user, Catalog};
//! use qtrace::export::args::event_args;
//! use qtrace::{Event, EventId};
//!
//! let catalog = Catalog::builtin();
//! let shown = |e: &Event| event_args(&catalog, e).collect::<Vec<_>>();
//! assert_eq!(shown(&Event::new(0, system::SCHEDULE, 0, [3, 0])), [("task", 3)]);
//! assert_eq!(shown(&Event::new(0, system::SCHEDULE, 0, [3, 2])), [("task", 3), ("arg1", 2)]);
//! assert_eq!(shown(&Event::new(0, user::USER0, 0, [7, 0])), [("value", 7), ("arg1", 0)]);
//! assert_eq!(shown(&Event::new(0, EventId(0x777), 0, [0, 5])), [("arg1", 5)]);
//! ```

use crate::classes::Catalog;
use crate::Event;

/// The names of the argument slots the catalog does not name.
pub const UNNAMED: [&str; 2] = ["arg0", "arg1"];

/// The arguments of `event` that readers show, as `(name, value)`, in slot
/// order (see the [module documentation](self)).
pub fn event_args<'a>(
    catalog: &'a Catalog,
    event: &Event,
) -> impl Iterator<Item = (&'a str, u64)> + 'a {
    let declared: &'a [String] = catalog.event(event.id).map_or(&[], |e| e.args.as_slice());
    let args = event.args;
    (0..2).filter_map(move |i| match declared.get(i) {
        Some(name) => Some((name.as_str(), args[i])),
        None if args[i] != 0 => Some((UNNAMED[i], args[i])),
        None => None,
    })
}
