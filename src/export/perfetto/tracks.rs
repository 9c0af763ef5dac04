//! Tracks: their descriptors and uuids (one per source, task and
//! task/semaphore pair, the `other sources` and `lost events` tracks), and
//! the slice edges drawn on them.

use std::fmt::Write as _;
use std::io::Write;

use super::events::SliceName;
use super::interning::{Prefix, Sequence};
use super::protobuf::{put_bytes, put_message, put_uint};
use super::schema::{field, SEQUENCE_ID, SIBLING_MERGE_BEHAVIOR_NONE, UNIT_COUNT};
use super::writer::{PerfettoWriter, TaskTrack};
use crate::export::slices::{Edge, Source};
use crate::export::ExportError as Error;
use crate::model::event::TRACER_SOURCE;
use crate::Event;

/// Debug annotation of a blocking `semaphore:wait` drawn as its `sem S`
/// slice's begin: the source that logged the wait.
pub const WAIT_SOURCE: &str = "source";

/// Debug annotation of a `semaphore:signal` drawn as its `sem S` slice's end:
/// the source that logged the signal (a name of its own: the trace processor
/// adds an end's arguments to its slice's, next to the begin's `source`).
pub const SIGNAL_SOURCE: &str = "signal source";

impl<W: Write> PerfettoWriter<W> {
    /// Writes a track descriptor and returns the new track's uuid.
    pub(super) fn new_track(
        &mut self,
        parent: Option<u64>,
        name: std::fmt::Arguments<'_>,
        counter: Option<&str>,
    ) -> Result<u64, Error> {
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        self.declare_track(uuid, parent, name, counter)?;
        Ok(uuid)
    }

    /// Writes the descriptor of track `uuid`: new, or the same track again
    /// with a new name. Every descriptor sets `sibling_merge_behavior` to
    /// `SIBLING_MERGE_BEHAVIOR_NONE`, with which the trace processor renames
    /// a track declared again (and does not merge tracks of the same name).
    pub(super) fn declare_track(
        &mut self,
        uuid: u64,
        parent: Option<u64>,
        name: std::fmt::Arguments<'_>,
        counter: Option<&str>,
    ) -> Result<(), Error> {
        self.text.clear();
        let _ = self.text.write_fmt(name);
        let p = &mut self.packet;
        p.clear();
        put_uint(p, field::TRUSTED_SEQUENCE_ID, SEQUENCE_ID);
        let text = &self.text;
        put_message(p, field::TRACK_DESCRIPTOR, |d| {
            put_uint(d, field::UUID, uuid);
            if let Some(parent) = parent {
                put_uint(d, field::PARENT_UUID, parent);
            }
            put_bytes(d, field::TRACK_NAME, text.as_bytes());
            put_uint(
                d,
                field::SIBLING_MERGE_BEHAVIOR,
                SIBLING_MERGE_BEHAVIOR_NONE,
            );
            // A counter's unit: a name of its own, or a plain count.
            match counter {
                Some("") => put_message(d, field::COUNTER, |c| {
                    put_uint(c, field::COUNTER_UNIT, UNIT_COUNT);
                }),
                Some(unit) => put_message(d, field::COUNTER, |c| {
                    put_bytes(c, field::COUNTER_UNIT_NAME, unit.as_bytes());
                }),
                None => {}
            }
        });
        // On sequence 1, whose chunk is written before any other once it
        // holds a descriptor.
        self.descriptors = true;
        self.flush_packet(0)
    }

    /// The track of `source`, made on first use with a packet sequence of
    /// its own; `None` past `max_tracks`. Makes the source's sequence (or,
    /// for `None`, the shared sequence 1) the one written on.
    #[inline]
    pub(super) fn source_track(&mut self, source: u32) -> Result<Option<u64>, Error> {
        // Every event but a source's first: inlined, the rest out of line.
        if self.slices.knows(source) {
            return Ok(Some(self.enter_known(source)));
        }
        self.new_source_track(source)
    }

    /// The track of a followed `source`, its sequence made the one written on.
    #[inline]
    fn enter_known(&mut self, source: u32) -> u64 {
        let (uuid, seq) = self.sources.get(source).copied().unwrap_or((0, 0));
        self.enter(seq);
        uuid
    }

