//! One run (an input file, or one incarnation of a sender's stream) turned
//! into rows: its records are reassembled (combine runs become payloads
//! rows), sorted into events, losses and payloads, numbered (`seq`) and
//! counted for its streams row.

use qtrace::classes::{tracer, Catalog};
use qtrace::combine::{
    Assembler, Item, Names, Payload, PayloadState, NAME_EVENT_ID, NAME_SOURCE, NAME_TASK,
};
use qtrace::storage::{DAMAGED, UNREADABLE};
use qtrace::wire::unclosed_stream;
use qtrace::{Event, EventId};

use crate::columns::{At, EventRow, KeyedRow, LossRow, PayloadRow, RunKeys, Segment, StreamRow};
use crate::idkeys::IdKeys;
use crate::jobs::Jobs;
use crate::partset::PartSet;

/// Who a run is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// The `run` column: an input file's name, or a received stream's
    /// `ip:port/sender/incarnation`.
    pub name: String,
    /// The `host` column.
    pub host: String,
    /// The `sender` column (received streams).
    pub sender: Option<u32>,
    /// The `queue` column of its events, when known.
    pub queue: Option<u16>,
    /// The `path` column of its streams rows.
    pub path: String,
}

/// The loss kinds (`losses.kind`).
pub mod kind {
    /// A hoops record: events lost by a full queue, in transit, or never
    /// sent by a closing sender.
    pub const HOOPS: &str = "hoops";
    /// A recovered ring's slot that was being written at the crash.
    pub const UNREADABLE: &str = "unreadable";
    /// The end of a recovered ring whose trusted fields were damaged.
    pub const DAMAGED: &str = "damaged";
    /// A received stream that ended without its close datagram.
    pub const UNCLOSED: &str = "unclosed";
    /// A store part that was never finished (the receiver was killed).
    pub const UNFINISHED: &str = "unfinished";
    /// Events and losses a receiver took that its store could not write
    /// (a full disk, a deleted folder), counted exactly.
    pub const UNSTORED: &str = "unstored";
    /// Rejected datagrams (their `count`, not events): unkeyed, at a
    /// receiver that holds keys.
    pub const REJECTED_UNKEYED: &str = "rejected_unkeyed";
    /// Rejected: keyed with a key id the receiver does not hold.
    pub const REJECTED_UNKNOWN_KEY: &str = "rejected_unknown_key";
    /// Rejected: a wrong tag (forged, altered, or a wrong key).
    pub const REJECTED_BAD_TAG: &str = "rejected_bad_tag";
    /// Rejected: already received, or of an ended or replaced session.
    pub const REJECTED_REPLAYED: &str = "rejected_replayed";
    /// Rejected: numbered outside the stream's sequence window.
    pub const REJECTED_OUTSIDE_WINDOW: &str = "rejected_outside_window";
    /// Rejected: first event or drop count going backwards.
    pub const REJECTED_COUNTERS_BACKWARDS: &str = "rejected_counters_backwards";
    /// Rejected: numbered after the sender's close.
    pub const REJECTED_AFTER_CLOSE: &str = "rejected_after_close";
}

/// Counts of a run since its last streams row.
#[derive(Clone, Copy, Debug)]
struct Counts {
    records: u64,
    events: u64,
    lost: u64,
    /// The least and greatest row time, i64::MAX and i64::MIN before the
    /// first row (times are at least 0): a `min` and a `max` a row, not two
    /// `Option`s.
    first: i64,
    last: i64,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            records: 0,
            events: 0,
            lost: 0,
            first: i64::MAX,
            last: i64::MIN,
        }
    }
}

/// Dictionary keys of one part set, cached.
#[derive(Debug)]
struct Keys {
    generation: u64,
    run: RunKeys,
    /// `run` and the run's queue, as its events rows hold them.
    segment: Segment,
    /// Per event id looked up: its class and event keys as the events
    /// rows hold them (-1: none).
    ids: IdKeys,
}

/// One run being written.
#[derive(Debug)]
pub struct Run {
    /// Who it is.
    pub info: RunInfo,
    catalog: Catalog,
    names: Names,
    assembler: Assembler,
    items: Vec<Item>,
    seq: u64,
    counts: Counts,
    keys: Option<Keys>,
    /// Boxed: a conversion moves it between its runs at each change.
    jobs: Box<Jobs>,
    /// Added to `time_ns` for `aligned_ns`.
    pub offset_ns: i64,
}

