//! `qtrace recv --store DIR`: the sums over the store equal what the
//! sender logged and what the receiver printed; parts roll by size and
//! are deleted by retention; a SIGKILLed receiver leaves only whole parts
//! plus its unfinished part set, which the next start accounts for
//! without overwriting anything.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::loopback::{free_port, loopback};
use crate::common::parquet_rows::{parquet_files, table_rows};
use crate::common::recv::{send_user3, user_sender};

/// `qtrace recv --store DIR ARGS…` on a free loopback port, listening. A
/// receiver that exits before it listens fails the test with its message,
/// except for a port taken between `free_port` and its bind (another test's
/// socket): then it tries another port. Bounded: 5 ports, 30 s each.
fn recv_store(dir: &Path, args: &[&str]) -> (SocketAddr, Child) {
    let mut last = String::new();
    for _ in 0..5 {
        let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
        match recv_store_at(listen, dir, args) {
            Ok(child) => return (listen, child),
            Err(stderr) => last = stderr,
        }
    }
    panic!("five ports taken before qtrace recv --store could bind them: {last}");
}

/// `qtrace recv --listen LISTEN --store DIR ARGS…`, listening; `Err` (its
/// message) when the port was taken.
fn recv_store_at(listen: SocketAddr, dir: &Path, args: &[&str]) -> Result<Child, String> {
    {
        let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(["recv", "--listen", &listen.to_string(), "--store"])
            .arg(dir)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let probe = UdpSocket::bind(loopback()).unwrap();
        probe.connect(listen).unwrap();
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                let out = child.wait_with_output().unwrap();
                let last = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(
                    last.contains("address in use"),
                    "qtrace recv --store exited before listening ({}): {last}",
                    out.status
                );
                return Err(last);
            }
            // As common::recv::wait_listening: a port nobody listens on
            // answers a datagram with a refusal the next send reports.
            let _ = probe.send(b"probe");
            std::thread::sleep(Duration::from_millis(20));
            if probe.send(b"probe").is_ok() && probe.send(b"probe").is_ok() {
                return Ok(child);
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "qtrace recv --store does not listen on {listen} after 30 s"
            );
        }
    }
}

fn sum(rows: &[serde_json::Map<String, Value>], col: &str) -> u64 {
    rows.iter().map(|r| r[col].as_u64().unwrap_or(0)).sum()
}

