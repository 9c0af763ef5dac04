//! `qtrace recover FILE... --out DIR`: turns the ring files that fixed and
//! circular queues leave behind when their process dies into ordinary
//! trace files.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use qtrace::storage::{recover_file, write_trace};

use crate::spine::io::with_stdout;
use crate::spine::Exit;

/// Arguments of `qtrace recover`.
#[derive(Args, Debug)]
pub struct RecoverArgs {
    /// Ring files (`*.ring`, left in the output directory by a process that
    /// did not shut down).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Directory for the recovered traces (created if needed); each is named
    /// after its ring file with the extension `.qtr`.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Runs `qtrace recover`: exit status 0 when every file was recovered, 2
/// when one could not be read or is not a ring file (the others are still
/// recovered), 1 when an output file cannot be written.
pub fn run(args: RecoverArgs) -> Exit {
    with_stdout(|out| recover_all(&args, out))
}

fn recover_all(args: &RecoverArgs, out: &mut dyn Write) -> io::Result<Exit> {
    let mut status = Exit::Ok;
    for file in &args.files {
        let rec = match recover_file(file) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("qtrace: {}: {e}", file.display());
                status = status.and(Exit::BadInput);
                continue;
            }
        };
        let target = args.out.join(output_name(file));
        if let Err(e) = write_trace(&rec, &target) {
            eprintln!("qtrace: {e}");
            status = status.and(Exit::Failed);
            continue;
        }
        let c = rec.counts;
        writeln!(
            out,
            "{} -> {}: {} events recovered, {} lost ({} dropped, {} overwritten, {} unreadable at the crash)",
            file.display(),
            target.display(),
            c.recovered,
            c.lost(),
            c.dropped,
            c.overwritten,
            c.unreadable
        )?;
    }
    Ok(status)
}

/// `queue0-circular.ring` → `queue0-circular.qtr`.
fn output_name(ring: &Path) -> PathBuf {
    let stem = ring.file_stem().unwrap_or(ring.as_os_str());
    PathBuf::from(stem).with_extension("qtr")
}
