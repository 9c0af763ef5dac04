//! Phase 2 of the online queue: opens its target (a file, a chunk of a
//! rotating file, or a writer), writes the header, and hands the drainer
//! task its state.

use super::chunks::{chunk_path, first_free};
use super::compact::CompactOut;
use super::drainer::{removable_on_failure, Drainer, BATCH, COMPACT_BATCH};
use super::params::Target;
use super::OnlineQueue;
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::QueueContext;
use crate::queues::drained::samples::QueueCounterIds;
use crate::storage::reserve::{reserve, RESERVE_LEN};
use crate::wire::record::RECORD_LEN;
use crate::wire::TraceHeader;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
impl OnlineQueue {
    /// Opens the target and writes the header.
    /// `ctx` is the file's (with the queue counters' class when `counters`
    /// are sampled).
    pub(super) fn open(
        &self,
        target: Target,
        ctx: &QueueContext,
        counters: Option<QueueCounterIds>,
    ) -> Result<Drainer, ConfigError> {
        let header = TraceHeader::for_queue(ctx)
            .with_compact(self.compact)
            .to_bytes();
        let mut file_handle = None;
        let mut remove_if_header_fails = false;
        let mut chunk = 0;
        let mut chunk_file: Option<PathBuf> = None;
        let (mut sink, name): (Box<dyn Write + Send>, String) = match target {
            Target::Writer(w) => (w, "the online queue's writer".to_string()),
            Target::Default | Target::File(_) => {
                let base = self.path.clone().expect("file targets have a path");
                let path = if self.rotation.on() {
                    chunk = first_free(&base);
                    chunk_path(&base, chunk)
                } else {
                    base
                };
                chunk_file = Some(path.clone());
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        ConfigError::io("create the directory of trace file", &path, e)
                    })?;
                }
                let removable = removable_on_failure(&path);
                // Locked while written: another process tracing into the
                // same directory is refused, never overwrites it.
                let file = crate::storage::save::create_locked(&path)?;
                // Room for the final hoops record and close run, so a disk
                // that fills up still takes them (see `reserve`); then a
                // second handle to reserve room ahead of the writes, cut a
                // torn last record and write the close run at shutdown. If
                // either fails, the file just created (or truncated) goes: a
                // failed phase 2 leaves no empty trace file behind.
                let handle = reserve(&file, header.len() as u64, RESERVE_LEN)
                    .map_err(|e| ("reserve room at the end of trace file", e))
                    .and_then(|_| {
                        file.try_clone()
                            .map_err(|e| ("open a second handle to trace file", e))
                    });
                match handle {
                    Ok(h) => file_handle = Some(h),
                    Err((action, e)) => {
                        drop(file);
                        if removable {
                            let _ = std::fs::remove_file(&path);
                        }
                        return Err(ConfigError::io(action, &path, e));
                    }
                }
                remove_if_header_fails = removable;
                (Box::new(file), path.display().to_string())
            }
        };
        if let Err(e) = sink.write_all(&header) {
            if let Some(path) = chunk_file.as_ref().filter(|_| remove_if_header_fails) {
                // Nothing of the trace is in the file yet: remove it, as above.
                drop(sink);
                let _ = std::fs::remove_file(path);
            }
            return Err(ConfigError::Io(crate::model::io_error::IoError {
                path: chunk_file.clone(),
                action: "write the header of trace file",
                source: e,
            }));
        }
        {
            let mut io = self.shared.io.lock();
            io.file_opened = true;
            io.chunks = chunk_file.iter().filter(|_| chunk > 0).cloned().collect();
        }
        let file_path = file_handle.as_ref().and(chunk_file);
        let file_len_at_open = header.len() as u64;
        Ok(Drainer {
            shared: Arc::clone(&self.shared),
            sink,
            name,
            file: file_handle,
            file_len: header.len() as u64,
            path: file_path,
            header,
            in_file: 0,
            // A batch and its hoops record (a held run or samples may
            // make it grow).
            pending: Vec::with_capacity(if self.compact { COMPACT_BATCH } else { BATCH } + 1),
            plain: if self.compact {
                Vec::new()
            } else {
                Vec::with_capacity((BATCH + 1) * RECORD_LEN)
            },
            written: 0,
            pending_events: 0,
            credited: 0,
            last_dropped: 0,
            pending_hoops: 0,
            last_time: 0,
            handle: ctx.handle,
            records: 0,
            lost: 0,
            clock: ctx.clock.clone(),
            failed: false,
            reserved_to: file_len_at_open + RESERVE_LEN,
            rotation: self.rotation,
            base: self.path.clone(),
            chunk,
            prologue: 0,
            first_record_at: None,
            closed: VecDeque::new(),
            names: Arc::clone(&ctx.names),
            rotate_blocked: false,
            carry: Vec::new(),
            compact: self.compact.then(CompactOut::new),
            counters,
            sample: None,
            pending_samples: 0,
            samples: 0,
        })
    }
}