/// Every file under `dir` (any depth) that is not a folder.
fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else if !p.ends_with(".qtrace-store.lock") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn the_stores_sums_equal_the_senders_log_and_the_receivers_account() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let n = 20_000;
    let (listen, child) = recv_store(&store, &["--count", &n.to_string(), "--duration", "30"]);
    let report = send_user3(listen, n);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Logged: accepted by the UDP queue, or dropped by it (full).
    let c = &report.queues[0].counters;
    let logged = n;
    assert_eq!(c.accepted + c.dropped, logged, "{c:?}");

    let events = table_rows(&store, "events");
    let losses = table_rows(&store, "losses");
    let streams = table_rows(&store, "streams");
    let lost = sum(&losses, "count");
    // Exact: every event logged is a row or counted lost.
    assert_eq!(events.len() as u64 + lost, logged, "{stdout}");
    assert_eq!(sum(&streams, "events"), events.len() as u64);
    assert_eq!(sum(&streams, "lost"), lost);
    // What the receiver printed.
    let line = stdout.lines().find(|l| l.starts_with("store: ")).unwrap();
    assert!(
        line.starts_with(&format!("store: {} events, {lost} lost, in ", events.len())),
        "{line}"
    );
    assert_eq!(
        stdout.lines().last().unwrap(),
        format!(
            "read it with: qtrace sql {} \"SELECT event, count(*) FROM events GROUP BY ALL\"",
            store.display()
        )
    );
    // The stream closed: its last row says so, with the receiver's account.
    let last = streams.iter().find(|r| r["verdict"] != "open").unwrap();
    assert_eq!(last["verdict"], "closed", "{last:?}");
    assert_eq!(last["complete"], true);
    assert_eq!(last["logged"], logged);
    assert_eq!(
        last["sender_dropped"].as_u64().unwrap() + last["unsent"].as_u64().unwrap(),
        lost - sum_kind(&losses, "hoops", true),
        "losses other than the sender's are transit losses: {losses:?}"
    );
    // The rows are the sender's events, in order, in Hive partitions.
    let mut values: Vec<u64> = events
        .iter()
        .filter(|r| r["event"] == "user3")
        .map(|r| r["arg0"].as_u64().unwrap())
        .collect();
    assert_eq!(values.len(), events.len());
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), events.len(), "no event twice");
    assert!(events
        .iter()
        .all(|r| r["host"] == "127.0.0.1" && r["sender"].is_u64()));
    for f in parquet_files(&store.join("events")) {
        let rel = f
            .strip_prefix(store.join("events"))
            .unwrap()
            .to_string_lossy()
            .to_string();
        let parts: Vec<&str> = rel.split('/').collect();
        assert_eq!(parts.len(), 4, "{rel}");
        assert_eq!(parts[0], "host=127.0.0.1");
        assert!(
            parts[1].starts_with("date=20") && parts[1].len() == "date=2026-11-27".len(),
            "{rel}"
        );
        assert!(
            parts[2].starts_with("hour=") && parts[2].len() == "hour=00".len(),
            "{rel}"
        );
        assert!(
            parts[3].starts_with("part-") && parts[3].ends_with(".parquet"),
            "{rel}"
        );
    }
    assert!(
        all_files(&store)
            .iter()
            .all(|p| p.extension().is_some_and(|x| x == "parquet")),
        "no temp left: {:?}",
        all_files(&store)
    );
}

/// The losses rows of `kind` (or, with `other`, of every other kind) summed.
fn sum_kind(rows: &[serde_json::Map<String, Value>], kind: &str, other: bool) -> u64 {
    rows.iter()
        .filter(|r| (r["kind"] == kind) != other)
        .map(|r| r["count"].as_u64().unwrap())
        .sum()
}

/// Streams user0 events to `listen` from a thread until `stop` is set.
fn stream_until(
    listen: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let tracer = user_sender(listen);
        let mut i = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            for _ in 0..200 {
                tracer.log_event(qtrace::classes::user::USER0, [i, 0]);
                i += 1;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(tracer.shutdown());
        i
    })
}

