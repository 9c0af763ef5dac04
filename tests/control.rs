//! The control endpoint (feature `control`) over a real Unix socket: each
//! request changes exactly what the trace shows, the status counters are
//! exact, a snapshot reads back complete, bad frames get error replies
//! (never a panic or a stuck endpoint), the file modes, and a peer of
//! another user refused (run as root: a child process as `nobody`).
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use qtrace::classes::user;
use qtrace::clock::{Clock, ManualClock};
use qtrace::control::{Endpoint, ErrorCode, Reply, Request};
use qtrace::queues::{Circular, CircularParams, Fixed, FixedParams, Online, OnlineParams};
use qtrace::storage::RingStorage;
use qtrace::{Config, ConfigError, Tracer};

/// Every test's endpoints live under one `XDG_RUNTIME_DIR`, set once
/// before any test touches the environment.
fn runtime() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        std::env::set_var("XDG_RUNTIME_DIR", d.path());
        d
    })
    .path()
}

/// One test at a time: `another_user_is_refused` opens the directory's
/// mode for a moment, which a bind in another test would refuse.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    runtime();
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tracer on `time` with an output directory of its own (declared
/// first, so that it is removed after the tracer is dropped).
fn tracer(time: &ManualClock) -> (tempfile::TempDir, Arc<Tracer>) {
    let out = tempfile::tempdir().unwrap();
    let t = Arc::new(Tracer::with_config(
        Config::default()
            .with_clock(Clock::manual(time))
            .with_output_dir(out.path()),
    ));
    (out, t)
}

fn fixed(t: &Tracer, capacity: usize) -> qtrace::QueueHandle {
    let q = t
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(capacity)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    q
}

/// Sends raw bytes, reads one reply frame.
fn exchange(s: &mut UnixStream, bytes: &[u8]) -> Option<Reply> {
    s.write_all(bytes).ok()?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    Some(Reply::parse(&body).unwrap())
}

fn ask(e: &Endpoint, r: &Request) -> Reply {
    let mut s = UnixStream::connect(e.path()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    exchange(&mut s, &r.frame()).unwrap()
}

fn status(e: &Endpoint) -> serde_json::Value {
    match ask(e, &Request::Status) {
        Reply::Status(json) => serde_json::from_str(&json).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn kept(t: &Tracer, q: qtrace::QueueHandle) -> Vec<(u16, u64)> {
    t.queue(q)
        .unwrap()
        .as_fixed()
        .unwrap()
        .snapshot_events()
        .iter()
        .map(|e| (e.id.0, e.args[0]))
        .collect()
}

#[test]
fn status_counts_exactly() {
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let q = fixed(&t, 4);
    t.activate().unwrap();
    let e = Endpoint::bind(Arc::clone(&t), "status").unwrap();
    for i in 0..10 {
        t.log_event(user::USER0, [i, 0]);
    }
    let s = status(&e);
    assert_eq!(s["protocol"], 1);
    assert_eq!(s["pid"], std::process::id());
    assert_eq!(s["name"], "status");
    assert_eq!(s["phase"], "active");
    assert_eq!(s["suspended"], false);
    assert_eq!(s["recording"], true);
    assert_eq!(
        s["endpoint"],
        serde_json::json!({"connections": 1, "refused": 0, "requests": 1, "errors": 0})
    );
    let q0 = &s["queues"][0];
    assert_eq!(q0["queue"], q.0);
    assert_eq!(q0["type"], "fixed");
    assert_eq!(
        (
            &q0["accepted"],
            &q0["dropped"],
            &q0["overwritten"],
            &q0["delivered"],
            &q0["queued"]
        ),
        (&4.into(), &6.into(), &0.into(), &0.into(), &4.into())
    );
    assert_eq!(s["queues"].as_array().unwrap().len(), 1);
    // The second status counts the first.
    let s = status(&e);
    assert_eq!(s["endpoint"]["connections"], 2);
    assert_eq!(s["endpoint"]["requests"], 2);
    assert_eq!(
        (e.connections(), e.requests(), e.errors(), e.refused()),
        (2, 2, 0, 0)
    );
}

/// A filter's and a trigger's rows say what they did, exactly.
#[test]
fn status_has_the_filters_and_triggers_figures() {
    use qtrace::filters::{Filter, Scope, Trigger};
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let q = fixed(&t, 64);
    let f = t.filter_event(user::USER0, Filter::arg(0, 0..=4)).unwrap();
    let g = t
        .add_trigger(user::USER1, Trigger::stop(Scope::Queue(q)).after(3))
        .unwrap();
    t.activate().unwrap();
    let e = Endpoint::bind(Arc::clone(&t), "figures").unwrap();
    for i in 0..10 {
        t.log_event(user::USER0, [i, 0]);
    }
    for i in 0..4 {
        t.log_event(user::USER1, [i, 0]);
    }
    let s = status(&e);
    let row = |h: qtrace::QueueHandle| &s["queues"][h.0 as usize];
    assert_eq!(row(f)["type"], "filter");
    assert_eq!(
        row(f)["filter"],
        serde_json::json!({"passed": 5, "rejected": 5, "panicked": 0})
    );
    assert_eq!(row(g)["type"], "trigger");
    assert_eq!(
        row(g)["trigger"],
        serde_json::json!({"seen": 4, "fired": 2, "written": 0, "suppressed": 0,
            "failed": 0, "pending": false})
    );
    assert!(row(q).get("filter").is_none() && row(q).get("trigger").is_none());
}

#[test]
fn classes_and_events_switch_exactly_from_the_request_on() {
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let q = fixed(&t, 64);
    t.activate().unwrap();
    let e = Endpoint::bind(Arc::clone(&t), "switch").unwrap();
    let (u0, u1) = (user::USER0.0, user::USER1.0);
    let log = |a: u64| {
        t.log_event(user::USER0, [a, 0]);
        t.log_event(user::USER1, [a, 0]);
    };
    log(0);
    assert_eq!(ask(&e, &Request::DisableClass("user".into())), Reply::Done);
    log(1);
    assert_eq!(ask(&e, &Request::EnableClass("user".into())), Reply::Done);
    log(2);
    assert_eq!(ask(&e, &Request::DisableEvent("user1".into())), Reply::Done);
    log(3);
    assert_eq!(
        ask(&e, &Request::EnableEvent("user:user1".into())),
        Reply::Done
    );
    log(4);
    assert_eq!(ask(&e, &Request::Suspend), Reply::Done);
    log(5);
    assert_eq!(ask(&e, &Request::Resume), Reply::Done);
    log(6);
    assert_eq!(ask(&e, &Request::Stop(None)), Reply::Done);
    log(7);
    assert_eq!(status(&e)["recording"], false);
    assert_eq!(ask(&e, &Request::Start(None)), Reply::Done);
    log(8);
    assert_eq!(ask(&e, &Request::Stop(Some(q.0))), Reply::Done);
    log(9);
    assert_eq!(status(&e)["queues"][q.0 as usize]["recording"], false);
    assert_eq!(ask(&e, &Request::Start(Some(q.0))), Reply::Done);
    log(10);
    assert_eq!(
        kept(&t, q),
        [
            (u0, 0),
            (u1, 0),
            (u0, 2),
            (u1, 2),
            (u0, 3),
            (u0, 4),
            (u1, 4),
            (u0, 6),
            (u1, 6),
            (u0, 8),
            (u1, 8),
            (u0, 10),
            (u1, 10),
        ]
    );
    // Names and queues that do not exist, and a gate named as a queue.
    let code = |r: Reply| match r {
        Reply::Error(c, _) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        code(ask(&e, &Request::DisableClass("nope".into()))),
        ErrorCode::NoSuchName
    );
    assert_eq!(
        code(ask(&e, &Request::EnableEvent("nope".into()))),
        ErrorCode::NoSuchName
    );
    assert_eq!(
        code(ask(&e, &Request::Stop(Some(200)))),
        ErrorCode::NoSuchQueue
    );
    assert_eq!(
        code(ask(&e, &Request::Stop(Some(q.0 + 1)))),
        ErrorCode::WrongQueueType
    );
    assert_eq!(
        code(ask(&e, &Request::Rotate(q.0))),
        ErrorCode::WrongQueueType
    );
    assert_eq!(
        code(ask(
            &e,
            &Request::Snapshot {
                queue: Some(q.0),
                path: "/tmp/x.qtr".into()
            }
        )),
        ErrorCode::WrongQueueType
    );
    t.shutdown().unwrap();
    assert_eq!(code(ask(&e, &Request::Suspend)), ErrorCode::NotRunning);
}

#[test]
fn a_snapshot_reads_back_complete_with_the_exact_events() {
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let q = t
        .create_queue::<Circular>(
            CircularParams::default()
                .with_capacity(256)
                .with_shards(0)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let e = Endpoint::bind(Arc::clone(&t), "snap").unwrap();
    for i in 0..300u64 {
        time.set(1000 + i);
        t.log_event(user::USER2, [i, 0]);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("now.qtr");
    let reply = ask(
        &e,
        &Request::Snapshot {
            queue: None,
            path: path.to_str().unwrap().into(),
        },
    );
    // 256 events and one hoops record for the 44 overwritten.
    assert_eq!(reply, Reply::Snapshot(257));
    let mut reader = qtrace::reader::TraceReader::open(&path).unwrap();
    let events: Vec<qtrace::Event> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(events[0].id, qtrace::classes::tracer::HOOPS);
    assert_eq!(events[0].args[0], 44);
    let args: Vec<u64> = events[1..].iter().map(|e| e.args[0]).collect();
    assert_eq!(args, (44..300).collect::<Vec<_>>());
    assert!(matches!(
        reader.completeness(),
        Some(qtrace::reader::Completeness::Complete(_))
    ));
    // A relative path is refused: the traced process would resolve it.
    match ask(
        &e,
        &Request::Snapshot {
            queue: None,
            path: "rel.qtr".into(),
        },
    ) {
        Reply::Error(ErrorCode::BadFrame, m) => assert!(m.contains("absolute"), "{m}"),
        other => panic!("{other:?}"),
    }
    // A path under a regular file: an I/O failure, said.
    let file = dir.path().join("file");
    std::fs::write(&file, b"").unwrap();
    let under = file.join("x.qtr");
    match ask(
        &e,
        &Request::Snapshot {
            queue: Some(q.0),
            path: under.to_str().unwrap().into(),
        },
    ) {
        Reply::Error(ErrorCode::Failed, m) => assert!(m.contains(under.to_str().unwrap()), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Snapshots through the endpoint while a producer logs as fast as it can
/// into the ring (one shared ring): each file reads complete, holds as many
/// records as the reply says, and its events are the producer's in order,
/// every one missing before or between them counted by a hoops record of
/// exactly that size; with one shared ring and with per-thread shards (a
/// small shard its producer laps during every copy comes out with no event,
/// and then a hoops record for all of them: it did, before, with none).
#[test]
fn a_snapshot_under_load_reads_complete_every_gap_counted() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let _serial = serial();
    for shards in [0, 4] {
        let time = ManualClock::new(0);
        let (_out, t) = tracer(&time);
        let q = t
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(4096)
                    .with_shards(shards)
                    .with_ring(RingStorage::Memory),
            )
            .unwrap();
        t.assign_class(user::CLASS, q).unwrap();
        t.activate().unwrap();
        let e = Endpoint::bind(Arc::clone(&t), "load").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let (t, stop) = (&t, &stop);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    t.log_event(user::USER0, [i, 0]);
                    i += 1;
                }
            });
            // The producer stops when this scope ends, a failed assertion's
            // unwinding included (else the scope would wait for it forever).
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _stop = Stop(stop);
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while t.counters(q).unwrap().accepted < 3 * 4096 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the producer never ran"
                );
                std::thread::yield_now();
            }
            for k in 0..5 {
                let path = dir.path().join(format!("load-{shards}-{k}.qtr"));
                let reply = ask(
                    &e,
                    &Request::Snapshot {
                        queue: None,
                        path: path.to_str().unwrap().into(),
                    },
                );
                let Reply::Snapshot(n) = reply else {
                    panic!("{reply:?}")
                };
                let mut reader = qtrace::reader::TraceReader::open(&path).unwrap();
                let records: Vec<qtrace::Event> =
                    reader.by_ref().collect::<Result<_, _>>().unwrap();
                assert!(
                    matches!(
                        reader.completeness(),
                        Some(qtrace::reader::Completeness::Complete(_))
                    ),
                    "{}: {:?}",
                    path.display(),
                    reader.completeness()
                );
                assert_eq!(records.len() as u64, n, "{}", path.display());
                let (mut next, mut events) = (0u64, 0);
                for r in &records {
                    if r.id == qtrace::classes::tracer::HOOPS {
                        next += r.args[0];
                    } else {
                        assert_eq!((r.id, r.args[0]), (user::USER0, next), "{}", path.display());
                        next += 1;
                        events += 1;
                    }
                }
                // A shared ring's copy is never lapped whole; a 1,024-record
                // shard's can be, every time.
                assert!(
                    next >= 3 * 4096 && (events > 0 || shards > 0),
                    "{}: {next} {events}",
                    path.display()
                );
            }
        });
    }
}

