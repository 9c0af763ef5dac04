//! Sender churn against one receiver: SENDERS senders (a socket and a
//! sender id each), each sending RATE events a second for SECONDS (one
//! datagram of RATE/10 events every 100 ms, made by hand with the wire
//! encoders), then its close datagram three times. More senders than the
//! receiver's table (`--max-senders`, 16) and parked senders (1,024) hold:
//! what RELIABILITY.md's memory bound is measured with. Prints what was
//! logged, for the receiver's summary and store to be checked against.
//!
//! ```text
//! qtrace recv --listen 127.0.0.1:5510 --store store --duration 20
//! cargo run --release --example udp_churn 127.0.0.1:5510 1100 200 14
//! ```

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use qtrace::classes::user;
use qtrace::wire::datagram::{encode_close, encode_events, CloseCounts, DEFAULT_MAX_DATAGRAM_LEN};
use qtrace::Event;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let to: SocketAddr = args.first().map_or("127.0.0.1:5510", |s| s).parse()?;
    let senders: u32 = args.get(1).map_or(Ok(1100), |s| s.parse())?;
    let rate: u64 = args.get(2).map_or(Ok(200), |s| s.parse())?;
    let secs: u64 = args.get(3).map_or(Ok(14), |s| s.parse())?;
    let per = (rate / 10).max(1);
    let sockets: Vec<UdpSocket> = (0..senders)
        .map(|_| UdpSocket::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    let mut buf = vec![0u8; DEFAULT_MAX_DATAGRAM_LEN];
    let start = Instant::now();
    let mut seq = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        let tick = start + Duration::from_millis(100 * (seq + 1));
        for (k, s) in sockets.iter().enumerate() {
            let first = seq * per;
            let t = start.elapsed().as_nanos() as u64;
            let events: Vec<Event> = (first..first + per)
                .map(|i| Event::new(t, user::USER0, 0, [k as u64, i]))
                .collect();
            let (len, _) = encode_events(&mut buf, 1 + k as u32, seq, 0, first, &events)?;
            s.send_to(&buf[..len], to)?;
        }
        seq += 1;
        if let Some(wait) = tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let sent = seq * per;
    for copy in 0..3 {
        for (k, s) in sockets.iter().enumerate() {
            let counts = CloseCounts {
                logged: sent,
                unsent: 0,
            };
            let len = encode_close(&mut buf, 1 + k as u32, seq, 0, sent, counts)?;
            s.send_to(&buf[..len], to)?;
        }
        if copy < 2 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    println!(
        "{senders} senders, {sent} events each, {} events logged in {:.1} s",
        sent * senders as u64,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
