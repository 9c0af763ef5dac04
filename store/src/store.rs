//! The receiver's store (`qtrace recv --store DIR`): the records of every
//! sender stream go to Hive partitions `DIR/<table>/host=<ip>/date=<UTC
//! day>/hour=<UTC hour>/part-N.parquet`, one part set (part N of the four
//! tables) open per partition. A part set closes atomically (each part
//! written beside, fsynced, renamed, the folder fsynced) when it reaches
//! the roll size or age, when the hour changes, and when the receiver
//! stops. Part numbers are unique in the store and only grow, across
//! restarts. Old parts are deleted whole by age or total size. Memory is
//! bounded whatever the roll size: rows go to the Parquet writer every
//! 64 Ki rows and row groups to the file every 1 Mi rows.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use qtrace::classes::{tracer::HOOPS, Catalog};
use qtrace::combine::Names;
use qtrace::receiver::{ReceiverSummary, SenderSummary, StreamId, StreamSink};
use qtrace::wire::{unclosed_mark, TraceHeader};
use qtrace::Event;

use qtrace_core::encode::record::{self, RECORD_LEN};

use crate::align::Align;
use crate::checkpoint::{self, Entry, Kept};
use crate::columns::StreamRow;
use crate::error::StoreError;
use crate::partset::{Closing, PartSet};
use crate::run::{kind, Run, RunInfo};
use crate::scan::{next_part_number, scan, Found};

/// When parts roll and which are kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreConfig {
    /// Close a part set once it holds about this many bytes.
    pub roll_bytes: Option<u64>,
    /// Close a part set once it is this old.
    pub roll_age: Option<Duration>,
    /// Delete parts older than this.
    pub keep_age: Option<Duration>,
    /// Delete the oldest parts while the store is larger than this.
    pub keep_bytes: Option<u64>,
}

impl StoreConfig {
    /// The default roll: 64 MiB or 60 s, whichever comes first.
    pub const DEFAULT_ROLL_BYTES: u64 = 64 << 20;
    /// See [`StoreConfig::DEFAULT_ROLL_BYTES`].
    pub const DEFAULT_ROLL_AGE: Duration = Duration::from_secs(60);
}

/// A partition: host, UTC date and hour.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Partition {
    host: String,
    date: String,
    hour: u32,
}

impl Partition {
    fn path(&self) -> PathBuf {
        PathBuf::from(format!("host={}", self.host))
            .join(format!("date={}", self.date))
            .join(format!("hour={:02}", self.hour))
    }
}

/// The UTC date (`YYYY-MM-DD`) and hour of `t`.
pub fn utc_date_hour(t: SystemTime) -> (String, u32) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let hour = ((secs % 86_400) / 3600) as u32;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (format!("{y:04}-{m:02}-{d:02}"), hour)
}

/// A part set open for a partition.
#[derive(Debug)]
struct Open {
    set: PartSet,
    opened: Instant,
    /// Streams with rows in it (indexes into `Store::streams`).
    streams: Vec<usize>,
}

/// One sender stream's state in the store.
#[derive(Debug)]
struct Stream {
    id: StreamId,
    run: Run,
    has_header: bool,
    ticks_per_second: u64,
    /// Its clock origin (Unix ns), from its header.
    origin_unix_ns: Option<i64>,
    /// The partition it writes to now.
    partition: Option<Partition>,
    /// The slot of that partition's open part set (`Store::slots`).
    slot: Option<usize>,
    /// Its clock against the receiver's.
    align: Align,
    /// The datagram being taken: its arrival (receiver Unix ns) and its
    /// newest record's time (ns since the sender's origin).
    pending: Option<(i64, Option<u64>)>,
    /// The newest stamp observed (sender Unix ns).
    last_stamp: Option<i64>,
    /// What the folder holds of it (for `open-streams`).
    kept: Kept,
    /// What an earlier receiver, killed while this sender's stream was
    /// under way, stored of it: taken off this stream's first losses.
    carry: Option<Carry>,
    /// Events and losses handed to the store after it failed.
    unstored: u64,
}

/// What is left to take off a continued stream's first losses (its gap
/// before its first datagram, and that datagram's drops).
#[derive(Clone, Copy, Debug)]
struct Carry {
    left: u64,
    /// A losses record took some: the stream goes on the earlier one.
    started: bool,
    /// The first datagram's events came: its drops follow, then no more.
    events: bool,
}

impl Stream {
    /// Ends the datagram being taken: one observation of the clocks, and
    /// the offset its stream's next rows are aligned with.
    fn observe(&mut self) {
        let Some((arrival, Some(newest))) = self.pending.take() else {
            return;
        };
        let Some(origin) = self.origin_unix_ns else {
            return;
        };
        let stamp = origin.saturating_add(i64::try_from(newest).unwrap_or(i64::MAX));
        self.align.observe(stamp, arrival);
        self.last_stamp = Some(stamp);
        if let Some(theta) = self.align.offset_at(stamp) {
            self.run.offset_ns = origin.saturating_add(theta);
        }
    }
}

impl Stream {
    /// Its first record is not a loss, or its first datagram is over: it
    /// does not go on an earlier receiver's stream (it starts afresh), so
    /// the folder holds nothing of it yet.
    #[cold]
    fn drop_carry(&mut self) {
        if let Some(c) = self.carry.take() {
            if !c.started {
                self.kept.stored = self.kept.stored.saturating_sub(c.left);
            }
        }
    }

