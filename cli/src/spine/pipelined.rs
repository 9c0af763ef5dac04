//! Reading inputs on a thread of their own: [`read_merged_pipelined`]
//! decodes and merges on one core while the caller's loop (the analysis)
//! runs on another, the events handed over in batches, in the same order.

use std::io;
use std::sync::mpsc::{channel, sync_channel};
use std::thread;

use qtrace::reader::MergedReader;
use qtrace::Event;

use super::io::Reading;

/// Events a batch: large enough that the hand-over (a channel message, a
/// wake-up) is a small part of a batch's work, small enough (128 KiB) to
/// stay in the cache between the two cores.
const BATCH: usize = 4096;

/// Batches read ahead of the caller at most: memory is bounded however far
/// the reader gets ahead.
const DEPTH: usize = 4;

/// Fills `batch` up to [`BATCH`] events in time order, reporting damage on
/// stderr and noting it in `reading`; returns whether the inputs have
/// ended. Events already read ahead go into the batch by
/// `MergedReader::read_buffered`, not one by one through
/// [`read_merged`](super::io::read_merged)'s closure, where each went out
/// to the stack and was loaded back wider than it was stored (a stalled
/// load an event: `analyze` of a 5 M-event 32-byte file ran at 40 M events
/// a second against 70–74 M in batches; docs/benchmarks-history.md, "The
/// analysis's reader in batches").
fn fill<R: io::Read>(
    merged: &mut MergedReader<R>,
    batch: &mut Vec<Event>,
    reading: &mut Reading,
) -> bool {
    while batch.len() < BATCH {
        if merged.read_buffered(batch, BATCH - batch.len()) > 0 {
            continue;
        }
        match merged.next_with_input() {
            Some((_, Ok(e))) => batch.push(e),
            Some((_, Err(err))) => {
                eprintln!("qtrace: {err}");
                reading.note(&err);
            }
            None => return true,
        }
    }
    false
}

/// [`read_merged`](super::io::read_merged) with the reading on a second
/// thread: `f` sees every event in the same order, and the same damage is
/// reported on stderr (by the reading thread, as it meets it). With one
/// core, reads on the caller's thread, a batch at a time.
///
/// # Errors
/// The error of starting the reading thread (`f` cannot fail, and the
/// readers report their I/O errors as damage).
pub fn read_merged_pipelined<R: io::Read + Send>(
    merged: &mut MergedReader<R>,
    mut f: impl FnMut(&Event),
) -> io::Result<Reading> {
    let mut reading = Reading::default();
    if thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let ended = fill(merged, &mut batch, &mut reading);
            batch.iter().for_each(&mut f);
            batch.clear();
            if ended {
                return Ok(reading);
            }
        }
    }
    let (full_tx, full_rx) = sync_channel::<Vec<Event>>(DEPTH);
    // Batches the caller is done with go back to be filled again.
    let (empty_tx, empty_rx) = channel::<Vec<Event>>();
    thread::scope(|s| {
        let reader = thread::Builder::new()
            .name("qtrace-read".into())
            .spawn_scoped(s, move || {
                let mut reading = Reading::default();
                loop {
                    let mut batch = empty_rx
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                    let ended = fill(merged, &mut batch, &mut reading);
                    // The caller gone (it cannot be, but): stop reading.
                    if (!batch.is_empty() && full_tx.send(batch).is_err()) || ended {
                        return reading;
                    }
                }
            })?;
        // Ends when the reading thread drops its sender.
        for mut batch in full_rx {
            batch.iter().for_each(&mut f);
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        match reader.join() {
            Ok(read) => Ok(read),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
