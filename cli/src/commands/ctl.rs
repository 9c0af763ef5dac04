//! `qtrace ctl`: control a running tracer through its control endpoint
//! (`qtrace::control::Endpoint`, FORMAT.md §9).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use qtrace::control::{Endpoint, Reply, Request};
use serde_json::Value;

use crate::spine::Exit;

/// Arguments of `qtrace ctl`.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// `list`, or the endpoint: a process id, a name, or a socket path.
    #[arg(value_name = "PID|NAME|list")]
    pub target: String,
    /// The request: status, snapshot PATH [QUEUE], start [QUEUE], stop
    /// [QUEUE], suspend, resume, enable class|event NAME, disable
    /// class|event NAME, rotate QUEUE. QUEUE is a queue's number as status
    /// shows it: start and stop without one switch every queue, snapshot
    /// without one saves the first circular queue; PATH is written by the
    /// traced process (made absolute here).
    #[arg(value_name = "REQUEST")]
    pub request: Vec<String>,
    /// Print the status as the endpoint's JSON object (FORMAT.md 9), not as text.
    #[arg(long)]
    pub json: bool,
}

/// The sockets in this user's endpoint directory ([`Endpoint::dir`]),
/// then in this user's group directories ([`Endpoint::group_dir`]:
/// `/tmp/qtrace-<uid>-g<gid>`), each directory's sorted by name.
fn sockets() -> Vec<PathBuf> {
    let in_dir = |dir: &std::path::Path| {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut all = in_dir(&Endpoint::dir());
    // `group_dir(0)` is `/tmp/qtrace-<uid>-g0`: its name without the `0`
    // is what this user's group directories start with.
    let probe = Endpoint::group_dir(0);
    let (Some(parent), Some(name)) = (probe.parent(), probe.file_name()) else {
        return all;
    };
    let name = name.to_string_lossy();
    let prefix = &name[..name.len() - 1];
    let mut groups: Vec<PathBuf> = std::fs::read_dir(parent)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix(prefix))
                        .is_some_and(|gid| gid.parse::<u32>().is_ok())
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    groups.sort();
    for g in groups {
        all.extend(in_dir(&g));
    }
    all
}

/// The endpoint's socket: `target` is a socket path (it has a `/`), or a
/// process id or a name matched against the sockets of [`Endpoint::dir`]
/// (`<pid>.<name>.sock`). The error says what to do (exit 2).
pub(crate) fn resolve(target: &str) -> Result<PathBuf, String> {
    if target.contains('/') {
        return Ok(PathBuf::from(target));
    }
    let sockets = sockets();
    let found: Vec<&PathBuf> = sockets
        .iter()
        .filter(|p| {
            let n = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (pid, name) = n.split_once('.').unwrap_or((&n, ""));
            pid == target || name == target
        })
        .collect();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!(
            "no control endpoint {target:?} in {} (qtrace ctl list shows them)",
            Endpoint::dir().display()
        )),
        _ => Err(format!(
            "several endpoints match {target:?}: give the process id or the socket path"
        )),
    }
}

