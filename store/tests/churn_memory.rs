//! The receiver's memory under sender churn (issue #34 item 1), measured:
//! a receiver writing a store runs in a child process (this test binary
//! run again, as `receiver_child`), 1,100 sender ids send in turn into its
//! 16 slots and 1,024 parked senders, and the child's peak RSS (VmHWM of
//! /proc/PID/status) must stay under RELIABILITY.md's memory formula
//! evaluated for the options chosen here (4 KiB catalog cap, a small
//! reorder window, the default roll) and what the senders send (a 1.8 KB
//! header each, 3 events a datagram): tens of MB, where the runaway of
//! the issue (each datagram of a sender pushed out came back as a new
//! stream, every stream's state kept) reached hundreds. The receiver keeps
//! up (the sender waits for it), so the totals close: stored = summary =
//! logged.

mod common;
use common::datagrams;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qtrace::receiver::{Receiver, ReceiverConfig, ReorderLimits, RunLimit, MAX_RETIRED};
use qtrace_store::{Store, StoreConfig};

const SENDERS: u32 = 1_100;
const ROUNDS: u64 = 40;
/// Events per datagram.
const PER: u64 = 3;
const FIRST: u32 = 50_000;
const MAX_SENDERS: usize = 16;
const CATALOG_CAP: usize = 4 << 10;
const REORDER: ReorderLimits = ReorderLimits {
    datagrams: 16,
    bytes: 32 << 10,
};
/// The child's lines on its stdout start with this (the test harness
/// prints there too).
const TAG: &str = "churn-child:";
const CHILD_ENV: &str = "QTRACE_CHURN_MEMORY_CHILD";

fn config() -> ReceiverConfig {
    ReceiverConfig {
        max_senders: MAX_SENDERS,
        max_catalog_len: CATALOG_CAP,
        reorder: REORDER,
        ..ReceiverConfig::default()
    }
}

