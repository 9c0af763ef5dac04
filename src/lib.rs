//! # qtrace
//!
//! Record events from performance-critical software at a cost close to the
//! physical limit, and let a *queue policy* decide each event's fate — in the
//! architecture of the S.Ha.R.K. real-time kernel tracer.
//!
//! - An [`Event`] is a fixed 32-byte record: a 64-bit nanosecond timestamp, a
//!   16-bit event number, the CPU or thread it came from, and two 64-bit
//!   arguments.
//! - Events belong to [classes](mod@classes): tracer, system, user, low-level,
//!   semaphore (numbered as in S.Ha.R.K.) and classes you define.
//! - A [`Tracer`] routes each event to a [queue] whose type decides what
//!   happens to it: discard, keep the first N, keep the last N, drain to a file,
//!   stream over UDP — or a type you write.
//! - Initialisation has [two phases](init); logging ([`Tracer::log_event`]) never
//!   blocks and never allocates, and a masked-out event costs one relaxed load
//!   and a branch.
//! - Trace files describe themselves (clock, host, the class and event table);
//!   their byte layout and the UDP datagram's are specified in FORMAT.md and
//!   implemented in [`wire`]; the [`reader`] reads them back, and
//!   `qtrace dump` / `qtrace stats` show them.
//!
//! ```
//! use qtrace::classes::{system, user, ClassSpec};
//! use qtrace::clock::{Clock, ManualClock};
//! use qtrace::queues::Dummy;
//! use qtrace::{Config, Tracer};
//!
//! // Phase 1: queues, classes, routing.
//! let time = ManualClock::new(0);
//! let tracer = Tracer::with_config(Config::default().with_clock(Clock::manual(&time)));
//! let q0 = tracer.create_queue::<Dummy>(())?;
//! let net = tracer.define_class(
//!     ClassSpec::new("net", "network stack").event("rx", "a packet arrived", &["len", "port"]),
//! )?;
//! let rx = net.event("rx").unwrap();
//! tracer.assign_class(system::CLASS, q0)?;
//! tracer.assign_event(rx, q0)?;
//!
//! // Phase 2: activate the queues, then log from anywhere.
//! tracer.activate()?;
//! tracer.log_event(system::SCHEDULE, [3, 0]); // task 3 got the CPU
//! tracer.log_event(rx, [1500, 80]);
//! tracer.log_event(user::USER0, [1, 0]); // not assigned: not recorded
//! tracer.notrace_class(system::CLASS)?;
//! tracer.log_event(system::SCHEDULE, [4, 0]); // masked out
//!
//! let report = tracer.shutdown()?;
//! assert_eq!(report.queues[0].counters.accepted, 2);
//! # Ok::<(), qtrace::Error>(())
//! ```
//!
//! # Layers
//!
//! The crate is built in layers, and a lower layer never imports a higher
//! one (no two modules import each other: `scripts/module-cycles.py`
//! checks it in CI):
//!
//! | layer | folder | public modules | what |
//! |---|---|---|---|
//! | model | `model/`, `classes/` | [`classes`](mod@classes), [`clock`], [`combine`], [`source`], [`macros`]; at the root [`Event`], [`EventId`], [`ClassId`], [`QueueHandle`] | records, ids, the catalog, clocks, strings as record runs |
//! | core | `queue/` | [`queue`]; at the root [`ConfigError`] | what a queue is; knows no queue |
//! | ring | `ring/` | (crate-private) | the lock-free mechanism the policies are built on |
//! | storage | `storage/` | [`storage`] | ring files and their recovery, saving a queue as a trace |
//! | queues | `queues/` | [`queues`] | the built-in policies, one file or folder each |
//! | filters | `filters/` | [`filters`] | filters, gates and triggers in front of a queue |
//! | router | `router/` | [`Tracer`], [`Config`], [`ShutdownReport`], [`scope`](mod@scope) | routing, masks, the hot path, the phases, scopes |
//! | init | `init.rs`, `setup/` | [`init`], [`global`], `bridge` | presets, the process-wide tracer, `tracing` |
//! | wire | `wire/` | [`wire`] | byte formats of files and datagrams; knows no queue |
//! | readers | `reader/`, `receiver/` | [`reader`], [`receiver`] | trace files back; the UDP receiver ([`receiver::ReceiverCore`] has no I/O) |
//! | views | `export/`, `analysis/` | `export`, `analysis` (features of the same names) | converters and scheduler analysis |
//!
//! The router sits above the built-in queues: [`Tracer::log_event`] reaches
//! them through the [`AnyQueue`](queues::AnyQueue) enum (one `match`, no
//! virtual call), while the queues see only the core's trait, counters and
//! context.
//!
//! Each layer has its own error type next to its code
//! ([`CatalogError`](classes::CatalogError),
//! [`ClockUnavailable`](clock::ClockUnavailable), [`ConfigError`],
//! [`WireError`](wire::WireError), [`ReadError`](reader::ReadError),
//! `ExportError` (feature `export`), [`IoError`]), and
//! [`Error`] on top composes them with `From`, so `?` works across layers
//! in your code while no layer depends on another's errors. This crate root
//! is a façade: it declares the layers and holds the ids and entry points
//! ([`Tracer`], [`Config`], [`Event`], [`EventId`], [`ClassId`],
//! [`QueueHandle`], [`Error`], [`ConfigError`], [`IoError`],
//! [`log_event`], the macros); every public item has one path.
//!
//! Below the model sits a separate crate, [`qtrace_core`] (`core/` in the
//! repository): `#![no_std]`, no allocator, no `unsafe`. It holds the event
//! record and ids, the built-in classes, the byte layouts of FORMAT.md and
//! their encoders, and static rings with a firmware tracer; this crate
//! re-exports what it shares with it ([`Event`], [`EventId`], [`ClassId`],
//! [`QueueHandle`], [`TRACER_SOURCE`], the built-in class modules, the
//! close-run record of [`wire`]), and reads and writes files with the core's
//! layouts and encoders, so a file a firmware writes is the file this crate
//! reads. The `qtrace` command is a third crate, `qtrace-cli` (`cli/`): this
//! library depends on none of its crates.
//!
//! # Setting things up: builders and plain options
//!
//! What sets up a tracer is built with methods: [`Config`] and the queue
//! parameters ([`FixedParams`](queues::FixedParams),
//! [`CircularParams`](queues::CircularParams),
//! [`OnlineParams`](queues::OnlineParams), [`UdpParams`](queues::UdpParams))
//! are `#[non_exhaustive]` with private fields, [`Default`], `with_*`
//! builders and a getter per value, so a new setting never breaks a
//! program: `FixedParams::default().with_capacity(4).with_ring(RingStorage::Memory)`.
//! The option sets of the readers, the receiver and the converters
//! ([`ReceiverConfig`](receiver::ReceiverConfig),
//! [`ReorderLimits`](receiver::ReorderLimits), the `*Options` of `export`
//! and `analysis`) are plain data: public fields, each with its default in
//! [`Default`], set as `ReceiverConfig { max_senders: 64,
//! ..ReceiverConfig::default() }`; so is the core's
//! [`HeaderSpec`](qtrace_core::encode::header::HeaderSpec), which a firmware
//! builds in a `const`.
//!
//! # Cargo features
//!
//! None is on by default: a program that only traces compiles the tracer,
//! its queues, the wire formats, the [`reader`] and the [`receiver`], and
//! none of the converters. The `qtrace` command (`qtrace-cli`) turns on
//! `export` and `analysis`.
//!
//! | feature | turns on | compiles in addition |
//! |---|---|---|
//! | `tracing` | `bridge`: a `tracing_subscriber::Layer` that records into qtrace queues | `tracing-core`, `tracing-subscriber` (`std`, `registry`), `arrayvec` |
//! | `export` | `export`: the converters (CTF, Chrome JSON, Perfetto, SVG), time merge and split; turns on `analysis` (the exports draw its wake-up flows) | `zlib-rs` (pure Rust) |
//! | `analysis` | `analysis`: what the scheduler did (per task, CPU, interrupt; latencies) | nothing (it does not need `export`) |
//! | `keys` | keyed datagrams: `wire::DatagramKey`, `UdpParams::with_key`, `ReceiverConfig::keys` | `hmac`, `sha2` |
//! | `control` | `control`: a local, owner-only endpoint that `qtrace ctl` controls a running tracer through (Linux) | nothing (`libc`, already there on Linux) |
//!
//! ```toml
//! [dependencies]
//! qtrace = { version = "0.1", features = ["export"] }
//! ```
//!
//! # Without std (firmware, kernels)
//!
//! This crate needs `std` (threads, files, sockets). Where there is none —
//! firmware, an RTOS, a kernel — depend on `qtrace-core` alone and trace into
//! rings in `static` memory, through a [`qtrace_core::Tracer`] with the same
//! routing and masks as [`Tracer`]; at the end write a standard trace file
//! into any byte sink (semihosting, a UART, flash), which `qtrace dump`,
//! `stats` and `convert` read like any other:
//!
//! ```
//! # let _cwd = tempfile::tempdir().unwrap(); std::env::set_current_dir(_cwd.path()).unwrap(); // own directory: doc tests run in parallel
//! use qtrace_core::classes::{lowlevel, system, BuiltinClass, BuiltinEvent, ClassId};
//! use qtrace_core::encode::header::HeaderSpec;
//! use qtrace_core::ring::CircularRing;
//! use qtrace_core::{EventId, StaticCatalog, Tracer};
//!
//! // The firmware's own class, checked at compile time (FORMAT.md 1.3).
//! const STEP: EventId = EventId::FIRST_USER_DEFINED;
//! static MOTOR: [BuiltinClass; 1] = [BuiltinClass {
//!     id: ClassId::FIRST_USER_DEFINED,
//!     name: "motor",
//!     description: "the motor controller",
//!     events: &[BuiltinEvent::new(STEP, "step", "one step", &["position"])],
//! }];
//! static CATALOG: StaticCatalog = StaticCatalog::new(&MOTOR);
//!
//! fn ticks() -> u64 { 0 } // the firmware's clock, e.g. SysTick in µs
//! static RING: CircularRing<256> = CircularRing::new(); // keeps the last 256
//! static TRACER: Tracer<1> = Tracer::new(&CATALOG, [&RING], ticks);
//!
//! TRACER.assign_class(ClassId::SYSTEM, 0).unwrap();
//! TRACER.assign_class(ClassId::LOWLEVEL, 0).unwrap();
//! TRACER.assign_class(ClassId::FIRST_USER_DEFINED, 0).unwrap();
//! TRACER.log_event(lowlevel::INTERRUPT, 0, [15, 0]); // an interrupt handler
//! TRACER.log_event(system::SCHEDULE, 0, [2, 0]);     // the scheduler
//! TRACER.log_event(STEP, 0, [1200, 0]);              // the firmware's event
//!
//! let spec = HeaderSpec { ticks_per_second: 1_000_000, clock_kind: "systick", ..HeaderSpec::default() };
//! let mut file = Vec::new(); // a firmware writes each piece out instead
//! let summary = TRACER.dump(0, &spec, &mut |b: &[u8]| file.extend_from_slice(b)).unwrap();
//! assert_eq!((summary.events, summary.lost), (3, 0));
//!
//! // The bytes are a standard trace file: this crate's reader reads them.
//! let reader = qtrace::reader::TraceReader::new(&file[..])?;
//! assert_eq!(reader.event_name(STEP), Some("step"));
//! let ids: Vec<EventId> = reader.map(|e| e.map(|e| e.id)).collect::<Result<_, _>>()?;
//! assert_eq!(ids, [lowlevel::INTERRUPT, system::SCHEDULE, STEP]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The core's rings take one critical section per `get` and per `post`
//! (the `critical-section` crate), not compare-and-swap atomics, so thumbv6m
//! (Cortex-M0, which has none) works as well as thumbv7m; BENCHMARKS.md
//! ("Without std") has the measurement behind that choice. The firmware
//! provides the implementation — on a single-core Cortex-M,
//! `cortex-m = { version = "0.7", features = ["critical-section-single-core"] }`;
//! on a host, `critical-section`'s `std` feature. Without one the link fails
//! on `_critical_section_1_0_acquire`. [`qtrace_core::dump_ring`] writes one
//! ring without a tracer; `examples/firmware-cortex-m` and `scripts/qemu.sh`
//! run all of this on QEMU's Cortex-M3.
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// docs.rs (`--cfg docsrs`, Cargo.toml's [package.metadata.docs.rs]): every
// feature-gated item gets a badge naming its feature (doc_cfg labels cfg'd
// items by itself).
#![cfg_attr(docsrs, feature(doc_cfg))]
// Every public function that returns a `Result` says when it fails: clippy
// (`-D warnings` in .ci/run) fails the build on one without `# Errors`.
#![warn(clippy::missing_errors_doc)]

// The layers, each in its folder (the table above); lower never imports higher.
#[cfg(feature = "analysis")]
pub mod analysis;
pub mod classes;
#[cfg(all(feature = "control", target_os = "linux"))]
pub mod control;
mod error;
#[cfg(feature = "export")]
pub mod export;
pub mod filters;
pub mod init;
mod model;
pub mod queue;
pub mod queues;
pub mod reader;
pub mod receiver;
mod ring;
mod router;
mod setup;
pub mod storage;
mod sync;
pub mod wire;

// The public modules of the model and set-up layers.
pub use model::{clock, combine, macros, source};
pub use router::scope;
#[cfg(feature = "tracing")]
pub use setup::bridge;
pub use setup::global;

// The crate root holds the ids and the entry points, and they have no other
// public path.
pub use error::{Error, IoError};
pub use model::event::{Event, EventId, TRACER_SOURCE};
pub use qtrace_core::ClassId;
pub use qtrace_core::QueueHandle;
pub use queue::config_error::ConfigError;
pub use router::registry::Phase;
pub use router::tracer::{Config, QueueReport, ShutdownReport, Tracer};
pub use setup::global::entry::log_event;

/// The README's examples are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