    /// [`source_track`](Self::source_track) of a source not followed yet.
    #[cold]
    #[inline(never)]
    fn new_source_track(&mut self, source: u32) -> Result<Option<u64>, Error> {
        match self.slices.source(source) {
            // (`source_track` has taken a followed source already.)
            Source::Known => Ok(Some(self.enter_known(source))),
            Source::Untracked => {
                self.enter(0);
                Ok(None)
            }
            Source::New => {
                let uuid = self.next_uuid;
                self.next_uuid += 1;
                self.declare_source(source, uuid)?;
                self.stats.sources += 1;
                let seq = self.seqs.len();
                let id = SEQUENCE_ID + seq as u64;
                self.seqs.push(Box::new(Sequence {
                    id,
                    track: Some(uuid),
                    ..Sequence::default()
                }));
                self.sources.insert(source, (uuid, seq));
                self.enter(seq);
                self.sequence_start(id, Some(uuid), None)?;
                Ok(Some(uuid))
            }
        }
    }

    pub(super) fn task_track(&mut self, task: u64) -> Result<Option<u64>, Error> {
        if let Some(t) = self.tasks.get(&task) {
            return Ok(Some(t.uuid));
        }
        if self.tasks.len() >= self.options.max_tracks {
            return Ok(None);
        }
        let uuid = self.next_uuid;
        self.next_uuid += 1;
        self.declare_task(task, uuid)?;
        self.tasks.insert(
            task,
            TaskTrack {
                uuid,
                clamp: 0,
                on: None,
            },
        );
        Ok(Some(uuid))
    }

    /// Declares the track of `source` (`tracer`, `source N`, or `source N
    /// NAME` once a name record named it).
    pub(super) fn declare_source(&mut self, source: u32, uuid: u64) -> Result<(), Error> {
        let name = self.run_names.source(source).map(str::to_string);
        match name {
            _ if source == TRACER_SOURCE => {
                self.declare_track(uuid, None, format_args!("tracer"), None)
            }
            Some(n) => self.declare_track(uuid, None, format_args!("source {source} {n}"), None),
            None => self.declare_track(uuid, None, format_args!("source {source}"), None),
        }
    }

    /// Declares the track of `task` (`task N`, or `task N NAME`).
    pub(super) fn declare_task(&mut self, task: u64, uuid: u64) -> Result<(), Error> {
        match self.run_names.task(task).map(str::to_string) {
            Some(n) => self.declare_track(uuid, None, format_args!("task {task} {n}"), None),
            None => self.declare_track(uuid, None, format_args!("task {task}"), None),
        }
    }

    pub(super) fn instant_track(&mut self, tracked: Option<u64>) -> Result<u64, Error> {
        if let Some(uuid) = tracked {
            return Ok(uuid);
        }
        if let Some(uuid) = self.overflow_track {
            return Ok(uuid);
        }
        let uuid = self.new_track(None, format_args!("other sources"), None)?;
        self.overflow_track = Some(uuid);
        Ok(uuid)
    }

    /// Ends the pending interrupt slice of `source` at `t` at the latest.
    /// Draws one slice edge caused by event `e` (or by the end of the trace:
    /// `None`). Returns whether the edge stands for `e` itself (a schedule,
    /// an interrupt, a blocking wait, a signal), so that `e` needs no instant.
    pub(super) fn edge(&mut self, edge: Edge, e: Option<&Event>) -> Result<bool, Error> {
        match edge {
            Edge::TaskEnd { source, task, t } => {
                if let Some(&(uuid, _)) = self.sources.get(source) {
                    self.end_slice(t, uuid)?;
                }
                if let Some(tt) = self.tasks.get_mut(&task) {
                    if tt.on == Some(source) {
                        tt.on = None;
                        tt.clamp = tt.clamp.max(t);
                        let (ts, uuid) = (tt.clamp, tt.uuid);
                        self.end_slice(ts, uuid)?;
                    }
                }
                Ok(false)
            }
            Edge::TaskBegin { source, task, t } => {
                let uuid = self.sources.get(source).map_or(0, |&(u, _)| u);
                match self.run_names.task(task).map(str::to_string) {
                    Some(n) => self.begin_for(
                        t,
                        uuid,
                        "task",
                        SliceName::Fmt(format_args!("task {task} {n}")),
                        e,
                    )?,
                    None => {
                        self.begin_for(t, uuid, "task", SliceName::Numbered(Prefix::Task, task), e)?
                    }
                }
                self.task_running(source, task, t)?;
                Ok(true)
            }
            Edge::IrqBegin { source, irq, t } => {
                let uuid = self.sources.get(source).map_or(0, |&(u, _)| u);
                self.begin_for(
                    t,
                    uuid,
                    "interrupt",
                    SliceName::Numbered(Prefix::Irq, irq),
                    e,
                )?;
                Ok(true)
            }
            Edge::IrqEnd { source, t, .. } => {
                let uuid = self.sources.get(source).map_or(0, |&(u, _)| u);
                self.end_slice(t, uuid)?;
                Ok(false)
            }
            Edge::WaitOpen {
                task,
                sem,
                new,
                t,
                blocking,
                ..
            } => {
                if new {
                    // Under the task's track; at the top if it has none.
                    let parent = self.task_track(task)?;
                    let uuid =
                        self.new_track(parent, format_args!("task {task} sem {sem}"), None)?;
                    self.pairs.push(uuid);
                }
                let Some(ev) = e.filter(|_| blocking) else {
                    return Ok(false);
                };
                let uuid = self.pair_track(edge);
                self.begin_annotated(
                    t,
                    uuid,
                    "semaphore",
                    SliceName::Numbered(Prefix::Sem, sem),
                    (WAIT_SOURCE, ev.source),
                )?;
                Ok(true)
            }
            Edge::Held {
                sem,
                begin,
                end,
                blocking,
                signalled,
                ..
            } => {
                let uuid = self.pair_track(edge);
                if !blocking {
                    // A waitnb's slice: its begin is written now, with its own time.
                    self.begin(
                        begin,
                        uuid,
                        "semaphore",
                        SliceName::Numbered(Prefix::Sem, sem),
                    )?;
                }
                let by = e.filter(|_| signalled);
                self.end_annotated(end, uuid, by.map(|s| (SIGNAL_SOURCE, s.source)))?;
                Ok(by.is_some())
            }
            Edge::ScopeBegin { .. } | Edge::ScopeEnd { .. } => self.scope_edge(edge),
        }
    }

