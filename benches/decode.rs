//! Reading compact trace files (FORMAT.md 1.11, 8) against 32-byte ones, side
//! by side in one run (issues 32 and 33: "the readers must not get slower on
//! compact files"; decoding ≥ 100 M events/s on one core; `analyze` ≥ 100 M).
//!
//! The trace is the reference corpus's workload (`examples/corpus/workload.rs`,
//! included here by path: task switches over 4 CPUs, interrupts, semaphores,
//! messages, a counter and strings), stamped with the **monotonic clock** as
//! it is generated, each step a short loop of real work, so the deltas are
//! those of a real program, not of a manual clock; written in memory by
//! `TraceWriter` once as 32-byte records (file version 1) and once compact
//! (version 2, the default of online and received files). Files named in
//! `QTRACE_DECODE_FILES` (space-separated; e.g. the main job's online file
//! `qtrace-out/queue2-online.qtr` of `cargo run --release --example
//! standard_init`) are read and rewritten both ways too.
//!
//! Each round runs every case once over the whole trace, in a rotating
//! order, timed by the thread's CPU time:
//!
//! - `chunks`: qtrace-core's decoder alone, every chunk of the compact file
//!   through `Chunk::new_checked` and its `records()` iterator;
//! - `chunks_batch`: the same through `Records::fill` (each chunk's
//!   records decoded into a caller's slice in one call);
//! - `reader_v1`, `reader_v2`: `TraceReader` over the 32-byte and the
//!   compact file, event by event (`next_buffered`, falling back to
//!   `next`);
//! - `runs_v1`, `runs_v2`: the same files in runs of up to 1,024 events
//!   (`read_buffered`, falling back to `next`), as the commands read
//!   (`dump`, `stats`, `analyze`, `convert`);
//! - `analyze_v1`, `analyze_v2`: the runs feeding
//!   `qtrace::analysis::Analyzer` (what `qtrace analyze` does, on one
//!   thread);
//! - `encode`: the other way, the trace's events into compact chunks of
//!   64 KiB by `ChunkEncoder::push_all` in batches of 8,192, as the online
//!   queue's drain task, the UDP send task and the receiver's writers
//!   encode (its rate is the encoder's alone; it has no 32-byte pair).
//!
//! The report gives each case's median M events/s over the rounds and the
//! median of the per-round ratios compact / 32-byte.
//!
//! ```text
//! cargo bench -p qtrace-benches --features analysis --bench decode
//! ```
//!
//! `QTRACE_DECODE_EVENTS` sets the generated trace's records (default
//! 1,000,000), `QTRACE_DECODE_ROUNDS` the rounds (default 30), and
//! `QTRACE_DECODE_WRITE=DIR` also writes the generated trace to
//! `DIR/realclock-32.qtr` and `DIR/realclock-compact.qtr` (for timing the
//! `qtrace` command on the same events; `benches/corpus.sh` does that on
//! the corpus written by `examples/corpus`).

use std::hint::black_box;
use std::time::Duration;

use qtrace::analysis::{AnalysisOptions, Analyzer};
use qtrace::classes::Catalog;
use qtrace::clock::Clock;
use qtrace::reader::TraceReader;
use qtrace::wire::{TraceHeader, TraceWriter};
use qtrace::Event;
use qtrace_core::compact::{Chunk, ChunkEncoder, ChunkHeader};

mod common;
use common::thread_cpu_time;

// The reference corpus's generator, shared with `examples/corpus`.
#[path = "../examples/corpus/workload.rs"]
mod workload;

/// One trace, in both file forms.
struct Trace {
    name: String,
    events: usize,
    /// The events themselves, for `encode`.
    records: Vec<Event>,
    v1: Vec<u8>,
    v2: Vec<u8>,
    /// Where the compact file's chunks start.
    v2_records_at: usize,
    /// The records its chunks hold (the events, and a close run if any).
    chunk_records: usize,
}

impl Trace {
    fn new(name: String, header: &TraceHeader, events: &[Event]) -> Trace {
        let write = |compact: bool| {
            let mut w = TraceWriter::new(Vec::new(), &header.clone().with_compact(compact))
                .expect("a writer in memory");
            w.write_events(events).expect("write to memory");
            w.finish().expect("finish in memory")
        };
        let (v1, v2) = (write(false), write(true));
        let reader = TraceReader::new(&v2[..]).expect("the compact file reads");
        let v2_records_at = reader.header_len() as usize;
        let trace = Trace {
            name,
            events: events.len(),
            records: events.to_vec(),
            v1,
            v2,
            v2_records_at,
            chunk_records: 0,
        };
        // Every case must see the same events.
        assert_eq!(trace.read(&trace.v1), events.len());
        assert_eq!(trace.read(&trace.v2), events.len());
        let chunk_records = trace.chunks();
        assert!(chunk_records >= events.len());
        Trace {
            chunk_records,
            ..trace
        }
    }

