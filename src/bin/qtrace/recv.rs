//! `qtrace recv --listen ADDR --out FILE [--duration S | --count N]`: receive
//! the datagrams of UDP queues and write them to a trace file (S.Ha.R.K.'s
//! `udpdump`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use qtrace::receiver::{default_listen_addr, Receiver, RunLimit};

/// Arguments of `qtrace recv`.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// Address to listen on (loopback by default; use 0.0.0.0:PORT or
    /// [::]:PORT to accept senders on other machines).
    #[arg(long, value_name = "ADDR", default_value_t = default_listen_addr())]
    pub listen: SocketAddr,
    /// Trace file to write (its directory is created).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S", conflicts_with = "count")]
    pub duration: Option<f64>,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// Runs `qtrace recv`.
pub fn run(args: RecvArgs) -> ExitCode {
    let mut limit = RunLimit::default();
    if let Some(s) = args.duration {
        if !(s.is_finite() && s > 0.0) {
            eprintln!("qtrace: --duration must be a positive number of seconds");
            return ExitCode::from(2);
        }
        limit.duration = Some(Duration::from_secs_f64(s));
    }
    limit.events = args.count;
    let receiver = match Receiver::bind(args.listen) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return ExitCode::from(2);
        }
    };
    let until = match (limit.duration, limit.events) {
        (Some(d), _) => format!("for {:.1} s", d.as_secs_f64()),
        (None, Some(n)) => format!("until {n} events"),
        (None, None) => "until interrupted".to_string(),
    };
    eprintln!(
        "qtrace: listening on {} {until}, writing {}",
        receiver.local_addr(),
        args.out.display()
    );
    // Ctrl-C (SIGINT) stops cleanly: the file is written and the summary
    // printed.
    if interrupt::install() {
        let stop = receiver.stopper();
        std::thread::spawn(move || loop {
            if interrupt::happened() {
                stop.stop();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        });
    }
    if limit == RunLimit::default() {
        // No limit: Enter on a terminal stops cleanly too. A closed stdin
        // does not stop it.
        let stop = receiver.stopper();
        eprintln!("qtrace: press Enter or Ctrl-C to stop");
        std::thread::spawn(move || {
            let mut line = String::new();
            if matches!(std::io::stdin().read_line(&mut line), Ok(n) if n > 0) {
                stop.stop();
            }
        });
    }
    match receiver.run(&args.out, limit) {
        Ok(summary) => {
            println!("{summary}");
            println!("read it with: qtrace dump {}", args.out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("qtrace: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Ctrl-C: a flag set by a signal handler, polled by a thread.
#[cfg(target_os = "linux")]
mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};

    static INTERRUPTED: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_interrupt(_signal: libc::c_int) {
        INTERRUPTED.store(true, Ordering::SeqCst);
    }

    /// Routes SIGINT to the flag; `false` if the handler could not be set.
    pub fn install() -> bool {
        let handler: extern "C" fn(libc::c_int) = on_interrupt;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe, and stays valid for the life of the process.
        let previous = unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) };
        previous != libc::SIG_ERR
    }

    /// Whether SIGINT arrived.
    pub fn happened() -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }
}

/// Elsewhere Ctrl-C ends the process (the spool file `<out>.part` keeps the
/// records); use --duration, --count or Enter.
#[cfg(not(target_os = "linux"))]
mod interrupt {
    pub fn install() -> bool {
        false
    }
    pub fn happened() -> bool {
        false
    }
}
