//! `qtrace recv --listen ADDR --out FILE [--duration S] [--count N]`: receive
//! the datagrams of UDP queues and write them to a trace file (S.Ha.R.K.'s
//! `udpdump`).
//!
//! Exit status: 0 when the receiver ran to its limit (or was stopped) and
//! wrote its file; 2 for bad arguments or an address it cannot listen on; 1
//! when the file cannot be created (another process is writing a trace at
//! that path: an existing trace is otherwise moved aside to
//! `<stem>-previous.<ext>`, never overwritten) or the socket fails; 3 when
//! writing the file failed part way (a full disk) or the file was deleted
//! or replaced while written with records in it (re-created, the lost
//! records marked): the
//! summary is printed.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use qtrace::receiver::{default_listen_addr, Receiver, ReceiverConfig, RunLimit};

use crate::spine::listen::listen_addr;
use crate::spine::watch::{Watch, Watcher};
use crate::spine::{interrupt, Exit};

mod keys;

/// Arguments of `qtrace recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// Address to listen on, IP:PORT or HOST:PORT (a host name listens on its
    /// first IPv4 address, else IPv6; loopback by default; use 0.0.0.0:PORT
    /// or [::]:PORT to accept senders on other machines, with --key-file:
    /// without a key anyone on that network can forge datagrams, and a
    /// warning says so).
    #[arg(long, value_name = "ADDR", default_value_t = default_listen_addr().to_string())]
    pub listen: String,
    /// Trace file to write (its directory is created).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Stop after this many seconds (with --count: whichever comes first;
    /// positive, at most 1e18).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Stop once this many events are accounted for: received, or marked
    /// lost (in transit, or dropped or never sent by their sender), so a
    /// lossy stream still reaches it. With --duration: whichever comes
    /// first (add it, as events lost after a sender's last datagram are
    /// known only from its close datagram).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Senders tracked at once (the sender table's size).
    #[arg(long, value_name = "N", default_value_t = ReceiverConfig::default().max_senders)]
    pub max_senders: usize,
    /// A full table's least recently heard sender gives its slot to a new
    /// one when it has sent nothing during this many datagrams.
    #[arg(long, value_name = "N", default_value_t = ReceiverConfig::default().idle_datagrams)]
    pub idle_datagrams: u64,
    /// Accept only datagrams keyed with the key in FILE (32 bytes, mode 600:
    /// `qtrace keygen FILE`); repeat to hold several keys at once (one per
    /// host or group, or the old and the new while senders move over).
    /// Others are rejected and counted per source address in the summary.
    #[arg(long = "key-file", value_name = "FILE")]
    pub key_file: Vec<PathBuf>,
    /// Show the live view (`qtrace live`) while receiving: it reads the file
    /// as written and the receiver's account, so it never slows the
    /// receiver, which writes every event. `q` stops both. Not a terminal:
    /// the figures as plain text every second.
    #[arg(long)]
    pub live: bool,
}

/// The longest `--duration` (seconds): far beyond any run, well inside what
/// a `Duration` holds.
const MAX_DURATION_S: f64 = 1e18;

/// Runs `qtrace recv`.
pub fn run(args: RecvArgs, live: Watcher) -> Exit {
    let mut limit = RunLimit::default();
    if let Some(s) = args.duration {
        // `Duration::from_secs_f64` panics above about 1.8e19 s: bound it.
        if !(s.is_finite() && s > 0.0 && s <= MAX_DURATION_S) {
            eprintln!(
                "qtrace: --duration must be a positive number of seconds, at most {MAX_DURATION_S:e}"
            );
            return Exit::BadInput;
        }
        limit.duration = Some(Duration::from_secs_f64(s));
    }
    limit.events = args.count;
    if args.max_senders == 0 {
        eprintln!("qtrace: --max-senders must be at least 1");
        return Exit::BadInput;
    }
    let listen = match listen_addr(&args.listen) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let keys = match keys::load(&args.key_file) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    keys::warn_if_exposed(listen, !keys.is_empty());
    let config = ReceiverConfig {
        max_senders: args.max_senders,
        idle_datagrams: args.idle_datagrams,
        keys,
        ..ReceiverConfig::default()
    };
    let receiver = match Receiver::bind_with(listen, config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let until = match (limit.duration, limit.events) {
        (Some(d), Some(n)) => format!(
            "until {n} events or for {:.1} s, whichever comes first",
            d.as_secs_f64()
        ),
        (Some(d), None) => format!("for {:.1} s", d.as_secs_f64()),
        (None, Some(n)) => format!("until {n} events"),
        (None, None) => "until interrupted".to_string(),
    };
    keys::log_rejections(receiver.progress());
    eprintln!(
        "qtrace: listening on {} {until}, writing {}",
        receiver.local_addr(),
        args.out.display()
    );
    // Ctrl-C (SIGINT) stops cleanly: the file is written and the summary
    // printed.
    if interrupt::install() {
        let stop = receiver.stopper();
        std::thread::spawn(move || loop {
            if interrupt::happened() {
                stop.stop();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        });
    }
    if limit == RunLimit::default() && !args.live {
        // No limit: Enter on a terminal stops cleanly too. A closed stdin
        // does not stop it.
        let stop = receiver.stopper();
        eprintln!("qtrace: press Enter or Ctrl-C to stop");
        std::thread::spawn(move || {
            let mut line = String::new();
            if matches!(std::io::stdin().read_line(&mut line), Ok(n) if n > 0) {
                stop.stop();
            }
        });
    }
    let result = if args.live {
        let watch = Watch {
            progress: receiver.progress(),
            file: args.out.clone(),
            stop: receiver.stopper(),
        };
        let out = args.out.clone();
        let receiving = std::thread::spawn(move || receiver.run(&out, limit));
        live(watch);
        receiving.join().unwrap_or_else(|_| {
            Err(qtrace::IoError {
                path: None,
                action: "receive (the receiver thread panicked)",
                source: std::io::Error::other("panic"),
            })
        })
    } else {
        receiver.run(&args.out, limit)
    };
    match result {
        Ok(summary) => {
            println!("{summary}");
            println!("read it with: qtrace dump {}", args.out.display());
            if summary.file_error.is_some() || summary.records_lost_with_file > 0 {
                Exit::Cut
            } else {
                Exit::Ok
            }
        }
        Err(e) => {
            eprintln!("qtrace: {e}");
            Exit::Failed
        }
    }
}
