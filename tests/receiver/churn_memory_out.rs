//! The receiver's memory under sender churn in `--out` mode (issue #34
//! item 1), measured: a receiver writing a trace file
//! ([`Receiver::run`], what `qtrace recv --out` runs) in a child process
//! (this test binary run again, as `receiver_child`); 1,100 sender ids send
//! in turn into its 16 slots and 1,024 parked senders, and the child's peak
//! RSS (VmHWM of /proc/PID/status) must stay under RELIABILITY.md's memory
//! formula without its `--store` terms, for the options chosen here (4 KiB
//! catalog cap, a small reorder window) and what the senders send (a 1.8 KB
//! header; two compact datagrams of 2,048 records, the second first, so
//! that each sender decodes a held one into its own buffer; then small
//! datagrams in turn with the others; then its close three times). A
//! parked sender that kept its decoded records (64 KiB each) would take
//! 1,024 × 64 KiB above the formula. The receiver keeps up (the sender
//! waits for it), and the counts close: for every sender the summary
//! accounts for, the events in the file are its `events`, and `events +
//! lost_events` = what it logged; the totals likewise.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use qtrace::classes::{user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::reader::TraceReader;
use qtrace::receiver::{Receiver, ReceiverConfig, ReorderLimits, RunLimit, MAX_RETIRED};
use qtrace::wire::datagram::{
    encode_catalog_fragment, encode_close, encode_events, CloseCounts, CompactEventsEncoder,
    DEFAULT_MAX_DATAGRAM_LEN, MAX_DATAGRAM_LEN,
};
use qtrace::wire::TraceHeader;
use qtrace::Event;

const SENDERS: u32 = 1_100;
/// Records in each of a sender's two compact datagrams.
const BIG: u64 = 2_048;
/// Small datagrams per sender after them, in turn with the others.
const ROUNDS: u64 = 10;
/// Events per small datagram.
const PER: u64 = 3;
const FIRST: u32 = 60_000;
const MAX_SENDERS: usize = 16;
const CATALOG_CAP: usize = 4 << 10;
const REORDER: ReorderLimits = ReorderLimits {
    datagrams: 16,
    bytes: 32 << 10,
};
/// The child's lines on its stdout start with this (the test harness
/// prints there too).
const TAG: &str = "churn-out-child:";
const CHILD_ENV: &str = "QTRACE_CHURN_OUT_CHILD";

fn config() -> ReceiverConfig {
    ReceiverConfig {
        max_senders: MAX_SENDERS,
        max_catalog_len: CATALOG_CAP,
        reorder: REORDER,
        ..ReceiverConfig::default()
    }
}

/// Every event a sender logs.
fn logged() -> u64 {
    2 * BIG + ROUNDS * PER
}

/// A sender's header: the built-in classes and 8 events of its own.
fn header() -> TraceHeader {
    let mut catalog = Catalog::builtin();
    let mut app = ClassSpec::new("app", "the application's own events");
    for e in 0..8 {
        app = app.event(format!("step{e}"), "x".repeat(40), &["job", "arg"]);
    }
    catalog.define(app).unwrap();
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
}

/// Sender `id`'s header as catalog datagrams numbered from 0.
fn catalog(id: u32, header: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let mut offset = 0;
    while offset < header.len() {
        let seq = out.len() as u64;
        let (len, n) = encode_catalog_fragment(&mut buf, id, seq, 0, 0, header, offset).unwrap();
        out.push(buf[..len].to_vec());
        offset += n;
    }
    out
}

