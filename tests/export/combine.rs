//! Combine runs (`qtrace::combine`): payloads of every length from 0 to
//! `MAX_PAYLOAD` through every queue type and every reader, runs cut by
//! overwrites and losses, names.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::combine::{self, Assembler, Item, Payload, PayloadState, MAX_PAYLOAD};
use qtrace::export::{self, chrome::ChromeWriter, ctf::CtfWriter};
use qtrace::queues::{
    Circular, CircularParams, DatagramsPerPeriod, Dummy, Fixed, FixedParams, Online, OnlineParams,
    Udp, UdpParams,
};
use qtrace::reader::{Completeness, TraceReader};
use qtrace::receiver::{Receiver, RunLimit};
use qtrace::storage::RingStorage;
use qtrace::{Config, Event, Tracer};

use crate::common::combine_runs;
use combine_runs::{file_cut_inside_a_run, fixed_tracer, payload, two_queues_with_names};

use crate::common::temp_dirs;

fn dir(name: &str) -> PathBuf {
    temp_dirs::fresh_dir("combine", name)
}

fn assemble(events: impl IntoIterator<Item = Event>) -> Vec<Item> {
    let mut items = Vec::new();
    let mut asm = Assembler::new();
    for e in events {
        asm.push(e, &mut |i| items.push(i));
    }
    asm.finish(&mut |i| items.push(i));
    items
}

fn payloads(items: &[Item]) -> Vec<&Payload> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Payload(p) => Some(p),
            Item::Event(_) => None,
        })
        .collect()
}

/// Every payload is whole and is the one logged for its length (its
/// argument), lengths `lengths` in order.
fn assert_exact(items: &[Item], lengths: impl IntoIterator<Item = usize>) {
    let ps = payloads(items);
    let lengths: Vec<usize> = lengths.into_iter().collect();
    assert_eq!(ps.len(), lengths.len());
    for (p, &len) in ps.iter().zip(&lengths) {
        assert_eq!(p.state, PayloadState::Complete, "length {len}");
        assert_eq!(p.arg, Some(len as u64));
        assert_eq!(p.logged_len, Some(len as u32));
        assert_eq!(p.id, user::USER1);
        assert!(p.bytes == payload(len), "length {len}: wrong bytes");
    }
    // Nothing else: no stray record.
    assert_eq!(items.len(), lengths.len());
}

fn read_file(path: &Path) -> Vec<Event> {
    let mut reader = TraceReader::open(path).unwrap();
    let events: Vec<Event> = reader.by_ref().map(|e| e.unwrap()).collect();
    assert!(
        matches!(reader.completeness(), Some(Completeness::Complete(_))),
        "{:?}",
        reader.completeness()
    );
    events
}

fn log_all(tracer: &Tracer, lengths: impl IntoIterator<Item = usize>, mut pace: impl FnMut()) {
    for len in lengths {
        pace();
        tracer.log_event_bytes(user::USER1, len as u64, &payload(len));
    }
}

/// Records of the runs of lengths 0..=MAX_PAYLOAD.
fn all_records() -> u64 {
    (0..=MAX_PAYLOAD)
        .map(|l| combine::records_for(l) as u64)
        .sum()
}

