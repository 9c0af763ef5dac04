//! `qtrace keygen FILE`: a new key for keyed datagrams — 32 random bytes
//! from the operating system, in a new file only its owner can read.

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::Args;
use qtrace::wire::DatagramKey;

use crate::spine::Exit;

/// Arguments of `qtrace keygen`.
#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// The key file to create (never overwritten; mode 600).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Runs `qtrace keygen`.
pub fn run(args: KeygenArgs) -> Exit {
    match write_key(&args.file) {
        Ok(id) => {
            println!(
                "wrote a new {}-byte key to {} (key id {id:#06x}, mode 600): give the same file to \
                 the senders (UdpParams::with_key(DatagramKey::from_file(FILE)?)) and to \
                 `qtrace recv --key-file {}`",
                DatagramKey::LEN,
                args.file.display(),
                args.file.display()
            );
            Exit::Ok
        }
        Err(e) => {
            eprintln!("qtrace: {e}");
            Exit::Failed
        }
    }
}

/// Creates `path` (it must not exist) holding 32 random bytes, readable by
/// its owner only; the key's id.
fn write_key(path: &std::path::Path) -> Result<u16, String> {
    let mut bytes = [0u8; DatagramKey::LEN];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut r| r.read_exact(&mut bytes))
        .map_err(|e| format!("cannot read random bytes from /dev/urandom: {e}"))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!(
                "{} exists: qtrace keygen never overwrites a key (senders and receivers may hold it); remove it first to replace it",
                path.display()
            )
        } else {
            format!("cannot create the key file {}: {e}", path.display())
        }
    })?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write the key file {}: {e}", path.display()))?;
    Ok(DatagramKey::from_bytes(bytes).id())
}
