//! `qtrace recv --rtt-qmp SOCKET --elf FIRMWARE`: a firmware's RTT ring
//! (`qtrace_core::stream::RttRing`, FORMAT.md 10.7) read from guest RAM
//! through QEMU's QMP socket while the guest runs, as one sender in the
//! receiver's machinery (the frames go through `--serial`'s decoder).
//!
//! Each poll is QMP `pmemsave` commands, in this order: the ring's 64-byte
//! control block (*committed*), its data (only the part a take can return:
//! from the next byte not taken, or *committed* − `SizeOfBuffer` when that
//! is later, to *committed*; the whole buffer when that part wraps), the
//! control block again (*reserved*): the reader's rule of FORMAT.md 10.7.
//! Polling without pause (`--poll-ms 0`) the block read last also serves
//! as the next poll's first: two reads a poll.
//! `pmemsave` writes into a file of a private temporary folder, which is
//! read back (QEMU has no command that returns raw memory;
//! `human-monitor-command` `xp` prints it as text: 2–5 times slower than
//! `pmemsave` for 4 KiB here, though faster for 64 bytes: BENCHMARKS.md).

use std::fmt;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qtrace::receiver::{Receiver, ReceiverConfig};
use qtrace_core::stream::{RttCursor, RttError, RttHeader, RTT_HEADER_LEN};

use super::serial::{Frames, StreamCounts};

/// The ELF symbol of the control block: SEGGER's name, which RTT tools
/// (probe-rs, J-Link) look for too.
pub const SYMBOL: &str = "_SEGGER_RTT";

/// The largest ring read (its data are held in memory twice): 16 MiB.
const MAX_SIZE: u32 = 1 << 24;

/// How long the receiver waits for the firmware to initialise the ring
/// (its id to appear) before giving up.
const WAIT_FOR_ID: Duration = Duration::from_secs(10);

/// Why `--rtt-qmp` cannot start or go on. Each message names the flag
/// whose value is at fault and what to do.
#[derive(Debug)]
pub enum RttQmpError {
    /// The QMP socket cannot be connected to.
    NoSocket { path: PathBuf, error: io::Error },
    /// The socket does not speak QMP, or a command failed.
    Qmp { path: PathBuf, what: String },
    /// The firmware's ELF file cannot be read or parsed.
    Elf { path: PathBuf, what: String },
    /// The ELF file has no `_SEGGER_RTT` symbol.
    NoSymbol { path: PathBuf },
    /// What is at the address is not (or never became) a qtrace RTT ring.
    BadBlock {
        addr: u32,
        from: &'static str,
        error: RttError,
    },
    /// The control block says its ring is larger than `MAX_SIZE`.
    TooLarge { addr: u32, size: u32 },
    /// `--addr` is not a 32-bit address.
    BadAddr(String),
    /// The temporary folder `pmemsave` writes into.
    Temp { path: PathBuf, error: io::Error },
}

impl fmt::Display for RttQmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RttQmpError::NoSocket { path, error } => write!(
                f,
                "--rtt-qmp {}: cannot connect ({error}): start QEMU with -qmp unix:{},server,nowait and give that path",
                path.display(),
                path.display()
            ),
            RttQmpError::Qmp { path, what } => {
                write!(f, "--rtt-qmp {}: {what}", path.display())
            }
            RttQmpError::Elf { path, what } => write!(
                f,
                "--elf {}: {what}; give the firmware's ELF file (the one QEMU runs with -kernel), or the ring's address with --addr",
                path.display()
            ),
            RttQmpError::NoSymbol { path } => write!(
                f,
                "--elf {}: no symbol {SYMBOL}: declare the ring `#[no_mangle] static {SYMBOL}: qtrace_core::stream::RttRing<N>`, or give its address with --addr",
                path.display()
            ),
            RttQmpError::BadBlock { addr, from, error } => write!(
                f,
                "the RTT control block at {addr:#010x} ({from}): {error}"
            ),
            RttQmpError::TooLarge { addr, size } => write!(
                f,
                "the RTT control block at {addr:#010x} says its ring holds {size} bytes; --rtt-qmp reads rings of at most {MAX_SIZE} bytes (16 MiB): use a smaller RttRing<N>"
            ),
            RttQmpError::BadAddr(s) => write!(
                f,
                "--addr {s}: give the control block's address as 0x and hex digits (0x20000400) or in decimal, below 2^32"
            ),
            RttQmpError::Temp { path, error } => write!(
                f,
                "cannot create the folder {} that QMP's pmemsave writes into ({error}): set TMPDIR to a writable folder",
                path.display()
            ),
        }
    }
}