#[test]
fn every_length_through_a_fixed_queue_the_reader_and_dump() {
    let d = dir("fixed");
    let tracer = fixed_tracer(&d, 1 << 20);
    log_all(&tracer, 0..=MAX_PAYLOAD, || {});
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped), (all_records(), 0));
    let file = &report.queues[0].status.files[0];
    assert_exact(&assemble(read_file(file)), 0..=MAX_PAYLOAD);

    // Chrome JSON: one instant per payload, the text in `args.text`.
    let events = read_file(file);
    let catalog = qtrace::classes::Catalog::builtin();
    let mut json = Vec::new();
    let stats = export::convert(
        ChromeWriter::new(&catalog, 0, &mut json).unwrap(),
        events.clone(),
    )
    .unwrap();
    assert_eq!(stats.events, all_records());
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let instants: Vec<&serde_json::Value> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
        .collect();
    assert_eq!(instants.len(), MAX_PAYLOAD + 1);
    for (len, e) in instants.iter().enumerate() {
        assert_eq!(e["name"], "user1");
        assert_eq!(e["args"]["value"], len as u64);
        assert_eq!(
            e["args"]["text"].as_str().unwrap().as_bytes(),
            payload(len).as_slice()
        );
        assert!(e["args"].get("partial").is_none());
    }

    // CTF, read by babeltrace2: one `qtrace:payload` event per payload.
    let ctf = d.join("ctf");
    export::convert(CtfWriter::create(&ctf, &catalog, 0).unwrap(), events).unwrap();
    match std::process::Command::new("babeltrace2").arg(&ctf).output() {
        Ok(out) => {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), MAX_PAYLOAD + 1);
            for (len, line) in lines.iter().enumerate() {
                let want = format!(
                    "}}, {{ event_id = 12, arg = {len}, state = 0, received = 0, expected = 0, logged_len = {len}, encoding = 0, text = \"{}\" }}",
                    String::from_utf8(payload(len)).unwrap()
                );
                assert!(line.ends_with(&want), "{line}\n does not end with\n{want}");
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => eprintln!(
            "babeltrace2 is not on PATH; install it (Debian: apt-get install babeltrace2) to check the CTF output"
        ),
        Err(e) => panic!("cannot run babeltrace2: {e}"),
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn chrome_and_ctf_show_names_and_cut_runs() {
    let catalog = qtrace::classes::Catalog::builtin();
    let name = combine::Run::name(1_000, 5, combine::NAME_SOURCE, 5, b"worker-5");
    let task = combine::Run::name(1_000, 5, combine::NAME_TASK, 3, b"idle");
    let text = combine::Run::new(2_000, user::USER1, 5, 0, b"0123456789abcdef-cut");
    let mut events: Vec<Event> = (0..name.len()).map(|i| name.record(i)).collect();
    events.extend((0..task.len()).map(|i| task.record(i)));
    events.push(Event::new(
        1_500,
        qtrace::classes::system::SCHEDULE,
        5,
        [3, 0],
    ));
    events.extend((0..2).map(|i| text.record(i))); // its last record lost
    let mut json = Vec::new();
    export::convert(
        ChromeWriter::new(&catalog, 0, &mut json).unwrap(),
        events.clone(),
    )
    .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let all = doc["traceEvents"].as_array().unwrap();
    let thread_names: Vec<&str> = all
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["tid"] == 5)
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(thread_names, ["5 worker-5"]);
    assert!(all
        .iter()
        .any(|e| e["ph"] == "B" && e["name"] == "task 3 idle"));
    let cut = all.iter().find(|e| e["name"] == "user1").unwrap();
    assert_eq!(cut["args"]["text"], "0123456789abcdef");
    assert_eq!(cut["args"]["partial"], "2 records of 3");

    let d = dir("ctf-names");
    export::convert(CtfWriter::create(&d, &catalog, 0).unwrap(), events).unwrap();
    match std::process::Command::new("babeltrace2").arg(&d).output() {
        Ok(out) => {
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(text.contains("qtrace:name: { source = 5 }, { kind = 1, subject = 5, encoding = 0, name = \"worker-5\" }"), "{text}");
            assert!(text.contains("qtrace:name: { source = 5 }, { kind = 2, subject = 3, encoding = 0, name = \"idle\" }"), "{text}");
            assert!(text.contains("qtrace:payload: { source = 5 }, { event_id = 12, arg = 0, state = 1, received = 2, expected = 3, logged_len = 20, encoding = 0, text = \"0123456789abcdef\" }"), "{text}");
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => eprintln!(
            "babeltrace2 is not on PATH; install it (Debian: apt-get install babeltrace2) to check the CTF output"
        ),
        Err(e) => panic!("cannot run babeltrace2: {e}"),
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn every_length_through_circular_queues_with_and_without_shards() {
    for shards in [1, 0] {
        let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
        let tracer = Tracer::with_config(Config::default().with_output_dir(out.path()));
        let q = tracer
            .create_queue::<Circular>(
                CircularParams::default()
                    .with_capacity(1 << 14)
                    .with_shards(shards)
                    .with_ring(RingStorage::Memory),
            )
            .unwrap();
        tracer.assign_event(user::USER1, q).unwrap();
        tracer.activate().unwrap();
        let circular = tracer.queue(q).unwrap().as_circular().unwrap();
        // Chunks of at most half the capacity, each checked in a snapshot:
        // the runs of the chunk are whole; before them only a run whose
        // head an overwrite evicted (cut, its begin record missing) and the
        // hoops record for the overwritten records.
        let mut start = 0;
        while start <= MAX_PAYLOAD {
            let mut end = start;
            let mut records = 0;
            while end <= MAX_PAYLOAD && records + combine::records_for(end) <= 1 << 13 {
                records += combine::records_for(end);
                end += 1;
            }
            log_all(&tracer, start..end, || {});
            let items = assemble(circular.snapshot_events());
            let first_of_chunk = items
                .iter()
                .position(|i| matches!(i, Item::Payload(p) if p.arg == Some(start as u64)))
                .unwrap();
            assert_exact(&items[first_of_chunk..], start..end);
            // Before them: runs of earlier chunks, whole, except the oldest
            // when an overwrite evicted its head (cut, begin record missing),
            // and a hoops record for the overwritten records.
            for (k, before) in items[..first_of_chunk].iter().enumerate() {
                match before {
                    Item::Event(e) => assert_eq!(e.id, qtrace::classes::tracer::HOOPS),
                    Item::Payload(p) if p.state == PayloadState::Complete => {
                        let len = p.arg.unwrap() as usize;
                        assert!(len < start && p.bytes == payload(len));
                    }
                    Item::Payload(p) => {
                        assert!(k <= 1, "only the oldest run may be cut: {p:?}");
                        assert_eq!(p.arg, None, "{p:?}");
                        assert!(matches!(p.state, PayloadState::Cut { expected: None, .. }));
                    }
                }
            }
            start = end;
        }
        let c = tracer.shutdown().unwrap().queues[0].counters;
        assert_eq!(
            (c.accepted, c.dropped),
            (all_records(), 0),
            "shards {shards}"
        );
        assert!(c.is_consistent());
    }
}

#[test]
fn every_length_through_an_online_queue() {
    let d = dir("online");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(1 << 14)
                .with_period(Duration::from_millis(1))
                .with_high_water_percent(25),
        )
        .unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.activate().unwrap();
    // Keep the queue from filling: a full queue drops whole runs (tested
    // below), this test wants every length.
    log_all(&tracer, 0..=MAX_PAYLOAD, || {
        let t = Instant::now();
        while tracer.counters(q).unwrap().queued > 1 << 12 {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the drain task is stuck"
            );
            thread::sleep(Duration::from_micros(200));
        }
    });
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped), (all_records(), 0));
    assert_exact(
        &assemble(read_file(&report.queues[0].status.files[0])),
        0..=MAX_PAYLOAD,
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn every_length_through_a_udp_queue_and_the_receiver() {
    let d = dir("udp");
    let path = d.join("received.qtr");
    let receiver = Receiver::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    let addr = receiver.local_addr();
    let progress = receiver.progress();
    let total = all_records();
    let rx = {
        let path = path.clone();
        thread::spawn(move || {
            receiver
                .run(
                    &path,
                    RunLimit::events(total).or_after(Duration::from_secs(120)),
                )
                .unwrap()
        })
    };
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(addr)
                .with_capacity(1 << 14)
                .with_period(Duration::from_millis(1))
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_high_water_percent(25),
        )
        .unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.activate().unwrap();
    let mut logged = 0u64;
    log_all(&tracer, 0..=MAX_PAYLOAD, || {
        let t = Instant::now();
        while progress.events() + 8192 < logged {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the receiver is stuck"
            );
            thread::sleep(Duration::from_micros(200));
        }
        logged = tracer.counters(q).unwrap().accepted;
    });
    let summary = rx.join().unwrap();
    let c = tracer.shutdown().unwrap().queues[0].counters;
    assert_eq!((c.accepted, c.dropped), (total, 0));
    assert_eq!(summary.senders[0].events, total);
    // The receiver stopped at the count, before the sender's close: the
    // file's last record is the stream's unclosed-stream mark (FORMAT.md
    // 1.5), every event accounted.
    let mut records = read_file(&path);
    let mark = records.pop().unwrap();
    assert_eq!(
        qtrace::wire::unclosed_stream(&mark),
        Some((summary.senders[0].sender, total))
    );
    assert_exact(&assemble(records), 0..=MAX_PAYLOAD);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_dummy_queue_counts_every_record() {
    let tracer = Tracer::new();
    let q = tracer.create_queue::<Dummy>(()).unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.log_str(user::USER1, "");
    tracer.log_str(user::USER1, &"x".repeat(17));
    let c = tracer.counters(q).unwrap();
    assert_eq!((c.accepted, c.delivered), (1 + 3, 4));
}

