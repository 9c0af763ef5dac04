//! The hot path (`log_event` and its kin: one relaxed load of the route, then
//! the queue's get and post) and variable payloads (strings, bytes and names as
//! combine runs).

use super::Tracer;
use crate::model::combine::{self, Run};
use crate::model::event::{Event, EventId};
use crate::model::handle::{DRAINED, LIVE, QUEUE_MASK};
use crate::queue::config_error::ConfigError;
use crate::queue::queue_trait::Queue;
use crate::queues::drained::feed::Feed;
use crate::queues::{AnyQueue, CircularQueue};
use crate::ring::producer_cache;
use std::sync::atomic::Ordering;

impl Tracer {
    // ----- the hot path -------------------------------------------------------

    /// Records `id` with its two arguments, from this thread's source
    /// ([`crate::model::source::current`]). Never waits for the queue or for other
    /// logging threads, and never allocates per event; a masked-out event
    /// costs one relaxed load and a branch. Once per thread, the first event
    /// into a circular queue gets the thread's token: a short lock on the
    /// token pool, and the registration of the thread-exit hook that gives
    /// the token back (which may allocate). Log once from a thread before
    /// relying on its signal handlers logging.
    ///
    /// ```
    /// use qtrace::classes::user;
    /// use qtrace::queues::Dummy;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// tracer.assign_event(user::USER0, q)?;
    /// tracer.activate()?;
    /// tracer.log_event(user::USER0, [42, 7]); // recorded
    /// tracer.log_event(user::USER1, [0, 0]); // not assigned: not recorded
    /// assert_eq!(tracer.counters(q)?.accepted, 1);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    #[inline(always)]
    pub fn log_event(&self, id: EventId, args: [u64; 2]) {
        let route = self.routes[id.0 as usize].load(Ordering::Relaxed);
        if route as u32 & LIVE == 0 {
            return;
        }
        self.record(route, None, id, args);
    }

    /// Records a value of a counter (FORMAT.md 1.3.2): exactly
    /// `log_event(counter.id(), [value as arg0, 0])`, so it costs what
    /// [`log_event`](Tracer::log_event) costs. The counter is declared by
    /// [`classes!`](crate::classes!) (`counter`) or found in a catalog
    /// ([`Catalog::counter`](crate::classes::Catalog::counter)).
    ///
    /// ```
    /// use qtrace::classes::ClassSpec;
    /// use qtrace::macros::CounterKind;
    /// use qtrace::queues::Dummy;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let io = tracer.define_class(
    ///     ClassSpec::new("io", "block I/O").counter("inflight", "requests in flight", CounterKind::I64, "requests"),
    /// )?;
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// tracer.assign_class(io.id, q)?;
    /// tracer.activate()?;
    /// let inflight = tracer.catalog().counter::<i64>("io:inflight").unwrap();
    /// tracer.log_counter(inflight, -1);
    /// assert_eq!(tracer.counters(q)?.accepted, 1);
    /// // The wrong kind finds nothing.
    /// assert!(tracer.catalog().counter::<f64>("io:inflight").is_none());
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    #[inline(always)]
    pub fn log_counter<T: qtrace_core::classes::counter::CounterValue>(
        &self,
        counter: qtrace_core::classes::counter::StaticCounter<T>,
        value: T,
    ) {
        self.log_event(counter.id(), counter.args(value));
    }

    /// Begins an instance of a flow (FORMAT.md 1.3.3): logs
    /// `flow.begin()` with `[id, origin]`, where the origin is this thread's
    /// source ([`crate::model::source::current`]), and returns the instance
    /// to pass along with what flows, for [`flow_step`](Tracer::flow_step)
    /// and [`flow_end`](Tracer::flow_end). `id` need only be unique among
    /// this source's open flows: the origin keeps ids of other sources
    /// apart. Costs what [`log_event`](Tracer::log_event) costs, plus the
    /// read of the thread's source.
    ///
    /// ```
    /// use qtrace::classes::ClassSpec;
    /// use qtrace::queues::Dummy;
    ///
    /// let tracer = qtrace::Tracer::new();
    /// let net = tracer.define_class(ClassSpec::new("net", "the network").flow("packet", "a packet"))?;
    /// let q = tracer.create_queue::<Dummy>(())?;
    /// tracer.assign_class(net.id, q)?;
    /// tracer.activate()?;
    /// let packet = tracer.catalog().flow("net:packet").unwrap();
    /// qtrace::source::set_current(4);
    /// let p = tracer.flow_begin(packet, 99);
    /// assert_eq!((p.origin, p.id), (4, 99));
    /// std::thread::scope(|s| {
    ///     s.spawn(|| tracer.flow_end(packet, p)); // another thread: [99, 4]
    /// });
    /// assert_eq!(tracer.counters(q)?.accepted, 2);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    #[inline(always)]
    pub fn flow_begin(
        &self,
        flow: qtrace_core::classes::flow::StaticFlow,
        id: u64,
    ) -> qtrace_core::classes::flow::FlowId {
        let f = qtrace_core::classes::flow::FlowId::new(crate::model::source::current(), id);
        self.log_event(flow.begin(), f.args());
        f
    }