#[test]
fn parts_roll_by_size_and_retention_deletes_whole_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (listen, child) = recv_store(
        &store,
        &["--roll", "40KiB", "--keep", "400KiB", "--duration", "4"],
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream_until(listen, stop.clone());
    let out = child.wait_with_output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Part sets: N of each table, same numbers.
    let mut numbers: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    let files = all_files(&store);
    for table in ["events", "losses", "payloads", "streams"] {
        let mut ns: Vec<u64> = files
            .iter()
            .filter(|p| p.starts_with(store.join(table)))
            .map(|p| {
                let name = p.file_name().unwrap().to_str().unwrap();
                name.strip_prefix("part-")
                    .unwrap()
                    .strip_suffix(".parquet")
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        ns.sort_unstable();
        numbers.insert(table, ns);
    }
    let events_parts = numbers["events"].clone();
    assert!(numbers.values().all(|v| *v == events_parts), "{numbers:?}");
    assert!(
        events_parts.len() >= 2,
        "rolled: {events_parts:?}\n{stdout}"
    );
    // Retention deleted the oldest whole part sets: the numbers kept are
    // the newest ones, and the store is within the limit plus the part set
    // closed last (retention runs after each close).
    let deleted = stdout.contains("old part sets deleted");
    assert!(deleted, "{stdout}");
    assert!(events_parts[0] > 0, "{events_parts:?}");
    let total: u64 = files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(total <= 400 * 1024, "{total} bytes kept");
}

/// Mid-stream, once a few part sets are closed: SIGKILLs the receiver
/// `child` and reaps it.
fn kill_once_parts_closed(store: &Path, child: &mut Child) {
    let start = Instant::now();
    while parquet_files(&store.join("events")).len() < 3 {
        assert!(start.elapsed() < Duration::from_secs(30), "no part closed");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    child.wait().unwrap();
}

/// Streams into the receiver `child` listening on `listen` until a few part
/// sets of `store` are closed, SIGKILLs it, and checks what it left: whole
/// parts and at most one unfinished part set (its temps, one per table, all
/// of one number). Returns every file left.
fn kill_mid_stream(store: &Path, listen: SocketAddr, mut child: Child) -> Vec<PathBuf> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream_until(listen, stop.clone());
    kill_once_parts_closed(store, &mut child);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    let before = all_files(store);
    let temps: Vec<&PathBuf> = before
        .iter()
        .filter(|p| p.extension().is_none_or(|x| x != "parquet") && !is_open_streams(p))
        .collect();
    // At most one temp per table (the jobs part's is made by the encoder
    // thread, so a kill may come before it exists).
    assert!(temps.len() <= qtrace_store::Table::ALL.len(), "{temps:?}");
    let temp_numbers: std::collections::BTreeSet<String> = temps
        .iter()
        .map(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            assert!(
                n.starts_with(".part-") && n.ends_with(".parquet.tmp"),
                "{n}"
            );
            n.to_string()
        })
        .collect();
    assert!(
        temp_numbers.len() <= 1,
        "one unfinished part set: {temps:?}"
    );
    before
}

/// The store's `open-streams` file (FORMAT.md 7.1) or its temp.
fn is_open_streams(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n == "open-streams" || n == ".open-streams.tmp")
}

#[test]
fn a_sigkilled_receiver_and_its_restart_lose_only_what_the_store_does_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (listen, mut child) = recv_store(&store, &["--roll", "30KiB"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream_until(listen, stop.clone());
    kill_once_parts_closed(&store, &mut child);
    assert!(store.join("open-streams").exists());
    // At once on the same address: the sender never stopped, and goes on
    // into the new receiver.
    let child = recv_store_at(listen, &store, &["--duration", "4"]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let logged = sender.join().unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr
            .contains("was under way when an earlier receiver stopped (killed?): marked unclosed"),
        "{stderr}"
    );
    let events = table_rows(&store, "events");
    let losses = table_rows(&store, "losses");
    let streams = table_rows(&store, "streams");
    // Exact across the kill: every event the sender logged is a row or
    // counted lost, once (the killed receiver's open part set and what
    // came while no receiver ran are the losses).
    let lost = sum(&losses, "count");
    assert_eq!(
        events.len() as u64 + lost,
        logged,
        "{stdout}{stderr}{losses:?}"
    );
    let mut values: Vec<u64> = events.iter().map(|r| r["arg0"].as_u64().unwrap()).collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), events.len(), "no event twice");
    // Two runs of the one sender: the killed receiver's ends unclosed (its
    // mark accounts for what the store holds of it), the restart's closed.
    let mut runs: Vec<&str> = streams
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .filter(|r| r.starts_with("127.0.0.1:"))
        .collect();
    runs.sort_unstable();
    runs.dedup();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let last_verdict = |run: &str| {
        streams
            .iter()
            .filter(|r| r["run"] == run)
            .max_by_key(|r| r["part"].as_u64().unwrap())
            .map(|r| r["verdict"].as_str().unwrap().to_string())
            .unwrap()
    };
    let mut verdicts: Vec<String> = runs.iter().map(|r| last_verdict(r)).collect();
    verdicts.sort();
    assert_eq!(verdicts, ["closed", "unclosed"], "{streams:?}");
    let marks: Vec<_> = losses.iter().filter(|r| r["kind"] == "unclosed").collect();
    assert_eq!(marks.len(), 1, "{marks:?}");
    let closed = streams.iter().find(|r| r["verdict"] == "closed").unwrap();
    assert_eq!(closed["logged"], logged);
    assert!(!store.join("open-streams").exists());
}

