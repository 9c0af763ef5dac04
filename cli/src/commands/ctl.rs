//! `qtrace ctl`: control a running tracer through its control endpoint
//! (`qtrace::control::Endpoint`, FORMAT.md §9).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use qtrace::control::{Endpoint, Reply, Request};

use crate::spine::Exit;

/// Arguments of `qtrace ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// `list`, or the endpoint: a process id, a name, or a socket path.
    #[arg(value_name = "PID|NAME|list")]
    pub target: String,
    /// The request: status, snapshot PATH, start [QUEUE], stop [QUEUE],
    /// suspend, resume, enable class|event NAME, disable class|event NAME,
    /// rotate QUEUE.
    #[arg(value_name = "REQUEST")]
    pub request: Vec<String>,
    /// Print the status (or the reply) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `qtrace ctl`.
pub fn run(args: CtlArgs) -> Exit {
    let dir = Endpoint::dir();
    let sockets: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                .collect()
        })
        .unwrap_or_default();
    if args.target == "list" {
        for s in &sockets {
            println!("{}", s.display());
        }
        return Exit::Ok;
    }
    let path = if args.target.contains('/') {
        PathBuf::from(&args.target)
    } else {
        let found: Vec<&PathBuf> = sockets
            .iter()
            .filter(|p| {
                let n = p
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let (pid, name) = n.split_once('.').unwrap_or((&n, ""));
                pid == args.target || name == args.target
            })
            .collect();
        match found.as_slice() {
            [one] => (*one).clone(),
            [] => {
                eprintln!(
                    "qtrace: no control endpoint {:?} in {} (qtrace ctl list shows them)",
                    args.target,
                    dir.display()
                );
                return Exit::BadInput;
            }
            _ => {
                eprintln!(
                    "qtrace: several endpoints match {:?}: give the process id or the socket path",
                    args.target
                );
                return Exit::BadInput;
            }
        }
    };
    let words: Vec<&str> = args.request.iter().map(String::as_str).collect();
    let queue = |w: Option<&&str>| w.and_then(|q| q.parse::<u16>().ok());
    let request = match words.as_slice() {
        [] | ["status"] => Request::Status,
        ["snapshot", p] => {
            let p = std::path::absolute(p).unwrap_or_else(|_| PathBuf::from(p));
            Request::Snapshot {
                queue: None,
                path: p.to_string_lossy().into_owned(),
            }
        }
        ["start", rest @ ..] => Request::Start(queue(rest.first())),
        ["stop", rest @ ..] => Request::Stop(queue(rest.first())),
        ["suspend"] => Request::Suspend,
        ["resume"] => Request::Resume,
        ["enable", "class", n] => Request::EnableClass(n.to_string()),
        ["disable", "class", n] => Request::DisableClass(n.to_string()),
        ["enable", "event", n] => Request::EnableEvent(n.to_string()),
        ["disable", "event", n] => Request::DisableEvent(n.to_string()),
        ["rotate", q] if q.parse::<u16>().is_ok() => Request::Rotate(q.parse().unwrap_or(0)),
        other => {
            eprintln!("qtrace: unknown request {other:?}: see qtrace ctl --help");
            return Exit::BadInput;
        }
    };
    match exchange(&path, &request) {
        Ok(Reply::Done) => Exit::Ok,
        Ok(Reply::Status(json)) => {
            println!("{json}");
            Exit::Ok
        }
        Ok(Reply::Snapshot(n)) => {
            println!("snapshot written: {n} records");
            Exit::Ok
        }
        Ok(Reply::Error(code, m)) => {
            eprintln!("qtrace: {code}: {m}");
            Exit::Failed
        }
        Ok(other) => {
            eprintln!("qtrace: unexpected reply {other:?}");
            Exit::Failed
        }
        Err(e) => {
            eprintln!("qtrace: {}: {e}", path.display());
            Exit::Failed
        }
    }
}

fn exchange(path: &std::path::Path, request: &Request) -> Result<Reply, String> {
    let mut s = UnixStream::connect(path).map_err(|e| format!("cannot connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    s.write_all(&request.frame()).map_err(|e| e.to_string())?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len)
        .map_err(|e| format!("no reply: {e}"))?;
    let len = u32::from_be_bytes(len) as usize;
    if len > Reply::MAX_LEN {
        return Err(format!("a reply of {len} bytes"));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)
        .map_err(|e| format!("a reply cut short: {e}"))?;
    Reply::parse(&body)
}
