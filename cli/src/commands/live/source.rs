//! Where `qtrace live` gets its events: a receiver of its own (`--listen`),
//! or a trace file followed as it grows (`FILE`, and `qtrace recv --live`,
//! which follows the file its receiver writes). Each runs on a thread of
//! its own and hands events to the view through a bounded [`Feed`]; what
//! the view cannot take is counted, never waited for.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use qtrace::classes::Catalog;
use qtrace::reader::TraceReader;
use qtrace::receiver::{Progress, Receiver, ReceiverConfig, ReceiverSummary, RunLimit, Stopper};
use qtrace::Event;

use crate::spine::follow::{FollowState, Follower, Step};
use crate::spine::Exit;

/// Events waiting for the view, and what the input says about itself.
#[derive(Debug, Default)]
pub struct Feed {
    /// Events, and where the input jumped ahead (indices into them: the
    /// events before and after such a point are not contiguous).
    events: Mutex<(Vec<Event>, Vec<usize>)>,
    /// Most events waiting at once: past it the input counts and goes on.
    cap: usize,
    skipped: AtomicU64,
    /// The input's class table, when it has one (a file's header).
    catalog: Mutex<Option<Catalog>>,
    /// The followed file ended with its close run.
    pub closed: AtomicBool,
    /// The input ended (the receiver stopped, the file closed or failed).
    pub ended: AtomicBool,
    /// Why it ended badly, or what happened to the file (re-created).
    note: Mutex<Option<String>>,
    /// The exit status an input that stopped on an error gives the view
    /// (as the other commands: 2 a file that is not a trace or is damaged,
    /// 1 a receiver that failed); `None` while none did.
    failure: Mutex<Option<Exit>>,
}

impl Feed {
    /// A feed holding at most `cap` events between two refreshes.
    pub fn new(cap: usize) -> Feed {
        Feed {
            cap,
            ..Feed::default()
        }
    }

    /// Hands one event to the view (or counts it skipped).
    pub fn push(&self, e: &Event) {
        self.push_all(std::slice::from_ref(e));
    }

    /// Hands events to the view, what fits; counts the rest skipped.
    pub fn push_all(&self, events: &[Event]) {
        let mut taken = 0;
        if let Ok(mut v) = self.events.lock() {
            taken = events.len().min(self.cap.saturating_sub(v.0.len()));
            v.0.extend_from_slice(&events[..taken]);
        }
        let rest = (events.len() - taken) as u64;
        if rest > 0 {
            self.skipped.fetch_add(rest, Ordering::Relaxed);
        }
    }

    /// The events waiting, taken, and where the input jumped ahead.
    pub fn take(&self) -> (Vec<Event>, Vec<usize>) {
        self.events
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }

    /// The input jumps ahead: `skipped` events are not handed over.
    fn gap(&self, skipped: u64) {
        self.skipped.fetch_add(skipped, Ordering::Relaxed);
        if let Ok(mut v) = self.events.lock() {
            let at = v.0.len();
            v.1.push(at);
        }
    }

    /// Events skipped so far.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// The input's class table, taken (once per change).
    pub fn catalog(&self) -> Option<Catalog> {
        self.catalog.lock().ok()?.take()
    }

    /// A note to show (taken).
    pub fn note(&self) -> Option<String> {
        self.note.lock().ok()?.take()
    }

    fn set_note(&self, s: String) {
        if let Ok(mut n) = self.note.lock() {
            *n = Some(s);
        }
    }

    /// The input stopped on an error: `why` is shown, `exit` is the view's
    /// status.
    fn fail(&self, exit: Exit, why: String) {
        self.set_note(why);
        if let Ok(mut f) = self.failure.lock() {
            *f = Some(exit);
        }
    }

    /// The status of an input that stopped on an error ([`Exit::Ok`] when
    /// none did).
    pub fn failure(&self) -> Exit {
        self.failure
            .lock()
            .ok()
            .and_then(|f| *f)
            .unwrap_or(Exit::Ok)
    }
}

