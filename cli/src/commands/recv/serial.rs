//! `qtrace recv --serial PATH|tcp:HOST:PORT|unix:PATH`: a firmware's byte
//! stream (FORMAT.md 10) — a tty, a pty, a file, a FIFO, QEMU's `-serial`
//! chardevs — as one sender in the receiver's machinery: its frames are
//! resynchronised at every delimiter and checked (COBS, CRC-32), each chunk
//! becomes the events datagram it stands for and the catalog and end
//! frames are the datagrams they carry, so `--out`, `--store`, `--live`
//! and the loss summary work unchanged.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{self, Receiver as Channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use qtrace::receiver::{Receiver, ReceiverConfig};
use qtrace_core::compact::Chunk;
use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};
use qtrace_core::encode::record;
use qtrace_core::stream::{DecoderCounts, FrameDecoder, FrameKind, MAX_CHUNK_EVENTS};

/// The longest frame accepted (decoded): a chunk of 64 KiB and its kind and
/// CRC, or a catalog fragment of as much.
const MAX_FRAME: usize = 65_536 + 64;

/// What the byte stream brought besides the datagrams (shared with the
/// feed, which the receiver owns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamCounts {
    /// The frame decoder's counts (bytes, skipped, good and bad frames).
    pub decoder: DecoderCounts,
    /// Chunk frames whose chunk does not decode (their events are counted
    /// lost from the next chunk's first event).
    pub corrupt_chunks: u64,
    /// Whether the end frame arrived.
    pub ended: bool,
    /// `--rtt-qmp`: the stream bytes the firmware overwrote before a poll
    /// could take them (their events are counted lost by the next chunk's
    /// first event).
    pub overwritten: u64,
    /// `--rtt-qmp`: guest memory reads (QMP `pmemsave` commands).
    pub reads: u64,
}

impl StreamCounts {
    /// One line for the summary.
    pub fn describe(&self) -> String {
        let d = &self.decoder;
        format!(
            "byte stream: {} bytes, {} frames, {} bad frames and {} corrupt chunks skipped, \
             {} bytes before the first delimiter{}{}",
            d.bytes,
            d.frames,
            d.bad,
            self.corrupt_chunks,
            d.skipped,
            if self.reads > 0 {
                format!(
                    "; {} bytes overwritten in the ring before a read, {} memory reads",
                    self.overwritten, self.reads
                )
            } else {
                String::new()
            },
            if self.ended {
                "; the end frame arrived"
            } else {
                "; no end frame"
            }
        )
    }
}

/// Where the bytes come from, as `--serial` names it.
#[derive(Debug, PartialEq, Eq)]
enum Spec {
    Path(String),
    Tcp(String),
    Unix(String),
}

fn parse(spec: &str) -> Result<Spec, String> {
    let empty = |what: &str| format!("--serial {spec}: give {what} after the prefix");
    if let Some(rest) = spec.strip_prefix("tcp:") {
        if rest.is_empty() {
            return Err(empty("HOST:PORT"));
        }
        Ok(Spec::Tcp(rest.to_string()))
    } else if let Some(rest) = spec.strip_prefix("unix:") {
        if rest.is_empty() {
            return Err(empty("a socket path"));
        }
        Ok(Spec::Unix(rest.to_string()))
    } else if spec.is_empty() {
        Err("--serial: give a path (a tty, a pty, a file), tcp:HOST:PORT or unix:PATH".into())
    } else {
        Ok(Spec::Path(spec.to_string()))
    }
}