/// A ctl snapshot of a queue whose events are in one shard (written as
/// runs straight from the shard's copy) is in the queue's form: compact
/// chunks by default, 32-byte records with `with_compact(false)` (the
/// bytes pinned); the same records, close-run counts and hoops loss.
#[test]
fn a_snapshot_of_shards_is_written_in_the_queues_form() {
    let _serial = serial();
    for compact in [true, false] {
        let time = ManualClock::new(0);
        let (_out, t) = tracer(&time);
        let q = t
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(512)
                    .with_shards(4)
                    .with_ring(RingStorage::Memory)
                    .with_compact(compact),
            )
            .unwrap();
        t.assign_class(user::CLASS, q).unwrap();
        t.activate().unwrap();
        let e = Endpoint::bind(Arc::clone(&t), "snap-shards").unwrap();
        for i in 0..2000u64 {
            time.set(5_000 + 3 * i);
            t.log_event(user::USER2, [i, u64::MAX - i]);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("now.qtr");
        let reply = ask(
            &e,
            &Request::Snapshot {
                queue: Some(q.0),
                path: path.to_str().unwrap().into(),
            },
        );
        // 512 events and one hoops record for the 1488 overwritten.
        assert_eq!(reply, Reply::Snapshot(513));
        let mut reader = qtrace::reader::TraceReader::open(&path).unwrap();
        assert_eq!(reader.header().is_compact(), compact);
        let events: Vec<qtrace::Event> = reader.by_ref().collect::<Result<_, _>>().unwrap();
        let hoops = qtrace::Event::new(
            5_000 + 3 * 1488,
            qtrace::classes::tracer::HOOPS,
            u32::MAX,
            [1488, q.0 as u64],
        );
        assert_eq!(events[0], hoops);
        for (k, ev) in events[1..].iter().enumerate() {
            let i = 1488 + k as u64;
            assert_eq!(
                (ev.time, ev.id, ev.args),
                (5_000 + 3 * i, user::USER2, [i, u64::MAX - i])
            );
        }
        assert_eq!(events.len(), 513);
        let Some(qtrace::reader::Completeness::Complete(close)) = reader.completeness() else {
            panic!("{:?}", reader.completeness());
        };
        assert_eq!((close.records, close.lost), (513, 1488));
        assert_eq!((close.totals.accepted, close.totals.delivered), (2000, 0));
        let len = std::fs::metadata(&path).unwrap().len();
        let body = len - reader.header_len();
        if compact {
            // `u64::MAX - i`: a 10-byte varint each; still under half.
            assert!(body < 513 * 16, "{body} bytes");
        } else {
            assert_eq!(body, (513 + 3) * 32);
        }
        drop(e);
        t.shutdown().unwrap();
    }
}