impl std::error::Error for RttQmpError {}

/// Where the control block is: `--elf FILE`'s symbol or `--addr ADDR`.
#[derive(Debug)]
pub enum Locate<'a> {
    Elf(&'a Path),
    Addr(&'a str),
}

/// The address of `_SEGGER_RTT` in the ELF image `data`.
fn symbol_in(data: &[u8]) -> Result<Option<u32>, String> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
    Ok(file
        .symbols()
        .find(|s| s.name() == Ok(SYMBOL))
        .and_then(|s| u32::try_from(s.address()).ok()))
}

/// Parses `--addr`: `0x` and hex digits, or decimal.
fn parse_addr(s: &str) -> Option<u32> {
    let t = s.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(&hex.replace('_', ""), 16).ok(),
        None => t.parse().ok(),
    }
}

/// The control block's address and where it came from (for messages).
fn locate(at: &Locate<'_>) -> Result<(u32, &'static str), RttQmpError> {
    match at {
        Locate::Elf(path) => {
            let data = std::fs::read(path).map_err(|e| RttQmpError::Elf {
                path: path.to_path_buf(),
                what: e.to_string(),
            })?;
            match symbol_in(&data) {
                Ok(Some(a)) => Ok((a, "symbol _SEGGER_RTT of --elf")),
                Ok(None) => Err(RttQmpError::NoSymbol {
                    path: path.to_path_buf(),
                }),
                Err(what) => Err(RttQmpError::Elf {
                    path: path.to_path_buf(),
                    what,
                }),
            }
        }
        Locate::Addr(s) => parse_addr(s)
            .map(|a| (a, "--addr"))
            .ok_or_else(|| RttQmpError::BadAddr(s.to_string())),
    }
}

/// A QMP connection that reads guest memory.
struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    dir: PathBuf,
    file: PathBuf,
    line: String,
    reads: u64,
}