#[test]
fn a_sigkilled_receiver_leaves_whole_parts_and_a_restart_accounts_for_the_unfinished_one() {
    let dir = tempfile::tempdir().unwrap();
    // A kill that lands between two part sets (one closed, the next not yet
    // begun) leaves no unfinished set: also a valid end, but it does not
    // test the restart's accounting. Such a kill is rare (1 in 8 at load 9),
    // so a fresh store is tried again, at most 5 times.
    let mut attempt = 0;
    let (store, before) = loop {
        attempt += 1;
        let store = dir.path().join(format!("store{attempt}"));
        let (listen, child) = recv_store(&store, &["--roll", "30KiB"]);
        let before = kill_mid_stream(&store, listen, child);
        // A temp of a part (not the open-streams file, which a running
        // receiver always has).
        let unfinished = before
            .iter()
            .any(|p| p.extension().is_none_or(|x| x != "parquet") && !is_open_streams(p));
        if unfinished || attempt == 5 {
            break (store, before);
        }
        eprintln!("attempt {attempt}: the kill fell between two part sets; again");
    };
    assert!(
        before
            .iter()
            .any(|p| p.extension().is_none_or(|x| x != "parquet") && !is_open_streams(p)),
        "5 kills in a row fell between two part sets: {before:?}"
    );
    let parts: Vec<(PathBuf, Vec<u8>)> = before
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    let rows_before = table_rows(&store, "events").len();
    assert!(rows_before > 0);

    // A restart: the unfinished part is accounted for, numbering goes on,
    // nothing is overwritten.
    // Long enough for the probe of recv_store to see it listen on a loaded machine.
    let (_, child) = recv_store(&store, &["--duration", "3"]);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("an unfinished part of an earlier receiver"),
        "{stderr}"
    );
    // The parts of the unfinished set that were already renamed into place
    // go with it (FORMAT.md 7.1); every other part is unchanged.
    let unfinished_numbers: Vec<String> = before
        .iter()
        .filter_map(|p| {
            let n = p.file_name()?.to_str()?;
            let n = n.strip_prefix(".part-")?.strip_suffix(".parquet.tmp")?;
            Some(format!("part-{n}.parquet"))
        })
        .collect();
    for (p, bytes) in &parts {
        let name = p.file_name().unwrap().to_str().unwrap();
        if unfinished_numbers.iter().any(|u| u == name) {
            assert!(!p.exists(), "{} of the unfinished set removed", p.display());
            continue;
        }
        assert_eq!(
            &std::fs::read(p).unwrap(),
            bytes,
            "{} unchanged",
            p.display()
        );
    }
    let after = all_files(&store);
    assert!(
        after
            .iter()
            .all(|p| p.extension().is_some_and(|x| x == "parquet")),
        "{after:?}"
    );
    let unfinished: Vec<_> = table_rows(&store, "losses")
        .into_iter()
        .filter(|r| r["kind"] == "unfinished")
        .collect();
    assert_eq!(unfinished.len(), 1, "{unfinished:?}");
    // Fewer rows only when the unfinished set's events part had been renamed
    // into place before the kill (and went with the set).
    let events_part_removed = parts.iter().any(|(p, _)| {
        p.starts_with(store.join("events"))
            && unfinished_numbers
                .iter()
                .any(|u| p.file_name().is_some_and(|n| n == u.as_str()))
    });
    let rows_after = table_rows(&store, "events").len();
    if events_part_removed {
        assert!(rows_after < rows_before, "{rows_after} of {rows_before}");
    } else {
        assert_eq!(rows_after, rows_before);
    }
    let max_before = parts
        .iter()
        .map(|(p, _)| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.strip_prefix("part-")
                .unwrap()
                .strip_suffix(".parquet")
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .max()
        .unwrap();
    let new: Vec<&PathBuf> = after.iter().filter(|p| !before.contains(p)).collect();
    assert!(!new.is_empty());
    for p in new {
        let n = p.file_name().unwrap().to_str().unwrap();
        let n: u64 = n
            .strip_prefix("part-")
            .unwrap()
            .strip_suffix(".parquet")
            .unwrap()
            .parse()
            .unwrap();
        assert!(n > max_before, "new part {n} after {max_before}");
    }
}

