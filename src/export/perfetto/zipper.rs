//! Compression of the chunks on threads of their own: while the writer
//! encodes the next chunk of packets, [`WORKERS`] workers deflate the last
//! ones (zlib, [`LEVEL`]), each chunk on its own (every chunk is a
//! `compressed_packets` packet of its own), and hand back the bytes of the
//! packets. Chunk k goes to worker k mod [`WORKERS`] and is taken back
//! from it in that same round-robin order (FIFO channels), so the file is
//! the one compressing in place writes, whatever the threads' timing. At
//! most [`DEPTH`] chunks are in flight: memory stays a few chunks.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use zlib_rs::c_api::z_stream;
use zlib_rs::deflate::{self as zlib, DeflateConfig, DeflateStream};
use zlib_rs::{DeflateFlush, ReturnCode};

use super::protobuf::{put_bytes, put_key_len, put_varint, varint_len};
use super::schema::field;

/// The zlib level: 2, zlib-rs's `deflate_fast` (greedy matching, no lazy
/// evaluation), tuned by [`TUNING`].
const LEVEL: i32 = 2;

/// `deflate_fast`'s search, as zlib's `deflateTune` sets it: good length 4,
/// insert length 4, nice length 24, chain 16. With level 2's own (nice
/// length 8, chain 4) it writes 3.14 bytes an event on the 5 M-event
/// workload; with these, 2.375 (level 3, `deflate_medium`, before: 2.42) in
/// 57 % of level 3's deflate instructions: longer matches, fewer symbols
/// (docs/benchmarks-history.md, "Perfetto: deflate_fast tuned").
const TUNING: (usize, usize, usize, usize) = (4, 4, 24, 16);

/// Deflating threads: with two, both cores compress while the writer
/// encodes. (Tuned, deflate costs less than encoding: 320 against 379 M
/// instructions on 500 k events; whether one worker now keeps up was not
/// measured, docs/benchmarks-history.md, "Perfetto: deflate_fast tuned".)
const WORKERS: usize = 2;

/// Chunks sent to the workers and not yet written.
const DEPTH: usize = 2 * WORKERS;

/// A zlib compressor kept from one chunk to the next (reset, not made
/// anew: a new one allocates and clears its window and hash tables for
/// every chunk), and its output buffer. zlib-rs's own stream (its
/// `__internal-api`), not `flate2`'s or zlib-rs's stable wrapper: neither
/// has `deflateTune`.
pub(super) struct Deflater {
    z: DeflateStream<'static>,
    zipped: Vec<u8>,
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflater")
            .field("level", &LEVEL)
            .field("tuning", &TUNING)
            .finish_non_exhaustive()
    }
}

/// The stream's input and output fields, as zlib's C API declares them:
/// zlib-rs's internal API leaves them private to its `DeflateStream`.
fn fields<'a>(z: &'a mut DeflateStream<'static>) -> &'a mut z_stream {
    // SAFETY: `DeflateStream` is `#[repr(C)]` with `z_stream`'s layout
    // (zlib-rs casts between the two itself, and asserts their sizes and
    // alignments equal); the reference borrows `z` mutably, so nothing else
    // uses the stream while it lives, and only the input and output
    // pointers and lengths are written through it.
    unsafe { &mut *std::ptr::from_mut(z).cast::<z_stream>() }
}

fn zlib_error(what: &str, code: ReturnCode) -> io::Error {
    io::Error::other(format!("zlib could not {what} ({code:?})"))
}

impl Deflater {
    pub(super) fn new() -> Deflater {
        let config = DeflateConfig {
            level: LEVEL,
            ..DeflateConfig::default()
        };
        Deflater {
            z: DeflateStream::new(config),
            zipped: Vec::new(),
        }
    }