/// A time in ns as the tables' INT64 (times past 2^63 ns, 292 years, clamp).
#[inline]
fn ns(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl Run {
    /// A run named by `info`, its events named by `catalog` and the
    /// run-time names known (`names`; more are learned from its name
    /// records as they pass).
    pub fn new(info: RunInfo, catalog: Catalog, names: Names) -> Self {
        Run {
            info,
            catalog,
            names,
            assembler: Assembler::new(),
            items: Vec::new(),
            seq: 0,
            counts: Counts::default(),
            keys: None,
            jobs: Box::default(),
            offset_ns: 0,
        }
    }

    /// Takes the job pairing (`crate::jobs`) that `other` held (giving it
    /// this run's, unused), for the
    /// runs of one conversion and host to share one.
    pub(crate) fn take_jobs_from(&mut self, other: &mut Run) {
        std::mem::swap(&mut self.jobs, &mut other.jobs);
    }

    /// Replaces the catalog (a received stream's header arrived).
    pub fn set_catalog(&mut self, catalog: Catalog) {
        self.catalog = catalog;
        self.keys = None;
    }

    fn keys(&mut self, set: &mut PartSet) -> &mut Keys {
        if self.keys.as_ref().map(|k| k.generation) != Some(set.generation) {
            let run = RunKeys {
                run: set.dict.key(&self.info.name),
                host: set.dict.key(&self.info.host),
                sender: self.info.sender,
            };
            self.keys = Some(Keys {
                generation: set.generation,
                run,
                segment: Segment::of(&run, self.info.queue),
                ids: IdKeys::default(),
            });
        }
        self.keys.as_mut().expect("set above")
    }

    /// The class and event keys of `id` in `set`.
    fn id_keys(&mut self, set: &mut PartSet, id: EventId) -> (RunKeys, Option<i32>, Option<i32>) {
        let (k, [class, event]) = self.id_names(set, id);
        (
            k,
            (class >= 0).then_some(class),
            (event >= 0).then_some(event),
        )
    }

    /// The class and event keys of `id` in `set` as the events rows hold
    /// them (-1: none).
    #[inline(never)]
    fn id_names(&mut self, set: &mut PartSet, id: EventId) -> (RunKeys, [i32; 2]) {
        let cached = {
            let k = self.keys(set);
            k.ids.get(id.0).map(|n| (k.run, n))
        };
        if let Some(cached) = cached {
            return cached;
        }
        let class = self
            .catalog
            .class_of(id)
            .and_then(|c| self.catalog.class(c))
            .map(|c| set.dict.key(&c.name));
        let event = self
            .names
            .event(id)
            .or_else(|| self.catalog.event_name(id))
            .map(|n| set.dict.key(n));
        let names = [class.unwrap_or(-1), event.unwrap_or(-1)];
        let k = self.keys.as_mut().expect("made above");
        k.ids.insert(id.0, names);
        (k.run, names)
    }

    fn at(&mut self, time: u64) -> At {
        let t = ns(time);
        let at = At {
            seq: self.seq,
            time_ns: t,
            aligned_ns: t.saturating_add(self.offset_ns),
        };
        self.seq += 1;
        let c = &mut self.counts;
        c.first = c.first.min(t);
        c.last = c.last.max(t);
        at
    }

    /// Takes the run's next record (its time in ns).
    #[inline]
    pub fn push(&mut self, e: &Event, set: &mut PartSet) {
        self.counts.records += 1;
        if !is_plain(e) {
            return self.push_slow(e, set);
        }
        // The keys cached for this set and id, else looked up; as i32s
        // (-1: none) from the cache to the row held, no `Option` a row.
        // The run's keys and queue travel as one `Segment`.
        let cached = match &self.keys {
            Some(keys) if keys.generation == set.generation => {
                keys.ids.get(e.id.0).map(|n| (keys.segment, n))
            }
            _ => None,
        };
        let (segment, names) = match cached {
            Some(c) => c,
            None => {
                let (_, names) = self.id_names(set, e.id);
                (self.keys(set).segment, names)
            }
        };
        let at = self.at(e.time);
        self.counts.events += 1;
        if let Some((activated, lossy)) = self.jobs.pair(e, at.time_ns) {
            let k = self.keys(set).run;
            set.job_rows.push(&k, &at, e.args[0], activated, lossy);
        }
        set.events.push_keyed(
            segment,
            &at,
            &KeyedRow {
                source: e.source,
                event_id: e.id.0,
                names,
                args: e.args,
                flags: e.flags,
            },
        );
    }

    #[cold]
    fn push_slow(&mut self, e: &Event, set: &mut PartSet) {
        let mut items = std::mem::take(&mut self.items);
        self.assembler.push(*e, &mut |item| items.push(item));
        for item in items.drain(..) {
            self.item(item, set);
        }
        self.items = items;
    }

    /// Ends the run: combine runs still open were cut by its end.
    pub fn finish(&mut self, set: &mut PartSet) {
        let mut items = std::mem::take(&mut self.items);
        self.assembler.finish(&mut |item| items.push(item));
        for item in items.drain(..) {
            self.item(item, set);
        }
        self.items = items;
    }

    fn item(&mut self, item: Item, set: &mut PartSet) {
        match item {
            Item::Event(e) => self.record(&e, set),
            Item::Payload(p) => self.payload(&p, set),
        }
    }

    /// A record that is not part of a combine run.
    fn record(&mut self, e: &Event, set: &mut PartSet) {
        let loss = if e.id == tracer::HOOPS {
            let kind = if e.flags & UNREADABLE != 0 {
                kind::UNREADABLE
            } else if e.flags & DAMAGED != 0 {
                kind::DAMAGED
            } else {
                kind::HOOPS
            };
            Some((e.args[0], kind, u16::try_from(e.args[1]).ok(), None, None))
        } else {
            unclosed_stream(e).map(|(sender, n)| (0, kind::UNCLOSED, None, Some(n), Some(sender)))
        };
        if e.id == tracer::HOOPS {
            self.jobs.hoops();
        }
        let Some((count, kind, queue, accounted, sender)) = loss else {
            // An event (also a stray control record, as dump shows it).
            let (k, class, event) = self.id_keys(set, e.id);
            let at = self.at(e.time);
            self.counts.events += 1;
            if let Some((activated, lossy)) = self.jobs.pair(e, at.time_ns) {
                set.job_rows.push(&k, &at, e.args[0], activated, lossy);
            }
            let row = EventRow {
                source: e.source,
                event_id: e.id.0,
                class,
                event,
                args: e.args,
                flags: e.flags,
                queue: self.info.queue,
            };
            return set.events.push(&k, &at, &row);
        };
        let mut k = self.keys(set).run;
        if sender.is_some() {
            k.sender = sender;
        }
        let kind = set.dict.key(kind);
        let at = self.at(e.time);
        self.counts.lost = self.counts.lost.saturating_add(count);
        set.losses.push(
            &k,
            &at,
            &LossRow {
                count,
                kind,
                queue,
                accounted,
            },
        );
    }

    /// A loss that no record marks (an unfinished part found at start).
    pub fn loss(&mut self, set: &mut PartSet, time: u64, count: u64, kind: &str) {
        let k = self.keys(set).run;
        let kind = set.dict.key(kind);
        let at = self.at(time);
        self.counts.lost = self.counts.lost.saturating_add(count);
        let row = LossRow {
            count,
            kind,
            queue: None,
            accounted: None,
        };
        set.losses.push(&k, &at, &row);
    }

    fn payload(&mut self, p: &Payload, set: &mut PartSet) {
        let name = p.name_of();
        if name.is_some() && self.names.learn(p).is_some() {
            // A run-time event name: later rows name the id by it.
            if let Some(k) = &mut self.keys {
                k.ids.clear();
            }
        }
        let (k, class, event) = self.id_keys(set, p.id);
        let at = self.at(p.time);
        let text = std::str::from_utf8(&p.bytes).ok();
        let kind = match (name, text) {
            (Some(_), _) => "name",
            (None, Some(_)) => "str",
            (None, None) => "bytes",
        };
        let kind = set.dict.key(kind);
        let name_of = name.map(|(what, _)| {
            set.dict.key(match what {
                NAME_SOURCE => "source",
                NAME_TASK => "task",
                NAME_EVENT_ID => "event",
                _ => "unknown",
            })
        });
        let (state, received, expected) = match p.state {
            PayloadState::Complete => ("complete", None, None),
            PayloadState::Cut { received, expected } => ("partial", Some(received), expected),
            PayloadState::Mismatch => ("corrupt", None, None),
        };
        let row = PayloadRow {
            source: p.source,
            event_id: p.id.0,
            class,
            event: if name.is_some() { None } else { event },
            kind,
            arg0: if name.is_some() { None } else { p.arg },
            name_of,
            subject: name.map(|(_, s)| s),
            text,
            bytes: if text.is_none() { Some(&p.bytes) } else { None },
            complete: p.state == PayloadState::Complete,
            state: set.dict.key(state),
            received,
            expected,
            logged_len: p.logged_len,
        };
        set.payloads.push(&k, &at, &row);
    }

    /// Writes the run's streams row into `set` from `row` (its counts filled
    /// in from the rows since the last one) and starts counting anew.
    pub fn stream_row(&mut self, set: &mut PartSet, mut row: StreamRow) {
        let c = std::mem::take(&mut self.counts);
        row.path = self.info.path.clone();
        row.part = set.number;
        // No row since the last streams row: no times (a row's is >= 0).
        let any = c.last >= c.first;
        row.first_ns = any.then_some(c.first);
        row.last_ns = any.then_some(c.last);
        row.records = c.records;
        row.events = c.events;
        row.lost = c.lost;
        let k = self.keys(set).run;
        set.streams.push(&k, row);
    }

    /// Records taken since the last streams row.
    pub fn records(&self) -> u64 {
        self.counts.records
    }

    /// Events rows since the last streams row.
    pub fn events(&self) -> u64 {
        self.counts.events
    }

    /// Events lost (losses rows' counts) since the last streams row.
    pub fn lost(&self) -> u64 {
        self.counts.lost
    }

    /// The `seq` its next row takes.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Numbers its next rows from `seq` on (a run an earlier writer
    /// began, whose rows up to there are in the folder).
    pub fn continue_at(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// The greatest `time_ns` of its rows since the last streams row, if
    /// any.
    pub fn last_ns(&self) -> Option<u64> {
        let c = &self.counts;
        (c.last >= c.first).then(|| u64::try_from(c.last).unwrap_or(0))
    }
}

/// Whether `e` is an ordinary event: not a hoops record, not part of a
/// combine run (flag bit 14) nor a control record (bit 15: close runs,
/// unclosed marks). The assembler passes such records through at once, so
/// taking them past it keeps the order `qtrace dump` shows.
#[inline]
fn is_plain(e: &Event) -> bool {
    e.id != tracer::HOOPS && e.flags & 0xC000 == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use std::path::Path;

    /// A streams row's `first_ns` and `last_ns` are the least and greatest
    /// times of the run's rows since the last one (events and losses, in
    /// any order), and null when there was none.
    #[test]
    fn a_streams_row_spans_its_rows_times_and_is_null_without_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut set = PartSet::create(dir.path(), Path::new(""), 0).unwrap();
        let mut run = Run::new(RunInfo::default(), Catalog::builtin(), Names::new());
        for t in [30, 10, 20] {
            run.push(&Event::new(t, EventId(1), 0, [0, 0]), &mut set);
        }
        run.loss(&mut set, 5, 1, kind::HOOPS);
        run.loss(&mut set, u64::MAX, 1, kind::HOOPS); // clamps to i64::MAX
        run.stream_row(&mut set, StreamRow::default());
        run.stream_row(&mut set, StreamRow::default()); // no rows since
        let b = set.streams.batch(&set.dict).unwrap();
        let col = |name: &str| {
            let c = b.column_by_name(name).unwrap().as_primitive::<Int64Type>();
            (0..c.len())
                .map(|i| c.is_valid(i).then(|| c.value(i)))
                .collect::<Vec<_>>()
        };
        assert_eq!(col("first_ns"), [Some(5), None]);
        assert_eq!(col("last_ns"), [Some(i64::MAX), None]);
    }
}