    /// Every record of the compact file through qtrace-core's iterator.
    fn chunks(&self) -> usize {
        let mut at = self.v2_records_at;
        let mut n = 0;
        let mut acc = 0u64;
        while at < self.v2.len() {
            let chunk = Chunk::new_checked(&self.v2[at..]).expect("a whole chunk");
            for r in chunk.records() {
                let e = r.expect("a record");
                acc = acc.wrapping_add(e.time ^ e.args[0]);
                n += 1;
            }
            at += chunk.len();
        }
        black_box(acc);
        n
    }

    /// Every record of the compact file through `Records::fill`.
    fn chunks_batch(&self, buf: &mut [Event]) -> usize {
        let mut at = self.v2_records_at;
        let mut n = 0;
        let mut acc = 0u64;
        while at < self.v2.len() {
            let chunk = Chunk::new_checked(&self.v2[at..]).expect("a whole chunk");
            let mut records = chunk.records();
            loop {
                let k = records.fill(buf);
                for e in &buf[..k] {
                    acc = acc.wrapping_add(e.time ^ e.args[0]);
                }
                n += k;
                if k < buf.len() {
                    break;
                }
            }
            assert!(records.next().is_none(), "a whole chunk");
            at += chunk.len();
        }
        black_box(acc);
        n
    }

    /// Every event into compact chunks of `buf.len()` bytes, in batches as
    /// a drain takes them from its ring; returns the events encoded.
    fn encode(&self, buf: &mut [u8]) -> usize {
        let (mut n, mut bytes) = (0, 0);
        while n < self.records.len() {
            let header = ChunkHeader {
                base_time: self.records[n].time,
                ..ChunkHeader::default()
            };
            let mut enc = ChunkEncoder::new(buf, header).expect("room for a header");
            loop {
                let batch = &self.records[n..self.records.len().min(n + 8192)];
                let took = enc.push_all(batch);
                n += took;
                if batch.is_empty() || took < batch.len() {
                    break;
                }
            }
            bytes += enc.finish();
        }
        black_box(bytes);
        n
    }

    /// Every event of `file` through `TraceReader`, as the commands read.
    fn read(&self, file: &[u8]) -> usize {
        let mut reader = TraceReader::new(file).expect("the file reads");
        let mut n = 0;
        let mut acc = 0u64;
        loop {
            let e = match reader.next_buffered() {
                Some(e) => e,
                None => match reader.next() {
                    Some(e) => e.expect("a record"),
                    None => break,
                },
            };
            acc = acc.wrapping_add(e.time ^ e.args[0]);
            n += 1;
        }
        black_box(acc);
        n
    }

    /// Every event of `file` in runs: `read_buffered` into a buffer of
    /// [`RUN`] events (falling back to `next` when it hands over none), as
    /// the commands read (`cli/src/spine/pipelined.rs`, `io.rs`); `f` sees
    /// each run. Returns the events read.
    fn each_run(file: &[u8], mut f: impl FnMut(&[Event])) -> usize {
        let mut reader = TraceReader::new(file).expect("the file reads");
        let mut run = Vec::with_capacity(RUN);
        let mut n = 0;
        loop {
            run.clear();
            if reader.read_buffered(&mut run, RUN) == 0 {
                match reader.next() {
                    Some(e) => run.push(e.expect("a record")),
                    None => break,
                }
            }
            f(&run);
            n += run.len();
        }
        n
    }

    /// `read` in runs ([`Trace::each_run`]).
    fn read_runs(&self, file: &[u8]) -> usize {
        let mut acc = 0u64;
        let n = Self::each_run(file, |run| {
            for e in run {
                acc = acc.wrapping_add(e.time ^ e.args[0]);
            }
        });
        black_box(acc);
        n
    }

    /// The runs feeding the analysis (what `qtrace analyze` does, on one
    /// thread).
    fn analyze(&self, file: &[u8], catalog: &Catalog) -> usize {
        let mut a = Analyzer::new(catalog, AnalysisOptions::default());
        let n = Self::each_run(file, |run| run.iter().for_each(|e| a.push(e)));
        black_box(a.finish());
        n
    }
}

/// Events a run of `Trace::each_run` at most (the commands' `read_merged`
/// buffer).
const RUN: usize = 1024;

