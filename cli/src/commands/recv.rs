//! `qtrace recv --listen ADDR --out FILE [--duration S] [--count N]`: receive
//! the datagrams of UDP queues and write them to a trace file (S.Ha.R.K.'s
//! `udpdump`); with `--store DIR` instead of `--out`, to Parquet tables
//! (crate qtrace-store, FORMAT.md 7).
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

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use qtrace::receiver::{
    default_listen_addr, Receiver, ReceiverConfig, ReceiverSummary, RunLimit, SenderSummary,
};
use qtrace_store::Store;

use crate::spine::json::JsonObject;
use crate::spine::listen::listen_addr;
use crate::spine::watch::{Watch, Watcher};
use crate::spine::{interrupt, Exit};

mod catalog;
pub(crate) mod keys;
mod rtt;
mod serial;
mod store;

use store::{run_store, store_config};

/// Arguments of `qtrace recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// Address to listen on, IP:PORT or HOST:PORT.
    ///
    /// Address to listen on, IP:PORT or HOST:PORT (a host name listens on its
    /// first IPv4 address, else IPv6; loopback by default; use 0.0.0.0:PORT
    /// or [::]:PORT to accept senders on other machines, with --key-file:
    /// without a key anyone on that network can forge datagrams, and a
    /// warning says so).
    #[arg(long, value_name = "ADDR", default_value_t = default_listen_addr().to_string())]
    pub listen: String,
    /// Read a firmware's byte stream instead of UDP (FORMAT.md 10).
    ///
    /// Read a firmware's byte stream (FORMAT.md 10) instead of listening
    /// for UDP datagrams: PATH (a tty — put in raw mode here; its speed is
    /// `stty -F PATH 115200`'s —, a pty, a file, a FIFO), tcp:HOST:PORT or unix:PATH (QEMU's
    /// `-serial` socket chardevs). Frames are resynchronised at every
    /// delimiter; bad ones are counted and skipped. Stops at the stream's
    /// end frame, at the end of the input, or at --count / --duration.
    /// --out, --store, --live and --json work as for UDP: watch a board
    /// while it runs with `qtrace recv --serial /dev/ttyACM0 --out
    /// board.qtr --live`.
    #[arg(
        long,
        value_name = "PATH|tcp:HOST:PORT|unix:PATH",
        conflicts_with = "key_file"
    )]
    pub serial: Option<String>,
    /// Read a firmware's RTT ring through QEMU's QMP socket (FORMAT.md 10.7).
    ///
    /// Read a firmware's RTT ring (qtrace_core::stream::RttRing, FORMAT.md
    /// 10.7) from guest RAM through the QMP socket of a QEMU started with
    /// `-qmp unix:SOCKET,server,nowait`, while the guest runs; the ring is
    /// found by --elf (its symbol `_SEGGER_RTT`) or --addr. Only bytes the
    /// firmware has finished are taken; bytes it overwrote before a read
    /// are counted, and their events counted lost. Stops at the stream's
    /// end frame, when QEMU exits, or at --count / --duration.
    #[arg(
        long,
        value_name = "SOCKET",
        conflicts_with_all = ["serial", "key_file"]
    )]
    pub rtt_qmp: Option<PathBuf>,
    /// --rtt-qmp: the firmware's ELF file (the ring is its symbol _SEGGER_RTT).
    #[arg(
        long,
        value_name = "FIRMWARE",
        requires = "rtt_qmp",
        conflicts_with = "addr"
    )]
    pub elf: Option<PathBuf>,
    /// --rtt-qmp: the ring's address instead of --elf (0x20000400).
    #[arg(long, value_name = "ADDR", requires = "rtt_qmp")]
    pub addr: Option<String>,
    /// --rtt-qmp: milliseconds between two reads of the ring (0: as fast
    /// as QEMU answers).
    #[arg(long, value_name = "MS", default_value_t = 1, requires = "rtt_qmp")]
    pub poll_ms: u64,
    /// Trace file to write (its directory is created).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "store",
        conflicts_with = "store"
    )]
    pub out: Option<PathBuf>,
    /// --out: write 32-byte records (trace-file version 1), not compact chunks.
    ///
    /// --out: write the trace file in 32-byte records (trace-file version 1,
    /// FORMAT.md 1.4) instead of compact chunks (version 2, FORMAT.md 1.11,
    /// the default: about 4–5 bytes an event instead of 32), for a tool that
    /// reads records at fixed offsets. Every qtrace command reads both.
    #[arg(long = "32", requires = "out")]
    pub records_32: bool,
    /// Write Parquet tables into this folder (FORMAT.md 7).
    ///
    /// Write Parquet tables into this folder instead of a trace file
    /// (FORMAT.md 7): DIR/<table>/host=IP/date=YYYY-MM-DD/hour=HH/part-N.parquet,
    /// each part written beside and renamed once whole. Unfinished parts of
    /// a receiver that was killed are accounted for at start; numbering
    /// continues (nothing is overwritten).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// --store: when a part is closed (size or age).
    ///
    /// --store: close a part once it holds this much (64MiB, 1GB, 500000)
    /// or is this old (60s, 10m, 1h); give both to roll at whichever
    /// comes first. Default: 64MiB and 60s.
    #[arg(long, value_name = "SIZE|TIME")]
    pub roll: Vec<String>,
    /// --store: delete old parts (by age or total size).
    ///
    /// --store: delete whole old parts: those older than TIME (7d, 12h),
    /// or the oldest while the store is larger than SIZE (100GiB); both
    /// may be given.
    #[arg(long, value_name = "TIME|SIZE")]
    pub keep: Vec<String>,
    /// Stop after this many seconds.
    ///
    /// Stop after this many seconds (with --count: whichever comes first;
    /// positive, at most 1e18).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Stop once this many events are received or lost.
    ///
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
    /// Datagrams after which a silent sender's slot is reused.
    ///
    /// A full table's least recently heard sender gives its slot to a new
    /// one when it has sent nothing during this many datagrams.
    #[arg(long, value_name = "N", default_value_t = ReceiverConfig::default().idle_datagrams)]
    pub idle_datagrams: u64,
    /// The largest sender header (catalog) taken, in bytes (1MiB).
    ///
    /// The largest sender header (the catalog of event names a sender sends
    /// first) taken, in bytes, KiB or MiB (4096, 64KiB; default 1MiB, at
    /// most 4MiB); a larger one is counted invalid and its sender's events
    /// are stored without its names. The receiver's memory grows with it:
    /// each tracked and each parked sender (1,024 at most) may hold one
    /// (RELIABILITY.md, "Receiver memory"), so lower it to lower the bound.
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "1MiB",
        value_parser = catalog::parse_catalog_cap
    )]
    pub max_catalog_bytes: usize,
    /// Accept only datagrams keyed with a key in FILE.
    ///
    /// Accept only datagrams keyed with the key in FILE (32 bytes, mode 600:
    /// `qtrace keygen FILE`); repeat to hold several keys at once (one per
    /// host or group, or the old and the new while senders move over).
    /// Others are rejected and counted per source address in the summary.
    /// The keyed sessions seen are kept in `OUT.sessions` (--out) or
    /// `DIR/sessions` (--store), so that a replay is rejected across
    /// restarts too (FORMAT.md 3.7).
    #[arg(long = "key-file", value_name = "FILE")]
    pub key_file: Vec<PathBuf>,
    /// Show the live view (`qtrace live`) while receiving.
    ///
    /// Show the live view (`qtrace live`) while receiving: it reads the file
    /// as written and the receiver's account, so it never slows the
    /// receiver, which writes every event. `q` stops both. Not a terminal:
    /// the figures as plain text every second. Needs --out: the view reads
    /// the trace file as it is written.
    #[arg(long, requires = "out")]
    pub live: bool,
    /// Print a JSON summary on stdout (the text goes to stderr).
    ///
    /// At the end, one JSON object on one line of standard output (the text
    /// summary goes to standard error): `output` ("file" or "store"),
    /// `path`, `exit_status`, `error` (null or why the receiver failed),
    /// `senders`, `unclosed_senders`, `events`, `lost_events`,
    /// `lost_datagrams`, `sender_dropped`, `unsent`, `invalid_datagrams`,
    /// `rejected_datagrams`, `sessions_error` (null, or why the session file
    /// of --key-file could not be written), `elapsed_s`; with --serial and --out:
    /// `stream_bytes`, `stream_frames`, `stream_bad_frames`,
    /// `stream_corrupt_chunks`, `stream_skipped_bytes` (and with --rtt-qmp
    /// `stream_overwritten_bytes`, `stream_reads`); with --out: `records_written`,
    /// `records_lost_with_file`, `files_replaced`, `file_error`; with
    /// --store: `store_events`, `store_lost`, `parts_closed`, `bytes`,
    /// `parts_deleted`, `store_error`.
    #[arg(long)]
    pub json: bool,
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
    if args.store.is_none() && !(args.roll.is_empty() && args.keep.is_empty()) {
        eprintln!("qtrace: --roll and --keep apply to --store DIR (Parquet parts); a trace file (--out) is one file");
        return Exit::BadInput;
    }
    let keys = match keys::load(&args.key_file) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let store_config = match store_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let keyed = !keys.is_empty();
    if args.serial.is_none() && args.rtt_qmp.is_none() {
        keys::warn_if_exposed(listen, keyed);
    }
    let config = ReceiverConfig {
        max_senders: args.max_senders,
        idle_datagrams: args.idle_datagrams,
        max_catalog_len: args.max_catalog_bytes,
        keys,
        compact_file: !args.records_32,
        ..ReceiverConfig::default()
    };
    let asked_buffer = config.recv_buffer;
    let target = match (&args.out, &args.store) {
        (Some(out), _) => out.display().to_string(),
        (None, Some(dir)) => format!("Parquet tables under {}", dir.display()),
        (None, None) => {
            eprintln!("qtrace: give --out FILE (a trace file) or --store DIR (Parquet tables)");
            return Exit::BadInput;
        }
    };
    // The store opens before the socket: unfinished parts of a killed
    // receiver are accounted for before anything is received, and a
    // sender never sees the port open while the store is not.
    let store = match &args.store {
        Some(dir) => match Store::open(dir, store_config) {
            Ok(s) => {
                for t in &s.recovered() {
                    eprintln!(
                        "qtrace: {}: an unfinished part of an earlier receiver (killed?): its rows are lost; marked in losses (kind unfinished)",
                        t.display()
                    );
                }
                for run in s.unclosed() {
                    eprintln!(
                        "qtrace: stream {run} was under way when an earlier receiver stopped (killed?): marked unclosed; what the store holds of it is not counted lost again"
                    );
                }
                Some(s)
            }
            Err(e) => {
                eprintln!("qtrace: {e}");
                return Exit::Failed;
            }
        },
        None => None,
    };
    let (mut receiver, stream, source) = match (&args.serial, &args.rtt_qmp) {
        (Some(spec), _) => match serial::receiver(spec, config) {
            Ok((r, counts, name)) => (r, Some(counts), format!("reading the byte stream {name}")),
            Err(e) => {
                eprintln!("qtrace: {e}");
                return Exit::BadInput;
            }
        },
        (None, Some(socket)) => {
            let at = match (&args.elf, &args.addr) {
                (Some(elf), _) => rtt::Locate::Elf(elf),
                (None, Some(addr)) => rtt::Locate::Addr(addr),
                (None, None) => {
                    eprintln!("qtrace: --rtt-qmp: give the firmware's ELF file with --elf FIRMWARE (its symbol {}), or the ring's address with --addr ADDR", rtt::SYMBOL);
                    return Exit::BadInput;
                }
            };
            let poll = Duration::from_millis(args.poll_ms);
            match rtt::receiver(socket, at, poll, config) {
                Ok((r, counts, name)) => (r, Some(counts), format!("reading {name}")),
                Err(e) => {
                    eprintln!("qtrace: {e}");
                    return Exit::BadInput;
                }
            }
        }
        (None, None) => match Receiver::bind_with(listen, config) {
            Ok(r) => {
                let granted = r.recv_buffer();
                if let Some(w) = granted.and_then(|g| buffer_warning(asked_buffer, g)) {
                    eprintln!("{w}");
                }
                let on = match granted {
                    Some(g) => format!(
                        "listening on {} (socket buffer {:.1} MiB)",
                        r.local_addr(),
                        g as f64 / f64::from(1 << 20)
                    ),
                    None => format!("listening on {}", r.local_addr()),
                };
                (r, None, on)
            }
            Err(e) => {
                eprintln!("qtrace: {e}");
                return Exit::BadInput;
            }
        },
    };
    if keyed {
        // Replays are rejected across restarts: the keyed sessions are
        // kept beside the output (FORMAT.md 3.7).
        let path = match (&args.out, &args.store) {
            (Some(out), _) => {
                let mut p = out.as_os_str().to_owned();
                p.push(".sessions");
                std::path::PathBuf::from(p)
            }
            (None, Some(dir)) => dir.join("sessions"),
            (None, None) => return Exit::BadInput,
        };
        match receiver.keep_sessions(&path) {
            Ok(n) => eprintln!(
                "qtrace: keyed sessions kept in {} ({n} sender ids from earlier runs)",
                path.display()
            ),
            Err(e) => {
                eprintln!("qtrace: {e}");
                return Exit::Failed;
            }
        }
    }
    let stream_counts = move || {
        stream
            .as_ref()
            .map(|c| *c.lock().unwrap_or_else(|e| e.into_inner()))
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
    eprintln!("qtrace: {source} {until}, writing {target}");
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
    if limit == RunLimit::default() && !args.live && std::io::stdin().is_terminal() {
        // No limit: Enter on a terminal stops cleanly too. Only on a
        // terminal: a pipe may be the stream itself (`--serial /dev/stdin`),
        // whose bytes this thread would take.
        let stop = receiver.stopper();
        eprintln!("qtrace: press Enter or Ctrl-C to stop");
        std::thread::spawn(move || {
            let mut line = String::new();
            if matches!(std::io::stdin().read_line(&mut line), Ok(n) if n > 0) {
                stop.stop();
            }
        });
    }
    if let (Some(store), Some(dir)) = (store, &args.store) {
        let exit = run_store(receiver, store, dir, limit, args.json);
        if let Some(c) = stream_counts() {
            eprintln!("qtrace: {}", c.describe());
        }
        return exit;
    }
    let Some(out) = &args.out else {
        return Exit::BadInput;
    };
    let result = if args.live {
        let watch = Watch {
            progress: receiver.progress(),
            file: out.clone(),
            stop: receiver.stopper(),
            keyed: !args.key_file.is_empty(),
        };
        let out = out.clone();
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
        receiver.run(out, limit)
    };
    match result {
        Ok(summary) => {
            let status = if summary.file_error.is_some()
                || summary.records_lost_with_file > 0
                || summary.sessions_error.is_some()
            {
                Exit::Cut
            } else {
                Exit::Ok
            };
            let stream = stream_counts();
            if let Some(c) = &stream {
                eprintln!("qtrace: {}", c.describe());
            }
            if args.json {
                eprintln!("{summary}");
                let mut json = summary_json("file", out, status, None, &summary);
                if let Some(c) = &stream {
                    json = json
                        .u64("stream_bytes", c.decoder.bytes)
                        .u64("stream_frames", c.decoder.frames)
                        .u64("stream_bad_frames", c.decoder.bad)
                        .u64("stream_corrupt_chunks", c.corrupt_chunks)
                        .u64("stream_skipped_bytes", c.decoder.skipped);
                    if args.rtt_qmp.is_some() {
                        json = json
                            .u64("stream_overwritten_bytes", c.overwritten)
                            .u64("stream_reads", c.reads);
                    }
                }
                let json = json
                    .u64("records_written", summary.records_written)
                    .u64("records_lost_with_file", summary.records_lost_with_file)
                    .u64("files_replaced", summary.files_replaced)
                    .str("file_error", summary.file_error.as_deref())
                    .finish();
                println!("{json}");
            } else {
                println!("{summary}");
                if summary.records_written > 0 {
                    println!("read it with: qtrace dump {}", out.display());
                }
            }
            status
        }
        Err(e) => {
            eprintln!("qtrace: {e}");
            if args.json {
                let error = e.to_string();
                let summary = ReceiverSummary::default();
                let json = summary_json("file", out, Exit::Failed, Some(&error), &summary).finish();
                println!("{json}");
            }
            Exit::Failed
        }
    }
}

