//! What `qtrace recv --live` hands the live view (in `commands/live`,
//! which `recv` does not import: `main` passes the view to `recv` as a
//! [`Watcher`]).

use std::path::PathBuf;
use std::sync::Arc;

use qtrace::receiver::{Progress, Stopper};

use super::Exit;

/// A receiver writing a trace file, to watch.
pub struct Watch {
    /// The receiver's live account.
    pub progress: Arc<Progress>,
    /// The file it writes.
    pub file: PathBuf,
    /// Stops it (quitting the view stops the receiver).
    pub stop: Stopper,
    /// Whether it holds keys (`--key-file`).
    pub keyed: bool,
}

/// Shows a [`Watch`] until the user quits or the receiver stops.
pub type Watcher = fn(Watch) -> Exit;