impl Qmp {
    fn connect(path: &Path) -> Result<Self, RttQmpError> {
        let stream = UnixStream::connect(path).map_err(|error| RttQmpError::NoSocket {
            path: path.to_path_buf(),
            error,
        })?;
        let qmp_err = |what: String| RttQmpError::Qmp {
            path: path.to_path_buf(),
            what,
        };
        let writer = stream
            .try_clone()
            .map_err(|e| qmp_err(format!("cannot use the socket: {e}")))?;
        // A silent socket is not QEMU's monitor.
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let dir = std::env::temp_dir().join(format!(
            "qtrace-rtt-{}-{:016x}",
            std::process::id(),
            rand_word()
        ));
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|error| RttQmpError::Temp {
                    path: dir.clone(),
                    error,
                })?;
        }
        let file = dir.join("mem");
        let mut q = Qmp {
            reader: BufReader::new(stream),
            writer,
            dir,
            file,
            line: String::new(),
            reads: 0,
        };
        let greeting = q.next_message().map_err(|e| {
            qmp_err(format!(
                "no QMP greeting ({e}): is this QEMU's -qmp socket (not -monitor, not -serial)?"
            ))
        })?;
        if greeting.get("QMP").is_none() {
            return Err(qmp_err(
                "the socket's first message is not a QMP greeting: is this QEMU's -qmp socket?"
                    .into(),
            ));
        }
        q.execute(r#"{"execute":"qmp_capabilities"}"#)
            .map_err(|e| qmp_err(format!("qmp_capabilities failed: {e}")))?;
        Ok(q)
    }

    /// The next message that is not an asynchronous event.
    fn next_message(&mut self) -> io::Result<serde_json::Value> {
        loop {
            self.line.clear();
            if self.reader.read_line(&mut self.line)? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "QEMU closed the QMP socket (the guest exited?)",
                ));
            }
            let v: serde_json::Value = serde_json::from_str(self.line.trim())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if v.get("event").is_none() {
                return Ok(v);
            }
        }
    }

    /// Sends one command and waits for its reply.
    fn execute(&mut self, command: &str) -> io::Result<()> {
        self.writer.write_all(command.as_bytes())?;
        self.writer.write_all(b"\n")?;
        let reply = self.next_message()?;
        if reply.get("return").is_some() {
            return Ok(());
        }
        let why = reply
            .get("error")
            .and_then(|e| e.get("desc"))
            .and_then(|d| d.as_str())
            .unwrap_or("an unexpected reply");
        Err(io::Error::other(format!("QEMU answered: {why}")))
    }

    /// `len` bytes of guest physical memory at `addr`.
    fn read(&mut self, addr: u32, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let file = self.file.to_str().ok_or_else(|| {
            io::Error::other("the temporary folder's path is not UTF-8: set TMPDIR")
        })?;
        let cmd = serde_json::json!({
            "execute": "pmemsave",
            "arguments": { "val": addr, "size": len, "filename": file },
        });
        self.execute(&cmd.to_string())?;
        self.reads += 1;
        out.clear();
        let mut f = std::fs::File::open(&self.file)?;
        io::Read::read_to_end(&mut f, out)?;
        if out.len() != len {
            return Err(io::Error::other(format!(
                "pmemsave wrote {} bytes, {len} asked",
                out.len()
            )));
        }
        Ok(())
    }
}