    /// Deflates `chunk` (packets, each with its `Trace.packet` key) into
    /// one zlib stream, and appends to `out` one `Trace.packet` whose
    /// `compressed_packets` is that stream.
    pub(super) fn zip(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let z = &mut self.z;
        // (A reset sets the level's search again: tuned after it.)
        match zlib::reset(z) {
            ReturnCode::Ok => {}
            code => return Err(zlib_error("reset", code)),
        }
        let (good, insert, nice, chain) = TUNING;
        match zlib::tune(z, good, insert, nice, chain) {
            ReturnCode::Ok => {}
            code => return Err(zlib_error("tune", code)),
        }
        // Room for the whole stream (zlib's bound): one call finishes it.
        // The buffer keeps its length from chunk to chunk (deflate writes
        // over it), so it is zeroed only when it grows.
        let room = zlib::bound(Some(z), chunk.len());
        let zipped = &mut self.zipped;
        if zipped.len() < room {
            zipped.resize(room, 0);
        }
        let (Ok(avail_in), Ok(avail_out)) = (u32::try_from(chunk.len()), u32::try_from(room))
        else {
            return Err(io::Error::other("a Perfetto chunk of 4 GiB or more"));
        };
        let s = fields(z);
        s.next_in = chunk.as_ptr();
        s.avail_in = avail_in;
        s.next_out = zipped.as_mut_ptr();
        s.avail_out = avail_out;
        let code = zlib::deflate(z, DeflateFlush::Finish);
        let s = fields(z);
        let (left_in, left_out) = (s.avail_in, s.avail_out as usize);
        // No pointer into `chunk` or `zipped` outlives the call.
        s.next_in = std::ptr::null();
        s.next_out = std::ptr::null_mut();
        s.avail_in = 0;
        s.avail_out = 0;
        if code != ReturnCode::StreamEnd || left_in != 0 {
            return Err(zlib_error("deflate a chunk", code));
        }
        let zipped = &zipped[..room - left_out];
        put_key_len(out, field::TRACE_PACKET);
        let inner = 2 + varint_len(zipped.len() as u64) + zipped.len();
        put_varint(out, inner as u64);
        put_bytes(out, field::COMPRESSED_PACKETS, zipped);
        Ok(())
    }
}

impl Drop for Deflater {
    fn drop(&mut self) {
        // Frees the window and hash tables.
        let _ = zlib::end(&mut self.z);
    }
}

/// A chunk sent, and what comes back: the packet to write, and the chunk's
/// buffer (emptied) to be filled again.
type Zipped = io::Result<(Vec<u8>, Vec<u8>)>;

/// The workers and their channels.
#[derive(Debug)]
pub(super) struct Zipper {
    /// Each worker's inbox (emptied when dropping, which ends the workers).
    to: Vec<SyncSender<Vec<u8>>>,
    /// Each worker's outbox; in a mutex (never contended: only the writer
    /// takes it) so that the writer stays `Sync`, as it was before it had
    /// threads.
    from: Mutex<Vec<Receiver<Zipped>>>,
    /// Chunks sent, and chunks written back (in the order sent).
    sent: usize,
    written: usize,
    workers: Vec<JoinHandle<()>>,
}

impl Zipper {
    /// Starts the workers; `None` if no thread can be started (the writer
    /// then compresses in place). Fewer than [`WORKERS`] threads started
    /// still make a working zipper.
    pub(super) fn start() -> Option<Zipper> {
        let mut z = Zipper {
            to: Vec::new(),
            from: Mutex::new(Vec::new()),
            sent: 0,
            written: 0,
            workers: Vec::new(),
        };
        for k in 0..WORKERS {
            let (to, inbox) = sync_channel::<Vec<u8>>(DEPTH);
            let (outbox, from) = sync_channel::<Zipped>(DEPTH);
            let Ok(worker) = std::thread::Builder::new()
                .name(format!("qtrace-perfetto-zlib-{k}"))
                .spawn(move || {
                    let mut deflater = Deflater::new();
                    for mut chunk in inbox {
                        let mut packet = Vec::new();
                        let r = deflater.zip(&chunk, &mut packet).map(|()| {
                            chunk.clear();
                            (packet, chunk)
                        });
                        if outbox.send(r).is_err() {
                            break;
                        }
                    }
                })
            else {
                break;
            };
            z.to.push(to);
            z.from.get_mut().ok()?.push(from);
            z.workers.push(worker);
        }
        (!z.workers.is_empty()).then_some(z)
    }