    /// Draws a scope edge on the `scopes` track of its source (made at the
    /// source's first scope). The scope's events keep their instants (they
    /// show the begin's arguments and the end's code).
    fn scope_edge(&mut self, edge: Edge) -> Result<bool, Error> {
        match edge {
            Edge::ScopeBegin {
                source, scope, t, ..
            } => {
                let uuid = match self.scope_tracks.get(&source) {
                    Some(&u) => u,
                    None => {
                        let parent = self.sources.get(source).map(|&(u, _)| u);
                        let u = self.new_track(parent, format_args!("scopes"), None)?;
                        self.scope_tracks.insert(source, u);
                        u
                    }
                };
                let name = self
                    .slices
                    .scope_table()
                    .name(scope)
                    .unwrap_or("scope")
                    .to_string();
                self.begin(t, uuid, "scope", SliceName::Fmt(format_args!("{name}")))?;
            }
            Edge::ScopeEnd { source, t, .. } => {
                if let Some(&uuid) = self.scope_tracks.get(&source) {
                    self.end_slice(t, uuid)?;
                }
            }
            _ => {}
        }
        Ok(false)
    }

    /// The track of the pair an edge names.
    pub(super) fn pair_track(&self, edge: Edge) -> u64 {
        match edge {
            Edge::WaitOpen { pair, .. } | Edge::Held { pair, .. } => {
                self.pairs.get(pair).copied().unwrap_or(0)
            }
            _ => 0,
        }
    }

    /// Task `task` runs on `source` from `t`: its track (made on first use)
    /// shows a `source S` slice.
    pub(super) fn task_running(&mut self, source: u32, task: u64, t: u64) -> Result<(), Error> {
        let Some(task_uuid) = self.task_track(task)? else {
            self.stats.unpaired += 1;
            return Ok(());
        };
        let Some(tt) = self.tasks.get_mut(&task) else {
            return Ok(());
        };
        let previous = tt.on.replace(source);
        tt.clamp = tt.clamp.max(t);
        let ts = tt.clamp;
        if previous.is_some() {
            // The events said it still ran elsewhere: end that span here.
            self.end_slice(ts, task_uuid)?;
        }
        if source == TRACER_SOURCE {
            self.begin(
                ts,
                task_uuid,
                "task",
                SliceName::Fmt(format_args!("tracer")),
            )
        } else {
            self.begin(
                ts,
                task_uuid,
                "task",
                SliceName::Numbered(Prefix::Source, u64::from(source)),
            )
        }
    }
}

#[cfg(test)]
#[test]
fn the_semaphore_annotation_names_are_remembered_per_sequence() {
    use super::interning::fixed_annotation;
    assert_eq!(fixed_annotation(WAIT_SOURCE), Some(4));
    assert_eq!(fixed_annotation(SIGNAL_SOURCE), Some(5));
}