/// Runs `qtrace ctl`.
pub fn run(args: CtlArgs) -> Exit {
    if args.target == "list" {
        let sockets = sockets();
        if sockets.is_empty() {
            eprintln!(
                "qtrace: no control endpoint in {} (a program serves one with qtrace::control::Endpoint::bind or Config::with_control, feature control)",
                Endpoint::dir().display()
            );
        }
        for s in &sockets {
            println!("{}", s.display());
        }
        return Exit::Ok;
    }
    let path = match resolve(&args.target) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("qtrace: {e}");
            return Exit::BadInput;
        }
    };
    let words: Vec<&str> = args.request.iter().map(String::as_str).collect();
    // A queue handle, or no request at all: `stop banana` must not stop
    // every queue.
    let queue = |q: &str| q.parse::<u16>().ok();
    let request = match words.as_slice() {
        [] | ["status"] => Request::Status,
        ["snapshot", p] => snapshot(p, None),
        ["snapshot", p, q] if queue(q).is_some() => snapshot(p, queue(q)),
        ["start"] => Request::Start(None),
        ["stop"] => Request::Stop(None),
        ["start", q] if queue(q).is_some() => Request::Start(queue(q)),
        ["stop", q] if queue(q).is_some() => Request::Stop(queue(q)),
        ["suspend"] => Request::Suspend,
        ["resume"] => Request::Resume,
        ["enable", "class", n] => Request::EnableClass(n.to_string()),
        ["disable", "class", n] => Request::DisableClass(n.to_string()),
        ["enable", "event", n] => Request::EnableEvent(n.to_string()),
        ["disable", "event", n] => Request::DisableEvent(n.to_string()),
        ["rotate", q] if queue(q).is_some() => Request::Rotate(queue(q).unwrap_or_default()),
        other => {
            eprintln!("qtrace: unknown request {other:?} (a QUEUE is a number, as status shows it): see qtrace ctl --help");
            return Exit::BadInput;
        }
    };
    match exchange(&path, &request) {
        Ok(Reply::Done) => Exit::Ok,
        Ok(Reply::Status(json)) => {
            match serde_json::from_str::<Value>(&json) {
                Ok(v) if !args.json => print!("{}", status_text(&v, Rates::Off)),
                _ => println!("{json}"),
            }
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

/// A snapshot request: `path` made absolute here (the traced process would
/// resolve a relative one against its own working directory).
fn snapshot(path: &str, queue: Option<u16>) -> Request {
    let p = std::path::absolute(path).unwrap_or_else(|_| PathBuf::from(path));
    Request::Snapshot {
        queue,
        path: p.to_string_lossy().into_owned(),
    }
}

/// Sends `request` to the endpoint at `path` and reads its reply (one
/// connection each).
pub(crate) fn exchange(path: &std::path::Path, request: &Request) -> Result<Reply, String> {
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

/// Per-second rates beside the counters (`qtrace live --ctl`).
pub(crate) enum Rates<'a> {
    /// None (`qtrace ctl status`).
    Off,
    /// The columns, with nothing to compare with yet (`-`).
    First,
    /// Since this earlier status of the same endpoint, over the endpoint's
    /// own clock (`uptime_ns`).
    Since(&'a Value),
}

/// `later - earlier` of counter `key` per second of `dt_ns`, as `N/s`; `-`
/// when there is no interval.
fn rate(later: &Value, earlier: &Value, key: &str, dt_ns: u64) -> String {
    if dt_ns == 0 {
        return "-".into();
    }
    let d = later[key]
        .as_u64()
        .unwrap_or(0)
        .saturating_sub(earlier[key].as_u64().unwrap_or(0));
    format!("{:.0}/s", d as f64 * 1e9 / dt_ns as f64)
}

/// The status reply as text: the tracer, the endpoint's counters, then a
/// line per queue (FORMAT.md 9 gives the JSON's fields); with `rates`, two
/// more columns: events accepted and dropped per second.
pub(crate) fn status_text(v: &Value, rates: Rates<'_>) -> String {
    use std::fmt::Write as _;
    let word = |b: &Value, yes: &'static str, no: &'static str| {
        if b.as_bool().unwrap_or(false) {
            yes
        } else {
            no
        }
    };
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} (pid {}): {}, {}, {}, up {:.1} s",
        v["name"].as_str().unwrap_or("?"),
        n(v, "pid"),
        v["phase"].as_str().unwrap_or("?"),
        word(&v["recording"], "recording", "stopped"),
        word(&v["suspended"], "suspended", "not suspended"),
        n(v, "uptime_ns") as f64 / 1e9
    );
    let e = &v["endpoint"];
    let _ = writeln!(
        out,
        "endpoint: {} connections, {} refused, {} requests, {} errors",
        n(e, "connections"),
        n(e, "refused"),
        n(e, "requests"),
        n(e, "errors")
    );
    let _ = write!(
        out,
        "{:>5}  {:<9}  {:<9}  {:>12}  {:>12}  {:>12}  {:>12}  {:>8}  {:>9}",
        "queue",
        "type",
        "recording",
        "accepted",
        "dropped",
        "overwritten",
        "delivered",
        "queued",
        "io errors"
    );
    if !matches!(rates, Rates::Off) {
        let _ = write!(out, "  {:>12}  {:>12}", "accepted/s", "dropped/s");
    }
    out.push('\n');
    let dt_ns = match rates {
        Rates::Since(p) => n(v, "uptime_ns").saturating_sub(n(p, "uptime_ns")),
        _ => 0,
    };
    for q in v["queues"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let _ = write!(
            out,
            "{:>5}  {:<9}  {:<9}  {:>12}  {:>12}  {:>12}  {:>12}  {:>8}  {:>9}",
            n(q, "queue"),
            q["type"].as_str().unwrap_or("?"),
            word(&q["recording"], "yes", "no"),
            n(q, "accepted"),
            n(q, "dropped"),
            n(q, "overwritten"),
            n(q, "delivered"),
            n(q, "queued"),
            n(q, "io_errors")
        );
        match rates {
            Rates::Off => {}
            Rates::First => {
                let _ = write!(out, "  {:>12}  {:>12}", "-", "-");
            }
            Rates::Since(p) => {
                // The same queue in the earlier status (queues are only
                // ever added, at the end).
                let earlier = p["queues"]
                    .as_array()
                    .and_then(|qs| qs.iter().find(|e| e["queue"] == q["queue"]));
                let (a, d) = match earlier {
                    Some(e) => (rate(q, e, "accepted", dt_ns), rate(q, e, "dropped", dt_ns)),
                    None => ("-".into(), "-".into()),
                };
                let _ = write!(out, "  {a:>12}  {d:>12}");
            }
        }
        out.push('\n');
        if let Some(f) = q.get("filter") {
            let _ = writeln!(
                out,
                "       filter: {} passed, {} rejected ({} by a panic)",
                n(f, "passed"),
                n(f, "rejected"),
                n(f, "panicked")
            );
        }
        if let Some(t) = q.get("trigger") {
            let _ = writeln!(
                out,
                "       trigger: {} seen, {} fired, {} snapshots written, {} suppressed, {} failed{}",
                n(t, "seen"),
                n(t, "fired"),
                n(t, "written"),
                n(t, "suppressed"),
                n(t, "failed"),
                if t["pending"] == true { ", one pending" } else { "" }
            );
        }
        for f in q["files"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let _ = writeln!(out, "       file: {}", f.as_str().unwrap_or("?"));
        }
        if let Some(err) = q["last_error"].as_str() {
            let _ = writeln!(out, "       last error: {err}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter's and a trigger's figures get a line each under their row.
    #[test]
    fn filter_and_trigger_figures_are_lines_of_their_own() {
        let v: Value = serde_json::json!({
            "protocol": 1, "pid": 7, "name": "app", "phase": "active",
            "suspended": false, "recording": true, "uptime_ns": 5,
            "endpoint": {"connections": 1, "refused": 0, "requests": 1, "errors": 0},
            "queues": [
                {"queue": 0, "type": "filter", "recording": true, "accepted": 10,
                 "dropped": 0, "overwritten": 0, "delivered": 10, "queued": 0,
                 "io_errors": 0, "last_error": null, "files": [],
                 "filter": {"passed": 5, "rejected": 5, "panicked": 1}},
                {"queue": 1, "type": "trigger", "recording": true, "accepted": 4,
                 "dropped": 0, "overwritten": 0, "delivered": 4, "queued": 0,
                 "io_errors": 0, "last_error": null, "files": ["/t/s.qtr"],
                 "trigger": {"seen": 4, "fired": 2, "written": 1, "suppressed": 1,
                             "failed": 0, "pending": true}}
            ]
        });
        let text = status_text(&v, Rates::Off);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("       ")).collect();
        assert_eq!(
            lines,
            [
                "       filter: 5 passed, 5 rejected (1 by a panic)",
                "       trigger: 4 seen, 2 fired, 1 snapshots written, 1 suppressed, 0 failed, one pending",
                "       file: /t/s.qtr",
            ]
        );
    }
}