    /// Sends `chunk` to be compressed, first writing to `out` the oldest
    /// chunk in flight if [`DEPTH`] are; returns an empty buffer for the
    /// next chunk (a returned one when there is one).
    pub(super) fn submit(&mut self, chunk: Vec<u8>, out: &mut impl Write) -> io::Result<Vec<u8>> {
        let mut spare = None;
        if self.sent - self.written >= DEPTH {
            spare = Some(self.write_one(out)?);
        }
        let capacity = chunk.capacity();
        let to = &self.to[self.sent % self.to.len()];
        to.send(chunk).map_err(|_| stopped())?;
        self.sent += 1;
        Ok(spare.unwrap_or_else(|| Vec::with_capacity(capacity)))
    }

    /// Writes every chunk in flight to `out`, in order.
    pub(super) fn drain(&mut self, out: &mut impl Write) -> io::Result<()> {
        while self.written < self.sent {
            self.write_one(out)?;
        }
        Ok(())
    }

    /// Waits for the oldest chunk in flight and writes it; returns its
    /// buffer.
    fn write_one(&mut self, out: &mut impl Write) -> io::Result<Vec<u8>> {
        let from = self.from.get_mut().map_err(|_| stopped())?;
        let k = self.written % from.len();
        let (packet, buffer) = from[k].recv().map_err(|_| stopped())??;
        self.written += 1;
        out.write_all(&packet)?;
        Ok(buffer)
    }
}

impl Drop for Zipper {
    fn drop(&mut self) {
        // Closing the inboxes ends the workers' loops.
        self.to.clear();
        if let Ok(from) = self.from.get_mut() {
            for f in from.iter() {
                while f.recv().is_ok() {}
            }
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn stopped() -> io::Error {
    io::Error::other("the Perfetto compression thread stopped")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_come_back_in_order_as_compressing_in_place_writes_them() {
        // Chunks of different sizes and contents, more than DEPTH of them.
        let chunks: Vec<Vec<u8>> = (0..11u8)
            .map(|k| {
                (0..(1000 + 3000 * usize::from(k)))
                    .map(|i| (i as u8).wrapping_mul(k))
                    .collect()
            })
            .collect();
        let mut in_place = Vec::new();
        let mut deflater = Deflater::new();
        for c in &chunks {
            deflater.zip(c, &mut in_place).unwrap();
        }
        // The same bytes as a compressor made anew for each chunk, and
        // each chunk's stream inflates to the chunk.
        let mut fresh = Vec::new();
        for c in &chunks {
            let mut one = Vec::new();
            Deflater::new().zip(c, &mut one).unwrap();
            // The packet's key (1 byte) and length, the field's key (2
            // bytes) and length, then the zlib stream.
            let skip_varint = |b: &[u8]| b.iter().position(|&x| x < 0x80).unwrap() + 1;
            let at = 1 + skip_varint(&one[1..]) + 2;
            let stream = &one[at + skip_varint(&one[at..])..];
            let mut plain = vec![0; c.len() + 1];
            let (plain, code) = zlib_rs::decompress_slice(&mut plain, stream, Default::default());
            assert_eq!(code, ReturnCode::Ok);
            assert_eq!(plain, &c[..]);
            fresh.extend_from_slice(&one);
        }
        assert_eq!(in_place, fresh);
        let mut threaded = Vec::new();
        let mut z = Zipper::start().unwrap();
        assert_eq!(z.workers.len(), WORKERS);
        for c in &chunks {
            let spare = z.submit(c.clone(), &mut threaded).unwrap();
            assert!(spare.is_empty());
        }
        z.drain(&mut threaded).unwrap();
        assert_eq!(threaded, in_place);
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::export::perfetto::PerfettoWriter<Vec<u8>>>();
        // Dropped with chunks in flight on every worker: the workers still end.
        let mut z = Zipper::start().unwrap();
        for c in &chunks[..WORKERS + 1] {
            z.submit(c.clone(), &mut Vec::new()).unwrap();
        }
        drop(z);
    }
}