impl Drop for Qmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A word that differs between runs (the temporary folder's name; its
/// mode 700 and create-or-fail make it safe, this only avoids a clash).
fn rand_word() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

/// What to do once a ring's counters turned impossible mid-run.
const AGAIN: &str = "The trace received so far is written; to receive the new run, start qtrace recv again (an existing --out file is moved aside to <stem>-previous.qtr) or give it a new --out";

/// The error for a control block at `addr` whose `committed` went back
/// from `seen` (read before) to `now` during the run.
fn went_back(addr: u32, seen: u32, now: u32) -> String {
    format!(
        "the RTT control block at {addr:#010x}: its count of bytes written (committed) went back from {seen} to {now} during the run, which a running firmware never does: the firmware restarted (a reset initialises the ring again), or its RAM was overwritten. {AGAIN}"
    )
}

/// A receiver fed by the RTT ring at `at`, read through the QMP socket
/// `socket` every `poll` (and as fast as QEMU answers with a zero
/// interval), the stream's counts, and what to call it.
///
/// # Errors
///
/// [`RttQmpError`]: no socket, not QMP, no ELF or symbol, a control block
/// that is not a qtrace ring (or no ring initialised within 10 s).
pub fn receiver(
    socket: &Path,
    at: Locate<'_>,
    poll: Duration,
    config: ReceiverConfig,
) -> Result<(Receiver, Arc<Mutex<StreamCounts>>, String), RttQmpError> {
    let (addr, from) = locate(&at)?;
    let mut qmp = Qmp::connect(socket)?;
    let bad = |error: RttError| RttQmpError::BadBlock { addr, from, error };
    let qmp_err = |e: io::Error| RttQmpError::Qmp {
        path: socket.to_path_buf(),
        what: format!("pmemsave failed: {e}"),
    };
    // The firmware may not have initialised the ring yet: wait for its id.
    let mut block = Vec::with_capacity(RTT_HEADER_LEN);
    let started = Instant::now();
    let header = loop {
        qmp.read(addr, RTT_HEADER_LEN, &mut block)
            .map_err(qmp_err)?;
        match RttHeader::parse(&block) {
            Ok(h) => break h,
            Err(RttError::NoId) if started.elapsed() < WAIT_FOR_ID => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(bad(e)),
        }
    };
    if header.size > MAX_SIZE {
        return Err(RttQmpError::TooLarge {
            addr,
            size: header.size,
        });
    }
    let counts = Arc::new(Mutex::new(StreamCounts::default()));
    let shared = Arc::clone(&counts);
    let mut frames = Frames::new(Arc::clone(&counts));
    let mut cursor = RttCursor::new();
    let mut committed = header.committed;
    let mut data = vec![0u8; header.size as usize];
    let mut piece = Vec::with_capacity(header.size as usize);
    let mut over = false;
    let name = format!(
        "the RTT ring at {addr:#010x} ({from}) through QMP {}",
        socket.display()
    );
    let mut poll_once = move |out: &mut dyn FnMut(&[u8])| -> io::Result<bool> {
        if over {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let invalid = |e: RttError| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the RTT control block at {addr:#010x}: {e}: the firmware restarted, or its RAM was overwritten. {AGAIN}"),
            )
        };
        // `committed` (every byte the firmware has written) never goes
        // back while it runs: behind the last one read, the ring was
        // started again (a reset) or overwritten.
        let ahead_of = |seen: u32, h: &RttHeader| {
            if h.committed.wrapping_sub(seen) >= 1 << 31 {
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    went_back(addr, seen, h.committed),
                ))
            } else {
                Ok(())
            }
        };
        let same = |h: &RttHeader| {
            if (h.buffer, h.size) == (header.buffer, header.size) {
                Ok(())
            } else {
                Err(invalid(RttError::BadSize(h.size)))
            }
        };
        if !poll.is_zero() {
            // After a pause the last block read is old: read it again
            // right before the data, or the bytes the writer wrote during
            // the pause would all count as possibly overwritten.
            std::thread::sleep(poll);
            qmp.read(addr, RTT_HEADER_LEN, &mut block)?;
            let before = RttHeader::parse(&block).map_err(invalid)?;
            same(&before)?;
            ahead_of(committed, &before)?;
            committed = before.committed;
        }
        // Only the bytes this poll may take are read: from the oldest the
        // ring still holds (or the next untaken) to `committed`, in one
        // read unless they wrap; the rest of `data` is never taken.
        let size = header.size;
        let oldest = committed.wrapping_sub(committed.min(size));
        let lo = match cursor.next() {
            Some(n) if committed.wrapping_sub(n) <= size => n,
            Some(_) => committed.wrapping_sub(size),
            None => oldest,
        };
        let (at, len) = (lo & (size - 1), committed.wrapping_sub(lo));
        if len > size {
            // `committed` behind the last take: the take refuses it.
        } else if at + len <= size {
            if len > 0 {
                qmp.read(header.buffer.wrapping_add(at), len as usize, &mut piece)?;
                data[at as usize..(at + len) as usize].copy_from_slice(&piece);
            }
        } else {
            qmp.read(header.buffer, size as usize, &mut piece)?;
            data.copy_from_slice(&piece);
        }
        qmp.read(addr, RTT_HEADER_LEN, &mut block)?;
        let now = RttHeader::parse(&block).map_err(invalid)?;
        same(&now)?;
        ahead_of(committed, &now)?;
        let take = cursor
            .take(committed, &data, now.reserved)
            .map_err(invalid)?;
        committed = now.committed;
        if take.lost > 0 {
            frames.resync();
        }
        let fed = !(take.first.is_empty() && take.second.is_empty());
        let ended = frames.feed(take.first, out) | frames.feed(take.second, out);
        over = ended;
        let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
        c.overwritten = cursor.lost();
        c.reads = qmp.reads;
        Ok(fed)
    };
    // QEMU gone (the guest exited, or QEMU was killed) ends the stream
    // like the end of a file: what was received is written, and a stream
    // without its end frame is marked unclosed.
    let feed = move |out: &mut dyn FnMut(&[u8])| match poll_once(out) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
            ) =>
        {
            Err(io::ErrorKind::UnexpectedEof.into())
        }
        r => r,
    };
    let unspecified = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    Ok((
        Receiver::from_feed(config, unspecified, Box::new(feed)),
        shared,
        name,
    ))
}
