//! A user-defined queue type, written in safe code: it keeps a count per event
//! instead of the events themselves (a histogram — cheap enough to leave on in
//! production), registered, used, and reported.
//!
//! Run: `cargo run --example custom_queue`

use std::sync::atomic::{AtomicU64, Ordering};

use qtrace::classes::{lowlevel, semaphore, system, user, ClassSpec};
use qtrace::queue::{Queue, QueueContext, QueueCounters, Reservation};
use qtrace::queues::{AnyQueue, QueueType};
use qtrace::{ConfigError, Error, Event, Tracer};

/// The queue type: registered once, then queues are created from it.
struct Histogram;

/// Parameters: which event ids to count (everything up to `max_events`).
struct HistogramParams {
    max_events: usize,
}

impl Default for HistogramParams {
    fn default() -> Self {
        HistogramParams { max_events: 256 }
    }
}

/// One queue: a counter per event id, and one for ids out of its range.
struct HistogramQueue {
    counts: Box<[AtomicU64]>,
    out_of_range: AtomicU64,
}

impl HistogramQueue {
    /// How many times `id` was logged into this queue.
    fn count(&self, id: qtrace::EventId) -> u64 {
        self.counts
            .get(id.0 as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl QueueType for Histogram {
    type Params = HistogramParams;
    const NAME: &'static str = "histogram";

    // The create hook: allocate everything now, never on the hot path.
    fn create(
        &self,
        params: HistogramParams,
        _ctx: &QueueContext,
    ) -> Result<AnyQueue, ConfigError> {
        if params.max_events == 0 {
            return Err(ConfigError::InvalidParameter {
                queue_type: Self::NAME,
                reason: "max_events must be at least 1".into(),
            });
        }
        Ok(AnyQueue::custom(HistogramQueue {
            counts: (0..params.max_events).map(|_| AtomicU64::new(0)).collect(),
            out_of_range: AtomicU64::new(0),
        }))
    }
}

impl Queue for HistogramQueue {
    // There is always room: the reservation carries nothing.
    fn get(&self) -> Option<Reservation> {
        Some(Reservation::new(0))
    }

    fn post(&self, _reservation: Reservation, event: &Event) {
        match self.counts.get(event.id.0 as usize) {
            Some(c) => c.fetch_add(1, Ordering::Relaxed),
            None => self.out_of_range.fetch_add(1, Ordering::Relaxed),
        };
    }

    fn activate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        // The catalog at phase 2 is final: it includes user classes.
        println!(
            "histogram queue {} active ({} events known)",
            ctx.handle,
            ctx.catalog.event_count()
        );
        Ok(())
    }

    // The terminate hook: print what was seen.
    fn terminate(&self, ctx: &QueueContext) -> Result<(), ConfigError> {
        println!("histogram queue {} saw:", ctx.handle);
        for (id, count) in self.counts.iter().enumerate() {
            let n = count.load(Ordering::Relaxed);
            if n > 0 {
                let e = &ctx.catalog.events()[id];
                let class = &ctx.catalog.classes()[e.class.0 as usize].name;
                println!("  {:>8}  {class}:{}", n, e.name);
            }
        }
        Ok(())
    }

    // Every event is counted (accepted) and then forgotten (delivered to the
    // histogram), so nothing is "queued" or lost.
    fn counters(&self) -> QueueCounters {
        let n: u64 = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum::<u64>()
            + self.out_of_range.load(Ordering::Relaxed);
        QueueCounters::all_delivered(n)
    }
}

fn main() -> Result<(), Error> {
    // Phase 1.
    let tracer = Tracer::new();
    tracer.register_queue_type(Histogram)?;
    let hist = tracer.create_queue::<Histogram>(HistogramParams::default())?;
    let net = tracer.define_class(
        ClassSpec::new("net", "network stack")
            .event("rx", "a packet was received", &["len"])
            .event("tx", "a packet was sent", &["len"]),
    )?;
    for class in [
        system::CLASS,
        user::CLASS,
        lowlevel::CLASS,
        semaphore::CLASS,
        net.id,
    ] {
        tracer.assign_class(class, hist)?;
    }
    let (rx, tx) = (net.event("rx").unwrap(), net.event("tx").unwrap());

    // Phase 2, then a small workload on two threads.
    tracer.activate()?;
    std::thread::scope(|s| {
        for cpu in 0..2u64 {
            let tracer = &tracer;
            s.spawn(move || {
                for task in 0..100u64 {
                    tracer.log_event(system::ACTIVATE, [task, 0]);
                    tracer.log_event(system::SCHEDULE, [task, 0]);
                    if task % 10 == 0 {
                        tracer.log_event(lowlevel::INTERRUPT, [cpu, 0]);
                    }
                    tracer.log_event(semaphore::WAIT, [task, 1]);
                    tracer.log_event(semaphore::SIGNAL, [task, 1]);
                    tracer.log_event(if task % 3 == 0 { tx } else { rx }, [1500, 0]);
                    tracer.log_event(system::ENDCYCLE, [task, 0]);
                }
            });
        }
    });

    // Shutdown runs the terminate hook, which prints the histogram.
    let report = tracer.shutdown()?;
    let q = &report.queues[hist.index()];
    println!(
        "queue {} ({}): {} events accepted, {} lost",
        q.handle,
        q.type_name,
        q.counters.accepted,
        q.counters.lost()
    );
    // The queue outlives shutdown: `as_custom` gives it back as its own type.
    let histogram = tracer
        .queue(hist)?
        .as_custom::<HistogramQueue>()
        .expect("queue `hist` is a histogram");
    println!(
        "after shutdown: {} rx, {} tx",
        histogram.count(rx),
        histogram.count(tx)
    );
    Ok(())
}