    /// Records that flow instance `f` passes here (`flow.step()` with
    /// `[f.id, f.origin]`), from whatever source logs it.
    #[inline(always)]
    pub fn flow_step(
        &self,
        flow: qtrace_core::classes::flow::StaticFlow,
        f: qtrace_core::classes::flow::FlowId,
    ) {
        self.log_event(flow.step(), f.args());
    }

    /// Records that flow instance `f` ends here (`flow.end()` with
    /// `[f.id, f.origin]`), from whatever source logs it.
    #[inline(always)]
    pub fn flow_end(
        &self,
        flow: qtrace_core::classes::flow::StaticFlow,
        f: qtrace_core::classes::flow::FlowId,
    ) {
        self.log_event(flow.end(), f.args());
    }

    /// Records `id` as coming from `source` (a CPU or thread number the caller
    /// knows).
    #[inline(always)]
    pub fn log_event_from(&self, source: u32, id: EventId, args: [u64; 2]) {
        let route = self.routes[id.0 as usize].load(Ordering::Relaxed);
        if route as u32 & LIVE == 0 {
            return;
        }
        self.record(route, Some(source), id, args);
    }

    /// Whether `id` would be recorded now (one relaxed load): lets a caller
    /// skip computing expensive arguments.
    #[inline(always)]
    pub fn is_enabled(&self, id: EventId) -> bool {
        self.routes[id.0 as usize].load(Ordering::Relaxed) as u32 & LIVE != 0
    }

    // ----- variable payloads (combine runs) ----------------------------------

    /// Records `text` attached to event `id` (argument 0), as a combine run
    /// ([`crate::model::combine`]): `1 + ⌈len / 16⌉` consecutive records reserved
    /// together in the event's queue. Up to [`combine::MAX_PAYLOAD`] (4096)
    /// bytes are stored; a longer text is cut there, and readers show the
    /// cut and the length logged. Never blocks and never allocates; a
    /// masked-out event costs one relaxed load and a branch, as for
    /// [`Tracer::log_event`]. Queues count each record of the run (a run
    /// with no room is dropped and counted record by record).
    ///
    /// ```
    /// # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
    /// use qtrace::classes::user;
    /// use qtrace::combine::{Assembler, Item};
    /// use qtrace::queues::{Fixed, FixedParams};
    /// use qtrace::Tracer;
    ///
    /// let tracer = Tracer::new();
    /// let q = tracer.create_queue::<Fixed>(FixedParams::default().with_capacity(64))?;
    /// tracer.assign_event(user::USER0, q)?;
    /// tracer.log_str(user::USER0, "worker-3 took request 42");
    /// let records = tracer.queue(q)?.as_fixed().unwrap().snapshot_events();
    /// assert_eq!(records.len(), 3); // 24 bytes: the begin record and two more
    /// let mut texts = Vec::new();
    /// let mut asm = Assembler::new();
    /// for e in records {
    ///     asm.push(e, &mut |item| if let Item::Payload(p) = item { texts.push(p.text().into_owned()) });
    /// }
    /// assert_eq!(texts, ["worker-3 took request 42"]);
    /// # Ok::<(), qtrace::Error>(())
    /// ```
    #[inline]
    pub fn log_str(&self, id: EventId, text: &str) {
        self.log_event_bytes(id, 0, text.as_bytes());
    }

    /// Records `bytes` attached to event `id`: [`Tracer::log_str`] for
    /// bytes that need not be text.
    #[inline]
    pub fn log_bytes(&self, id: EventId, bytes: &[u8]) {
        self.log_event_bytes(id, 0, bytes);
    }

    /// Records event `id` with its first argument `arg` and `text` attached
    /// (a fixed-size event with a string): one combine run whose begin
    /// record carries `arg`. See [`Tracer::log_str`].
    #[inline]
    pub fn log_event_str(&self, id: EventId, arg: u64, text: &str) {
        self.log_event_bytes(id, arg, text.as_bytes());
    }