const CASES: [&str; 9] = [
    "reader_v1",
    "reader_v2",
    "runs_v1",
    "runs_v2",
    "analyze_v1",
    "analyze_v2",
    "chunks",
    "chunks_batch",
    "encode",
];

fn run_case(trace: &Trace, case: &str, catalog: &Catalog) -> Duration {
    let t = thread_cpu_time();
    let (n, want) = match case {
        "chunks" => (trace.chunks(), trace.chunk_records),
        "chunks_batch" => (
            trace.chunks_batch(&mut vec![Event::default(); 2048]),
            trace.chunk_records,
        ),
        "encode" => (trace.encode(&mut vec![0; 64 * 1024]), trace.events),
        "reader_v1" => (trace.read(&trace.v1), trace.events),
        "reader_v2" => (trace.read(&trace.v2), trace.events),
        "runs_v1" => (trace.read_runs(&trace.v1), trace.events),
        "runs_v2" => (trace.read_runs(&trace.v2), trace.events),
        "analyze_v1" => (trace.analyze(&trace.v1, catalog), trace.events),
        "analyze_v2" => (trace.analyze(&trace.v2, catalog), trace.events),
        _ => unreachable!("a case of CASES"),
    };
    let d = thread_cpu_time() - t;
    assert_eq!(n, want);
    d
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let env = common::env_or::<usize>;
    let n = env("QTRACE_DECODE_EVENTS", 1_000_000);
    let rounds = env("QTRACE_DECODE_ROUNDS", 30);

    let clock = Clock::monotonic();
    let header = TraceHeader::new(workload::catalog(), &clock);
    let events = workload::generate(&clock, n);
    let mut traces = vec![Trace::new(
        format!("the corpus's workload ({n} records)"),
        &header,
        &events,
    )];
    if let Ok(dir) = std::env::var("QTRACE_DECODE_WRITE") {
        let dir = std::path::Path::new(&dir);
        std::fs::create_dir_all(dir).expect("the output folder");
        std::fs::write(dir.join("realclock-32.qtr"), &traces[0].v1).expect("write");
        std::fs::write(dir.join("realclock-compact.qtr"), &traces[0].v2).expect("write");
        println!("wrote {}/realclock-{{32,compact}}.qtr", dir.display());
    }
    drop(events);
    for path in std::env::var("QTRACE_DECODE_FILES")
        .unwrap_or_default()
        .split_whitespace()
    {
        let bytes = std::fs::read(path).expect("a trace file named in QTRACE_DECODE_FILES");
        let reader = TraceReader::new(&bytes[..]).expect("a trace file");
        let header = reader.header().clone();
        let events: Vec<Event> = reader.map_while(Result::ok).collect();
        traces.push(Trace::new(path.to_string(), &header, &events));
    }

    let catalog = workload::catalog();
    for trace in &traces {
        println!(
            "{}: {} events; 32-byte file {} B, compact {} B ({:.2} B/event)",
            trace.name,
            trace.events,
            trace.v1.len(),
            trace.v2.len(),
            (trace.v2.len() - trace.v2_records_at) as f64 / trace.events as f64
        );
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
        let mut ratio_reader = Vec::new();
        let mut ratio_runs = Vec::new();
        let mut ratio_analyze = Vec::new();
        // Small files: repeat each case so a timing spans at least ~1 M events.
        let repeat = (1_000_000 / trace.events.max(1)).max(1);
        for round in 0..rounds {
            let mut secs = [0f64; CASES.len()];
            for k in 0..CASES.len() {
                let i = (round + k) % CASES.len();
                let mut d = Duration::ZERO;
                for _ in 0..repeat {
                    d += run_case(trace, CASES[i], &catalog);
                }
                secs[i] = d.as_secs_f64() / repeat as f64;
            }
            for (i, s) in secs.iter().enumerate() {
                rates[i].push(trace.events as f64 / s / 1e6);
            }
            ratio_reader.push(secs[0] / secs[1]);
            ratio_runs.push(secs[2] / secs[3]);
            ratio_analyze.push(secs[4] / secs[5]);
        }
        for (case, r) in CASES.iter().zip(rates.iter_mut()) {
            let lo = r.iter().copied().fold(f64::MAX, f64::min);
            let hi = r.iter().copied().fold(0.0, f64::max);
            println!(
                "  {case:<12} median {:7.1} M events/s (least {lo:.1}, most {hi:.1})",
                median(r)
            );
        }
        println!(
            "  compact / 32-byte rate, median of {rounds} rounds: reader {:.3}, runs {:.3}, analyze {:.3}",
            median(&mut ratio_reader),
            median(&mut ratio_runs),
            median(&mut ratio_analyze)
        );
    }
}
