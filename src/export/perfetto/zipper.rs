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

use flate2::{Compress, Compression, FlushCompress, Status};

use super::protobuf::{put_bytes, put_key_len, put_varint, varint_len};
use super::schema::field;

/// The zlib level. With a chunk per sequence, zlib-rs at 3 writes 2.46
/// bytes an event on the 5 M-event workload (level 5 with the sequences
/// interleaved, before: 2.77) in about 40 % less deflate time; level 2
/// writes 3.17 (BENCHMARKS.md, "Perfetto: a chunk per sequence").
pub(super) const LEVEL: u32 = 3;

/// Deflating threads: with two, both cores compress while the writer
/// encodes (deflate costs about as much CPU as encoding, BENCHMARKS.md).
const WORKERS: usize = 2;

/// Chunks sent to the workers and not yet written.
const DEPTH: usize = 2 * WORKERS;

/// A zlib compressor kept from one chunk to the next (reset, not made
/// anew: a new one allocates and clears its window and hash tables for
/// every chunk), and its output buffer.
#[derive(Debug)]
pub(super) struct Deflater {
    z: Compress,
    zipped: Vec<u8>,
}

impl Deflater {
    pub(super) fn new() -> Deflater {
        Deflater {
            z: Compress::new(Compression::new(LEVEL), true),
            zipped: Vec::new(),
        }
    }

    /// Deflates `chunk` (packets, each with its `Trace.packet` key) into
    /// one zlib stream, and appends to `out` one `Trace.packet` whose
    /// `compressed_packets` is that stream.
    pub(super) fn zip(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.z.reset();
        let zipped = &mut self.zipped;
        zipped.clear();
        // The packets deflate to about a tenth of their size; the output
        // grows if they do not.
        zipped.reserve(chunk.len() / 8 + 64);
        let mut input = chunk;
        loop {
            let before = self.z.total_in();
            let status = self
                .z
                .compress_vec(input, zipped, FlushCompress::Finish)
                .map_err(io::Error::other)?;
            input = &input[(self.z.total_in() - before) as usize..];
            if status == Status::StreamEnd {
                break;
            }
            zipped.reserve(zipped.capacity().max(4096));
        }
        put_key_len(out, field::TRACE_PACKET);
        let inner = 2 + varint_len(zipped.len() as u64) + zipped.len();
        put_varint(out, inner as u64);
        put_bytes(out, field::COMPRESSED_PACKETS, zipped);
        Ok(())
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
        // The same bytes as a zlib stream made anew for each chunk.
        let mut fresh = Vec::new();
        for c in &chunks {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), Compression::new(LEVEL));
            z.write_all(c).unwrap();
            let mut packet = Vec::new();
            put_bytes(&mut packet, field::COMPRESSED_PACKETS, &z.finish().unwrap());
            put_bytes(&mut fresh, field::TRACE_PACKET, &packet);
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
