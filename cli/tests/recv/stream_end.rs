//! `qtrace recv` when its stream ends badly (issue #13): a receiver killed
//! with SIGKILL leaves a file that reads to its last record; a full disk
//! ends with a valid file, the summary and exit status 3. (The library's
//! side, the receiver API, is in the library's `tests/receiver/stream_end.rs`.)
//!
//! Every socket is on 127.0.0.1 with a port the system chooses; every wait
//! is bounded.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::{user, ClassSpec};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::Tracer;

use crate::common::loopback;
use crate::common::read_all;
use crate::common::temp_dirs;
use loopback::free_port;
use read_all::read_all;

fn temp_dir(name: &str) -> PathBuf {
    temp_dirs::created_dir("end-cli", name)
}

use crate::common::recv;
use crate::common::udp_sender;
use udp_sender::{log_paced, udp_tracer};

/// Starts `qtrace recv` on `listen` writing `out` with extra `args`, and
/// waits until it answers.
fn spawn_recv(listen: SocketAddr, out: &Path, args: &[&str]) -> std::process::Child {
    let child = recv::spawn_recv(listen, out, args);
    recv::wait_listening(listen);
    child
}

#[cfg(unix)]
#[test]
fn sigkill_of_qtrace_recv_leaves_a_file_that_reads_to_its_last_record() {
    sigkill(true);
}

#[cfg(unix)]
#[test]
fn sigkill_of_qtrace_recv_32_leaves_32_byte_records_to_the_last() {
    sigkill(false);
}

/// `qtrace recv --out` (compact chunks) or `recv --out --32` (32-byte
/// records) killed while receiving: every record written reads, the file
/// ends on a whole chunk (or record) and reads as cut short.
#[cfg(unix)]
fn sigkill(compact: bool) {
    let dir = temp_dir(if compact { "kill" } else { "kill32" });
    let out = dir.join("killed.qtr");
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let mut child = spawn_recv(listen, &out, if compact { &[] } else { &["--32"] });
    let tracer = Tracer::new();
    let class = tracer
        .define_class(ClassSpec::new("net", "network").event("rx", "received", &["n", "len"]))
        .unwrap();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(listen)
                .with_capacity(1 << 14)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    let rx = class.event("rx").unwrap();
    tracer.assign_event(rx, q).unwrap();
    tracer.activate().unwrap();
    // Stream until the file holds at least 20,000 records, then SIGKILL.
    let mut i = 0u64;
    let t = Instant::now();
    loop {
        for _ in 0..500 {
            tracer.log_event(rx, [i, 64]);
            i += 1;
        }
        thread::sleep(Duration::from_millis(2));
        let n = TraceReader::open(&out).map(|r| r.count()).unwrap_or(0);
        if n >= 20_000 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the file does not grow"
        );
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    tracer.shutdown().unwrap();
    // Every record in the file reads; the header is the sender's.
    let len = std::fs::metadata(&out).unwrap().len();
    let (header, events, end) = read_all(&out);
    // Killed: no close run, so the file reads as cut short after its
    // records.
    assert_eq!(
        end,
        Completeness::Cut {
            records: events.len() as u64,
            lost: 0
        }
    );
    assert!(header.closes());
    assert_eq!(header.process_id(), std::process::id());
    assert_eq!(header.queue().map(|(h, t)| (h.0, t)), Some((q.0, "udp")));
    assert!(header.catalog().classes().iter().any(|c| c.name == "net"));
    assert_eq!(header.is_compact(), compact);
    let reader = TraceReader::open(&out).unwrap();
    if compact {
        // Compact chunks (the default), whole to the file's end, and every
        // record of them reads.
        let bytes = std::fs::read(&out).unwrap();
        let (mut at, mut records) = (reader.header_len() as usize, 0u64);
        while at < bytes.len() {
            let chunk = qtrace_core::compact::Chunk::new_checked(&bytes[at..]).unwrap();
            records += u64::from(chunk.count());
            at += chunk.len();
        }
        assert_eq!((at as u64, records), (len, events.len() as u64));
    } else {
        assert_eq!(len, reader.header_len() + 32 * events.len() as u64);
    }
    assert!(events.len() >= 20_000);
    // In order, from the first event (paced on loopback: nothing lost).
    let values: Vec<u64> = events
        .iter()
        .filter(|e| e.id == rx)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(values, (0..values.len() as u64).collect::<Vec<_>>());
    // `qtrace dump` reads every event the receiver wrote.
    let dump = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("dump")
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dump.stdout);
    // A cut file: exit status 3, and the message says so.
    assert_eq!(
        dump.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&dump.stderr)
    );
    assert!(String::from_utf8_lossy(&dump.stderr).contains("CUT SHORT"));
    // One line per event, the last one the last written, then the end line.
    assert_eq!(text.lines().count(), events.len() + 1);
    assert!(
        text.lines()
            .last()
            .unwrap()
            .trim_start()
            .starts_with("[END: CUT SHORT"),
        "{}",
        text.lines().last().unwrap()
    );
    let last = values.len() - 1;
    let tail = text.lines().nth_back(1).unwrap();
    assert!(tail.ends_with(&format!("n={last} len=64")), "{tail}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_ends_with_a_valid_file_the_summary_and_status_3() {
    // SAFETY: geteuid has no preconditions and touches no memory of ours.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = temp_dir("full");
    let mount = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&dir)
        .status();
    if !matches!(mount, Ok(s) if s.success()) {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _unmount = Unmount(dir.clone());
    let out = dir.join("full.qtr");
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let mut child = spawn_recv(listen, &out, &["--duration", "120"]);
    let (tracer, _q) = udp_tracer(
        UdpParams::to(listen)
            .with_capacity(1 << 14)
            .with_period(Duration::from_millis(1))
            .with_datagrams_per_period(DatagramsPerPeriod::All),
    );
    // 1 MiB holds about 20,000 records after the header room: stream until
    // the receiver gives up.
    let t = Instant::now();
    let mut i = 0;
    let status = loop {
        log_paced(&tracer, i, 2000, 500);
        i += 2000;
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the receiver never stopped"
        );
    };
    tracer.shutdown().unwrap();
    let o = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        status.code(),
        Some(3),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("stopped early: trace file"), "{stdout}");
    assert!(stdout.contains("the disk is full"), "{stdout}");
    assert!(stdout.starts_with("received "), "{stdout}");
    // The file is valid: every record reads, as many as the summary says.
    let (_, events, end) = read_all(&out);
    assert!(events.len() > 10_000, "{}", events.len());
    // It ends before the stream did: cut short, with every record it has.
    assert!(
        matches!(end, Completeness::Cut { records, .. } if records == events.len() as u64),
        "{end:?}"
    );
    assert!(
        stdout.contains(&format!("wrote {} records to", events.len())),
        "{stdout}"
    );
    let values: Vec<u64> = events
        .iter()
        .filter(|e| e.id == user::USER0)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(values, (0..values.len() as u64).collect::<Vec<_>>());
}
