//! `qtrace convert` and `qtrace plot` write beside the output and rename it
//! there once whole (issue 23, item 6): a conversion killed part way leaves
//! nothing at the path the user named (only `.NAME.partial-PID` beside it,
//! which the next conversion to that name removes);
//! one that fails removes what it wrote; one that succeeds leaves nothing
//! else behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use qtrace::classes::{system, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::wire::{create_trace_file, TraceHeader};
use qtrace::Event;

use crate::common::temp_dirs;

/// A trace of `n` schedule events over 8 sources.
fn big_trace(path: &Path, n: u64) {
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let mut w = create_trace_file(path, &header).unwrap();
    let events: Vec<Event> = (0..n)
        .map(|i| Event::new(i * 10, system::SCHEDULE, (i % 8) as u32, [i % 97, 0]))
        .collect();
    w.write_events(&events).unwrap();
    w.finish().unwrap();
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Starts `qtrace ARGS…`, waits until `partial` holds data, kills it with
/// SIGKILL; returns whether it was killed while still converting.
fn kill_part_way(args: &[&std::ffi::OsStr], partial: &dyn Fn(u32) -> PathBuf) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let p = partial(child.id());
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let has_data = match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => std::fs::read_dir(&p).map_or(0, |d| d.count()) > 1,
            Ok(m) => m.len() > 0,
            Err(_) => false,
        };
        if has_data {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no output at {p:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    true
}

#[test]
fn a_killed_conversion_leaves_nothing_at_the_output_path() {
    let dir = temp_dirs::created_dir("beside", "killed");
    let trace = dir.join("big.qtr");
    big_trace(&trace, 2_000_000);
    for (to, name) in [
        ("chrome", "out.json"),
        ("perfetto", "out.pftrace"),
        ("ctf", "ctf"),
    ] {
        let out = dir.join(name);
        let args: Vec<&std::ffi::OsStr> = vec![
            "convert".as_ref(),
            "--to".as_ref(),
            to.as_ref(),
            trace.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
        ];
        let partial = |pid: u32| dir.join(format!(".{name}.partial-{pid}"));
        assert!(
            kill_part_way(&args, &partial),
            "{to}: the conversion ended before it could be killed; use a larger trace"
        );
        assert!(!out.exists(), "{to}: a partial output at the final path");
        let left = names(&dir);
        let stale: Vec<&String> = left
            .iter()
            .filter(|n| n.starts_with(&format!(".{name}.partial-")))
            .collect();
        assert_eq!(stale.len(), 1, "{to}: {left:?}");
        // The next conversion to the same name removes the killed run's
        // partial output and says so; its own output is whole.
        let again = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(&args)
            .output()
            .unwrap();
        assert!(again.status.success(), "{to}: {again:?}");
        let said = String::from_utf8_lossy(&again.stderr);
        assert!(
            said.contains(&format!(
                "removed {}: the partial output of an earlier run that is gone (killed?)",
                dir.join(stale[0]).display()
            )),
            "{to}: {said}"
        );
        assert!(out.exists(), "{to}");
        let left = names(&dir);
        assert!(
            !left.iter().any(|n| n.contains(".partial-")),
            "{to}: {left:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_finished_conversion_is_at_its_path_and_a_failed_one_leaves_nothing() {
    let dir = temp_dirs::created_dir("beside", "done");
    let trace = dir.join("t.qtr");
    big_trace(&trace, 1000);
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    for (to, out) in [
        ("chrome", "t.json"),
        ("perfetto", "t.pftrace"),
        ("ctf", "ctf"),
    ] {
        let o = run(&["convert", "--to", to, "t.qtr", "--out", out]);
        assert!(o.status.success(), "{to}: {o:?}");
    }
    // Split outputs, and plot.
    let o = run(&[
        "convert", "--to", "chrome", "t.qtr", "--out", "s.json", "--split", "4us",
    ]);
    assert!(o.status.success(), "{o:?}");
    let o = run(&["plot", "t.qtr", "--out", "t.svg"]);
    assert!(o.status.success(), "{o:?}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("t.json")).unwrap()).unwrap();
    assert!(json.is_object() || json.is_array());
    assert!(dir.join("ctf").join("metadata").exists());
    assert_eq!(
        names(&dir),
        [
            "ctf",
            "s-0000.json",
            "s-0001.json",
            "s-0002.json",
            "t.json",
            "t.pftrace",
            "t.qtr",
            "t.svg"
        ]
    );
    // A CTF directory that is not empty: refused, nothing written or left.
    let o = run(&["convert", "--to", "ctf", "t.qtr", "--out", "ctf"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the directory is not empty"),
        "{o:?}"
    );
    // An input that stops being readable part way (a body cut to a partial
    // record is read up to there; a bad record size fails the reader at
    // once): nothing at the output path.
    std::fs::write(dir.join("bad.qtr"), b"not a trace at all, not even close").unwrap();
    let o = run(&["convert", "--to", "chrome", "bad.qtr", "--out", "bad.json"]);
    assert!(!o.status.success());
    assert!(!dir.join("bad.json").exists());
    assert!(
        !names(&dir).iter().any(|n| n.contains(".partial-")),
        "{:?}",
        names(&dir)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fifo_or_device_output_is_written_in_place_never_replaced() {
    // `convert --out /dev/null` renamed a file over /dev/null (as root, the
    // device node became a regular file that later runs wrote into). A FIFO
    // stands for any device here: written in place, still a FIFO after.
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let dir = temp_dirs::created_dir("beside", "fifo");
    let trace = dir.join("t.qtr");
    big_trace(&trace, 1000);
    for (to, name) in [("perfetto", "p.fifo"), ("chrome", "c.fifo")] {
        let fifo = dir.join(name);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // The reader reports through a channel: were the FIFO replaced, its
        // open would block for ever, and the wait below fails instead.
        let (read, got) = std::sync::mpsc::channel();
        {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                std::fs::File::open(&fifo)
                    .unwrap()
                    .read_to_end(&mut bytes)
                    .unwrap();
                let _ = read.send(bytes.len());
            });
        }
        let o = Command::new(env!("CARGO_BIN_EXE_qtrace"))
            .args(["convert", "--to", to])
            .arg(&trace)
            .arg("--out")
            .arg(&fifo)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{to}: {o:?}");
        let n = got
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{to}: nothing came through the FIFO in 30 s"));
        assert!(n > 0, "{to}: nothing came through the FIFO");
        let meta = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(meta.file_type().is_fifo(), "{to}: the FIFO was replaced");
    }
    assert!(
        names(&dir).iter().all(|n| !n.contains("partial")),
        "{:?}",
        names(&dir)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
