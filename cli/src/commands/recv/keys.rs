//! `qtrace recv`'s side of keyed datagrams: the key files (`--key-file`,
//! refused when others can read them), the warning for a receiver anyone on
//! its network can feed, and a log of rejected datagrams that says at most
//! one line a second.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use qtrace::receiver::Progress;
use qtrace::wire::DatagramKey;

/// The keys of `files` (each `--key-file`); the error names the file and
/// says what to do.
pub fn load(files: &[PathBuf]) -> Result<Vec<DatagramKey>, String> {
    files
        .iter()
        .map(|f| DatagramKey::from_file(f).map_err(|e| format!("--key-file: {e}")))
        .collect()
}

/// Warns, on stderr, when the receiver listens beyond this machine without
/// a key: what anyone on that network can do.
pub fn warn_if_exposed(listen: SocketAddr, keyed: bool) {
    if let Some(w) = exposure_warning(listen, keyed) {
        eprintln!("{w}");
    }
}

/// The warning for a receiver on `listen`, if it needs one.
fn exposure_warning(listen: SocketAddr, keyed: bool) -> Option<String> {
    if listen.ip().is_loopback() || keyed {
        return None;
    }
    Some(format!(
        "qtrace: warning: listening on {listen} without a key: anyone who can send to it can \
         forge datagrams — make up senders and events, take over a real sender's stream, end it, \
         claim events lost — and the trace will record them as true. Give --key-file FILE (made \
         by `qtrace keygen FILE`, the same key in the senders' UdpParams::with_key) to accept \
         only senders that hold the key."
    ))
}

/// Says on stderr, at most once a second, how many datagrams were rejected
/// (forged, wrong key, replayed, counters going backwards, after a close)
/// and the latest one's source and reason; the summary counts them per
/// source address.
pub fn log_rejections(progress: Arc<Progress>) {
    std::thread::spawn(move || {
        let mut seen = 0;
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = progress.rejected();
            if now > seen {
                let latest = progress
                    .last_rejection()
                    .map(|(from, why)| format!(" (latest from {from}: {why})"))
                    .unwrap_or_default();
                eprintln!(
                    "qtrace: rejected {} datagrams in the last second{latest}; the summary counts them per source",
                    now - seen
                );
                seen = now;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unkeyed_receiver_beyond_loopback_is_warned() {
        let any: SocketAddr = "0.0.0.0:5510".parse().unwrap();
        let w = exposure_warning(any, false).unwrap();
        assert!(
            w.starts_with("qtrace: warning: listening on 0.0.0.0:5510 without a key: anyone who can send to it can forge datagrams"),
            "{w}"
        );
        assert!(w.contains("--key-file FILE"), "{w}");
        assert_eq!(exposure_warning(any, true), None);
        assert_eq!(
            exposure_warning("127.0.0.1:5510".parse().unwrap(), false),
            None
        );
        assert_eq!(exposure_warning("[::1]:5510".parse().unwrap(), false), None);
        assert!(exposure_warning("[::]:5510".parse().unwrap(), false).is_some());
    }
}