    /// The stream's first datagram: its first record gives the first
    /// estimate of the clocks, so no row is left unaligned.
    #[inline]
    fn first_estimate(&mut self, e: &Event) {
        if let (Some((arrival, None)), Some(origin), None) =
            (self.pending, self.origin_unix_ns, self.last_stamp)
        {
            let t = (e.time as u128 * 1_000_000_000 / self.ticks_per_second.max(1) as u128) as u64;
            let stamp = origin.saturating_add(i64::try_from(t).unwrap_or(i64::MAX));
            self.align.observe(stamp, arrival);
            self.last_stamp = Some(stamp);
            if let Some(theta) = self.align.offset_at(stamp) {
                self.run.offset_ns = origin.saturating_add(theta);
            }
        }
    }

    /// Pushes a record (its time made ns); returns that time.
    #[inline]
    fn push(&mut self, e: &Event, set: &mut PartSet) -> u64 {
        if self.ticks_per_second == 1_000_000_000 {
            self.run.push(e, set);
            e.time
        } else {
            let mut e = *e;
            e.time = (e.time as u128 * 1_000_000_000 / self.ticks_per_second.max(1) as u128) as u64;
            self.run.push(&e, set);
            e.time
        }
    }
}

/// The receiver's clock now, Unix ns.
fn unix_now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What a store run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StoreReport {
    /// Part sets closed (each holds the four tables).
    pub parts_closed: u64,
    /// Bytes of the parts closed.
    pub bytes: u64,
    /// Events rows written.
    pub events: u64,
    /// Events lost (sum of the losses rows' counts written).
    pub lost: u64,
    /// Unfinished parts of an earlier run found and accounted for.
    pub unfinished: Vec<PathBuf>,
    /// Runs an earlier receiver left under way (killed), marked
    /// `unclosed` at opening (FORMAT.md 7.1, `open-streams`).
    pub unclosed: Vec<String>,
    /// Parts deleted by retention.
    pub deleted: u64,
}

/// The receiver's Parquet store: a [`StreamSink`] for
/// [`qtrace::receiver::Receiver::run_streams`].
///
/// ```no_run
/// use qtrace::receiver::{Receiver, RunLimit};
/// use qtrace_store::{Store, StoreConfig};
///
/// let mut receiver = Receiver::bind("127.0.0.1:5510".parse()?)?;
/// let mut store = Store::open("store".as_ref(), StoreConfig::default())?;
/// let summary = receiver.run_streams(RunLimit::default(), &mut store)?;
/// let report = store.finish(&summary)?;
/// println!("{} events in {} parts", report.events, report.parts_closed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store {
    /// Held (locked) while the store is open: one writer per folder.
    _lock: std::fs::File,
    root: PathBuf,
    config: StoreConfig,
    /// The receiver's start (Unix ms): runs of different receiver runs
    /// have different names.
    started_ms: u128,
    next_part: u64,
    /// Open part sets by partition: slots in `slots`.
    open: HashMap<Partition, usize>,
    /// The open part sets (a record reaches its set by slot, not by hash).
    slots: Vec<Option<Open>>,
    /// Part sets closing on their encoder threads, by partition (one per
    /// partition at most: a second roll there waits for the first).
    closing: Vec<(Partition, Closing)>,
    streams: Vec<Stream>,
    index: HashMap<StreamId, usize>,
    current: Option<usize>,
    /// Closed parts by number: (number, total bytes, closing time).
    closed: Vec<(u64, u64, SystemTime)>,
    report: StoreReport,
    /// The first write error: the store stops taking records.
    error: Option<StoreError>,
    /// When the rolls were last checked (every 10 ms at most: sizing the
    /// open parts walks their column writers).
    last_check: Instant,
    /// The kernel's arrival time of the datagram being handled (Unix ns,
    /// `StreamSink::arrival`); the receiver's clock when none came.
    arrival: Option<i64>,
    /// Streams that ended whose last rows are in sets still closing.
    /// (With their final facts.)
    ended: Vec<(Entry, Kept, StreamRow)>,
    /// Per sender (address, id) left under way by a killed receiver: what
    /// the folder holds of its stream.
    carry: HashMap<(SocketAddr, u32), u64>,
    /// While [`Store::finish`] runs: the streams ended unclosed whose last
    /// rows became whole on disk meanwhile (listed in `open-streams`).
    finishing: Option<Vec<Entry>>,
}

impl Store {
    /// Opens (or creates) the store at `root`: unfinished parts left by a
    /// receiver that was killed are accounted for (a losses row of kind
    /// `unfinished` each, in a new part of their partition) and removed;
    /// part numbers continue after every part there.
    ///
    /// # Errors
    /// [`StoreError`] when the folder cannot be read or written.
    pub fn open(root: &Path, config: StoreConfig) -> Result<Self, StoreError> {
        std::fs::create_dir_all(root).map_err(|e| StoreError::io("create", root, e))?;
        let lock = lock(root)?;
        let mut store = Store {
            _lock: lock,
            root: root.to_path_buf(),
            config,
            started_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            next_part: next_part_number(root)?,
            open: HashMap::new(),
            slots: Vec::new(),
            closing: Vec::new(),
            streams: Vec::new(),
            index: HashMap::new(),
            current: None,
            closed: Vec::new(),
            report: StoreReport::default(),
            error: None,
            last_check: Instant::now(),
            arrival: None,
            ended: Vec::new(),
            carry: HashMap::new(),
            finishing: None,
        };
        let found = scan(root)?;
        // The part sets whole on disk: parts there, no temp of theirs.
        let whole: Vec<u64> = found
            .iter()
            .filter(|f| !f.temp && !found.iter().any(|t| t.temp && t.number == f.number))
            .map(|f| f.number)
            .collect();
        store.report.unfinished = recover_found(root, &found, &mut store.next_part)?;
        // Streams a killed receiver left under way: marked unclosed; the
        // same sender going on counts as lost only what is not here.
        let mut under_way = checkpoint::read(root)?;
        for e in &mut under_way {
            e.settle(&whole);
        }
        let unmarked: Vec<Entry> = under_way.iter().filter(|e| !e.marked).cloned().collect();
        mark_unclosed(root, &unmarked, &mut store.next_part)?;
        for e in under_way {
            store.carry.insert((e.addr, e.sender), e.stored);
            if !e.marked {
                store.report.unclosed.push(e.run);
            }
        }
        checkpoint::write(root, &[])?;
        for f in scan(root)?.into_iter().filter(|f| !f.temp) {
            match store.closed.iter_mut().find(|c| c.0 == f.number) {
                Some(c) => {
                    c.1 += f.size;
                    c.2 = c.2.max(f.modified);
                }
                None => store.closed.push((f.number, f.size, f.modified)),
            }
        }
        store.retain()?;
        Ok(store)
    }