#[test]
fn a_full_fixed_queue_keeps_the_records_that_fit_and_marks_the_run_cut() {
    let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
    let tracer = Tracer::with_config(Config::default().with_output_dir(out.path()));
    let q = tracer
        // On the heap: tests run in parallel and share the default directory.
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(4)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.log_str(user::USER1, "0123456789abcdef"); // 2 records
    tracer.log_str(user::USER1, "0123456789abcdefXYZ"); // 3 records: 2 fit
    let c = tracer.counters(q).unwrap();
    assert_eq!((c.accepted, c.dropped), (4, 1));
    let items = assemble(
        tracer
            .queue(q)
            .unwrap()
            .as_fixed()
            .unwrap()
            .snapshot_events(),
    );
    let ps = payloads(&items);
    assert_eq!(ps.len(), 2);
    assert_eq!(
        (ps[0].bytes.as_slice(), ps[0].state),
        (&b"0123456789abcdef"[..], PayloadState::Complete)
    );
    assert_eq!(ps[1].bytes, b"0123456789abcdef");
    assert_eq!(
        ps[1].state,
        PayloadState::Cut {
            received: 2,
            expected: Some(3)
        }
    );
    // The trailing hoops record counts the missing record (it comes before
    // the cut run, which is complete only at the end of the records).
    assert!(
        matches!(items[1], Item::Event(e) if e.id == qtrace::classes::tracer::HOOPS && e.args[0] == 1)
    );
}