/// A running input.
pub struct Source {
    /// Its events.
    pub feed: Arc<Feed>,
    /// The receiver's live account, for the senders (not for a file alone).
    pub progress: Option<Arc<Progress>>,
    /// The followed file's name (file mode).
    pub file: Option<String>,
    /// What the header line says: `listening on ADDR`, `following FILE`.
    pub what: String,
    /// The events come from the file the receiver writes (`recv --live`),
    /// behind its account.
    pub by_file: bool,
    stop: Box<dyn Fn() + Send>,
    thread: Option<JoinHandle<Option<ReceiverSummary>>>,
}

impl Source {
    /// Binds a receiver on `addr` and runs it on a thread.
    ///
    /// # Errors
    ///
    /// The receiver's bind error, as a message.
    pub fn listen(addr: SocketAddr, config: ReceiverConfig, cap: usize) -> Result<Source, String> {
        let mut receiver = Receiver::bind_with(addr, config).map_err(|e| e.to_string())?;
        let feed = Arc::new(Feed::new(cap));
        let progress = receiver.progress();
        let stopper = receiver.stopper();
        let what = format!("listening on {}", receiver.local_addr());
        let f = feed.clone();
        let thread = std::thread::spawn(move || {
            let r = receiver.run_with(RunLimit::default(), &mut |e| f.push(e));
            f.ended.store(true, Ordering::Relaxed);
            match r {
                Ok(s) => Some(s),
                Err(e) => {
                    f.fail(Exit::Failed, e.to_string());
                    None
                }
            }
        });
        Ok(Source {
            feed,
            progress: Some(progress),
            file: None,
            what,
            by_file: false,
            stop: Box::new(move || stopper.stop()),
            thread: Some(thread),
        })
    }

    /// Follows the trace file at `path` on a thread.
    pub fn follow(path: &Path, cap: usize) -> Source {
        let feed = Arc::new(Feed::new(cap));
        let state = Arc::new(FollowState::default());
        let (f, st, p) = (feed.clone(), state.clone(), path.to_path_buf());
        let thread = std::thread::spawn(move || {
            follow_into(&p, st, &f);
            f.ended.store(true, Ordering::Relaxed);
            None
        });
        Source {
            feed,
            progress: None,
            file: Some(crate::spine::io::label(path)),
            what: format!("following {}", path.display()),
            by_file: false,
            stop: Box::new(move || state.stop.store(true, Ordering::Relaxed)),
            thread: Some(thread),
        }
    }

    /// The file a receiver (run elsewhere) writes, followed, with that
    /// receiver's account for the senders (`qtrace recv --live`).
    pub fn receiver_file(
        path: &Path,
        progress: Arc<Progress>,
        stop: Stopper,
        cap: usize,
    ) -> Source {
        let mut s = Source::follow(path, cap);
        s.progress = Some(progress);
        s.file = None;
        s.by_file = true;
        s.what = format!("receiving into {}", path.display());
        let follow_stop = s.stop;
        s.stop = Box::new(move || {
            stop.stop();
            follow_stop();
        });
        s
    }

    /// Stops the input and waits for its thread: the receiver's account,
    /// if it ran one.
    pub fn finish(mut self) -> Option<ReceiverSummary> {
        (self.stop)();
        self.thread.take().and_then(|t| t.join().ok()).flatten()
    }
}

/// Events the follower hands over at once.
const BATCH: usize = 1024;

/// Most events a second the view reads from a followed file; past that it
/// jumps to the newest ones (counted as skipped), so that a view of a fast
/// stream costs a bounded share of a core.
pub const RATE: u64 = 250_000;