#[test]
fn rotate_closes_the_open_chunk() {
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let dir = tempfile::tempdir().unwrap();
    let q = t
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(1024)
                .with_file(dir.path().join("on.qtr"))
                .with_rotation(Some(1 << 30), None),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
    let e = Endpoint::bind(Arc::clone(&t), "rotate").unwrap();
    t.log_event(user::USER0, [1, 0]);
    assert_eq!(ask(&e, &Request::Rotate(q.0)), Reply::Done);
    // The task closes the chunk at its next round (woken by the request).
    let mut files = 0;
    for _ in 0..400 {
        files = status(&e)["queues"][0]["files"].as_array().unwrap().len();
        if files == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(files, 2);
    t.log_event(user::USER0, [2, 0]);
    let report = t.shutdown().unwrap();
    let read = |p: &Path| -> Vec<u64> {
        qtrace::reader::TraceReader::open(p)
            .unwrap()
            .map(|e| e.unwrap().args[0])
            .collect()
    };
    let chunks = &report.queues[0].status.files;
    assert_eq!(chunks.len(), 2);
    assert_eq!((read(&chunks[0]), read(&chunks[1])), (vec![1], vec![2]));
}

#[test]
fn bad_frames_get_errors_and_the_endpoint_goes_on() {
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    fixed(&t, 4);
    let e = Endpoint::bind(Arc::clone(&t), "bad").unwrap();
    let mut s = UnixStream::connect(e.path()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let code = |r: Option<Reply>| match r {
        Some(Reply::Error(c, _)) => c,
        other => panic!("{other:?}"),
    };
    // Errors inside a well-framed body: the connection stays open.
    assert_eq!(
        code(exchange(&mut s, b"\x00\x00\x00\x02\x02\x01")),
        ErrorCode::UnsupportedVersion
    );
    assert_eq!(
        code(exchange(&mut s, b"\x00\x00\x00\x02\x01\x7f")),
        ErrorCode::UnknownRequest
    );
    assert_eq!(
        code(exchange(&mut s, b"\x00\x00\x00\x01\x01")),
        ErrorCode::BadFrame
    );
    assert_eq!(
        code(exchange(&mut s, b"\x00\x00\x00\x03\x01\x01\x00")),
        ErrorCode::BadFrame
    );
    assert_eq!(
        code(exchange(&mut s, b"\x00\x00\x00\x06\x01\x07\x00\x09ab")),
        ErrorCode::BadFrame
    );
    assert!(matches!(
        exchange(&mut s, &Request::Status.frame()),
        Some(Reply::Status(_))
    ));
    // An oversized length: an error reply, then the connection is closed.
    assert_eq!(
        code(exchange(&mut s, &5000u32.to_be_bytes())),
        ErrorCode::TooLarge
    );
    assert_eq!(exchange(&mut s, &Request::Status.frame()), None);
    let mut s = UnixStream::connect(e.path()).unwrap();
    assert_eq!(
        code(exchange(&mut s, &0u32.to_be_bytes())),
        ErrorCode::TooLarge
    );
    // Arbitrary frames (a fixed pseudo-random sequence) never stop it.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 1 + (x % 24) as usize;
        let mut frame = (len as u32).to_be_bytes().to_vec();
        frame.extend((0..len).map(|i| (x >> (i % 8 * 8)) as u8 ^ i as u8));
        frame[4] = 1; // mostly version 1, so the request codes are reached
        let mut s = UnixStream::connect(e.path()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        assert!(exchange(&mut s, &frame).is_some());
    }
    // A peer that sends half a frame and goes away.
    let mut s = UnixStream::connect(e.path()).unwrap();
    s.write_all(b"\x00\x00\x00\x09\x01").unwrap();
    drop(s);
    assert!(matches!(ask(&e, &Request::Status), Reply::Status(_)));
    // The 7 errors above, and those of the arbitrary frames.
    assert!(e.errors() >= 7, "{}", e.errors());
}

#[test]
fn modes_names_and_a_second_bind() {
    let _serial = serial();
    let dir = runtime().join("qtrace");
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let e = Endpoint::bind(Arc::clone(&t), "modes").unwrap();
    assert_eq!(Endpoint::dir(), dir);
    assert_eq!(
        e.path(),
        dir.join(format!("{}.modes.sock", std::process::id()))
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(e.path()), 0o600);
    match Endpoint::bind(Arc::clone(&t), "modes") {
        Err(err @ ConfigError::ControlEndpoint { .. }) => {
            let m = err.to_string();
            assert!(
                m.starts_with("qtrace::control::Endpoint::bind cannot bind"),
                "{m}"
            );
            assert!(m.contains("already serves"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    for bad in ["", "a/b", "x y", &"n".repeat(33)] {
        assert!(matches!(
            Endpoint::bind(Arc::clone(&t), bad),
            Err(ConfigError::ControlEndpoint { .. })
        ));
    }
    let path: PathBuf = e.path().to_path_buf();
    drop(e);
    assert!(
        !path.exists(),
        "the socket is removed when the endpoint is dropped"
    );
    // The name is free again.
    drop(Endpoint::bind(Arc::clone(&t), "modes").unwrap());
}

#[test]
fn a_directory_open_to_others_or_not_a_directory_is_refused() {
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    drop(Endpoint::bind(Arc::clone(&t), "dirs").unwrap());
    let dir = Endpoint::dir();
    let refusal = |t: &Arc<Tracer>| match Endpoint::bind(Arc::clone(t), "dirs") {
        Err(err @ ConfigError::ControlEndpoint { .. }) => err.to_string(),
        other => panic!("{other:?}"),
    };
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = refusal(&t);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(m.contains(&dir.display().to_string()), "{m}");
    assert!(
        m.contains("the directory's mode is 755: make it 700 (chmod 700)"),
        "{m}"
    );
    // A symbolic link in its place, even to a safe directory of ours.
    let moved = runtime().join("qtrace-moved");
    std::fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &dir).unwrap();
    let m = refusal(&t);
    std::fs::remove_file(&dir).unwrap();
    std::fs::rename(&moved, &dir).unwrap();
    assert!(
        m.contains("it is not a directory (a symbolic link or a file)"),
        "{m}"
    );
    drop(Endpoint::bind(Arc::clone(&t), "dirs").unwrap());
}

/// The child half of `another_user_is_refused`: connects as whoever it
/// runs as and prints the reply's bytes (does nothing in a normal run).
#[test]
fn child_connects_and_prints_the_reply() {
    let Some(path) = std::env::var_os("QTRACE_CTL_TEST_CHILD") else {
        return;
    };
    let mut s = match UnixStream::connect(path) {
        Ok(s) => s,
        Err(e) => {
            println!("REFUSED-BY-FS {:?}", e.kind());
            return;
        }
    };
    // The endpoint may refuse (reply, close) before the request is
    // written: a broken pipe here is that, and the reply is still there
    // to read.
    let _ = s.write_all(&Request::Status.frame());
    // One reply frame (a served connection stays open for the next
    // request; a refused one is closed after its reply).
    let mut reply = vec![0u8; 4];
    if s.read_exact(&mut reply).is_ok() {
        let len = u32::from_be_bytes([reply[0], reply[1], reply[2], reply[3]]) as usize;
        reply.resize(4 + len, 0);
        let _ = s.read_exact(&mut reply[4..]);
    }
    println!(
        "REPLY {}",
        reply.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
}

#[test]
fn another_user_is_refused() {
    if !root_or_skip("another_user_is_refused", "to run a child as nobody") {
        return;
    }
    let _serial = serial();
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let e = Endpoint::bind(Arc::clone(&t), "stranger").unwrap();
    // Open the file modes up, so that only SO_PEERCRED stands between
    // nobody and the tracer (the 0700 directory would stop it first).
    let reply = {
        let dir = Endpoint::dir();
        let _open = OpenModes::set(&[(runtime(), 0o711), (&dir, 0o711), (e.path(), 0o666)]);
        connect_as_nobody(e.path(), 65534, &[])
    };
    match reply.unwrap() {
        Reply::Error(ErrorCode::PermissionDenied, m) => assert!(m.contains("SO_PEERCRED"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!((e.refused(), e.connections(), e.requests()), (1, 0, 0));
}

/// Sends `r` to the socket at `path`, reads one reply.
fn ask_at(path: &Path, r: &Request) -> Reply {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    exchange(&mut s, &r.frame()).unwrap()
}

/// `Config::with_control`: `global::install` binds the endpoint, and a
/// request through the socket reaches the installed tracer. (The only
/// `global::install` of this test binary; the failing one runs in a child.)
#[test]
fn config_with_control_opens_the_endpoint_at_install() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let config = Config::default()
        .with_output_dir(out.path())
        .with_control("global");
    assert_eq!(config.control(), Some("global"));
    let t = Tracer::with_config(config);
    let q = fixed(&t, 16);
    t.activate().unwrap();
    let path = Endpoint::dir().join(format!("{}.global.sock", std::process::id()));
    assert!(!path.exists(), "no endpoint before install");
    let t = qtrace::global::install(t).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600);
    qtrace::log_event(user::USER0, [1, 0]);
    assert_eq!(ask_at(&path, &Request::Suspend), Reply::Done);
    assert!(t.is_suspended());
    qtrace::log_event(user::USER0, [2, 0]); // suspended: not recorded
    assert_eq!(ask_at(&path, &Request::Resume), Reply::Done);
    qtrace::log_event(user::USER0, [3, 0]);
    assert_eq!(kept(t, q), vec![(user::USER0.0, 1), (user::USER0.0, 3)]);
    let s = match ask_at(&path, &Request::Status) {
        Reply::Status(json) => serde_json::from_str::<serde_json::Value>(&json).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(s["name"], "global");
    assert_eq!(s["pid"], std::process::id());
    assert_eq!(s["queues"][0]["accepted"], 2);
    assert_eq!(
        s["endpoint"],
        serde_json::json!({"connections": 3, "refused": 0, "requests": 3, "errors": 0})
    );
}

/// The child half of `config_with_control_that_cannot_bind_is_an_error`:
/// installs a tracer with `Config::with_control` under the
/// `XDG_RUNTIME_DIR` it is given, prints what `install` and `get` say
/// (does nothing in a normal run).
#[test]
fn child_installs_with_control() {
    let Some(name) = std::env::var_os("QTRACE_CTL_TEST_INSTALL") else {
        return;
    };
    let mut config = Config::default().with_control(name.to_string_lossy());
    let group = std::env::var("QTRACE_CTL_TEST_GROUP").ok();
    if let Some(g) = &group {
        config = config.with_control_group(g.parse().unwrap());
    }
    match qtrace::global::install(Tracer::with_config(config)) {
        Ok(_) => println!("INSTALL ok"),
        Err(e) => println!("INSTALL {e}"),
    }
    if let Some(g) = group {
        use std::os::unix::fs::MetadataExt;
        let socket = Endpoint::group_dir(g.parse().unwrap()).join(format!(
            "{}.{}.sock",
            std::process::id(),
            name.to_string_lossy()
        ));
        let m = std::fs::metadata(&socket).unwrap();
        println!("SOCKET {:o} {}", m.mode() & 0o7777, m.gid());
    }
    println!("GET {}", qtrace::global::get().is_some());
}

/// A `Config::with_control` endpoint that cannot be bound: `install`
/// returns the typed error naming the option and what to do, and the
/// tracer is installed without it.
#[test]
fn config_with_control_that_cannot_bind_is_an_error() {
    let runtime = tempfile::tempdir().unwrap();
    let dir = runtime.path().join("qtrace");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = |name: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "child_installs_with_control",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("QTRACE_CTL_TEST_INSTALL", name)
            .env("XDG_RUNTIME_DIR", runtime.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = |tag: &str| {
            stdout
                .lines()
                .find_map(|l| l.split_once(tag).map(|(_, rest)| rest))
                .unwrap_or_else(|| panic!("child said: {stdout}"))
                .to_string()
        };
        (line("INSTALL "), line("GET "))
    };
    let (install, get) = child("unsafe");
    assert_eq!(
        install,
        format!(
            "qtrace::global::install (Config::with_control) cannot bind the control endpoint at {}: \
             the directory's mode is 755: make it 700 (chmod 700) so that no other user reaches the sockets in it; \
             the tracer is installed without its endpoint (qtrace::global::get returns it): \
             fix this, or leave out Config::with_control to run without one",
            dir.display()
        )
    );
    assert_eq!(get, "true");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no socket made"
    );
    // A name that is not valid, in a safe directory.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (install, get) = child("a/b");
    assert_eq!(
        install,
        format!(
            "qtrace::global::install (Config::with_control) cannot bind the control endpoint at {}: \
             the name \"a/b\" is not 1 to 32 of A-Z a-z 0-9 _ . -: give one such as \"server\"; \
             the tracer is installed without its endpoint (qtrace::global::get returns it): \
             fix this, or leave out Config::with_control to run without one",
            dir.display()
        )
    );
    assert_eq!(get, "true");
    // And a good one is served in the same directory.
    assert_eq!(child("fine"), ("ok".to_string(), "true".to_string()));
}

/// `Config::with_control_group`: `global::install` makes the group's
/// 0660 socket (run as root, which may give any group).
#[test]
fn config_with_control_group_binds_the_group_socket() {
    if !root_or_skip(
        "config_with_control_group_binds_the_group_socket",
        "to give a group it is not in",
    ) {
        return;
    }
    let gid = 61_000 + std::process::id() % 1000;
    let dir = Endpoint::group_dir(gid);
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_installs_with_control",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("QTRACE_CTL_TEST_INSTALL", "grouped")
        .env("QTRACE_CTL_TEST_GROUP", gid.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |tag: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(tag).map(|(_, rest)| rest.to_string()))
            .unwrap_or_else(|| panic!("child said: {stdout}"))
    };
    assert_eq!(line("INSTALL "), "ok");
    assert_eq!(line("SOCKET "), format!("660 {gid}"));
    std::fs::remove_dir_all(&dir).unwrap();
}

use std::os::unix::process::CommandExt;

/// Runs `child_connects_and_prints_the_reply` as user `nobody` with group
/// `gid` and exactly the supplementary `groups` (set in the child before
/// it becomes nobody, as `Command::uid` does for none): the reply's frame,
/// or what stopped the connection.
fn connect_as_nobody(path: &Path, gid: u32, groups: &[u32]) -> Result<Reply, String> {
    let groups: Vec<libc::gid_t> = groups.to_vec();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "--exact",
            "child_connects_and_prints_the_reply",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("QTRACE_CTL_TEST_CHILD", path);
    // SAFETY: between fork and exec the closure only makes three system
    // calls (async-signal-safe), on memory allocated before the fork.
    unsafe {
        child.pre_exec(move || {
            let ok = libc::setgroups(groups.len(), groups.as_ptr()) == 0
                && libc::setgid(gid) == 0
                && libc::setuid(65534) == 0;
            if ok {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(kind) = stdout
        .lines()
        .find_map(|l| l.split_once("REFUSED-BY-FS ").map(|(_, k)| k.to_string()))
    {
        return Err(kind);
    }
    let hex = stdout
        .lines()
        .find_map(|l| {
            l.split_once("REPLY ")
                .map(|(_, hex)| hex.split_whitespace().next().unwrap_or(""))
        })
        .unwrap_or_else(|| {
            panic!(
                "child said: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    Ok(Reply::parse(&bytes[4..]).unwrap())
}

/// Opens the modes of `paths` (mode, path) for a test, and puts the old
/// ones back when dropped (also when the test fails).
struct OpenModes(Vec<(PathBuf, u32)>);

impl OpenModes {
    fn set(paths: &[(&Path, u32)]) -> OpenModes {
        let old = paths
            .iter()
            .map(|&(p, m)| {
                let was = std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
                (p.to_path_buf(), was)
            })
            .collect();
        OpenModes(old)
    }
}

impl Drop for OpenModes {
    fn drop(&mut self) {
        for (p, m) in self.0.iter().rev() {
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(*m));
        }
    }
}

/// Whether this test runs as root; if not, says that `test` is skipped.
fn root_or_skip(test: &str, why: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: {test} needs root ({why})");
    }
    root
}

/// The refusal of a group endpoint (group `gid`).
fn group_refusal(gid: u32) -> String {
    format!("this endpoint serves its own user and the members of group {gid} only (SO_PEERCRED, SO_PEERGROUPS): run qtrace ctl as the traced program's user, or as a member of that group")
}

/// A peer whose allowed group is a supplementary one (`SO_PEERGROUPS`) is
/// served; one without it, the modes opened so that only the credentials
/// stand in its way, is refused and counted.
#[test]
fn a_supplementary_group_is_served_and_one_without_it_refused() {
    if !root_or_skip(
        "a_supplementary_group_is_served_and_one_without_it_refused",
        "to run children as nobody with chosen supplementary groups",
    ) {
        return;
    }
    let _serial = serial();
    let gid = 62_000 + std::process::id() % 1000;
    let dir = Endpoint::group_dir(gid);
    let _ = std::fs::remove_dir_all(&dir);
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let q = fixed(&t, 8);
    t.activate().unwrap();
    let e = Endpoint::bind_with_group(Arc::clone(&t), "supplementary", gid).unwrap();
    t.log_event(user::USER0, [1, 0]);

    // nobody, its own group 65534 and `gid` among two supplementary ones.
    match connect_as_nobody(e.path(), 65534, &[gid + 1, gid]).unwrap() {
        Reply::Status(json) => {
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(v["name"], "supplementary");
            assert_eq!(v["queues"][0]["accepted"], 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((e.connections(), e.refused(), e.requests()), (1, 0, 1));
    assert_eq!(kept(&t, q), vec![(user::USER0.0, 1)]);

    // Without it (another supplementary group only): the socket's mode
    // stops it, and with the modes opened the credentials do.
    assert_eq!(
        connect_as_nobody(e.path(), 65534, &[gid + 1]),
        Err("PermissionDenied".to_string())
    );
    let refused = {
        let _open = OpenModes::set(&[(&dir, 0o711), (e.path(), 0o666)]);
        connect_as_nobody(e.path(), 65534, &[gid + 1])
    };
    match refused.unwrap() {
        Reply::Error(ErrorCode::PermissionDenied, m) => assert_eq!(m, group_refusal(gid)),
        other => panic!("{other:?}"),
    }
    assert_eq!((e.connections(), e.refused(), e.requests()), (1, 1, 1));
    drop(e);
    std::fs::remove_dir(&dir).unwrap();
}

/// `Endpoint::bind_with_group`: the 0710 group directory and the 0660
/// socket of that group; a child of another user in the group is served,
/// one in another group is stopped by the socket's mode and, with the
/// modes opened, refused by `SO_PEERCRED` and counted.
#[test]
fn an_allowed_group_is_served_and_another_refused() {
    if !root_or_skip(
        "an_allowed_group_is_served_and_another_refused",
        "to run children as nobody with chosen groups",
    ) {
        return;
    }
    let _serial = serial();
    // A group no account has, of this run.
    let gid = 60_000 + std::process::id() % 1000;
    let dir = Endpoint::group_dir(gid);
    assert_eq!(dir, PathBuf::from(format!("/tmp/qtrace-0-g{gid}")));
    let _ = std::fs::remove_dir_all(&dir);
    let time = ManualClock::new(0);
    let (_out, t) = tracer(&time);
    let q = fixed(&t, 8);
    t.activate().unwrap();
    let e = Endpoint::bind_with_group(Arc::clone(&t), "group", gid).unwrap();
    assert_eq!(
        e.path(),
        dir.join(format!("{}.group.sock", std::process::id()))
    );
    use std::os::unix::fs::MetadataExt;
    let meta = |p: &Path| {
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.mode() & 0o7777, m.uid(), m.gid())
    };
    assert_eq!(meta(&dir), (0o710, 0, gid));
    assert_eq!(meta(e.path()), (0o660, 0, gid));
    t.log_event(user::USER0, [1, 0]);

    // Served: nobody, in the group.
    match connect_as_nobody(e.path(), gid, &[]).unwrap() {
        Reply::Status(json) => {
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(v["name"], "group");
            assert_eq!(v["queues"][0]["accepted"], 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((e.connections(), e.refused(), e.requests()), (1, 0, 1));
    assert_eq!(kept(&t, q), vec![(user::USER0.0, 1)]);

    // nobody in its own group: the socket's mode stops it first.
    assert_eq!(
        connect_as_nobody(e.path(), 65534, &[]),
        Err("PermissionDenied".to_string())
    );
    assert_eq!((e.connections(), e.refused()), (1, 0));

    // With the modes opened, SO_PEERCRED refuses it, and counts it.
    let refused = {
        let _open = OpenModes::set(&[(&dir, 0o711), (e.path(), 0o666)]);
        connect_as_nobody(e.path(), 65534, &[])
    };
    let set =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    match refused.unwrap() {
        Reply::Error(ErrorCode::PermissionDenied, m) => assert_eq!(m, group_refusal(gid)),
        other => panic!("{other:?}"),
    }
    assert_eq!((e.connections(), e.refused(), e.requests()), (1, 1, 1));
    drop(e);

    // A directory there that is not exactly 0710 is refused, not fixed.
    set(&dir, 0o750);
    let m = match Endpoint::bind_with_group(Arc::clone(&t), "group", gid) {
        Err(err @ ConfigError::ControlEndpoint { .. }) => err.to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        m,
        format!("qtrace::control::Endpoint::bind cannot bind the control endpoint at {}: the directory's mode is 750: make it 710 (chmod 710) so that the group reaches the sockets in it and no one else does", dir.display())
    );
    // Nor one of another group.
    set(&dir, 0o710);
    std::os::unix::fs::chown(&dir, None, Some(gid + 1)).unwrap();
    let m = match Endpoint::bind_with_group(Arc::clone(&t), "group", gid) {
        Err(err @ ConfigError::ControlEndpoint { .. }) => err.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(
        m.ends_with(&format!("the directory belongs to user 0 and group {}, not to this process's user 0 and group {gid}: remove it", gid + 1)),
        "{m}"
    );
    std::fs::remove_dir(&dir).unwrap();
}
