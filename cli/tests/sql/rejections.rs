//! `qtrace recv --store DIR --key-file KEY`: the datagrams it rejects are
//! `losses` rows of kinds `rejected_*`, one per source address and reason
//! (FORMAT.md 7.4), counted exactly, read back with `qtrace sql`.

use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::Duration;

use qtrace::classes::{system, user};
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::wire::datagram::{encode_events, keyed};
use qtrace::wire::DatagramKey;
use qtrace::{Event, Tracer};

use crate::common::loopback::{free_port, loopback};
use crate::common::recv::wait_listening;

/// An events datagram (format version 1) of sender `id`: `n` events
/// `user0`, the first numbered `first`.
fn plain(id: u32, seq: u64, first: u64, n: u64) -> Vec<u8> {
    let events: Vec<Event> = (first..first + n)
        .map(|i| Event::new(i, user::USER0, 0, [i, 0]))
        .collect();
    let mut buf = [0u8; 1472];
    let (len, _) = encode_events(&mut buf, id, seq, 0, first, &events).unwrap();
    buf[..len].to_vec()
}

/// The same, keyed with `k` (session 1).
fn sealed(k: &DatagramKey, mut bytes: Vec<u8>) -> Vec<u8> {
    let len = bytes.len();
    bytes.resize(len + keyed::KEYED_OVERHEAD, 0);
    let len = keyed::seal(k, 1, &mut bytes, len).unwrap();
    bytes.truncate(len);
    bytes
}

#[test]
fn rejected_datagrams_are_rows_of_the_store_per_source_and_reason() {
    const N: u64 = 2_000;
    const JOBS: u64 = 100;
    let qtrace = env!("CARGO_BIN_EXE_qtrace");
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("stream.key");
    let st = Command::new(qtrace)
        .arg("keygen")
        .arg(&key_path)
        .output()
        .unwrap();
    assert!(st.status.success());
    let key = DatagramKey::from_file(&key_path).unwrap();
    let store = dir.path().join("store");
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    // It stops once the real stream's N events and 2 * JOBS activates and
    // endcycles, and the replayed datagram's 3 events are in (or after 30 s).
    let child = Command::new(qtrace)
        .args(["recv", "--listen", &listen.to_string(), "--store"])
        .arg(&store)
        .arg("--key-file")
        .arg(&key_path)
        .args([
            "--count",
            &(N + 2 * JOBS + 3).to_string(),
            "--duration",
            "30",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_listening(listen);

    // Forgers, each from its own port, as sender 500 (the real one's id).
    let socket = || UdpSocket::bind(loopback()).unwrap();
    let (unkeyed, other_key, made_up, replayer) = (socket(), socket(), socket(), socket());
    let wrong = DatagramKey::from_bytes([2; 32]);
    for seq in 0..5 {
        unkeyed.send_to(&plain(500, seq, 0, 3), listen).unwrap();
    }
    for seq in 0..4 {
        other_key
            .send_to(&sealed(&wrong, plain(500, seq, 0, 3)), listen)
            .unwrap();
    }
    for seq in 0..3 {
        // The real key's id (every datagram shows it) with a made-up tag.
        let mut d = sealed(&wrong, plain(500, seq, 0, 3));
        d[14..16].copy_from_slice(&key.id().to_be_bytes());
        made_up.send_to(&d, listen).unwrap();
    }
    // A datagram keyed with the real key, sent three times: the first is a
    // stream (sender 77, 3 events), the two copies are replays.
    let good = sealed(&key, plain(77, 0, 0, 3));
    for _ in 0..3 {
        replayer.send_to(&good, listen).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(200));

    // The real sender.
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(listen)
                .with_sender_id(500)
                .with_key(key.clone())
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.assign_class(system::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..N {
        tracer.log_event(user::USER0, [i, 0]);
        if i % 20 == 19 {
            // A job of task 0..3 (JOBS of them in all).
            let task = (i / 20) % 4;
            tracer.log_event(system::ACTIVATE, [task, 0]);
            tracer.log_event(system::ENDCYCLE, [task, 0]);
        }
        if i % 50 == 49 {
            std::thread::sleep(Duration::from_micros(300));
        }
    }
    tracer.shutdown().unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!(
            "received {} events from 2 sender(s)",
            N + 2 * JOBS + 3
        )),
        "{stdout}"
    );

    let sql = Command::new(qtrace)
        .args(["sql", "--format", "csv"])
        .arg(&store)
        .arg(
            "SELECT split_part(run, '/', 1) AS source, split_part(run, '/', 2) AS what, \
             host, sender IS NULL AS no_sender, kind, count FROM losses \
             WHERE kind LIKE 'rejected%' ORDER BY count DESC",
        )
        .output()
        .unwrap();
    assert!(
        sql.status.success(),
        "{}",
        String::from_utf8_lossy(&sql.stderr)
    );
    let row = |s: &UdpSocket, kind: &str, n: u64| {
        format!(
            "{},rejected,127.0.0.1,true,{kind},{n}\n",
            s.local_addr().unwrap()
        )
    };
    assert_eq!(
        String::from_utf8_lossy(&sql.stdout),
        format!(
            "source,what,host,no_sender,kind,count\n{}{}{}{}",
            row(&unkeyed, "rejected_unkeyed", 5),
            row(&other_key, "rejected_unknown_key", 4),
            row(&made_up, "rejected_bad_tag", 3),
            row(&replayer, "rejected_replayed", 2),
        )
    );
    // The stored jobs and events are the two streams' only.
    let sql = Command::new(qtrace)
        .args(["sql", "--format", "csv"])
        .arg(&store)
        .arg("SELECT sender, count(*) AS n FROM events WHERE event_id = 11 GROUP BY sender ORDER BY sender")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&sql.stdout),
        format!("sender,n\n77,3\n500,{N}\n")
    );
    // The received stream's jobs, paired by the store as it wrote them
    // (FORMAT.md 7.5a), are those the views pair from its events (the host
    // has two streams, so response_times pairs them itself).
    let sql = |q: &str| {
        let out = Command::new(qtrace)
            .args(["sql", "--format", "csv"])
            .arg(&store)
            .arg(q)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let want = "task,n\n0,25\n1,25\n2,25\n3,25\n";
    assert_eq!(
        sql("SELECT task, count(*) AS n FROM jobs WHERE sender = 500 GROUP BY task ORDER BY task"),
        want
    );
    assert_eq!(
        sql("SELECT task, count(*) AS n FROM response_times GROUP BY task ORDER BY task"),
        want
    );
    assert_eq!(
        sql(
            "SELECT count(*) AS n FROM (SELECT task, activated_ns, time_ns FROM jobs \
             EXCEPT SELECT task, activated_ns, ended_ns FROM response_times)"
        ),
        "n\n0\n"
    );
}