#[test]
fn recover_of_a_store_accounts_for_its_unfinished_parts_unless_a_receiver_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let part = store.join("events/host=10.0.0.7/date=2026-11-27/hour=14");
    std::fs::create_dir_all(&part).unwrap();
    // What a killed receiver leaves: a temp without its footer.
    std::fs::write(part.join(".part-5.parquet.tmp"), b"PAR1 and no footer").unwrap();
    let recover = || {
        Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .arg("recover")
            .arg(&store)
            .output()
            .unwrap()
    };
    // A receiver holds the store: recover leaves it alone.
    let (_, mut child) = recv_store(&store, &["--duration", "30"]);
    let o = recover();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("another process writes the store"), "{err}");
    child.kill().unwrap();
    child.wait().unwrap();
    // The receiver accounted for the temp when it started; a new one:
    std::fs::write(part.join(".part-9.parquet.tmp"), b"PAR1").unwrap();
    let o = recover();
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("1 unfinished part files accounted for"),
        "{stdout}"
    );
    let unfinished: Vec<_> = table_rows(&store, "losses")
        .into_iter()
        .filter(|r| r["kind"] == "unfinished")
        .collect();
    assert_eq!(
        unfinished.len(),
        2,
        "part 5 at the receiver's start, part 9 now"
    );
    assert!(unfinished
        .iter()
        .all(|r| r["host"] == "10.0.0.7" && r["count"] == 0));
    let runs: Vec<&str> = unfinished
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert!(
        runs.contains(&"unfinished/part-5") && runs.contains(&"unfinished/part-9"),
        "{runs:?}"
    );
    // Its mark went to the temp's partition, numbered past every part.
    assert!(
        part.join("part-10.parquet").exists(),
        "{:?}",
        all_files(&store)
    );
    assert!(all_files(&store)
        .iter()
        .all(|p| p.extension().is_some_and(|x| x == "parquet")));
}

#[test]
fn bad_store_arguments_are_refused_before_listening() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .arg("recv")
            .args(["--listen", "127.0.0.1:1"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8(o.stderr).unwrap())
    };
    let out = dir.path().join("x.qtr");
    let store = dir.path().join("store");
    let (code, err) = run(&["--out", out.to_str().unwrap(), "--roll", "1s"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--roll and --keep apply to --store DIR"),
        "{err}"
    );
    let (code, err) = run(&["--store", store.to_str().unwrap(), "--roll", "5parsecs"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "--roll 5parsecs: give a size (64MiB, 1GB, 500000 bytes) or a time (60s, 10m, 12h, 7d)"
        ),
        "{err}"
    );
    let (code, err) = run(&["--store", store.to_str().unwrap(), "--keep", "-3d"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = run(&[
        "--store",
        store.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!store.exists() && !out.exists(), "nothing written");
}

/// The losses rows of `rows` summed per kind.
fn losses_by_kind(rows: &[serde_json::Map<String, Value>]) -> BTreeMap<String, u64> {
    let mut by = BTreeMap::new();
    for r in rows {
        *by.entry(r["kind"].as_str().unwrap().to_string())
            .or_insert(0) += r["count"].as_u64().unwrap();
    }
    by
}

#[test]
fn a_deleted_store_folder_is_made_again_with_what_it_could_not_store_as_losses() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // One part set open for the whole run (the default roll: 60 s).
    let (listen, child) = recv_store(&store, &["--duration", "3"]);
    let n = 5_000;
    let report = send_user3(listen, n);
    let c = &report.queues[0].counters;
    let logged = c.accepted + c.dropped;
    assert_eq!(logged, n);
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_dir_all(&store).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit status 3, the exact count said and written.
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "; {n} events and losses it took are not in its closed parts (written as losses of kind unstored)"
        )),
        "{stderr}"
    );
    // The folder is back with the losses: rows + losses = logged.
    let events = table_rows(&store, "events");
    let losses = table_rows(&store, "losses");
    let streams = table_rows(&store, "streams");
    assert_eq!(events.len(), 0);
    assert_eq!(
        losses_by_kind(&losses),
        BTreeMap::from([("unstored".to_string(), n)])
    );
    assert_eq!(streams.len(), 1, "{streams:?}");
    assert_eq!(
        (
            &streams[0]["verdict"],
            &streams[0]["logged"],
            &streams[0]["lost"]
        ),
        (
            &Value::from("closed"),
            &Value::from(logged),
            &Value::from(n)
        )
    );
}