    /// The temps of unfinished parts found (and accounted for) at opening.
    pub fn recovered(&self) -> Vec<PathBuf> {
        self.report.unfinished.clone()
    }

    /// The runs an earlier receiver left under way (it was killed), marked
    /// `unclosed` at opening: what the folder holds of each is not counted
    /// lost again when its sender goes on (FORMAT.md 7.1, `open-streams`).
    pub fn unclosed(&self) -> &[String] {
        &self.report.unclosed
    }

    /// The first write error, if the store stopped on one.
    pub fn error(&self) -> Option<&StoreError> {
        self.error.as_ref()
    }

    fn fail(&mut self, e: StoreError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// The slot of the open part set of `p`, opened if needed.
    fn open_set(&mut self, p: &Partition) -> Result<usize, StoreError> {
        if let Some(&k) = self.open.get(p) {
            return Ok(k);
        }
        let n = self.next_part;
        self.next_part += 1;
        // After the set of this partition still closing, if any: its temps
        // are created once that one is renamed into place.
        let gate = self
            .closing
            .iter_mut()
            .find(|(q, _)| q == p)
            .and_then(|(_, c)| c.gate.take());
        let set = PartSet::create_receiving(&self.root, &p.path(), n, gate)?;
        let open = Open {
            set,
            opened: Instant::now(),
            streams: Vec::new(),
        };
        let k = match self.slots.iter().position(Option::is_none) {
            Some(k) => {
                self.slots[k] = Some(open);
                k
            }
            None => {
                self.slots.push(Some(open));
                self.slots.len() - 1
            }
        };
        self.open.insert(p.clone(), k);
        Ok(k)
    }

    /// The open part set in slot `k`.
    fn slot(&mut self, k: usize) -> &mut Open {
        self.slots[k].as_mut().expect("an open slot")
    }

    /// Closes the part set of `p`: a streams row for each stream with rows
    /// in it (`last` gives the final facts of streams that ended).
    fn close(
        &mut self,
        p: &Partition,
        last: &dyn Fn(&StreamId) -> Option<StreamRow>,
    ) -> Result<(), StoreError> {
        let Some(k) = self.open.remove(p) else {
            return Ok(());
        };
        let Some(mut open) = self.slots[k].take() else {
            return Ok(());
        };
        for &i in &open.streams {
            let row = last(&self.streams[i].id).unwrap_or_else(|| StreamRow {
                verdict: "open".into(),
                ..StreamRow::default()
            });
            write_stream_row(&mut self.streams[i], &mut open.set, row, &mut self.report);
            let s = &mut self.streams[i];
            if s.slot == Some(k) {
                s.partition = None;
                s.slot = None;
            }
        }
        // One set closing per partition: a second roll waits for the first
        // (so memory holds two sets of a partition at most).
        if let Some(i) = self.closing.iter().position(|(q, _)| q == p) {
            let (_, c) = self.closing.swap_remove(i);
            self.closed_set(c)?;
        }
        // Before it can reach the disk, `open-streams` lists it (a kill
        // may come once it is renamed into place, before it is reaped).
        checkpoint::write(&self.root, &self.under_way())?;
        let closing = open.set.close()?;
        self.closing.push((p.clone(), closing));
        Ok(())
    }

    /// Waits for a closing set; accounts for its parts, and says in
    /// `open-streams` what the folder now holds of the streams under way.
    fn closed_set(&mut self, c: Closing) -> Result<(), StoreError> {
        let n = c.number;
        let parts = c.wait()?;
        let bytes: u64 = parts.iter().map(|(_, b)| b).sum();
        self.report.parts_closed += 1;
        self.report.bytes += bytes;
        self.closed.push((n, bytes, SystemTime::now()));
        for s in &mut self.streams {
            s.kept.closed(n);
        }
        for (_, k, _) in &mut self.ended {
            k.closed(n);
        }
        let finishing = &mut self.finishing;
        self.ended.retain(|(e, k, row)| {
            if !k.settled() {
                return true;
            }
            if let (Some(left), false) = (finishing.as_mut(), row.complete) {
                left.push(Entry {
                    marked: true,
                    stored: k.stored,
                    seq: k.seq,
                    last_ns: k.last_ns,
                    ..e.clone()
                });
            }
            false
        });
        checkpoint::write(&self.root, &self.under_way())
    }

    /// The streams under way, and those ended whose last rows are not yet
    /// whole on disk, with what the folder holds of each.
    fn under_way(&self) -> Vec<Entry> {
        let held = self.streams.iter().map(|s| (entry(s), &s.kept));
        let ended = self.ended.iter().map(|(e, k, _)| (e.clone(), k));
        held.chain(ended)
            .map(|(e, k)| Entry {
                stored: k.stored,
                seq: k.seq,
                last_ns: k.last_ns,
                closing: k.closing(),
                ..e
            })
            .collect()
    }

    /// Accounts for the sets that finished closing (all of them with
    /// `wait`); the first error.
    fn reap(&mut self, wait: bool) -> Result<(), StoreError> {
        let mut first = Ok(());
        let mut i = 0;
        while i < self.closing.len() {
            if wait || self.closing[i].1.is_done() {
                let (_, c) = self.closing.swap_remove(i);
                if let Err(e) = self.closed_set(c) {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            } else {
                i += 1;
            }
        }
        first
    }

    /// Rolls the part sets that are full, old, or of a past hour; then
    /// deletes what retention says.
    fn check_rolls(&mut self) -> Result<(), StoreError> {
        let reaped = self.closing.len();
        self.reap(false)?;
        let reaped = reaped != self.closing.len();
        let (date, hour) = utc_date_hour(SystemTime::now());
        let due: Vec<Partition> = self
            .open
            .iter()
            .filter_map(|(p, &k)| Some((p, self.slots[k].as_ref()?)))
            .filter(|(p, o)| {
                p.date != date
                    || p.hour != hour
                    || self.config.roll_bytes.is_some_and(|b| o.set.size() >= b)
                    || self
                        .config
                        .roll_age
                        .is_some_and(|a| o.opened.elapsed() >= a)
            })
            .map(|(p, _)| p.clone())
            .collect();
        for p in &due {
            self.close(p, &|_| None)?;
        }
        // Retention counts the sets closed so far.
        if reaped {
            self.retain()?;
        }
        Ok(())
    }

    /// Deletes whole part sets (every table's part N) older than the kept
    /// age, then the oldest while the store is larger than the kept size.
    fn retain(&mut self) -> Result<(), StoreError> {
        if self.config.keep_age.is_none() && self.config.keep_bytes.is_none() {
            return Ok(());
        }
        self.closed.sort_by_key(|c| c.0);
        let now = SystemTime::now();
        let mut total: u64 = self.closed.iter().map(|c| c.1).sum();
        let mut doomed = Vec::new();
        for c in &self.closed {
            let old = self
                .config
                .keep_age
                .is_some_and(|a| now.duration_since(c.2).unwrap_or_default() > a);
            let big = self.config.keep_bytes.is_some_and(|b| total > b);
            if old || big {
                doomed.push(c.0);
                total -= c.1;
            }
        }
        if doomed.is_empty() {
            return Ok(());
        }
        for f in scan(&self.root)? {
            if !f.temp && doomed.contains(&f.number) {
                std::fs::remove_file(&f.path).map_err(|e| StoreError::io("delete", &f.path, e))?;
                remove_empty_parents(&self.root, &f.path);
            }
        }
        self.closed.retain(|c| !doomed.contains(&c.0));
        self.report.deleted += doomed.len() as u64;
        Ok(())
    }

    /// Ends the run: the final streams row of every stream (its receiver
    /// facts from `summary`), every open part set closed, retention
    /// applied; `open-streams` then lists the streams left unclosed
    /// (FORMAT.md 7.1).
    ///
    /// # Errors
    /// [`StoreError::Unstored`]: the first write error of the run, or of
    /// closing, with the events and losses taken but not in a part set
    /// whole on disk (written as `unstored` losses if the disk let it).
    pub fn finish(mut self, summary: &ReceiverSummary) -> Result<StoreReport, StoreError> {
        if let Some(e) = self.error.take() {
            // The sets closing still end whole; what is not in them is
            // counted, and written as losses if the disk lets it.
            let _ = self.reap(true);
            return Err(self.unstored(e, summary));
        }
        match self.finish_sets(summary) {
            Ok(()) => Ok(self.report),
            Err(e) => {
                let _ = self.reap(true);
                Err(self.unstored(e, summary))
            }
        }
    }

    /// [`Store::finish`]'s work: every stream's final row, every set
    /// closed, the file of streams under way removed, retention applied.
    fn finish_sets(&mut self, summary: &ReceiverSummary) -> Result<(), StoreError> {
        self.finishing = Some(Vec::new());
        // Each stream's summary: the k-th incarnation of (addr, sender) is
        // the k-th entry of that address and sender.
        let mut facts: HashMap<StreamId, StreamRow> = HashMap::new();
        let mut seen: HashMap<(std::net::SocketAddr, u32), usize> = HashMap::new();
        let mut ordered: Vec<&Stream> = self.streams.iter().filter(|s| s.id.ordinal > 0).collect();
        ordered.sort_by_key(|s| s.id.ordinal);
        for s in ordered {
            let k = seen.entry((s.id.addr, s.id.sender)).or_insert(0);
            let entry = summary
                .senders
                .iter()
                .filter(|x| (x.addr, x.sender) == (s.id.addr, s.id.sender))
                .nth(*k);
            *k += 1;
            if let Some(e) = entry {
                facts.insert(s.id, final_row(e));
            }
        }
        // The hoops record of a source refused for good (its sender never
        // got a slot) is a stream of its own: marked so.
        for s in self.streams.iter().filter(|s| s.id.ordinal == 0) {
            facts.insert(
                s.id,
                StreamRow {
                    verdict: "refused".into(),
                    ..StreamRow::default()
                },
            );
        }
        // Every stream's last rows and final facts go to a part set: the
        // one it writes to, else a new one of its partition.
        for i in 0..self.streams.len() {
            if !facts.contains_key(&self.streams[i].id) {
                continue;
            }
            let p = match self.streams[i].partition.clone() {
                Some(p) => p,
                None => {
                    let (date, hour) = utc_date_hour(SystemTime::now());
                    let p = Partition {
                        host: self.streams[i].id.addr.ip().to_string(),
                        date,
                        hour,
                    };
                    self.streams[i].partition = Some(p.clone());
                    p
                }
            };
            let k = self.open_set(&p)?;
            self.streams[i].slot = Some(k);
            let open = self.slots[k].as_mut().expect("opened above");
            if !open.streams.contains(&i) {
                open.streams.push(i);
            }
            // Combine runs still open were cut by the stream's end.
            self.streams[i].run.finish(&mut open.set);
        }
        // The datagrams the receiver rejected, per source address and
        // reason: losses rows of their own kinds, in the source's partition.
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        for r in &summary.rejected {
            let (date, hour) = utc_date_hour(SystemTime::now());
            let p = Partition {
                host: r.addr.ip().to_string(),
                date,
                hour,
            };
            let k = self.open_set(&p)?;
            let open = self.slots[k].as_mut().expect("opened above");
            crate::rejections::write(&mut open.set, r, &self.root, self.started_ms, now_ns);
        }
        let parts: Vec<Partition> = self.open.keys().cloned().collect();
        for p in parts {
            self.close(&p, &|id| facts.get(id).cloned())?;
        }
        self.reap(true)?;
        // Every stream's last rows are whole on disk. The streams still
        // under way (marked unclosed) are listed: a receiver that follows
        // on the folder takes what it holds of them off their losses when
        // their senders go on.
        let mut unclosed = self.finishing.take().unwrap_or_default();
        unclosed.extend(
            self.streams
                .iter()
                .filter(|s| s.id.ordinal > 0 && facts.get(&s.id).is_some_and(|r| !r.complete))
                .map(|s| Entry {
                    marked: true,
                    stored: s.kept.stored,
                    seq: s.kept.seq,
                    last_ns: s.kept.last_ns,
                    ..entry(s)
                }),
        );
        checkpoint::write(&self.root, &unclosed)?;
        self.retain()
    }

    /// After the first write error `cause`: the events and losses taken
    /// but not in a part set whole on disk, per stream, written as a
    /// `losses` row of kind `unstored` each (and a last `streams` row) in a
    /// new part set of its partition — the folder re-created if it was
    /// deleted — if that can be done.
    #[cold]
    fn unstored(&mut self, cause: StoreError, summary: &ReceiverSummary) -> StoreError {
        let mut lost: Vec<(Entry, u64, StreamRow)> = Vec::new();
        for s in &self.streams {
            let n = s
                .kept
                .not_whole()
                .saturating_add(s.run.events())
                .saturating_add(s.run.lost())
                .saturating_add(s.unstored);
            let facts = summary
                .senders
                .iter()
                .rfind(|x| (x.addr, x.sender) == (s.id.addr, s.id.sender))
                .map(final_row);
            let mut e = entry(s);
            e.seq = s.run.next_seq();
            lost.push((e, n, facts.unwrap_or_default()));
        }
        for (e, k, row) in &self.ended {
            lost.push((e.clone(), k.not_whole(), row.clone()));
        }
        lost.retain(|(_, n, _)| *n > 0);
        let count = lost.iter().fold(0u64, |a, (_, n, _)| a.saturating_add(*n));
        let recorded = count > 0 && self.write_unstored(&lost).is_ok();
        StoreError::Unstored {
            cause: Box::new(cause),
            count,
            recorded,
        }
    }

    fn write_unstored(&mut self, lost: &[(Entry, u64, StreamRow)]) -> Result<(), StoreError> {
        std::fs::create_dir_all(&self.root).map_err(|e| StoreError::io("create", &self.root, e))?;
        let mut hosts: Vec<String> = lost
            .iter()
            .map(|(e, _, _)| e.addr.ip().to_string())
            .collect();
        hosts.sort();
        hosts.dedup();
        let (date, hour) = utc_date_hour(SystemTime::now());
        for host in hosts {
            let p = Partition {
                host: host.clone(),
                date: date.clone(),
                hour,
            };
            let n = self.next_part.max(next_part_number(&self.root)?);
            self.next_part = n + 1;
            let mut set = PartSet::create(&self.root, &p.path(), n)?;
            for (e, count, row) in lost
                .iter()
                .filter(|(e, _, _)| e.addr.ip().to_string() == host)
            {
                let info = RunInfo {
                    name: e.run.clone(),
                    host: host.clone(),
                    sender: Some(e.sender),
                    queue: None,
                    path: self.root.display().to_string(),
                };
                let mut run = Run::new(info, Catalog::builtin(), Names::new());
                run.continue_at(e.seq);
                run.loss(&mut set, 0, *count, kind::UNSTORED);
                let mut row = row.clone();
                if row.verdict.is_empty() {
                    row.verdict = "unclosed".into();
                }
                run.stream_row(&mut set, row);
            }
            set.finish()?;
        }
        Ok(())
    }

    /// Sender streams whose state the store holds now: the receiver's
    /// tracked and parked streams, at most
    /// [`ReceiverConfig::max_senders`](qtrace::receiver::ReceiverConfig::max_senders)
    /// plus [`MAX_RETIRED`](qtrace::receiver::MAX_RETIRED); a stream's
    /// state is freed when it ends.
    pub fn streams_held(&self) -> usize {
        self.streams.len()
    }

    /// Ends stream `i` for good: its last rows and its streams row with
    /// the final facts `row` go to the part set it writes to (else a new
    /// one of its partition), a streams row to every other open set that
    /// holds rows of it, and its state is freed.
    fn end_stream(&mut self, i: usize, row: StreamRow) -> Result<(), StoreError> {
        if self.current == Some(i) {
            self.streams[i].observe();
        }
        let p = match self.streams[i].partition.clone() {
            Some(p) => p,
            None => {
                let (date, hour) = utc_date_hour(SystemTime::now());
                Partition {
                    host: self.streams[i].id.addr.ip().to_string(),
                    date,
                    hour,
                }
            }
        };
        let k = self.open_set(&p)?;
        for (j, open) in self.slots.iter_mut().enumerate() {
            let Some(open) = open.as_mut() else {
                continue;
            };
            let held = open.streams.iter().position(|&x| x == i);
            if let Some(at) = held {
                open.streams.swap_remove(at);
            }
            if j == k {
                // Combine runs still open were cut by the stream's end.
                self.streams[i].run.finish(&mut open.set);
                write_stream_row(
                    &mut self.streams[i],
                    &mut open.set,
                    row.clone(),
                    &mut self.report,
                );
            } else if held.is_some() {
                let open_row = StreamRow {
                    verdict: "open".into(),
                    ..StreamRow::default()
                };
                write_stream_row(
                    &mut self.streams[i],
                    &mut open.set,
                    open_row,
                    &mut self.report,
                );
            }
        }
        // Until its last rows are whole on disk, `open-streams` lists it.
        let kept = std::mem::take(&mut self.streams[i].kept);
        if !kept.settled() {
            let mut e = entry(&self.streams[i]);
            e.seq = self.streams[i].run.next_seq();
            self.ended.push((e, kept, row));
        }
        // Free its state: the last stream takes its index.
        let id = self.streams[i].id;
        self.index.remove(&id);
        let last = self.streams.len() - 1;
        self.streams.swap_remove(i);
        if i != last {
            self.index.insert(self.streams[i].id, i);
            for open in self.slots.iter_mut().flatten() {
                for x in &mut open.streams {
                    if *x == last {
                        *x = i;
                    }
                }
            }
        }
        self.current = match self.current {
            Some(c) if c == i => None,
            Some(c) if c == last => Some(i),
            c => c,
        };
        Ok(())
    }

    #[cold]
    fn switch(&mut self, id: &StreamId, header: Option<&TraceHeader>) {
        let i = match self.index.get(id) {
            Some(&i) => i,
            None => {
                let info = RunInfo {
                    name: format!(
                        "{}/{}/{}.{}",
                        id.addr, id.sender, self.started_ms, id.ordinal
                    ),
                    host: id.addr.ip().to_string(),
                    sender: Some(id.sender),
                    queue: None,
                    path: self.root.display().to_string(),
                };
                let carry = self.carry.remove(&(id.addr, id.sender));
                self.streams.push(Stream {
                    id: *id,
                    run: Run::new(info, Catalog::builtin(), Names::new()),
                    has_header: false,
                    ticks_per_second: 1_000_000_000,
                    origin_unix_ns: None,
                    partition: None,
                    slot: None,
                    align: Align::default(),
                    pending: None,
                    last_stamp: None,
                    kept: Kept::holding(carry.unwrap_or(0)),
                    unstored: 0,
                    carry: carry.map(|left| Carry {
                        left,
                        started: false,
                        events: false,
                    }),
                });
                self.index.insert(*id, self.streams.len() - 1);
                self.streams.len() - 1
            }
        };
        let s = &mut self.streams[i];
        if let (Some(h), false) = (header, s.has_header) {
            s.has_header = true;
            s.ticks_per_second = h.ticks_per_second();
            s.origin_unix_ns = i64::try_from(h.clock_origin_unix_ns()).ok();
            s.run.info.queue = h.queue().map(|(q, _)| q.0);
            s.run.set_catalog(h.catalog().clone());
        }
        self.current = Some(i);
    }

    /// The current stream and the slot of the part set it writes to (opened
    /// if needed); `None` when there is none or the store failed.
    #[inline]
    fn place(&mut self) -> Option<(usize, usize)> {
        if self.error.is_some() {
            return None;
        }
        let i = self.current?;
        match self.streams[i].slot {
            Some(k) => Some((i, k)),
            None => match self.target(i) {
                Ok(k) => Some((i, k)),
                Err(err) => {
                    self.fail(err);
                    None
                }
            },
        }
    }

    /// The slot of the part set stream `i` writes to now, opened if
    /// needed.
    #[cold]
    fn target(&mut self, i: usize) -> Result<usize, StoreError> {
        let (date, hour) = utc_date_hour(SystemTime::now());
        let p = Partition {
            host: self.streams[i].id.addr.ip().to_string(),
            date,
            hour,
        };
        let k = self.open_set(&p)?;
        let open = self.slot(k);
        if !open.streams.contains(&i) {
            open.streams.push(i);
        }
        self.streams[i].partition = Some(p);
        self.streams[i].slot = Some(k);
        Ok(k)
    }
}

/// Writes stream `s`'s streams row into `set` from `row` (its clock facts
/// and counts added); counts its rows in `report`.
fn write_stream_row(
    s: &mut Stream,
    set: &mut PartSet,
    mut row: StreamRow,
    report: &mut StoreReport,
) {
    row.origin_unix_ns = s.origin_unix_ns;
    if let Some(stamp) = s.last_stamp {
        row.clock_offset_ns = s.align.offset_at(stamp);
        row.clock_offset_bound_ns = s.align.bound_ns();
        row.clock_drift_ppm = s.align.drift_ppm();
    }
    report.events += s.run.events();
    report.lost = report.lost.saturating_add(s.run.lost());
    let amount = s.run.events().saturating_add(s.run.lost());
    let last = s.run.last_ns();
    s.run.stream_row(set, row);
    s.kept.written(set.number, amount, s.run.next_seq(), last);
}

/// Stream `s` as `open-streams` lists it (what the folder holds: filled
/// in by the caller).
fn entry(s: &Stream) -> Entry {
    Entry {
        marked: false,
        stored: 0,
        seq: 0,
        last_ns: 0,
        sender: s.id.sender,
        addr: s.id.addr,
        run: s.run.info.name.clone(),
        closing: Vec::new(),
    }
}

/// Marks each stream of `under_way` (what a killed receiver left in
/// `open-streams`) `unclosed`: in a new part set of its partition, the
/// unclosed mark of its run (a losses row, `accounted` what the folder
/// holds of it) and its last streams row (verdict `unclosed`).
fn mark_unclosed(root: &Path, under_way: &[Entry], next: &mut u64) -> Result<(), StoreError> {
    let mut hosts: Vec<String> = under_way.iter().map(|e| e.addr.ip().to_string()).collect();
    hosts.sort();
    hosts.dedup();
    let (date, hour) = utc_date_hour(SystemTime::now());
    for host in hosts {
        let p = Partition {
            host: host.clone(),
            date: date.clone(),
            hour,
        };
        let mut set = PartSet::create(root, &p.path(), *next)?;
        *next += 1;
        for e in under_way.iter().filter(|e| e.addr.ip().to_string() == host) {
            let info = RunInfo {
                name: e.run.clone(),
                host: host.clone(),
                sender: Some(e.sender),
                queue: None,
                path: root.display().to_string(),
            };
            let mut run = Run::new(info, Catalog::builtin(), Names::new());
            run.continue_at(e.seq);
            run.push(&unclosed_mark(e.last_ns, e.sender, e.stored), &mut set);
            run.finish(&mut set);
            run.stream_row(
                &mut set,
                StreamRow {
                    verdict: "unclosed".into(),
                    ..StreamRow::default()
                },
            );
        }
        set.finish()?;
    }
    Ok(())
}

/// A stream's final facts, from the receiver's summary.
fn final_row(s: &SenderSummary) -> StreamRow {
    StreamRow {
        complete: s.closed,
        verdict: if s.closed { "closed" } else { "unclosed" }.into(),
        datagrams: Some(s.datagrams),
        lost_datagrams: Some(s.lost_datagrams),
        sender_dropped: Some(s.sender_dropped),
        unsent: Some(s.unsent),
        logged: s.logged,
        ..StreamRow::default()
    }
}

impl StreamSink for Store {
    fn stream(&mut self, id: &StreamId, header: Option<&TraceHeader>) {
        // Called once per datagram released: the previous one is whole.
        if let Some(i) = self.current {
            self.streams[i].observe();
        }
        match self.current {
            Some(i)
                if self.streams[i].id == *id
                    && (header.is_none() || self.streams[i].has_header) => {}
            _ => self.switch(id, header),
        }
        if let Some(i) = self.current {
            // Past the first datagram of a continued stream: nothing more
            // is taken off its losses.
            if self.streams[i].carry.is_some_and(|c| c.events) {
                self.streams[i].carry = None;
            }
        }
        if let Some(i) = self.current {
            let arrival = self.arrival.unwrap_or_else(unix_now_ns);
            self.streams[i].pending = Some((arrival, None));
        }
    }

    fn arrival(&mut self, unix_ns: i64) {
        self.arrival = Some(unix_ns);
    }

    #[inline]
    fn record(&mut self, e: &Event) {
        let Some((i, k)) = self.place() else {
            if let Some(i) = self.current {
                let n = if e.id == HOOPS {
                    e.args[0]
                } else {
                    u64::from(e.flags & 0xC000 == 0)
                };
                let s = &mut self.streams[i];
                s.unstored = s.unstored.saturating_add(n);
            }
            return;
        };
        // Room first: the batch (a data page) stays within BATCH_ROWS.
        match self.slots[k].as_mut().map(|o| o.set.make_room(1)) {
            Some(Ok(())) => {}
            Some(Err(err)) => return self.fail(err),
            None => return,
        }
        let s = &mut self.streams[i];
        let Some(open) = self.slots[k].as_mut() else {
            return;
        };
        let mut taken;
        let e = match s.carry.as_mut() {
            Some(c) if e.id == HOOPS && e.flags == 0 => {
                // What an earlier receiver stored of this stream is not
                // lost: taken off its first losses.
                let take = c.left.min(e.args[0]);
                c.left -= take;
                c.started = true;
                if c.left == 0 {
                    s.carry = None;
                }
                if take == e.args[0] {
                    return;
                }
                taken = *e;
                taken.args[0] -= take;
                &taken
            }
            Some(_) => {
                s.drop_carry();
                e
            }
            None => e,
        };
        s.first_estimate(e);
        let time = s.push(e, &mut open.set);
        if let Some((_, newest)) = &mut s.pending {
            *newest = Some(newest.map_or(time, |n| n.max(time)));
        }
    }

    /// A datagram's records: where they go is found once, not per record.
    fn records(&mut self, raw: &[u8]) {
        let Some((i, k)) = self.place() else {
            if let Some(i) = self.current {
                let s = &mut self.streams[i];
                s.unstored = s.unstored.saturating_add((raw.len() / RECORD_LEN) as u64);
            }
            return;
        };
        // Room first: the batch (a data page) stays within BATCH_ROWS.
        match self.slots[k]
            .as_mut()
            .map(|o| o.set.make_room(raw.len() / RECORD_LEN))
        {
            Some(Ok(())) => {}
            Some(Err(err)) => return self.fail(err),
            None => return,
        }
        let s = &mut self.streams[i];
        let Some(open) = self.slots[k].as_mut() else {
            return;
        };
        let mut records = raw
            .chunks_exact(RECORD_LEN)
            .filter_map(|c| <&[u8; RECORD_LEN]>::try_from(c).ok())
            .map(record::parse);
        let Some(first) = records.next() else {
            return;
        };
        match s.carry.as_mut() {
            Some(c) if c.started && !c.events => c.events = true,
            Some(_) => s.drop_carry(),
            None => {}
        }
        s.first_estimate(&first);
        let mut newest = s.push(&first, &mut open.set);
        if s.ticks_per_second == 1_000_000_000 {
            for e in records {
                s.run.push(&e, &mut open.set);
                newest = newest.max(e.time);
            }
        } else {
            for e in records {
                newest = newest.max(s.push(&e, &mut open.set));
            }
        }
        if let Some((_, n)) = &mut s.pending {
            *n = Some(n.map_or(newest, |n| n.max(newest)));
        }
    }

    /// The stream's last rows and final facts are written, its state
    /// freed (the store's memory follows the receiver's streams).
    fn end(&mut self, id: &StreamId, account: &SenderSummary) {
        let Some(&i) = self.index.get(id) else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.end_stream(i, final_row(account)) {
            self.fail(e);
        }
    }

    fn tick(&mut self) -> bool {
        if self.error.is_some() {
            return false;
        }
        if let Some(i) = self.current {
            self.streams[i].observe();
        }
        for open in self.slots.iter_mut().flatten() {
            if let Err(e) = open.set.flush_full() {
                self.fail(e);
                return false;
            }
        }
        if self.last_check.elapsed() >= Duration::from_millis(10) {
            self.last_check = Instant::now();
            if let Err(e) = self.check_rolls() {
                self.fail(e);
                return false;
            }
        }
        true
    }
}

/// Removes the empty partition folders above `file`, up to the table folder.
fn remove_empty_parents(root: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root || d.parent() == Some(root) {
            break;
        }
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// Accounts for the unfinished temps among `found`: for each part number,
/// a new part set of its partition holds a losses row of kind `unfinished`
/// (count 0: a part without its footer cannot be read, so its rows are
/// lost uncounted) and a streams row; the temps, and the parts of the same
/// set already renamed into place, are then removed. Returns their paths.
fn recover_found(root: &Path, found: &[Found], next: &mut u64) -> Result<Vec<PathBuf>, StoreError> {
    // The partition of a file: the folder under its table's folder.
    let sub_of = |f: &Found| {
        let table_dir = root.join(f.table.name());
        f.path
            .parent()
            .and_then(|d| d.strip_prefix(&table_dir).ok())
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    let mut by_part: Vec<(u64, PathBuf)> = Vec::new();
    for f in found.iter().filter(|f| f.temp) {
        let sub = sub_of(f);
        if !by_part.iter().any(|(n, s)| *n == f.number && *s == sub) {
            by_part.push((f.number, sub));
        }
    }
    for (n, sub) in &by_part {
        let host = sub
            .components()
            .find_map(|c| c.as_os_str().to_str()?.strip_prefix("host="))
            .unwrap_or("")
            .to_string();
        let mut set = PartSet::create(root, sub, *next)?;
        *next += 1;
        let info = RunInfo {
            name: format!("unfinished/part-{n}"),
            host,
            sender: None,
            queue: None,
            path: root.join(sub).display().to_string(),
        };
        let mut run = Run::new(info, Catalog::builtin(), Names::new());
        run.loss(&mut set, 0, 0, kind::UNFINISHED);
        run.stream_row(
            &mut set,
            StreamRow {
                verdict: "unfinished".into(),
                ..StreamRow::default()
            },
        );
        set.finish()?;
    }
    // The set goes whole: its temps, and the parts of it already renamed
    // into place (a kill while its parts were being closed one by one),
    // whose rows the unfinished mark says are lost — kept, they would be
    // rows and losses at once.
    let mut removed = Vec::new();
    for f in found {
        let in_unfinished = f.temp
            || by_part
                .iter()
                .any(|(n, s)| *n == f.number && *s == sub_of(f));
        if in_unfinished {
            std::fs::remove_file(&f.path).map_err(|e| StoreError::io("remove", &f.path, e))?;
            removed.push(f.path.clone());
        }
    }
    Ok(removed)
}

/// Accounts for the unfinished parts of a store whose receiver was killed
/// (what [`Store::open`] does at the next start): each becomes a losses row
/// of kind `unfinished` in a new part of its partition, and its temps are
/// removed. Returns the temps removed.
///
/// # Errors
/// [`StoreError`] when the folder cannot be read or written.
pub fn recover_dir(root: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let _lock = lock(root)?;
    let found = scan(root)?;
    let mut next = next_part_number(root)?;
    recover_found(root, &found, &mut next)
}

/// The name of the lock file in a store's folder.
pub const LOCK_NAME: &str = ".qtrace-store.lock";

/// Locks the store at `root` for this process (released when the file is
/// dropped or the process ends, even killed): a second receiver, or a
/// recovery, cannot take the temps of a running one.
fn lock(root: &Path) -> Result<std::fs::File, StoreError> {
    let path = root.join(LOCK_NAME);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io("open the lock file", &path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Target(format!(
            "another process writes the store {} (it holds {}): stop that receiver first, or give another folder",
            root.display(),
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", &path, e)),
    }
}

#[cfg(test)]
mod memory {
    use std::mem::size_of;

    use super::{Open, Stream, StreamId};

    /// The fixed byte costs RELIABILITY.md ("Receiver memory", the store's rows)
    /// states: a struct that grows changes this test and the document
    /// together. The heap a stream's header and event ids add is measured
    /// in tests/memory_costs.rs.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_stores_items_take_the_documented_bytes() {
        // A stream's state, and its entry in the index by stream id.
        assert_eq!(size_of::<Stream>(), 896);
        assert_eq!(size_of::<(StreamId, usize)>(), 56);
        // An open part set, before its rows and writers.
        assert_eq!(size_of::<Open>(), 2_288);
    }
}
