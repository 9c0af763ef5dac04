//! A flight recorder that survives SIGKILL: this program starts itself as a
//! child that logs from 2 threads at full speed into a circular queue kept
//! in a ring file (the default), kills the child with SIGKILL mid-flight,
//! recovers the ring file into an ordinary trace, and says how much of the
//! end of the recording survived.
//!
//! ```text
//! cargo run --release --example crash_recover [OUTPUT_DIR]
//! ```
//!
//! The last line is `recovered N of the last M events`: M is the queue's
//! capacity (or fewer, if the child logged fewer), N how many of the M
//! events logged last are in the recovered trace (at most one per logging
//! thread is missing: the one it was writing when it died, marked in the
//! trace). Then try `qtrace dump OUTPUT_DIR/recovered/queue0-circular.qtr`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use qtrace::classes::{tracer::HOOPS, user};
use qtrace::queues::{Circular, CircularParams};
use qtrace::storage;
use qtrace::storage::RingImage;
use qtrace::{Config, Tracer};

const CAPACITY: usize = 8192;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        child(Path::new(&args[2]));
    }
    let dir = args.get(1).map(PathBuf::from).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("qtrace-crash-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir)?;

    // 1. The child logs; after 50 ms of logging it gets SIGKILL.
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--child")
        .arg(&dir)
        .stdout(Stdio::piped())
        .spawn()?;
    let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    for line in lines {
        if line? == "logging" {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    child.kill()?; // SIGKILL: no destructor, no shutdown, no panic hook
    let status = child.wait()?;
    println!("child {}: {status}", child.id());

    // 2. Recover the ring file it left behind.
    let ring = dir.join("queue0-circular.ring");
    let bytes = std::fs::read(&ring)?;
    let rec = storage::recover_bytes(&bytes)?;
    let out = dir.join("recovered").join("queue0-circular.qtr");
    storage::write_trace(&rec, &out)?;
    let c = rec.counts;
    println!("ring file {}: {} bytes", ring.display(), bytes.len());
    println!(
        "logged {} events: {} recovered, {} overwritten, {} dropped, {} unreadable (being written at the kill)",
        c.attempts, c.recovered, c.overwritten, c.dropped, c.unreadable
    );
    println!("recovered trace: {}", out.display());

    // 3. Of the last M events logged, how many are in the trace? Every
    //    record present in the ring file (kept or not) and every slot being
    //    written, newest last (a slot being written is its thread's newest).
    let image = RingImage::parse(&bytes)?;
    let mut logged: Vec<(u64, bool)> = Vec::new(); // (time, in the trace?)
    let kept: std::collections::HashSet<(u64, u64)> = rec
        .events
        .iter()
        .filter(|e| e.id != HOOPS)
        .map(|e| (e.args[0], e.args[1]))
        .collect();
    for r in &image.rings {
        for (_, e) in &r.records {
            logged.push((e.time, kept.contains(&(e.args[0], e.args[1]))));
        }
        logged.extend(r.unreadable.iter().map(|_| (u64::MAX, false)));
    }
    logged.sort_unstable();
    let m = CAPACITY.min(c.attempts as usize);
    let n = logged[logged.len() - m..].iter().filter(|l| l.1).count();
    println!("recovered {n} of the last {m} events");
    Ok(())
}

/// The child: a circular queue in a ring file, two threads logging until
/// killed.
fn child(dir: &Path) -> ! {
    let tracer: &'static Tracer = Box::leak(Box::new(Tracer::with_config(
        Config::default().with_output_dir(dir),
    )));
    let q = tracer
        .create_queue::<Circular>(CircularParams::default().with_capacity(CAPACITY))
        .expect("queue");
    tracer.assign_event(user::USER0, q).expect("assign");
    tracer.activate().expect("phase 2");
    for t in 1..=2u64 {
        std::thread::spawn(move || {
            for i in 0.. {
                tracer.log_event(user::USER0, [t, i]);
            }
        });
    }
    println!("logging");
    loop {
        std::thread::park();
    }
}