    /// [`Tracer::log_event_str`] with bytes.
    #[inline]
    pub fn log_event_bytes(&self, id: EventId, arg: u64, bytes: &[u8]) {
        let route = self.routes[id.0 as usize].load(Ordering::Relaxed);
        if route as u32 & LIVE == 0 {
            return;
        }
        self.record_run(route, id, arg, bytes);
    }

    #[inline(never)]
    pub(super) fn record_run(&self, route: u64, id: EventId, arg: u64, bytes: &[u8]) {
        if let Some(queue) = self.queues[(route as u32 & QUEUE_MASK) as usize].get() {
            let source = crate::model::source::current();
            queue.post_run(&Run::new(self.clock.now(), id, source, arg, bytes));
        }
    }

    /// Names a source (a thread or CPU number, the records' `source`):
    /// `dump`, CTF and Chrome exports show the name. The name is recorded
    /// into every queue of the tracer now (a name record,
    /// [`combine::NAME_SOURCE`]), so each file carries it, and kept by the
    /// tracer ([`Tracer::recorded_names`], the newest per subject): a
    /// circular queue may overwrite the record like any record, but every
    /// file a fixed or circular queue saves starts with the names kept
    /// (FORMAT.md 1.8, "Names prologue"). Recorded even while the tracer is suspended
    /// (names are not events). A name longer than
    /// [`combine::MAX_PAYLOAD`] bytes is cut.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_source(&self, source: u32, name: &str) -> Result<(), ConfigError> {
        self.record_name(source, combine::NAME_SOURCE, source as u64, name)
    }

    /// Names this thread's source ([`crate::model::source::current`]) and returns
    /// its number; see [`Tracer::name_source`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_thread(&self, name: &str) -> Result<u32, ConfigError> {
        let source = crate::model::source::current();
        self.name_source(source, name).map(|()| source)
    }

    /// Names a task id (the task argument of the system class's events,
    /// S.Ha.R.K.'s task numbers, or any task number of the program); see
    /// [`Tracer::name_source`]. The id is kept to 56 bits.
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_task(&self, task: u64, name: &str) -> Result<(), ConfigError> {
        self.record_name(
            crate::model::source::current(),
            combine::NAME_TASK,
            task,
            name,
        )
    }

    /// Names an event id at run time ([`combine::NAME_EVENT_ID`]): readers
    /// show `name` for the records of `id` (the `tracing` bridge names its
    /// callsite events so). See [`Tracer::name_source`].
    ///
    /// # Errors
    ///
    /// [`ConfigError::AfterShutdown`] once the tracer is shut down.
    pub fn name_event(&self, id: EventId, name: &str) -> Result<(), ConfigError> {
        self.record_name(
            crate::model::source::current(),
            combine::NAME_EVENT_ID,
            id.0 as u64,
            name,
        )
    }

    pub(super) fn record_name(
        &self,
        source: u32,
        kind: u8,
        subject: u64,
        name: &str,
    ) -> Result<(), ConfigError> {
        let r = self.registry.lock();
        r.require_running("record a name")?;
        let run = Run::name(self.clock.now(), source, kind, subject, name.as_bytes());
        r.names.keep(source, kind, subject, name.as_bytes());
        for queue in self.queues[..r.queue_types.len()]
            .iter()
            .filter_map(|q| q.get())
            // Filter, gate and trigger queues forward to a queue that gets
            // the name itself.
            .filter(|q| !crate::filters::trigger::forwards(q))
        {
            queue.post_run(&run);
        }
        Ok(())
    }

    /// Records an event by its `route` (`Tracer::route`: the route word and
    /// the queue's key in the producer cache); `source` is `None` for this
    /// thread's source number.
    #[inline(always)]
    pub(super) fn record(&self, route: u64, source: Option<u32>, id: EventId, args: [u64; 2]) {
        let key = route;
        // Read before the cache's entry (whose compiler fences would keep
        // the two cached paths below from sharing one read): valid only once
        // this thread's number is assigned, which every cached path ensures
        // before it caches.
        let source_word = match source {
            Some(s) => (s as u64) << 32,
            None => crate::model::source::current_word_assigned(),
        };
        // The common case, an event into a circular queue where this thread
        // owns a shard: its key checked against this thread's newest cache
        // entry (read twice, see `producer_cache::newest`), then plain
        // stores into the shard.
        if let (true, ring) = producer_cache::newest(key) {
            // SAFETY: a hit's ring belongs to a queue of the tracer whose
            // serial is in `key`, i.e. `self`, which is held for the ring's
            // whole use (see `producer_cache::newest`).
            let ring = unsafe { &*ring };
            let id_word = Event::id_word(id, source_word);
            ring.push_words(|| [self.clock.now(), id_word, args[0], args[1]]);
            return;
        }
        // Next, an event into an online or UDP queue (its route says so) that
        // this thread logged into last: the queue's feed, cached the same way
        // under the queue's feed key, saves the queue's lookup and the match
        // on its kind (8 of 64 instructions; `scripts/instructions.sh`).
        let feed_key = producer_cache::feed_key(key);
        if route as u32 & DRAINED != 0 {
            if let (true, feed) = producer_cache::newest_feed(feed_key) {
                // SAFETY: an entry under a feed key holds the feed of the
                // queue the key names (stored by `record_feed`), of the
                // tracer whose serial is in the key, i.e. `self`, which is
                // held for the whole use; the feed lives as long as its
                // queue, and the queue as long as the tracer. Any thread may
                // use a feed (no ownership).
                let feed = unsafe { &*feed.cast::<Feed>() };
                let id_word = Event::id_word(id, source_word);
                feed.push_words(|| [self.clock.now(), id_word, args[0], args[1]]);
                return;
            }
        }
        let source = source.unwrap_or_else(crate::model::source::current);
        // A route word names a queue only after that queue was stored, and
        // `OnceLock::get` synchronises with the store, so `None` is only seen
        // for a route being written concurrently with its queue's creation.
        if let Some(queue) = self.queues[(route as u32 & QUEUE_MASK) as usize].get() {
            // One match on the queue's kind, then `get` and `post` of that
            // kind inlined together (matching in `get` and again in `post`
            // would cost a second dispatch per event).
            match queue {
                AnyQueue::CircularQueue(q) => self.record_circular(q, key, source, id, args),
                AnyQueue::FixedQueue(q) => self.record_into(q, source, id, args),
                AnyQueue::DummyQueue(q) => self.record_into(q, source, id, args),
                AnyQueue::OnlineQueue(q) => self.record_feed(q.feed(), feed_key, source, id, args),
                AnyQueue::UdpQueue(q) => self.record_feed(q.feed(), feed_key, source, id, args),
                AnyQueue::DynQueue(q) => self.record_into(q, source, id, args),
            }
        }
    }

    /// A circular-queue event whose queue is not the newest in this
    /// thread's cache: one this thread logged into before (found in the
    /// cache's older entries), the first into this queue from this thread
    /// (which then caches its shard), or one from a thread without a shard
    /// (into the shared ring).
    #[inline(never)]
    pub(super) fn record_circular(
        &self,
        queue: &CircularQueue,
        key: u64,
        source: u32,
        id: EventId,
        args: [u64; 2],
    ) {
        let make = || Event::new(self.clock.now(), id, source, args);
        // SAFETY: as in `record`.
        if let Some(ring) = unsafe { producer_cache::lookup_older(key) } {
            return ring.push_with(make);
        }
        match queue.producer_shard() {
            Some(ring) => {
                // The cached path reads the source number unchecked: make
                // sure this thread has one (`log_event_from` did not ask).
                crate::model::source::current();
                producer_cache::fill(key, ring);
                ring.push_with(make);
            }
            None => queue.log_shared(make),
        }
    }

    /// An event into an online or UDP queue whose feed is not the newest in
    /// this thread's cache: found in the older entries (moved to the front),
    /// or cached now.
    #[inline(never)]
    fn record_feed(&self, feed: &Feed, feed_key: u64, source: u32, id: EventId, args: [u64; 2]) {
        if producer_cache::lookup_older_feed(feed_key).is_none() {
            // The cached path reads the source number unchecked: `source`
            // may have come from `log_event_from`, so make sure this thread
            // has one.
            crate::model::source::current();
            producer_cache::fill_feed(feed_key, (feed as *const Feed).cast());
        }
        let source_word = (source as u64) << 32;
        let id_word = Event::id_word(id, source_word);
        feed.push_words(|| [self.clock.now(), id_word, args[0], args[1]]);
    }

    #[inline(always)]
    fn record_into<Q: Queue + ?Sized>(&self, queue: &Q, source: u32, id: EventId, args: [u64; 2]) {
        if let Some(reservation) = queue.get() {
            let event = Event::new(self.clock.now(), id, source, args);
            queue.post(reservation, &event);
        }
    }
}
