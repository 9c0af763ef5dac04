//! Reading inputs on a thread of their own: [`read_merged_pipelined`]
//! decodes and merges on one core while the caller's loop (the analysis)
//! runs on another, the events handed over in batches, in the same order.

use std::io;
use std::sync::mpsc::{channel, sync_channel};
use std::thread;

use qtrace::reader::MergedReader;
use qtrace::Event;

use super::io::{read_merged, Reading};

/// Events a batch: large enough that the hand-over (a channel message, a
/// wake-up) is a small part of a batch's work, small enough (128 KiB) to
/// stay in the cache between the two cores.
const BATCH: usize = 4096;

/// Batches read ahead of the caller at most: memory is bounded however far
/// the reader gets ahead.
const DEPTH: usize = 4;

/// [`read_merged`] with the reading on a second thread: `f` sees every
/// event in the same order, and the same damage is reported on stderr (by
/// the reading thread, as it meets it). With one core, reads on the
/// caller's thread.
///
/// # Errors
/// As [`read_merged`]'s (an I/O error of the reading; `f` cannot fail), and
/// the error of starting the reading thread.
pub fn read_merged_pipelined<R: io::Read + Send>(
    merged: &mut MergedReader<R>,
    mut f: impl FnMut(&Event),
) -> io::Result<Reading> {
    if thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return read_merged(merged, |_, e| {
            f(e);
            Ok(())
        });
    }
    let (full_tx, full_rx) = sync_channel::<Vec<Event>>(DEPTH);
    // Batches the caller is done with go back to be filled again.
    let (empty_tx, empty_rx) = channel::<Vec<Event>>();
    thread::scope(|s| {
        let reader = thread::Builder::new()
            .name("qtrace-read".into())
            .spawn_scoped(s, move || {
                let mut batch = Vec::with_capacity(BATCH);
                let read = read_merged(merged, |_, e| {
                    batch.push(*e);
                    if batch.len() == BATCH {
                        let next = empty_rx
                            .try_recv()
                            .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                        let full = std::mem::replace(&mut batch, next);
                        full_tx
                            .send(full)
                            .map_err(|_| io::Error::other("the events' consumer ended"))?;
                    }
                    Ok(())
                });
                if !batch.is_empty() {
                    let _ = full_tx.send(batch);
                }
                read
            })?;
        // Ends when the reading thread drops its sender.
        for mut batch in full_rx {
            for e in &batch {
                f(e);
            }
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        match reader.join() {
            Ok(read) => read,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
