//! The receiver's memory of keyed sessions (issue #34, item 2; FORMAT.md
//! 3.7): a captured keyed stream replayed is rejected however many other
//! sender ids came in between, and after a restart of the receiver that
//! loads the session file the earlier one wrote; a stream under way when
//! the receiver stopped goes on at the next one.
//!
//! Sockets on 127.0.0.1 with ports the system chooses; bounded in
//! datagrams (about 9,000) and time (each receiver stops itself after 30 s).

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::reader::TraceReader;
use qtrace::receiver::{Receiver, ReceiverConfig, ReceiverSummary, RunLimit, Stopper};
use qtrace::wire::datagram::{encode_close, CloseCounts};
use qtrace::wire::DatagramKey;

use super::keys::{forger, key, plain, sealed, stream};
use crate::common::loopback::loopback;

type Run = thread::JoinHandle<(ReceiverSummary, u64)>;

/// A receiver holding `k` that keeps its sessions in `sessions`, writing
/// `file`: its address, stopper, thread (the summary and the `user0`
/// events of its file) and the sender ids it loaded.
fn receiver(k: &DatagramKey, sessions: &Path, file: PathBuf) -> (SocketAddr, Stopper, Run, usize) {
    let config = ReceiverConfig {
        keys: vec![k.clone()],
        ..ReceiverConfig::default()
    };
    let mut receiver = Receiver::bind_with(loopback(), config).unwrap();
    let loaded = receiver.keep_sessions(sessions).unwrap();
    let (addr, stop) = (receiver.local_addr(), receiver.stopper());
    let run = thread::spawn(move || {
        let summary = receiver
            .run(&file, RunLimit::duration(Duration::from_secs(30)))
            .unwrap();
        let events = TraceReader::open(&file)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.id == user::USER0)
            .count() as u64;
        (summary, events)
    });
    (addr, stop, run, loaded)
}

/// Sends every datagram, 100 µs apart (the socket buffer never fills).
fn send_all(from: &UdpSocket, to: SocketAddr, datagrams: &[Vec<u8>]) {
    for d in datagrams {
        from.send_to(d, to).unwrap();
        thread::sleep(Duration::from_micros(100));
    }
}

/// The close datagram of sender `id`: number `seq`, `logged` events sent
/// before it.
fn close(id: u32, seq: u64, logged: u64) -> Vec<u8> {
    let mut buf = [0u8; 56];
    let counts = CloseCounts { logged, unsent: 0 };
    let n = encode_close(&mut buf, id, seq, 0, logged, counts).unwrap();
    buf[..n].to_vec()
}

#[test]
fn a_replay_is_rejected_after_4200_other_ids_and_after_a_restart() {
    const N: u64 = 300;
    const OTHERS: u32 = 4_200;
    let k = key(34);
    // Capture a whole keyed stream of sender 9 (the UDP queue's own).
    let capture = UdpSocket::bind(loopback()).unwrap();
    capture
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    stream(capture.local_addr().unwrap(), 9, Some(k.clone()), N);
    let mut captured = Vec::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = capture.recv(&mut buf) {
        captured.push(buf[..n].to_vec());
    }
    assert!(captured.len() > 3, "{} datagrams", captured.len());
    let mut s = [0u8; 8];
    s.copy_from_slice(&captured[0][40..48]);
    let session9 = u64::from_be_bytes(s);
    // 4,200 keyed streams of other ids: one events datagram (one event)
    // and its close each.
    let others: Vec<Vec<u8>> = (0..OTHERS)
        .flat_map(|i| {
            let (id, session) = (1_000 + i, session9 + 1 + u64::from(i));
            [
                sealed(&k, session, plain(id, 0, 0, 0, 1)),
                sealed(&k, session, close(id, 1, 1)),
            ]
        })
        .collect();
    // Sender 77: two datagrams (4 events) while the first receiver runs,
    // the rest after its restart.
    let s77 = 77_000;
    let early77 = [
        sealed(&k, s77, plain(77, 0, 0, 0, 2)),
        sealed(&k, s77, plain(77, 1, 0, 2, 2)),
    ];
    let late77 = [
        sealed(&k, s77, plain(77, 2, 0, 4, 2)),
        sealed(&k, s77, close(77, 3, 6)),
        sealed(&k, s77, close(77, 3, 6)),
    ];

    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("received.qtr.sessions");
    let (to, stop, run, loaded) = receiver(&k, &sessions, dir.path().join("a.qtr"));
    assert_eq!(loaded, 0);
    let (sender, replayer) = (forger(), forger());
    send_all(&sender, to, &captured);
    send_all(&sender, to, &early77);
    send_all(&sender, to, &others);
    // The captured stream again, after 4,200 other ids: every datagram
    // rejected as a replay.
    send_all(&replayer, to, &captured);
    thread::sleep(Duration::from_millis(300));
    stop.stop();
    let (summary, events) = run.join().unwrap();
    let replays = captured.len() as u64;
    assert_eq!(summary.events(), N + 4 + u64::from(OTHERS), "{summary}");
    assert_eq!(events, N + 4 + u64::from(OTHERS));
    assert_eq!(summary.invalid.rejected.replayed, replays, "{summary}");
    assert_eq!(summary.invalid.rejected.total(), replays, "{summary}");
    assert_eq!(summary.rejected.len(), 1);
    assert_eq!(summary.rejected[0].addr, replayer.local_addr().unwrap());
    assert_eq!(summary.sessions_error, None);
    // 24 bytes of header, 24 per sender id.
    let ids = OTHERS as usize + 2;
    assert_eq!(
        std::fs::metadata(&sessions).unwrap().len(),
        24 + 24 * ids as u64
    );

    // A new receiver loading the file: the captured stream and one of the
    // others replayed are rejected; sender 77 goes on; a newer session of
    // sender 9 is a new stream.
    let (to, stop, run, loaded) = receiver(&k, &sessions, dir.path().join("b.qtr"));
    assert_eq!(loaded, ids);
    send_all(&replayer, to, &captured);
    send_all(&replayer, to, &others[..2]);
    send_all(&replayer, to, &early77[..1]);
    send_all(&sender, to, &late77);
    let newer = [
        sealed(&k, session9 + 1, plain(9, 0, 0, 0, 2)),
        sealed(&k, session9 + 1, close(9, 1, 2)),
    ];
    send_all(&sender, to, &newer);
    thread::sleep(Duration::from_millis(300));
    stop.stop();
    let (summary, events) = run.join().unwrap();
    assert_eq!(summary.invalid.rejected.replayed, replays + 3, "{summary}");
    assert_eq!(summary.invalid.rejected.total(), replays + 3, "{summary}");
    assert_eq!(events, 4, "{summary}");
    let mut accounts: Vec<(u32, u64, u64, bool)> = summary
        .senders
        .iter()
        .map(|s| (s.sender, s.events, s.lost_events, s.closed))
        .collect();
    accounts.sort();
    // Sender 77 goes on at datagram 2; its first 4 events were in the
    // first receiver's file, and this one counts them lost (it cannot
    // know what the first one wrote).
    assert_eq!(accounts, [(9, 2, 0, true), (77, 2, 4, true)], "{summary}");
    // The file now says both ended.
    let bytes = std::fs::read(&sessions).unwrap();
    assert_eq!(bytes.len(), 24 + 24 * ids);
}