#[test]
fn a_full_online_queue_drops_whole_runs_and_counts_every_record() {
    let d = dir("online-full");
    let tracer = Tracer::with_config(Config::default().with_output_dir(&d));
    let q = tracer
        .create_queue::<Online>(
            OnlineParams::default()
                .with_capacity(8)
                .with_period(Duration::from_secs(3600)),
        )
        .unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    // 6 records, then 4 that do not all fit.
    tracer.log_str(user::USER1, &"a".repeat(80));
    tracer.log_str(user::USER1, &"b".repeat(48));
    // 2 records would fit, but the online queue latches when full
    // (refuses everything until its task has emptied it).
    tracer.log_str(user::USER1, "c");
    let c = tracer.counters(q).unwrap();
    assert_eq!((c.accepted, c.dropped), (6, 6));
    tracer.activate().unwrap();
    let report = tracer.shutdown().unwrap();
    let items = assemble(read_file(&report.queues[0].status.files[0]));
    let ps = payloads(&items);
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].bytes, "a".repeat(80).as_bytes());
    assert_eq!(ps[0].state, PayloadState::Complete);
    // The drop is marked in the file.
    let lost: u64 = items
        .iter()
        .filter_map(|i| match i {
            Item::Event(e) if e.id == qtrace::classes::tracer::HOOPS => Some(e.args[0]),
            _ => None,
        })
        .sum();
    assert_eq!(lost, 6);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_payload_longer_than_the_maximum_is_cut_at_logging_and_says_so() {
    let out = tempfile::tempdir().unwrap(); // the queue's file at shutdown
    let tracer = Tracer::with_config(Config::default().with_output_dir(out.path()));
    let q = tracer
        .create_queue::<Fixed>(
            FixedParams::default()
                .with_capacity(1024)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    tracer.assign_event(user::USER1, q).unwrap();
    let long = payload(MAX_PAYLOAD + 100);
    tracer.log_bytes(user::USER1, &long);
    let items = assemble(
        tracer
            .queue(q)
            .unwrap()
            .as_fixed()
            .unwrap()
            .snapshot_events(),
    );
    let ps = payloads(&items);
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].state, PayloadState::Complete);
    assert_eq!(ps[0].bytes, long[..MAX_PAYLOAD]);
    assert_eq!(ps[0].logged_len, Some(MAX_PAYLOAD as u32 + 100));
    assert!(ps[0].truncated_at_logging());
}