#[test]
fn on_a_full_disk_the_receiver_says_exactly_what_it_could_not_store() {
    if !crate::common::tmpfs::is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(_fs) = crate::common::tmpfs::Tmpfs::mount(dir.path(), "600k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let store = dir.path().join("store");
    let (listen, child) = recv_store(&store, &["--roll", "30KiB", "--duration", "20"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream_until(listen, stop.clone());
    let out = child.wait_with_output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    // "received N events from 1 sender(s)", "…, L lost in transit …":
    // the receiver's account of what it took.
    let number_before = |text: &str, tail: &str| -> u64 {
        let at = text
            .find(tail)
            .unwrap_or_else(|| panic!("{tail:?} in {text}"));
        let digits: String = text[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.chars().rev().collect::<String>().parse().unwrap()
    };
    let received = number_before(&stdout, " events from 1 sender(s)");
    let transit = number_before(&stdout, " lost in transit");
    let dropped = number_before(&stdout, " dropped by the sender");
    let unstored = number_before(
        &stderr,
        " events and losses it took are not in its closed parts",
    );
    // What the closed parts hold plus what it says it could not store is
    // everything it took, exactly.
    let events = table_rows(&store, "events").len() as u64;
    let lost: u64 = losses_by_kind(&table_rows(&store, "losses"))
        .iter()
        .filter(|(k, _)| k.as_str() != "unstored")
        .map(|(_, n)| n)
        .sum();
    eprintln!("full disk: {events} rows + {lost} losses + {unstored} not stored; received {received}, {transit} lost in transit, {dropped} dropped");
    assert!(unstored > 0, "{stderr}");
    assert_eq!(
        events + lost + unstored,
        received + transit + dropped,
        "{stdout}{stderr}"
    );
}

#[test]
fn a_receiver_stopped_and_started_again_while_its_sender_streams_loses_only_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (listen, child) = recv_store(&store, &["--roll", "30KiB", "--duration", "2"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = stream_until(listen, stop.clone());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The stream it left under way is listed, already marked unclosed.
    let listed = std::fs::read_to_string(store.join("open-streams")).unwrap();
    assert!(
        listed.starts_with("qtrace open streams 1\nunclosed\t"),
        "{listed}"
    );
    assert_eq!(listed.lines().count(), 2, "{listed}");
    let child = recv_store_at(listen, &store, &["--duration", "3"]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let logged = sender.join().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Marked once, by the receiver that stopped: the next one says nothing.
    assert!(
        !stderr.contains("was under way when an earlier receiver stopped"),
        "{stderr}"
    );
    let events = table_rows(&store, "events");
    let losses = table_rows(&store, "losses");
    let lost = sum(&losses, "count");
    assert_eq!(events.len() as u64 + lost, logged, "{stderr}{losses:?}");
    assert_eq!(
        losses.iter().filter(|r| r["kind"] == "unclosed").count(),
        1,
        "{losses:?}"
    );
    assert!(!store.join("open-streams").exists());
}