/// Events `first`.. of sender `id` (`user0 [k, i]` at time 1,000 + i), as
/// one compact datagram of `n` records or a plain one of `n`.
fn events(id: u32, seq: u64, first: u64, n: u64, k: u64, compact: bool) -> Vec<u8> {
    let evs = (first..first + n).map(|i| Event::new(1_000 + i, user::USER0, 0, [k, i]));
    if compact {
        let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
        let mut enc = CompactEventsEncoder::new(&mut buf, id, seq, 0, first).unwrap();
        for e in evs {
            assert!(enc.push(&e), "room for {n} records");
        }
        let len = enc.finish();
        buf.truncate(len);
        buf
    } else {
        let evs: Vec<Event> = evs.collect();
        let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
        let (len, sent) = encode_events(&mut buf, id, seq, 0, first, &evs).unwrap();
        assert_eq!(sent as u64, n);
        buf.truncate(len);
        buf
    }
}

/// Sender `id`'s close, number `seq`, after `sent` events.
fn close(id: u32, seq: u64, sent: u64) -> Vec<u8> {
    let mut buf = [0u8; 56];
    let counts = CloseCounts {
        logged: sent,
        unsent: 0,
    };
    let len = encode_close(&mut buf, id, seq, 0, sent, counts).unwrap();
    buf[..len].to_vec()
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

/// RELIABILITY.md's receiver memory formula ("Receiver memory") for
/// `config` in `--out` mode, senders of a `header`-byte header whose
/// largest datagram holds `records` records: above the process as it
/// stood before the first datagram.
fn formula(config: &ReceiverConfig, header: u64, records: u64) -> u64 {
    let header = header.min(config.max_catalog_len as u64);
    let slots = config.max_senders as u64;
    let parked = MAX_RETIRED as u64;
    // A sender with its header decoded: 2 KiB + 5 bytes a header byte.
    let sender = 2_048 + 5 * header;
    // Tracked: its held datagrams (their bytes, one beyond the limit, their
    // entries twice), the header being assembled, its decoded records.
    let tracked = sender
        + config.reorder.bytes as u64
        + 65_507
        + 2 * 56 * config.reorder.datagrams as u64
        + header
        + 32 * records;
    // Tables of fixed-size items, twice for their containers' slack, and
    // the core's own buffers.
    let tables =
        2 * (parked * ((184 + 255) + 72 + 88) + 4_096 * 48 + 16_384 * 48) + 32 * records + 65_507;
    // The file's waiting records (64 KiB + one datagram's, twice for the
    // buffer's slack), their chunks encoded, the chunk encoder's room.
    let file = 5 * (65_536 + 32 * records) + 80 * 1_024;
    slots * tracked + parked * sender + tables + file
}

/// The child: a receiver writing a trace file, told to stop by a line on
/// its stdin. It prints its address, its progress every 2 ms (for the
/// sender's pacing), then one line per sender account and the totals, and
/// waits for its stdin to close (so that its parent reads its VmHWM).
#[test]
fn receiver_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        // Run directly: nothing to do (the parent below runs it).
        return;
    };
    let receiver = Receiver::bind_with("127.0.0.1:0".parse().unwrap(), config()).unwrap();
    let progress = receiver.progress();
    let stop = receiver.stopper();
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
    let summary = receiver
        .run(&path, RunLimit::duration(Duration::from_secs(60)))
        .unwrap();
    done.store(1, Ordering::Relaxed);
    reporter.join().unwrap();
    let mut out = std::io::stdout().lock();
    for s in &summary.senders {
        writeln!(
            out,
            "{TAG} sender {} {} {}",
            s.sender, s.events, s.lost_events
        )
        .unwrap();
    }
    writeln!(
        out,
        "{TAG} totals {} {} {} {} {}",
        summary.events(),
        summary.lost_events(),
        summary.retired_uncounted,
        summary.uncounted_events,
        summary.uncounted_lost_events,
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
fn churning_senders_keep_the_out_receivers_rss_under_the_formula() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recv.qtr");
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "churn_memory_out::receiver_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id().to_string();
    let mut stdin: ChildStdin = child.0.stdin.take().unwrap();
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut next = move || loop {
        let line = lines.next()?.unwrap();
        if let Some(at) = line.find(TAG) {
            return Some(line[at + TAG.len()..].trim().to_string());
        }
    };
    let first = next().expect("the child's address");
    let to: SocketAddr = first.strip_prefix("listening ").unwrap().parse().unwrap();
    let base = status_bytes(&pid, "VmRSS");
    let handled = Arc::new(AtomicU64::new(0));
    let (last_tx, last_rx) = std::sync::mpsc::channel();
    {
        let handled = handled.clone();
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
        while sent - handled.load(Ordering::Relaxed) > 64 {
            assert!(Instant::now() < deadline, "the receiver stalled");
            std::thread::sleep(Duration::from_micros(200));
        }
    };
    let header = header().to_bytes();
    assert!(header.len() <= CATALOG_CAP);
    let fragments = catalog(0, &header).len() as u64;
    let began = Instant::now();
    // Each sender: its header, its second compact datagram then its first
    // (the second is held, then decoded into the sender's own buffer).
    for k in 0..SENDERS {
        let id = FIRST + k;
        for d in catalog(id, &header) {
            send(&d);
        }
        let k = u64::from(k);
        send(&events(id, fragments + 1, BIG, BIG, k, true));
        send(&events(id, fragments, 0, BIG, k, true));
    }
    for round in 0..ROUNDS {
        for k in 0..SENDERS {
            let seq = fragments + 2 + round;
            let first = 2 * BIG + round * PER;
            send(&events(FIRST + k, seq, first, PER, u64::from(k), false));
        }
    }
    for _ in 0..3 {
        for k in 0..SENDERS {
            send(&close(FIRST + k, fragments + 2 + ROUNDS, logged()));
        }
    }
    while handled.load(Ordering::Relaxed) < sent {
        assert!(Instant::now() < deadline, "the receiver stalled");
        std::thread::sleep(Duration::from_millis(1));
    }
    let sending = began.elapsed();
    stdin.write_all(b"stop\n").unwrap();
    let mut accounts = Vec::new();
    let totals = loop {
        let line = last_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the child's summary");
        let n: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        if line.starts_with("sender ") {
            accounts.push((n[0], n[1], n[2]));
        } else if line.starts_with("totals ") {
            break n;
        }
    };
    let peak = status_bytes(&pid, "VmHWM");
    drop(stdin);
    let status = child.0.wait().unwrap();
    assert!(status.success(), "{status}");

    let bound = base + formula(&config(), header.len() as u64, BIG);
    eprintln!(
        "{sent} datagrams in {:.1} s; RSS {:.1} MB before the first, peak {:.1} MB, bound {:.1} MB; \
         {} accounts, totals {totals:?}",
        sending.as_secs_f64(),
        base as f64 / 1e6,
        peak as f64 / 1e6,
        bound as f64 / 1e6,
        accounts.len(),
    );
    assert!(peak <= bound, "peak RSS {peak} above the formula's {bound}");

    // The file's events by sender (arg0 is the sender's number).
    let mut reader = TraceReader::open(&path).unwrap();
    let mut in_file: HashMap<u64, u64> = HashMap::new();
    for e in reader.by_ref() {
        let e = e.unwrap();
        if e.id == user::USER0 {
            *in_file.entry(e.args[0]).or_default() += 1;
        }
    }
    let [events, lost, uncounted_senders, uncounted_events, uncounted_lost] = totals[..] else {
        panic!("{totals:?}");
    };
    assert_eq!(accounts.len() as u64 + uncounted_senders, SENDERS as u64);
    let mut counted = 0;
    for &(sender, ev, lo) in &accounts {
        let k = sender - u64::from(FIRST);
        assert_eq!(in_file.get(&k).copied().unwrap_or(0), ev, "sender {sender}");
        assert_eq!(ev + lo, logged(), "sender {sender}");
        counted += ev;
    }
    assert_eq!(in_file.values().sum::<u64>(), events);
    assert_eq!(events - counted, uncounted_events);
    assert_eq!(
        uncounted_events + uncounted_lost,
        uncounted_senders * logged()
    );
    assert_eq!(events + lost, SENDERS as u64 * logged());
}
