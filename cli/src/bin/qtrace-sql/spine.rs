//! The parts of the command's spine (`cli/src/spine/`) that `qtrace sql`'s
//! engine uses, compiled from the same files.

#[path = "../../spine/exit.rs"]
pub mod exit;
#[path = "../../spine/format.rs"]
pub mod format;
#[path = "../../spine/io.rs"]
pub mod io;

pub use exit::Exit;
