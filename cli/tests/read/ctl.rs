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

#[test]
fn status_as_text_and_json_and_stop_through_the_command() {
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
                .with_capacity(4)
                .with_ring(RingStorage::Memory),
        )
        .unwrap();
    t.assign_class(user::CLASS, q).unwrap();
    t.activate().unwrap();
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
