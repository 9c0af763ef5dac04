//! Compression of the chunks on a thread of its own: while the writer
//! encodes the next chunk of packets, a worker deflates the last one (zlib,
//! [`LEVEL`]) and hands back the bytes of the `compressed_packets` packet.
//! Chunks come back in the order they were sent (one worker, FIFO
//! channels), so the file is the one compressing in place writes. At most
//! [`DEPTH`] chunks are in flight: memory stays a few chunks.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use flate2::write::ZlibEncoder;
use flate2::Compression;

use super::protobuf::put_bytes;
use super::schema::field;

/// The zlib level. zlib-rs at 5 writes fewer bytes than miniz_oxide at 6
/// (the backend before it) on the 5 M-event workload (2.77 against 2.87
/// B/event) in less time; BENCHMARKS.md "Perfetto: the export at …".
pub(super) const LEVEL: u32 = 5;

/// Chunks sent to the worker and not yet written.
const DEPTH: usize = 2;

/// Deflates `chunk` (packets, each with its `Trace.packet` key) and appends
/// to `out` one `Trace.packet` whose `compressed_packets` is the zlib stream.
pub(super) fn zip_chunk(chunk: &[u8], zipped: &mut Vec<u8>, out: &mut Vec<u8>) -> io::Result<()> {
    let mut z = ZlibEncoder::new(std::mem::take(zipped), Compression::new(LEVEL));
    z.write_all(chunk)?;
    *zipped = z.finish()?;
    let mut packet = Vec::with_capacity(zipped.len() + 8);
    put_bytes(&mut packet, field::COMPRESSED_PACKETS, zipped);
    put_bytes(out, field::TRACE_PACKET, &packet);
    zipped.clear();
    Ok(())
}

/// A chunk sent, and what comes back: the packet to write, and the chunk's
/// buffer (emptied) to be filled again.
type Zipped = io::Result<(Vec<u8>, Vec<u8>)>;

/// The worker and its channels.
#[derive(Debug)]
pub(super) struct Zipper {
    to: Option<SyncSender<Vec<u8>>>,
    /// In a mutex (never contended: only the writer takes it) so that the
    /// writer stays `Sync`, as it was before it had a thread.
    from: Mutex<Receiver<Zipped>>,
    in_flight: usize,
    worker: Option<JoinHandle<()>>,
}

impl Zipper {
    /// Starts the worker; `None` if no thread can be started (the writer
    /// then compresses in place).
    pub(super) fn start() -> Option<Zipper> {
        let (to, inbox) = sync_channel::<Vec<u8>>(DEPTH);
        let (outbox, from) = sync_channel::<Zipped>(DEPTH);
        let worker = std::thread::Builder::new()
            .name("qtrace-perfetto-zlib".into())
            .spawn(move || {
                let mut zipped = Vec::new();
                for mut chunk in inbox {
                    let mut packet = Vec::new();
                    let r = zip_chunk(&chunk, &mut zipped, &mut packet).map(|()| {
                        chunk.clear();
                        (packet, chunk)
                    });
                    if outbox.send(r).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Zipper {
            to: Some(to),
            from: Mutex::new(from),
            in_flight: 0,
            worker: Some(worker),
        })
    }

    /// Sends `chunk` to be compressed, first writing to `out` the oldest
    /// chunk in flight if [`DEPTH`] are; returns an empty buffer for the
    /// next chunk (a returned one when there is one).
    pub(super) fn submit(&mut self, chunk: Vec<u8>, out: &mut impl Write) -> io::Result<Vec<u8>> {
        let mut spare = None;
        if self.in_flight >= DEPTH {
            spare = Some(self.write_one(out)?);
        }
        let capacity = chunk.capacity();
        self.to
            .as_ref()
            .and_then(|to| to.send(chunk).ok())
            .ok_or_else(stopped)?;
        self.in_flight += 1;
        Ok(spare.unwrap_or_else(|| Vec::with_capacity(capacity)))
    }

    /// Writes every chunk in flight to `out`, in order.
    pub(super) fn drain(&mut self, out: &mut impl Write) -> io::Result<()> {
        while self.in_flight > 0 {
            self.write_one(out)?;
        }
        Ok(())
    }

    /// Waits for the oldest chunk in flight and writes it; returns its
    /// buffer.
    fn write_one(&mut self, out: &mut impl Write) -> io::Result<Vec<u8>> {
        let from = self.from.get_mut().map_err(|_| stopped())?;
        let (packet, buffer) = from.recv().map_err(|_| stopped())??;
        self.in_flight -= 1;
        out.write_all(&packet)?;
        Ok(buffer)
    }
}

impl Drop for Zipper {
    fn drop(&mut self) {
        // Closing the inbox ends the worker's loop.
        self.to = None;
        if let Ok(from) = self.from.get_mut() {
            while from.recv().is_ok() {}
        }
        if let Some(w) = self.worker.take() {
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
        let chunks: Vec<Vec<u8>> = (0..7u8)
            .map(|k| {
                (0..(1000 + 3000 * usize::from(k)))
                    .map(|i| (i as u8).wrapping_mul(k))
                    .collect()
            })
            .collect();
        let mut in_place = Vec::new();
        let mut zipped = Vec::new();
        for c in &chunks {
            zip_chunk(c, &mut zipped, &mut in_place).unwrap();
        }
        let mut threaded = Vec::new();
        let mut z = Zipper::start().unwrap();
        for c in &chunks {
            let spare = z.submit(c.clone(), &mut threaded).unwrap();
            assert!(spare.is_empty());
        }
        z.drain(&mut threaded).unwrap();
        assert_eq!(threaded, in_place);
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::export::perfetto::PerfettoWriter<Vec<u8>>>();
        // Dropped with chunks in flight: the worker still ends.
        let mut z = Zipper::start().unwrap();
        z.submit(chunks[0].clone(), &mut Vec::new()).unwrap();
        drop(z);
    }
}
