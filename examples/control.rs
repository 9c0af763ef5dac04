//! A program with the control endpoint on (feature `control`, Linux), to
//! drive from another terminal with `qtrace ctl`: a worker logs `USER0`
//! events into a circular queue of 1 M events (2^20), which it fills first,
//! and a `USER1` event every 1000th; the endpoint is named `control-demo`.
//!
//! Run: `cargo run --release --example control --features control [seconds]`
//! (default 60), then, as the same user, `qtrace ctl list`, `qtrace ctl
//! control-demo status`, `qtrace ctl control-demo disable event user1`,
//! `qtrace ctl control-demo snapshot /tmp/now.qtr` (docs/control.md shows
//! the session).
//!
//! `… --example control --features control -- --measure N`: fills the ring,
//! then times N `snapshot` requests of the full ring through the endpoint's
//! socket, as `qtrace ctl` sends them, and prints the least, median and
//! greatest latency (BENCHMARKS.md).

#[cfg(target_os = "linux")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use qtrace::classes::user;
    use qtrace::control::{Endpoint, Reply, Request};
    use qtrace::queues::{Circular, CircularParams};
    use qtrace::storage::RingStorage;
    use qtrace::Tracer;

    const RING: usize = 1 << 20;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let measure = match args.first().map(String::as_str) {
        Some("--measure") => Some(args.get(1).map_or(Ok(10), |n| n.parse::<usize>())?),
        _ => None,
    };
    let seconds: u64 = match (measure, args.first()) {
        (None, Some(s)) => s.parse()?,
        _ => 60,
    };

    let tracer = Arc::new(Tracer::new());
    let q = tracer.create_queue::<Circular>(
        CircularParams::default()
            .with_capacity(RING)
            .with_ring(RingStorage::Memory),
    )?;
    tracer.assign_class(user::CLASS, q)?;
    tracer.activate()?;
    // A full ring, and some overwritten.
    for i in 0..RING as u64 + 1000 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    let endpoint = Endpoint::bind(Arc::clone(&tracer), "control-demo")?;
    println!(
        "pid {}, endpoint {}",
        std::process::id(),
        endpoint.path().display()
    );

    if let Some(n) = measure {
        let dir = tempfile_dir()?;
        let mut times = Vec::with_capacity(n);
        let mut records = 0;
        for i in 0..n {
            let path = dir.join(format!("snap-{i}.qtr"));
            let request = Request::Snapshot {
                queue: Some(q.0),
                path: path.to_str().ok_or("temporary path not UTF-8")?.into(),
            };
            let started = Instant::now();
            let mut s = std::os::unix::net::UnixStream::connect(endpoint.path())?;
            s.write_all(&request.frame())?;
            let mut len = [0u8; 4];
            s.read_exact(&mut len)?;
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut body)?;
            times.push(started.elapsed());
            match Reply::parse(&body)? {
                Reply::Snapshot(n) => records = n,
                other => return Err(format!("the endpoint answered {other:?}").into()),
            }
            std::fs::remove_file(&path)?;
        }
        std::fs::remove_dir(&dir)?;
        times.sort();
        println!(
            "snapshot of a {RING}-event circular ring ({records} records) through the endpoint, {n} times: least {:.1} ms, median {:.1} ms, greatest {:.1} ms",
            ms(times[0]),
            ms(times[n / 2]),
            ms(times[n - 1])
        );
        return Ok(());
    }

    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                tracer.log_event(user::USER0, [i, 0]);
                if i % 1000 == 0 {
                    tracer.log_event(user::USER1, [i, 0]);
                }
                i += 1;
                if i % 100 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        });
        std::thread::sleep(Duration::from_secs(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    println!(
        "endpoint: {} connections, {} refused, {} requests, {} errors",
        endpoint.connections(),
        endpoint.refused(),
        endpoint.requests(),
        endpoint.errors()
    );
    Ok(())
}

/// A fresh directory for the snapshots, removed after.
#[cfg(target_os = "linux")]
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("qtrace-control-example-{}", std::process::id()));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

#[cfg(target_os = "linux")]
fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the control endpoint is Linux only");
}