/// Opens the stream `spec` names; returns its reader, the address its
/// datagrams are said to come from and a description.
fn open(spec: &str) -> Result<(Box<dyn Read + Send>, SocketAddr, String), String> {
    let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
    match parse(spec)? {
        Spec::Path(p) => {
            let f = std::fs::File::open(&p).map_err(|e| format!("--serial {p}: {e}"))?;
            #[cfg(unix)]
            raw_if_tty(&f).map_err(|e| {
                format!("--serial {p}: a terminal, and it cannot be put in raw mode: {e}")
            })?;
            Ok((Box::new(f), unspecified, p))
        }
        Spec::Tcp(hp) => {
            let addrs: Vec<SocketAddr> = hp
                .to_socket_addrs()
                .map_err(|e| format!("--serial tcp:{hp}: {e}"))?
                .collect();
            let s =
                TcpStream::connect(&addrs[..]).map_err(|e| format!("--serial tcp:{hp}: {e}"))?;
            let peer = s.peer_addr().unwrap_or(unspecified);
            Ok((Box::new(s), peer, format!("tcp:{hp}")))
        }
        #[cfg(unix)]
        Spec::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(&p)
                .map_err(|e| format!("--serial unix:{p}: {e}"))?;
            Ok((Box::new(s), unspecified, format!("unix:{p}")))
        }
        #[cfg(not(unix))]
        Spec::Unix(p) => Err(format!(
            "--serial unix:{p}: Unix sockets need a Unix system"
        )),
    }
}

/// Puts a terminal (a serial port, a pty) in raw mode, as `cfmakeraw`
/// does: no line editing, echo, signal characters or CR/NL translation,
/// which would alter, hold back or send back the frames' bytes. Its speed is
/// left as it is (`stty -F PATH 115200` sets a real port's). Anything else
/// is left alone.
#[cfg(unix)]
fn raw_if_tty(f: &std::fs::File) -> io::Result<()> {
    use rustix::termios::{isatty, tcgetattr, tcsetattr, OptionalActions};
    if !isatty(f) {
        return Ok(());
    }
    let mut t = tcgetattr(f)?;
    t.make_raw();
    tcsetattr(f, OptionalActions::Now, &t)?;
    Ok(())
}

/// What the reader thread sends: bytes, or the end of the input.
enum Piece {
    Bytes(Vec<u8>),
    End(Option<io::Error>),
}

/// Reads `r` on a thread of its own (a tty or a socket blocks), in pieces.
fn reader(mut r: Box<dyn Read + Send>) -> Channel<Piece> {
    let (tx, rx) = mpsc::sync_channel(64);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match r.read(&mut buf) {
                Ok(0) => {
                    let _ = tx.send(Piece::End(None));
                    return;
                }
                Ok(n) => {
                    if tx.send(Piece::Bytes(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Piece::End(Some(e)));
                    return;
                }
            }
        }
    });
    rx
}

/// Turns frames into the datagrams they stand for.
pub(super) struct Frames {
    decoder: FrameDecoder<'static>,
    counts: Arc<Mutex<StreamCounts>>,
    datagram: Vec<u8>,
}

impl Frames {
    pub(super) fn new(counts: Arc<Mutex<StreamCounts>>) -> Self {
        let buf: &'static mut [u8] = Box::leak(vec![0u8; MAX_FRAME].into_boxed_slice());
        Frames {
            decoder: FrameDecoder::new(buf),
            counts,
            datagram: Vec::new(),
        }
    }

    /// Drops the frame being decoded: bytes are missing before the next
    /// ones fed.
    pub(super) fn resync(&mut self) {
        self.decoder.resync();
    }

    /// Feeds `bytes`; every datagram goes to `out`. Returns whether the
    /// end frame arrived.
    pub(super) fn feed(&mut self, bytes: &[u8], out: &mut dyn FnMut(&[u8])) -> bool {
        let mut ended = false;
        let mut corrupt = 0;
        let datagram = &mut self.datagram;
        self.decoder.feed(bytes, |frame| {
            let Ok(frame) = frame else { return };
            match frame.kind {
                FrameKind::Catalog => out(frame.body),
                FrameKind::End => {
                    out(frame.body);
                    ended = true;
                }
                FrameKind::Chunk => match chunk_datagram(frame.body, datagram) {
                    Some(()) => out(datagram),
                    None => corrupt += 1,
                },
            }
        });
        let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        c.decoder = self.decoder.counts();
        c.corrupt_chunks += corrupt;
        c.ended |= ended;
        ended
    }
}