/// The fields of `recv --json` that both outputs have.
pub(super) fn summary_json(
    output: &str,
    path: &std::path::Path,
    status: Exit,
    error: Option<&str>,
    s: &ReceiverSummary,
) -> JsonObject {
    let sum =
        |f: fn(&SenderSummary) -> u64| s.senders.iter().fold(0u64, |n, x| n.saturating_add(f(x)));
    JsonObject::new()
        .str("output", Some(output))
        .str("path", Some(&path.display().to_string()))
        .u64("exit_status", status.code().into())
        .str("error", error)
        .u64("senders", s.senders.len() as u64)
        .u64(
            "unclosed_senders",
            s.senders.iter().filter(|x| !x.closed).count() as u64,
        )
        .u64("events", s.events())
        .u64("lost_events", s.lost_events())
        .u64("lost_datagrams", s.lost_datagrams())
        .u64("sender_dropped", s.sender_dropped())
        .u64("unsent", sum(|x| x.unsent))
        .u64("invalid_datagrams", s.invalid.total())
        .u64("rejected_datagrams", s.invalid.rejected.total())
        .str("sessions_error", s.sessions_error.as_deref())
        .f64("elapsed_s", s.elapsed.as_secs_f64())
}

/// The warning for a socket receive buffer smaller than asked: the kernel's
/// cap (`net.core.rmem_max` on Linux), what it costs and how to lift it.
fn buffer_warning(asked: usize, granted: usize) -> Option<String> {
    if granted >= asked {
        return None;
    }
    let cap = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .ok()
        .map(|c| format!(" (net.core.rmem_max is {})", c.trim()))
        .unwrap_or_default();
    Some(format!(
        "qtrace: warning: the socket receive buffer is {granted} bytes, not the {asked} asked: \
         the system caps it{cap}. Datagrams that arrive while it is full are lost in transit \
         (a fast sender while the receiver waits for the CPU or the disk). Raise the cap \
         (`sysctl -w net.core.rmem_max={asked}`) or run the receiver with CAP_NET_ADMIN, \
         which asks past it."
    ))
}

#[cfg(test)]
mod tests {
    use super::buffer_warning;

    /// A buffer granted whole says nothing; a capped one says both sizes
    /// and how to lift the cap.
    #[test]
    fn a_capped_socket_buffer_is_warned_about() {
        assert_eq!(buffer_warning(8 << 20, 8 << 20), None);
        assert_eq!(buffer_warning(8 << 20, 16 << 20), None);
        let w = buffer_warning(8 << 20, 4 << 20).unwrap();
        assert!(
            w.starts_with(
                "qtrace: warning: the socket receive buffer is 4194304 bytes, not the 8388608 asked: the system caps it"
            ),
            "{w}"
        );
        assert!(w.contains("`sysctl -w net.core.rmem_max=8388608`"), "{w}");
        assert!(w.contains("CAP_NET_ADMIN"), "{w}");
    }
}
