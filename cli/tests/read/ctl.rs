//! `qtrace ctl` against an endpoint this test process serves (the same
//! user): the status as text and as JSON with exact counters, a request that
//! changes what is recorded, and the errors a user meets.

use std::process::Command;
use std::sync::Arc;

use qtrace::classes::user;
use qtrace::clock::{Clock, ManualClock};
use qtrace::control::Endpoint;
use qtrace::queues::{Fixed, FixedParams};
use qtrace::storage::RingStorage;
use qtrace::{Config, Tracer};

fn ctl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("ctl")
        .args(args)
        .output()
        .expect("run qtrace ctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// An active tracer on a manual clock at 0 (its output in a temporary
/// directory, kept alive by the first value) with the user class routed to
/// a fixed in-memory queue of `capacity` events.
fn active_tracer(capacity: usize) -> (tempfile::TempDir, Arc<Tracer>) {
    let out = tempfile::tempdir().unwrap();
    let time = ManualClock::new(0);
    let t = Arc::new(Tracer::with_config(
        Config::default()
            .with_clock(Clock::manual(&time))
            .with_output_dir(out.path()),
    ));
    let q = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(capacity)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    (out, t)
}

#[test]
fn status_as_text_and_json_and_stop_through_the_command() {
    let (_out, t) = active_tracer(4);
    let e = Endpoint::bind(Arc::clone(&t), "ctl-cli").unwrap();
    let path = e.path().to_str().unwrap().to_string();
    for i in 0..6 {
        t.log_event(user::USER0, [i, 0]);
    }

    let (code, text, err) = ctl(&[&path, "status"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = text.lines().collect();
    let pid = std::process::id();
    assert!(
        lines[0].starts_with(&format!(
            "ctl-cli (pid {pid}): active, recording, not suspended, up "
        )),
        "{text}"
    );
    assert_eq!(
        lines[1],
        "endpoint: 1 connections, 0 refused, 1 requests, 0 errors"
    );
    let row: Vec<&str> = lines[3].split_whitespace().collect();
    // queue, type, recording, accepted, dropped, overwritten, delivered, queued, io errors
    assert_eq!(
        row,
        ["0", "fixed", "yes", "4", "2", "0", "0", "4", "0"],
        "{text}"
    );

    let (code, json, err) = ctl(&[&path, "status", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        (&v["queues"][0]["accepted"], &v["queues"][0]["dropped"]),
        (&4.into(), &2.into())
    );
    assert_eq!(v["endpoint"]["connections"], 2);

    // Stopped through the command: events logged after it are not attempts.
    let (code, _, err) = ctl(&[&path, "stop"]);
    assert_eq!(code, 0, "{err}");
    t.log_event(user::USER0, [9, 0]);
    let (_, json, _) = ctl(&[&path, "status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["recording"], false);
    assert_eq!(
        (&v["queues"][0]["accepted"], &v["queues"][0]["dropped"]),
        (&4.into(), &2.into())
    );

    // What a user gets wrong: exit 2 with what to do; a refusal is exit 1.
    let (code, _, err) = ctl(&[&path, "frobnicate"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown request") && err.contains("qtrace ctl --help"),
        "{err}"
    );
    let (code, _, err) = ctl(&["no-such-endpoint-name", "status"]);
    assert_eq!(code, 2);
    assert!(err.contains("qtrace ctl list"), "{err}");
    let (code, _, err) = ctl(&[&path, "rotate", "7"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("qtrace: "), "{err}");
    drop(e);
}

/// Every request word of `qtrace ctl` through the command, against a
/// circular queue: each changes what the snapshot (taken through the
/// command too, by a relative path) shows, exactly from that point; a
/// queue that is not a number is exit 2 and changes nothing.
#[test]
fn every_request_through_the_command_changes_what_the_trace_shows() {
    use qtrace::queues::{Circular, CircularParams};
    let out = tempfile::tempdir().unwrap();
    let t = Arc::new(Tracer::with_config(
        Config::default().with_output_dir(out.path()),
    ));
    let q = t
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(64)
                .with_shards(0)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let e = Endpoint::bind(Arc::clone(&t), "ctl-words").unwrap();
    let path = e.path().to_str().unwrap().to_string();
    let log = |a: u64| {
        t.log_event(user::USER0, [a, 0]);
        t.log_event(user::USER1, [a, 0]);
    };
    let ok = |words: &[&str]| {
        let mut args = vec![path.as_str()];
        args.extend_from_slice(words);
        let (code, text, err) = ctl(&args);
        assert_eq!((code, err.as_str()), (0, ""), "{words:?}");
        text
    };
    log(0);
    ok(&["disable", "event", "user1"]);
    log(1);
    ok(&["enable", "event", "user:user1"]);
    log(2);
    ok(&["disable", "class", "user"]);
    log(3);
    ok(&["enable", "class", "user"]);
    log(4);
    ok(&["suspend"]);
    log(5);
    ok(&["resume"]);
    log(6);
    ok(&["stop", "0"]);
    log(7);
    // Not a queue: refused before anything is sent (it once meant every
    // queue), and so is a word too many.
    for bad in [
        &["start", "first"][..],
        &["start", "0", "1"],
        &["snapshot", "a.qtr", "x"],
    ] {
        let mut args = vec![path.as_str()];
        args.extend_from_slice(bad);
        let (code, _, err) = ctl(&args);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(err.contains("a QUEUE is a number"), "{err}");
    }
    log(8);
    ok(&["start", "0"]);
    log(9);
    ok(&["stop"]);
    log(10);
    ok(&["start"]);
    log(11);
    // The snapshot by a relative path: the command makes it absolute
    // against its own working directory.
    let dir = tempfile::tempdir().unwrap();
    let run = |words: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .arg("ctl")
            .arg(&path)
            .args(words)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let snap = run(&["snapshot", "now.qtr", &q.0.to_string()]);
    assert!(snap.status.success(), "{snap:?}");
    let (u0, u1) = (user::USER0, user::USER1);
    let want = [
        (u0, 0),
        (u1, 0),
        (u0, 1),
        (u0, 2),
        (u1, 2),
        (u0, 4),
        (u1, 4),
        (u0, 6),
        (u1, 6),
        (u0, 9),
        (u1, 9),
        (u0, 11),
        (u1, 11),
    ];
    assert_eq!(
        String::from_utf8(snap.stdout).unwrap(),
        format!("snapshot written: {} records\n", want.len())
    );
    let kept: Vec<_> = qtrace::reader::TraceReader::open(dir.path().join("now.qtr"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.id, e.args[0]))
        .collect();
    assert_eq!(kept, want);
    // A queue that is not there: the endpoint's refusal, exit 1.
    let none = run(&["snapshot", "none.qtr", "9"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr).starts_with("qtrace: no_such_queue: no queue 9"),
        "{none:?}"
    );
    drop(e);
}

/// `qtrace live --ctl PATH` with standard output a pipe: a frame of text
/// per `--every`, each from a status of its own (the endpoint's counters
/// count them exactly), the figures changing with what the program logs,
/// and the view ending by itself when the endpoint goes away.
#[test]
fn live_ctl_prints_a_status_per_refresh_until_the_endpoint_goes() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let (_out, t) = active_tracer(100);
    let e = Endpoint::bind(Arc::clone(&t), "live-cli").unwrap();
    for i in 0..6 {
        t.log_event(user::USER0, [i, 0]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["live", "--ctl"])
        .arg(e.path())
        // A cap, so that a test gone wrong still ends.
        .args(["--every", "0.5", "--duration", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut frame = || -> Vec<String> {
        let mut f = Vec::new();
        for l in lines.by_ref() {
            let l = l.unwrap();
            if l.is_empty() {
                return f;
            }
            f.push(l);
        }
        f
    };
    let pid = std::process::id();
    let head = format!("live-cli (pid {pid}): active, recording, not suspended, up ");
    let columns = "queue  type       recording      accepted       dropped   overwritten     delivered    queued  io errors    accepted/s     dropped/s";

    let f1 = frame();
    assert_eq!(f1.len(), 4, "{f1:?}");
    assert!(f1[0].starts_with(&head), "{f1:?}");
    assert_eq!(
        f1[1],
        "endpoint: 1 connections, 0 refused, 1 requests, 0 errors"
    );
    assert_eq!(f1[2], columns);
    let row = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        row(&f1[3]),
        ["0", "fixed", "yes", "6", "0", "0", "0", "6", "0", "-", "-"]
    );
    // Logged now, half a second before the next refresh asks.
    for i in 0..10 {
        t.log_event(user::USER0, [i, 0]);
    }
    let f2 = frame();
    assert!(f2[0].starts_with(&head), "{f2:?}");
    assert_eq!(
        f2[1],
        "endpoint: 2 connections, 0 refused, 2 requests, 0 errors"
    );
    let r = row(&f2[3]);
    assert_eq!(
        r[..9],
        ["0", "fixed", "yes", "16", "0", "0", "0", "16", "0"]
    );
    // 10 events over about 0.5 s of the endpoint's clock.
    let per_s: u64 = r[9].strip_suffix("/s").unwrap().parse().unwrap();
    assert!((5..=25).contains(&per_s), "{r:?}");
    assert_eq!(r[10], "0/s");
    let f3 = frame();
    assert_eq!(
        f3[1],
        "endpoint: 3 connections, 0 refused, 3 requests, 0 errors"
    );
    assert_eq!(row(&f3[3])[9..], ["0/s", "0/s"]);

    let path = e.path().display().to_string();
    drop(e);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        err.starts_with(&format!(
            "qtrace: {path}: the endpoint went away (cannot connect: "
        )),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with("); the last status is above"),
        "{err}"
    );
}

/// `qtrace live --ctl` with no such endpoint: exit 2 and what to do; with
/// a socket nobody serves: exit 1.
#[test]
fn live_ctl_without_an_endpoint() {
    let run = |target: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(["live", "--ctl", target])
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, err) = run("no-such-endpoint-name");
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "qtrace: no control endpoint \"no-such-endpoint-name\" in {} (qtrace ctl list shows them)\n",
            Endpoint::dir().display()
        )
    );
    let dir = tempfile::tempdir().unwrap();
    let dead = dir.path().join("1.dead.sock");
    let (code, err) = run(dead.to_str().unwrap());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with(&format!("qtrace: {}: cannot connect: ", dead.display())),
        "{err}"
    );
}

/// An endpoint that allows a group (here this process's own group, which
/// any user may give): `qtrace ctl list` lists it with the others, and its
/// name finds it.
#[test]
fn ctl_list_and_names_reach_group_endpoints() {
    use std::os::unix::fs::MetadataExt;
    let out = tempfile::tempdir().unwrap();
    let t = Arc::new(Tracer::with_config(
        Config::default().with_output_dir(out.path()),
    ));
    // This process's group: the one its new files get.
    let gid = std::fs::metadata(out.path()).unwrap().gid();
    let name = format!("grp-{}", std::process::id());
    let e = Endpoint::bind_with_group(Arc::clone(&t), &name, gid).unwrap();
    assert!(e.path().starts_with(Endpoint::group_dir(gid)));
    let (code, text, err) = ctl(&["list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.lines().any(|l| l == e.path().to_str().unwrap()),
        "{text}"
    );
    let (code, text, err) = ctl(&[&name, "status"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.starts_with(&format!(
            "{name} (pid {}): configuring, ",
            std::process::id()
        )),
        "{text}"
    );
    drop(e);
    let (code, _, err) = ctl(&[&name, "status"]);
    assert_eq!(code, 2, "{err}");
    // Empty now, unless another endpoint of this group is served.
    let _ = std::fs::remove_dir(Endpoint::group_dir(gid));
}