/// The version 1 events datagram a chunk stands for (FORMAT.md 10.4): its
/// sender, sequence, dropped and first event, and its records in 32 bytes
/// each. `None` when the chunk does not decode whole, or holds more than
/// the largest events datagram carries (`MAX_CHUNK_EVENTS`, 2,045: a
/// writer other than `Drain`); its events are then counted lost from the
/// next chunk's first event.
fn chunk_datagram(body: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let chunk = Chunk::new_checked(body).ok()?;
    if chunk.len() != body.len() || usize::from(chunk.count()) > MAX_CHUNK_EVENTS {
        return None;
    }
    let h = chunk.header();
    let header = DatagramHeader {
        kind: DatagramKind::Events,
        sender: h.sender,
        sequence: h.sequence,
        dropped: h.dropped,
        first_event: h.first_event,
    };
    out.clear();
    let mut head = [0u8; 40];
    header.emit(chunk.count(), &mut head);
    out.extend_from_slice(&head);
    for r in chunk.records() {
        let e = r.ok()?;
        let mut rec = [0u8; record::RECORD_LEN];
        record::emit(&e, &mut rec);
        out.extend_from_slice(&rec);
    }
    Some(())
}

/// A receiver fed by the byte stream `spec` names, the stream's counts, and
/// what to call it.
///
/// # Errors
///
/// Why the stream cannot be opened, for the user.
pub fn receiver(
    spec: &str,
    config: ReceiverConfig,
) -> Result<(Receiver, Arc<Mutex<StreamCounts>>, String), String> {
    let (r, addr, name) = open(spec)?;
    let pieces = reader(r);
    let counts = Arc::new(Mutex::new(StreamCounts::default()));
    let mut frames = Frames::new(Arc::clone(&counts));
    let mut over = false;
    let feed = move |out: &mut dyn FnMut(&[u8])| -> io::Result<bool> {
        if over {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        match pieces.recv_timeout(Duration::from_millis(20)) {
            Ok(Piece::Bytes(b)) => {
                // The end frame ends the stream (a firmware sends one).
                over = frames.feed(&b, out);
                Ok(true)
            }
            Ok(Piece::End(None)) | Err(RecvTimeoutError::Disconnected) => {
                Err(io::ErrorKind::UnexpectedEof.into())
            }
            Ok(Piece::End(Some(e))) => Err(e),
            Err(RecvTimeoutError::Timeout) => Ok(false),
        }
    };
    Ok((
        Receiver::from_feed(config, addr, Box::new(feed)),
        counts,
        name,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!(parse("/dev/ttyACM0"), Ok(Spec::Path("/dev/ttyACM0".into())));
        assert_eq!(
            parse("tcp:127.0.0.1:4000"),
            Ok(Spec::Tcp("127.0.0.1:4000".into()))
        );
        assert_eq!(parse("unix:/tmp/s"), Ok(Spec::Unix("/tmp/s".into())));
        assert!(parse("tcp:").is_err());
        assert!(parse("").is_err());
    }

    fn chunk_of(n: u64) -> Vec<u8> {
        use qtrace_core::compact::{ChunkEncoder, ChunkHeader};
        use qtrace_core::{Event, EventId};
        let mut buf = vec![0u8; 48 + 39 * n as usize];
        let mut enc = ChunkEncoder::new(&mut buf, ChunkHeader::default()).unwrap();
        for i in 0..n {
            enc.push(&Event::new(i, EventId(2), 0, [i, 0])).unwrap();
        }
        let len = enc.finish();
        buf.truncate(len);
        buf
    }

    #[test]
    fn a_chunk_beyond_the_largest_datagram_is_refused() {
        let mut out = Vec::new();
        assert_eq!(chunk_datagram(&chunk_of(2045), &mut out), Some(()));
        assert_eq!(out.len(), 40 + 2045 * 32);
        assert_eq!(out.len(), 65_480);
        assert_eq!(chunk_datagram(&chunk_of(2046), &mut out), None);
    }
}
