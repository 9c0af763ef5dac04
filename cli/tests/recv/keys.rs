//! Keys on the command line: `qtrace keygen` writes a key only its owner
//! can read, `qtrace recv --key-file` refuses a key file others can read,
//! accepts a keyed stream exactly and rejects (and counts, and logs) an
//! unkeyed sender.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use qtrace::classes::user;
use qtrace::queues::{DatagramsPerPeriod, Udp, UdpParams};
use qtrace::reader::TraceReader;
use qtrace::wire::DatagramKey;
use qtrace::Tracer;

use crate::common::recv::{recv_listening, send_user3};
use crate::common::temp_dirs;

fn keygen(path: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .arg("keygen")
        .arg(path)
        .output()
        .unwrap()
}

#[test]
fn keygen_writes_32_random_bytes_only_its_owner_can_read_and_never_overwrites() {
    let dir = temp_dirs::fresh_dir("keygen", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stream.key");
    let out = keygen(&path);
    assert!(out.status.success(), "{out:?}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 32);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let key = DatagramKey::from_file(&path).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("key id {:#06x}", key.id())),
        "{stdout}"
    );
    // A second key file differs (random bytes).
    let other = dir.join("other.key");
    assert!(keygen(&other).status.success());
    assert_ne!(std::fs::read(&other).unwrap(), bytes);
    // Never over an existing key.
    let again = keygen(&path);
    assert_eq!(again.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("exists: qtrace keygen never overwrites a key"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn recv_refuses_a_key_file_others_can_read_naming_its_mode_and_the_fix() {
    let dir = temp_dirs::fresh_dir("keyfile-mode", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("open.key");
    std::fs::write(&path, [5u8; 32]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args([
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "1",
            "--key-file",
        ])
        .arg(&path)
        .arg("--out")
        .arg(dir.join("r.qtr"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot read the key file {}: its mode is 0644",
            path.display()
        )) && stderr.contains(&format!("run `chmod 600 {}`", path.display())),
        "{stderr}"
    );
    assert!(!dir.join("r.qtr").exists());
    // A key file of the wrong length says how to make one.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&path, b"hunter2").unwrap();
    let e = DatagramKey::from_file(&path).unwrap_err().to_string();
    assert!(
        e.contains(
            "it holds 7 bytes, a key is 32 random bytes: make one with `qtrace keygen FILE`"
        ),
        "{e}"
    );
}

#[test]
fn recv_with_a_key_accepts_the_keyed_stream_and_rejects_an_unkeyed_sender() {
    const N: u64 = 3000;
    let dir = temp_dirs::fresh_dir("recv-keyed", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    let key_path = dir.join("stream.key");
    assert!(keygen(&key_path).status.success());
    let key = DatagramKey::from_file(&key_path).unwrap();
    let out = dir.join("received.qtr");
    let (listen, child) = recv_listening(
        &out,
        &[
            "--key-file",
            key_path.to_str().unwrap(),
            "--count",
            &N.to_string(),
            "--duration",
            "30",
        ],
    );
    // An unkeyed sender first (its 200 events never count), then the
    // keyed one.
    send_user3(listen, 200);
    std::thread::sleep(Duration::from_millis(1100));
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(listen)
                .with_key(key.clone())
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..N {
        tracer.log_event(user::USER0, [i, 0]);
        if i % 50 == 49 {
            std::thread::sleep(Duration::from_micros(300));
        }
    }
    tracer.shutdown().unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout} {stderr}");
    assert!(
        stdout.contains(&format!("received {N} events from 1 sender(s)")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("key {:#06x}", key.id())) && stdout.contains("closed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("unkeyed (this receiver accepts only keyed datagrams)"),
        "{stdout}"
    );
    // The log said so, at most once a second.
    let lines = stderr
        .lines()
        .filter(|l| l.starts_with("qtrace: rejected "))
        .count();
    assert!((1..=3).contains(&lines), "{stderr}");
    assert!(
        stderr.contains("unkeyed (this receiver accepts only keyed datagrams)"),
        "{stderr}"
    );
    let values: Vec<u64> = TraceReader::open(&out)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.id == user::USER0 || e.id == user::USER3)
        .map(|e| e.args[0])
        .collect();
    assert_eq!(values, (0..N).collect::<Vec<_>>());
    // The session file beside the output (FORMAT.md 3.7): one sender id,
    // its stream ended; the next receiver on that output loads it.
    let sessions = dir.join("received.qtr.sessions");
    assert!(
        stderr.contains(&format!(
            "qtrace: keyed sessions kept in {} (0 sender ids from earlier runs)",
            sessions.display()
        )),
        "{stderr}"
    );
    let bytes = std::fs::read(&sessions).unwrap();
    assert_eq!(
        (bytes.len(), &bytes[..4], &bytes[28..32]),
        (48, &b"QTRS"[..], &[0, 0, 0, 1][..])
    );
    let again = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["recv", "--listen", "127.0.0.1:0", "--key-file"])
        .arg(&key_path)
        .arg("--out")
        .arg(&out)
        .args(["--duration", "0.2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(
        stderr.contains("(1 sender ids from earlier runs)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&sessions).unwrap(), bytes);
}

#[test]
fn recv_without_a_key_says_keyed_datagrams_need_one_and_writes_no_hint() {
    let dir = temp_dirs::fresh_dir("recv-nokey", "cli");
    std::fs::create_dir_all(&dir).unwrap();
    let key_path = dir.join("stream.key");
    assert!(keygen(&key_path).status.success());
    let key = DatagramKey::from_file(&key_path).unwrap();
    let out = dir.join("received.qtr");
    let (listen, child) = recv_listening(&out, &["--duration", "1.5"]);
    let tracer = Tracer::new();
    let q = tracer
        .create_queue::<Udp>(
            UdpParams::to(listen)
                .with_key(key)
                .with_period(Duration::from_millis(2))
                .with_datagrams_per_period(DatagramsPerPeriod::All),
        )
        .unwrap();
    tracer.assign_class(user::CLASS, q).unwrap();
    tracer.activate().unwrap();
    for i in 0..100 {
        tracer.log_event(user::USER0, [i, 0]);
    }
    tracer.shutdown().unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout} {stderr}");
    assert!(
        stdout.starts_with("received 0 events from 0 sender(s)"),
        "{stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("  rejected "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.ends_with(" keyed, but this receiver holds no key"),
        "{line}"
    );
    assert!(!stdout.contains("does not hold"), "{stdout}");
    assert!(
        stderr.contains("keyed, but this receiver holds no key"),
        "{stderr}"
    );
    // Nothing but the end records was written: no hint to read it.
    assert!(stdout.contains("  wrote 0 records to "), "{stdout}");
    assert!(!stdout.contains("read it with"), "{stdout}");
}