/// Follows `path` into `feed` until it closes, fails or `state.stop`.
fn follow_into(path: &Path, state: Arc<FollowState>, feed: &Feed) {
    let mut follower = match Follower::open(path, state) {
        Ok(Some(f)) => f,
        Ok(None) => return,
        Err(e) => {
            feed.fail(Exit::BadInput, e.to_string());
            return;
        }
    };
    // The file's class table for the view, and its clock to turn ticks
    // into ns.
    let header = |f: &Follower| {
        let r = f.reader()?;
        if let Ok(mut c) = feed.catalog.lock() {
            *c = Some(r.catalog().clone());
        }
        Some(r.header().clone())
    };
    let Some(mut clock) = header(&follower) else {
        return;
    };
    // Handed over a batch at a time: one lock per batch, not per event.
    let mut batch: Vec<Event> = Vec::with_capacity(BATCH);
    let push = |clock: &qtrace::wire::TraceHeader, mut e: Event, batch: &mut Vec<Event>| {
        e.time = clock.ticks_to_ns(e.time);
        batch.push(e);
        if batch.len() == BATCH {
            feed.push_all(batch);
            batch.clear();
        }
    };
    let mut looked = Instant::now();
    // The view's budget: at most RATE events a second; past it, what was
    // read goes over and the follower jumps to the newest records.
    let (mut second, mut taken) = (Instant::now(), 0u64);
    loop {
        if let Some(e) = follower.buffered() {
            push(&clock, e, &mut batch);
            taken += 1;
            if taken >= RATE {
                feed.push_all(&batch);
                batch.clear();
                let wait = Duration::from_secs(1).saturating_sub(second.elapsed());
                std::thread::sleep(wait);
                let skipped = follower.skip_to_end();
                if skipped > 0 {
                    feed.gap(skipped);
                }
                (second, taken) = (Instant::now(), 0);
            }
            continue;
        }
        if second.elapsed() >= Duration::from_secs(1) {
            (second, taken) = (Instant::now(), 0);
        }
        // About to wait: what was read goes to the view first.
        feed.push_all(&batch);
        batch.clear();
        // About to wait: a header rewritten in place (`qtrace recv` puts
        // the sender's in once its catalog arrives) is read again, at most
        // once a second.
        if looked.elapsed() >= Duration::from_secs(1) {
            looked = Instant::now();
            if let Ok(h) = TraceReader::open(follower.path()).map(|r| r.header().clone()) {
                if h != clock {
                    if let Ok(mut c) = feed.catalog.lock() {
                        *c = Some(h.catalog().clone());
                    }
                    clock = h;
                }
            }
        }
        match follower.next() {
            Some(Step::Event(e)) => push(&clock, e, &mut batch),
            Some(Step::Replaced { copy }) => {
                if let Some(h) = header(&follower) {
                    clock = h;
                }
                feed.set_note(if copy {
                    "the file was rewritten (a copy): following the new one".to_string()
                } else {
                    "the file was re-created: following the new one".to_string()
                });
            }
            Some(Step::NextChunk { path, missed, .. }) => {
                if let Some(h) = header(&follower) {
                    clock = h;
                }
                // Chunks deleted before they were reached break the view
                // like a jump ahead (their events are not counted here).
                let gap = if missed > 0 {
                    feed.push_all(&batch);
                    batch.clear();
                    feed.gap(0);
                    format!(" ({missed} chunks before it were deleted unread)")
                } else {
                    String::new()
                };
                feed.set_note(format!(
                    "the chunk was closed by its rotation: following the next one, {}{gap}",
                    path.display()
                ));
            }
            Some(Step::Damaged(e)) => {
                feed.push_all(&batch);
                feed.fail(Exit::BadInput, e.to_string());
                return;
            }
            Some(Step::End(c)) => {
                feed.push_all(&batch);
                // The file ended with its close run (after a jump ahead its
                // counts disagree with the records read: not damage).
                if c.is_some() {
                    feed.closed.store(true, Ordering::Relaxed);
                }
                return;
            }
            None => {
                feed.push_all(&batch);
                return;
            }
        }
    }
}
