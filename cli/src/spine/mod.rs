//! The spine every subcommand stands on: the exit status ([`Exit`]), opening
//! and reading inputs, writing outputs and reporting cut or damaged files
//! ([`io`]), and the words and numbers the subcommands print the same way
//! ([`mod@format`]). Subcommands import the spine and the library, never each
//! other.

pub mod exit;
pub mod follow;
pub mod format;
pub mod interrupt;
pub mod io;
pub mod json;
pub mod listen;
pub mod pipelined;
pub mod priority;
pub mod staged;
pub mod watch;

pub use exit::Exit;
