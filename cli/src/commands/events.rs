//! `qtrace events`: the built-in classes and events, with their arguments.

use std::io::{self, Write};

use crate::spine::io::with_stdout;
use crate::spine::Exit;

/// Runs `qtrace events`.
pub fn run() -> Exit {
    with_stdout(list_events)
}

/// `qtrace events`: the built-in classes and events.
fn list_events(out: &mut dyn Write) -> io::Result<Exit> {
    let catalog = qtrace::classes::Catalog::builtin();
    for class in catalog.classes() {
        writeln!(
            out,
            "class {} {:<10} {}",
            class.id, class.name, class.description
        )?;
        for e in class.events().filter_map(|id| catalog.event(id)) {
            writeln!(
                out,
                "  {} {:<14} {} [{}]",
                e.id,
                e.name,
                e.description,
                e.args.join(", ")
            )?;
        }
    }
    Ok(Exit::Ok)
}
