//! Seeds for the `receiver` fuzz target, from real output: a UDP queue
//! streams a small workload (with drops: its queue is small) to a plain
//! loopback socket, and the datagrams it sent are saved in the target's
//! framing (`[sender: u8][len: u16 BE][bytes]`…) in orders a network
//! produces: in order, with a loss, duplicated and reordered, and two senders
//! interleaved. Each ends as the queue ends it: the catalog's last copy and
//! three close datagrams. The raw datagrams also go to the `datagram` target's corpus.
//!
//! `scripts/fuzz.sh` runs it with `QTRACE_FUZZ_CORPUS=fuzz/corpus`; without
//! that variable it writes to a temporary directory and removes it. Either
//! way it checks that the receiver accepts the seeds as intended.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::receiver::{ReceiverConfig, ReceiverCore};
use qtrace::wire::datagram::DatagramKind;
use qtrace::Tracer;

fn out_dir() -> PathBuf {
    match std::env::var_os("QTRACE_FUZZ_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("qtrace-rcorpus-{}", std::process::id())),
    }
}

/// The datagrams a UDP queue sends for a small workload with drops (32-byte
/// records, or compact ones: FORMAT.md 2.7), and the number of events it
/// dropped.
fn real_datagrams(compact: bool) -> (Vec<Vec<u8>>, u64) {
    let sink = UdpSocket::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(sink.local_addr().unwrap())
                .with_capacity(16)
                .with_max_datagram_len(40 + 4 * 32)
                .with_period(Duration::from_secs(3600))
                .with_high_water_percent(100)
                .with_datagrams_per_period(DatagramsPerPeriod::All)
                .with_sender_id(0x5eed)
                .with_compact(compact),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    // 40 events into 16 slots before phase 2, so no task can drain any (a
    // high-water wake-up raced the producer on a loaded machine): 24
    // dropped, then shutdown sends the 16 left with the drop count (a queue
    // never activated sends at terminate).
    for i in 0..40u64 {
        tracer.log_event(user::USER0, [i, i * 3]);
    }
    let report = tracer.shutdown().unwrap();
    let c = report.queues[0].counters;
    assert_eq!((c.accepted, c.dropped), (16, 24));
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = sink.recv(&mut buf) {
        out.push(buf[..n].to_vec());
    }
    // Compact, the 16 events fit one datagram.
    let want = if compact { 2 } else { 5 };
    assert!(
        out.len() >= want,
        "catalog and event datagrams, got {}",
        out.len()
    );
    (out, c.dropped)
}

fn frame(parts: &[(u8, &[u8])]) -> Vec<u8> {
    let mut v = Vec::new();
    for (who, bytes) in parts {
        v.push(*who);
        v.extend_from_slice(&(bytes.len() as u16).to_be_bytes());
        v.extend_from_slice(bytes);
    }
    v
}

#[test]
fn seed_receiver_corpus() {
    let root = out_dir();
    let rdir = root.join("receiver");
    let ddir = root.join("datagram");
    std::fs::create_dir_all(&rdir).unwrap();
    std::fs::create_dir_all(&ddir).unwrap();
    let (d, dropped) = real_datagrams(false);
    for (i, g) in d.iter().enumerate() {
        std::fs::write(ddir.join(format!("udp-queue-{i}.bin")), g).unwrap();
    }
    // The compact stream's datagrams (version 3) seed both targets too.
    let (c, c_dropped) = real_datagrams(true);
    assert_eq!(c_dropped, dropped);
    for (i, g) in c.iter().enumerate() {
        assert_eq!(g[4..6], [0, 3], "compact datagram {i}");
        std::fs::write(ddir.join(format!("udp-queue-compact-{i}.bin")), g).unwrap();
    }
    let compact: Vec<(u8, &[u8])> = c.iter().map(|g| (0, &g[..])).collect();
    // Sender `k` of a crowd: the same datagrams with sender id + k (the
    // receiver knows a sender by its id; the same id from another address
    // would be that sender restarted).
    let renamed: Vec<Vec<Vec<u8>>> = (0..4u32)
        .map(|k| {
            d.iter()
                .map(|g| {
                    let mut g = g.clone();
                    let id = u32::from_be_bytes([g[8], g[9], g[10], g[11]]) + k;
                    g[8..12].copy_from_slice(&id.to_be_bytes());
                    g
                })
                .collect()
        })
        .collect();
    let all: Vec<(u8, &[u8])> = d.iter().map(|g| (0, &g[..])).collect();
    // The last events datagram (then the catalog's last copy and the close
    // datagrams).
    let last = d
        .iter()
        .rposition(|g| g[6] == DatagramKind::Events as u8)
        .unwrap();
    let mut lossy = all.clone();
    lossy.remove(last - 1);
    let mut dup_reorder = all.clone();
    dup_reorder.swap(last, last - 1);
    dup_reorder.insert(last + 1, all[last]);
    let mut two: Vec<(u8, &[u8])> = Vec::new();
    for (g, h) in d.iter().zip(&renamed[1]) {
        two.push((0, &g[..]));
        two.push((1, &h[..]));
    }
    let mut crowd = two.clone();
    crowd.extend(renamed[2].iter().map(|g| (2, &g[..])));
    crowd.extend(renamed[3].iter().map(|g| (3, &g[..])));
    let seeds = [
        ("in-order", all.clone(), 0u64),
        ("compact-in-order", compact, 0),
        ("lost-one", lossy, 1),
        ("dup-reordered", dup_reorder, 0),
        ("two-senders", two, 0),
        ("four-senders", crowd, 0),
    ];
    for (name, parts, lost) in seeds {
        let bytes = frame(&parts);
        std::fs::write(rdir.join(format!("{name}.bin")), &bytes).unwrap();
        // The receiver takes them as intended (same logic as the target).
        let mut core = ReceiverCore::new(ReceiverConfig::default());
        let mut records = 0u64;
        let mut marks = 0u64;
        let mut count = |e: &qtrace::Event| {
            records += 1;
            marks += u64::from(qtrace::wire::unclosed_stream(e).is_some());
        };
        for (who, g) in &parts {
            let from = SocketAddr::from(([127, 0, 0, 1], 40_000 + *who as u16));
            core.handle(from, g, &mut count);
        }
        core.finish(&mut count);
        assert_eq!(marks, 0, "{name}: every stream closed, none is marked");
        let s = core.summary();
        assert_eq!(s.invalid.total(), 0, "{name}");
        assert_eq!(s.lost_datagrams(), lost, "{name}");
        assert!(s.senders.iter().all(|s| s.has_catalog), "{name}");
        assert!(s.senders.iter().all(|s| s.closed), "{name}");
        assert!(s.senders.iter().all(|s| s.accounted() == 40), "{name}");
        assert!(
            s.senders.iter().all(|s| s.sender_dropped == dropped),
            "{name}"
        );
    }
    if std::env::var_os("QTRACE_FUZZ_CORPUS").is_none() {
        std::fs::remove_dir_all(&root).unwrap();
    }
}
