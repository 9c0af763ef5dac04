//! The `no_std`, allocation-free core of [qtrace](https://docs.rs/qtrace):
//! what a tracer needs where there is no operating system — firmware,
//! kernels, RTOSes — and the single source of truth the std crate
//! re-exports:
//!
//! - the event record ([`Event`], [`EventId`], [`TRACER_SOURCE`]) and the
//!   built-in S.Ha.R.K. classes ([`classes`]: numbering, names, argument
//!   names, as `const` tables);
//! - the byte layouts of FORMAT.md as field-offset tables ([`layout`]) and
//!   their encoders ([`encode`]: record, file header with its class table
//!   from any [`CatalogSource`], close run, datagram header) — the std
//!   crate's checked parsers read at the same offsets;
//! - the compact stream ([`compact`]: chunks of about 5 bytes an event with
//!   their loss arithmetic, an encoder into a caller's buffer and a checked
//!   decoder, FORMAT.md section 8);
//! - byte streams from firmware ([`stream`]: a drain that frames chunks
//!   into any byte sink from the idle loop, every loss counted, and the
//!   host's frame decoder, FORMAT.md section 10);
//! - queue counters and reservations ([`QueueCounters`], [`Reservation`]);
//! - static rings in caller-provided memory ([`ring::FixedRing`],
//!   [`ring::CircularRing`]), a routing table with per-event and per-class
//!   masks, and a firmware [`Tracer`] whose [`dump`](Tracer::dump) writes a
//!   complete standard trace file into any `FnMut(&[u8])` sink.
//!
//! # Without std (firmware, kernels)
//!
//! In the firmware's `Cargo.toml`:
//!
//! ```toml
//! [dependencies]
//! qtrace-core = "0.1"
//! # The critical section the rings take (single-core Cortex-M: interrupts off).
//! cortex-m = { version = "0.7", features = ["critical-section-single-core"] }
//! ```
//!
//! The rings take one critical section per `get` and per `post`
//! ([`critical_section`]): interrupts off for a few dozen instructions on a
//! single-core microcontroller, which needs no compare-and-swap, so thumbv6m
//! (Cortex-M0) works as well as thumbv7m. Why not `portable-atomic`: on
//! thumbv6m it is a critical section per atomic operation (several per
//! event instead of two), and on thumbv7m its 64-bit counters are a spinning
//! seqlock an interrupt handler can deadlock on (docs/benchmarks-history.md, "Without
//! std", measured). The firmware provides the implementation: `cortex-m`'s
//! `critical-section-single-core` feature above, a multi-core chip's HAL, or
//! `critical-section`'s `std` feature on a host (tests). Without one, the
//! link fails on the undefined symbol `_critical_section_1_0_acquire`.
//!
//! The steps: a catalog ([`StaticCatalog::BUILTIN`], or
//! [`StaticCatalog::new`] with the firmware's own classes, checked at compile
//! time), rings in `static`s ([`ring::CircularRing`] keeps the last `N`
//! events, [`ring::FixedRing`] the first `N`), a [`Tracer`] routing classes
//! and events to them by index, `log_event` from anywhere (interrupt
//! handlers included), and at the end [`Tracer::dump`] — or [`dump_ring`]
//! for a ring used without a tracer — feeding a complete trace file to a
//! sink. `examples/firmware-cortex-m` in the repository runs this on QEMU
//! (`scripts/qemu.sh`).
//!
//! ```
//! use qtrace_core::classes::{lowlevel, system, ClassId};
//! use qtrace_core::encode::header::HeaderSpec;
//! use qtrace_core::ring::CircularRing;
//! use qtrace_core::{StaticCatalog, Tracer};
//!
//! // A 1 MHz tick counter in a real firmware.
//! fn ticks() -> u64 { 42 }
//!
//! static RING: CircularRing<1024> = CircularRing::new();
//! static TRACER: Tracer<1> = Tracer::new(&StaticCatalog::BUILTIN, [&RING], ticks);
//!
//! TRACER.assign_class(ClassId::SYSTEM, 0).unwrap();
//! TRACER.assign_class(ClassId::LOWLEVEL, 0).unwrap();
//! TRACER.log_event(lowlevel::INTERRUPT, 0, [15, 0]); // from an interrupt handler
//! TRACER.log_event(system::SCHEDULE, 0, [2, 0]);     // from the scheduler
//!
//! // At the end: a standard trace file, piece by piece, into any sink
//! // (semihosting, a UART, flash).
//! let spec = HeaderSpec { ticks_per_second: 1_000_000, clock_kind: "tick", ..HeaderSpec::default() };
//! let mut file = Vec::new();
//! let summary = TRACER.dump(0, &spec, &mut |b: &[u8]| file.extend_from_slice(b)).unwrap();
//! assert_eq!(summary.events, 2);
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(missing_debug_implementations)]
// docs.rs (`--cfg docsrs`, Cargo.toml's [package.metadata.docs.rs]): items
// cfg'd on the target (AtomicCounters: 64-bit atomics) get a badge.
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod classes;
pub mod compact;
mod counters;
mod dump;
pub mod encode;
mod event;
pub mod json;
pub mod layout;
mod queue_handle;
pub mod ring;
mod routing;
pub mod stream;
mod tracer;

pub use classes::ClassId;
#[cfg(target_has_atomic = "64")]
pub use counters::AtomicCounters;
pub use counters::{QueueCounters, Reservation};
pub use dump::{dump_ring, DumpSummary};
pub use encode::catalog::{CatalogSource, StaticCatalog};
pub use event::{Event, EventId, TRACER_SOURCE};
pub use queue_handle::QueueHandle;
pub use routing::{RouteError, MAX_CLASSES, MAX_QUEUES};
pub use tracer::Tracer;