#[test]
fn masked_out_payloads_are_not_recorded() {
    let tracer = Tracer::new();
    let q = tracer.create_queue::<Dummy>(()).unwrap();
    tracer.log_str(user::USER1, "not assigned");
    tracer.assign_event(user::USER1, q).unwrap();
    tracer.notrace_event(user::USER1).unwrap();
    tracer.log_str(user::USER1, "switched off");
    assert_eq!(tracer.counters(q).unwrap().accepted, 0);
}

#[test]
fn names_go_to_every_queue() {
    let d = dir("names");
    let (tracer, q1) = two_queues_with_names(&d);
    let report = tracer.shutdown().unwrap();
    assert!(matches!(
        tracer.name_thread("late"),
        Err(qtrace::ConfigError::AfterShutdown { .. })
    ));
    for q in &report.queues {
        // Each file: the names prologue (the tracer's recorded names, in
        // kind order), the two name records as recorded, then its own event.
        let file = &q.status.files[0];
        let items = assemble(read_file(file));
        let mut names = combine::Names::new();
        let ps = payloads(&items);
        assert_eq!(ps.len(), 4);
        for at in [0, 2] {
            assert_eq!(names.learn(ps[at]), Some((combine::NAME_SOURCE, 7)));
            assert_eq!(names.learn(ps[at + 1]), Some((combine::NAME_TASK, 3)));
        }
        assert_eq!(names.source(7), Some("worker-7"));
        assert_eq!(names.task(3), Some("idle task"));
    }
    let _ = q1;
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_file_cut_inside_a_run_shows_the_run_partial() {
    let d = dir("crash");
    let file = &file_cut_inside_a_run(&d);
    let mut reader = TraceReader::open(file).unwrap();
    let events: Vec<Event> = reader.by_ref().filter_map(Result::ok).collect();
    assert!(matches!(
        reader.completeness(),
        Some(Completeness::Cut { records: 4, .. })
    ));
    let items = assemble(events);
    let ps = payloads(&items);
    assert_eq!(ps.len(), 2);
    assert_eq!(
        (ps[0].bytes.as_slice(), ps[0].state),
        (&b"whole"[..], PayloadState::Complete)
    );
    assert_eq!(ps[1].arg, Some(2));
    assert_eq!(ps[1].bytes, "y".repeat(16).as_bytes());
    assert_eq!(
        ps[1].state,
        PayloadState::Cut {
            received: 2,
            expected: Some(5)
        }
    );
    std::fs::remove_dir_all(&d).unwrap();
}