/// A field of /proc/PID/status in bytes (`VmRSS`, `VmHWM`: kB there).
fn status_bytes(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    let kb: u64 = line[field.len() + 1..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// What the senders send, the formula's other inputs.
struct Sent {
    /// Their header's bytes (at most the catalog cap).
    header_len: u64,
    /// The largest event id they log (below 0x100: the name keys of ids
    /// above, in blocks, are not in this formula).
    max_event_id: u64,
    /// Records in their largest datagram.
    records: u64,
}

/// RELIABILITY.md's receiver memory formula ("Receiver memory", its table of
/// per-item costs) for `config`, a store at the default roll and what the
/// senders send: above the process as it stood before the first datagram
/// (code, libraries, the socket's batch buffers, the store opened).
fn formula(config: &ReceiverConfig, sent: &Sent) -> u64 {
    let header = sent.header_len.min(config.max_catalog_len as u64);
    let slots = config.max_senders as u64;
    let parked = MAX_RETIRED as u64;
    // A sender with its header (decoded): 2 KiB + 5 bytes a header byte,
    // its state included (store/tests/memory_costs.rs).
    let sender = 2_048 + 5 * header;
    // Tracked: also its held datagrams (their bytes and one beyond the
    // limit, 65,507 at most, and their entries, twice for the map's
    // slack), the header being assembled, its decoded records (32 bytes a
    // record of its largest compact datagram).
    let tracked = sender
        + config.reorder.bytes as u64
        + 65_507
        + 2 * 56 * config.reorder.datagrams as u64
        + header
        + 32 * sent.records;
    // Tables of fixed-size items, twice for their containers' slack: ended
    // accounts (with a queue name of at most 255 bytes), refusing and
    // rejected addresses, closed ends, keyed sessions; and the core's own
    // buffers (a decoded compact datagram, a keyed one's plain copy).
    let tables = 2 * (parked * ((184 + 255) + 72 + 88) + 4_096 * 48 + 16_384 * 48)
        + 32 * sent.records
        + 65_507;
    // A store stream (tracked and parked): 3 KiB + 3 bytes a header byte,
    // its name keys (8 bytes an id below 0x100 up to the largest; these
    // senders log none above), its index entry.
    assert!(sent.max_event_id < 0x100);
    let stream = 3_072 + 3 * header + 8 * (sent.max_event_id + 1) + 2 * 56;
    // The open part set of the one partition (one host, one hour), with the
    // one closing before it: 64 MiB at the default roll.
    let part_sets = 64 << 20;
    slots * tracked + parked * sender + tables + (slots + parked) * stream + part_sets
}

/// The child: a receiver writing a store, told to stop by a line on its
/// stdin. It prints its address, then its progress every 2 ms (for the
/// sender's pacing), then its summary's and the store's totals, and waits
/// for its stdin to close (so that its parent reads its VmHWM).
#[test]
fn receiver_child() {
    let Ok(root) = std::env::var(CHILD_ENV) else {
        // Run directly: nothing to do (the parent below runs it).
        return;
    };
    let mut receiver = Receiver::bind_with("127.0.0.1:0".parse().unwrap(), config()).unwrap();
    let store = StoreConfig {
        roll_bytes: Some(StoreConfig::DEFAULT_ROLL_BYTES),
        roll_age: Some(StoreConfig::DEFAULT_ROLL_AGE),
        ..StoreConfig::default()
    };
    let mut store = Store::open(std::path::Path::new(&root), store).unwrap();
    let progress = receiver.progress();
    let stop = receiver.stopper();
    let out = std::io::stdout();
    println!("{TAG} listening {}", receiver.local_addr());
    let done = Arc::new(AtomicU64::new(0));
    let reporter = {
        let done = done.clone();
        std::thread::spawn(move || {
            while done.load(Ordering::Relaxed) == 0 {
                let n = progress.datagrams() + progress.invalid();
                let _ = writeln!(std::io::stdout(), "{TAG} handled {n}");
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        stop.stop();
    });
    let limit = RunLimit::duration(Duration::from_secs(60));
    let summary = receiver.run_streams(limit, &mut store).unwrap();
    done.store(1, Ordering::Relaxed);
    reporter.join().unwrap();
    let report = store.finish(&summary).unwrap();
    let refused: u64 = summary.refused.iter().map(|r| r.events).sum();
    let mut out = out.lock();
    writeln!(
        out,
        "{TAG} summary {} {} {} store {} {} refused {refused}",
        summary.events(),
        summary.lost_events(),
        summary.senders.len() as u64 + summary.retired_uncounted,
        report.events,
        report.lost,
    )
    .unwrap();
    out.flush().unwrap();
    drop(out);
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
}

/// Kills the child if the test fails before it ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn churning_senders_keep_the_receivers_rss_under_the_formula() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "receiver_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id().to_string();
    let mut stdin: ChildStdin = child.0.stdin.take().unwrap();
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    // The child's next line of its own (None at its end).
    let mut next = move || loop {
        let line = lines.next()?.unwrap();
        // (The harness's "test receiver_child ... " may start the line.)
        if let Some(at) = line.find(TAG) {
            return Some(line[at + TAG.len()..].trim().to_string());
        }
    };
    let first = next().expect("the child's address");
    let to: SocketAddr = first.strip_prefix("listening ").unwrap().parse().unwrap();
    // The process before the first datagram: the formula's terms come on
    // top of it.
    let base = status_bytes(&pid, "VmRSS");
    // The child's progress, read on a thread of its own; the summary line
    // after it.
    let handled = Arc::new(AtomicU64::new(0));
    let (last_tx, last_rx) = std::sync::mpsc::channel();
    {
        let handled = handled.clone();
        // Read to the end: the child's harness writes after its summary.
        std::thread::spawn(move || {
            while let Some(line) = next() {
                if let Some(n) = line.strip_prefix("handled ") {
                    handled.store(n.parse().unwrap(), Ordering::Relaxed);
                } else {
                    let _ = last_tx.send(line);
                }
            }
        });
    }
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut sent = 0u64;
    let mut send = |bytes: &[u8]| {
        socket.send_to(bytes, to).unwrap();
        sent += 1;
        while sent - handled.load(Ordering::Relaxed) > 128 {
            assert!(Instant::now() < deadline, "the receiver stalled");
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    // Each sender: its header (catalog datagrams numbered from 0), then
    // ROUNDS events datagrams in turn with the others, then its close three
    // times.
    let header = datagrams::header().to_bytes();
    let fragments = datagrams::catalog(0, &header).len() as u64;
    let began = Instant::now();
    for round in 0..ROUNDS {
        for k in 0..SENDERS {
            let id = FIRST + k;
            if round == 0 {
                for d in datagrams::catalog(id, &header) {
                    send(&d);
                }
            }
            let seq = fragments + round;
            send(&datagrams::events(id, seq, round * PER, PER, k as u64));
        }
    }
    for _ in 0..3 {
        for k in 0..SENDERS {
            send(&datagrams::close(
                FIRST + k,
                fragments + ROUNDS,
                ROUNDS * PER,
            ));
        }
    }
    while handled.load(Ordering::Relaxed) < sent {
        assert!(Instant::now() < deadline, "the receiver stalled");
        std::thread::sleep(Duration::from_millis(1));
    }
    let sending = began.elapsed();
    stdin.write_all(b"stop\n").unwrap();
    let last = last_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the child's summary");
    let peak = status_bytes(&pid, "VmHWM");
    drop(stdin);
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status}");

    let sent_what = Sent {
        header_len: header.len() as u64,
        max_event_id: u64::from(qtrace::classes::user::USER0.0),
        records: PER,
    };
    assert!(header.len() <= CATALOG_CAP);
    let bound = base + formula(&config(), &sent_what);
    eprintln!(
        "{sent} datagrams in {:.1} s; RSS {:.1} MB before the first, peak {:.1} MB, bound {:.1} MB; {last}",
        sending.as_secs_f64(),
        base as f64 / 1e6,
        peak as f64 / 1e6,
        bound as f64 / 1e6
    );
    assert!(peak <= bound, "peak RSS {peak} above the formula's {bound}");

    // Totals: what was logged is stored or lost, the summary and the
    // store agree; the events lost are exactly those refused.
    let n: Vec<u64> = last
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [events, lost, senders, store_events, store_lost, refused] = n[..] else {
        panic!("{last}");
    };
    let logged = SENDERS as u64 * ROUNDS * PER;
    assert_eq!(senders, SENDERS as u64, "{last}");
    assert_eq!(events + lost, logged, "{last}");
    assert_eq!((store_events, store_lost), (events, lost), "{last}");
    assert_eq!(lost, refused, "{last}");
}
