//! Perfetto's native protobuf trace (`TracePacket`s of `TrackEvent`s), for
//! Perfetto's UI (<https://ui.perfetto.dev>) and its trace processor.
//!
//! # What is written
//!
//! A `perfetto.protos.Trace`: a sequence of `TracePacket`s on one packet
//! sequence per source (`trusted_packet_sequence_id` 2, 3, … in order of
//! the sources' first events) and a shared sequence 1 (track descriptors,
//! the first packet, events of sources past [`PerfettoOptions::max_tracks`],
//! slice ends written at the end of the trace).
//!
//! - **Sequences.** Every packet names its sequence (Perfetto's trace
//!   processor refuses interned data, packet defaults and sequence-scoped
//!   clocks on a packet without `trusted_packet_sequence_id`). A source's
//!   events, and the slice edges they cause on task and task/semaphore
//!   tracks, go on the source's sequence, whose `TrackEventDefaults` name the
//!   source's track: its events omit `track_uuid` (the trace processor takes
//!   the default, `track_event_tokenizer.cc` lines 547-550 at `ec5d16b1`).
//!   Only a sequence's first packet sets `sequence_flags`
//!   (`SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE`). The
//!   proto's comment on `trace_packet_defaults` asks every later packet for
//!   `SEQ_NEEDS_INCREMENTAL_STATE` too, but the trace processor only uses that flag
//!   to *skip* a packet while the sequence's incremental state is invalid
//!   (from the start of a sequence until a packet clears it, or after a
//!   packet loss its writer reports); in a file written in one go, whose
//!   sequences start with a packet that clears the state, it never is, so
//!   the flag would change nothing and cost 2 bytes a packet. (Perfetto at
//!   `ec5d16b1`: `src/trace_processor/importers/proto/proto_trace_reader.cc`
//!   lines 340-347 and 397-425, `packet_sequence_state_builder.h` lines 54-74.)
//! - **Time.** A sequence's first packet clears its incremental state, makes
//!   clock 64 (a sequence-scoped, *incremental* clock in nanoseconds) the
//!   default of its later packets, and maps it with a `ClockSnapshot` to
//!   `BOOTTIME` 0 (sequence 1's also maps `REALTIME` to the trace's clock
//!   origin, Unix ns). Each later packet's `timestamp` is then the delta from
//!   the same sequence's previous one, a one- or two-byte varint for a busy
//!   trace. A packet earlier than that (an interrupt slice's end, a
//!   semaphore slice's begin, input that goes back in time) names `BOOTTIME`
//!   (clock 6) itself and carries an absolute time instead; the trace
//!   processor sorts packets by time.
//! - **Interning.** Per sequence, event names, categories (class names) and
//!   argument names are written once, in the `interned_data` of the packet
//!   that first uses them, and referred to by number after that. So are the
//!   names of slices (`task 3`, `irq 9`, `sem 1`), up to
//!   [`PerfettoOptions::max_interned`] names a sequence; past that, names are
//!   written in full.
//! - **Tracks.** One track per source (`source N`, or `tracer` for the
//!   tracer's own source `u32::MAX`); one per task that an event names
//!   (`task N`, from the system and semaphore classes); under a task's track
//!   (at the top if the task has none, past [`PerfettoOptions::max_tracks`]),
//!   one per task/semaphore pair (`task T sem S`); and a counter track
//!   `lost events`. Every descriptor sets `sibling_merge_behavior` to
//!   `SIBLING_MERGE_BEHAVIOR_NONE`.
//! - **Names.** A source or task named by a name record
//!   ([`crate::model::combine`]: `Tracer::name_source`, `name_task`) has its name
//!   after its number: track `source 5 worker-5`, track and task slices
//!   `task 3 idle`; an event given a run-time name (`NAME_EVENT_ID`) is
//!   named so. A name known in advance ([`PerfettoWriter::with_names`]) is
//!   used from the first track on; a name that arrives after its track was
//!   declared declares the track again with the name, which the trace
//!   processor takes as a rename for tracks that do not merge with siblings
//!   (`src/trace_processor/importers/proto/track_event_tracker.cc` lines
//!   176-221 at `ec5d16b1`). Task slices written before the name keep
//!   `task N`.
//! - **Strings and bytes.** A combine run (`log_str`, `log_bytes`) is
//!   reassembled ([`crate::model::combine::Assembler`], as the Chrome export does)
//!   into one instant on its source's track, named after its event, with the
//!   event's first argument when one was logged, the payload as `text` (or
//!   `bytes`, hexadecimal, when it is not UTF-8), `partial` (`"2 records of
//!   3"`) or `corrupt` when it is not whole, and `logged_len` when the
//!   logger cut it.
//! - **Events.** Every record is written once: as a slice begin or end if
//!   the export draws it as one, else as an instant.
//!   - A `system:schedule` on a source with a track *is* the begin of its
//!     `task N` slice on that track (N = its `task` argument), and a
//!     `lowlevel:interrupt` the begin of its `irq N` slice; their other
//!     arguments that `qtrace dump` shows (a schedule's non-zero `arg1`) are
//!     debug annotations of the begin. Its time is the slice's, so raised to
//!     the track's latest time if the input goes back in time there.
//!   - Every other record is an instant (`TYPE_INSTANT`) on its source's
//!     track, named after the event, with the class as category and every
//!     argument that `qtrace dump` shows (see [`args`](super::args)) as a
//!     debug annotation (`uint_value`). An event the catalog does not define
//!     is an instant `unknown` of category `unknown` with `id`, `arg0` and
//!     `arg1`.
//!   - A blocking `semaphore:wait` *is* the begin of its `sem S` slice on
//!     the `task T sem S` track (T and S: its `task` and `sem` arguments),
//!     with a debug annotation `source` (the source that logged it, as the
//!     track of an instant would say); a `semaphore:signal` that closes an
//!     open wait *is* that slice's end, annotated `signal source` (the trace
//!     processor adds an end's annotations to its slice's, so the name
//!     differs from the begin's). A `waitnb` stays an instant, since it may
//!     have failed: its slice's begin is written at the signal, with the
//!     waitnb's time and no annotation. A signal with no open wait, and a
//!     wait past the limits, stay instants.
//! - **Scopes** (FORMAT.md 1.3.1): each source with scopes gets a child
//!   track `scopes` on which its `S.begin`/`S.end` pairs are nested slices
//!   named `class:S`; the scope records keep their instants (the begin's
//!   arguments, the end's code).
//! - **Wake-up flows** the analysis derives (FORMAT.md 1.3.3: a
//!   `semaphore:signal`, or the `system:activate` an interrupt's handler
//!   logged, to the woken task's next `system:schedule`): the signal's or
//!   activate's packet (its instant, or the `sem S` slice end a signal is)
//!   carries the flow's id in `flow_ids`, and the schedule's `task N`
//!   begin in `terminating_flow_ids`, so the trace processor's `flow` table
//!   links them. Ids are 2^52 + k, k from 1 in the order of the wakes,
//!   apart from the declared flows' instance numbers (from 1).
//! - **Slices**, as the [Chrome](super::chrome) export draws them (one
//!   derivation for both, `src/export/slices.rs`):
//!   - `task N` (category `task`) on the source's track from a
//!     `system:schedule` to the next `system:schedule` on that source (or the
//!     end of the trace), and the same span as `source S` on the task's track;
//!   - `irq N` (category `interrupt`) on the source's track from a
//!     `lowlevel:interrupt` to the next event of the same source, at most
//!     [`PerfettoOptions::interrupt_max_ns`] long, so it nests in the task
//!     slice it interrupted;
//!   - `sem S` (category `semaphore`) on the pair's track from a
//!     `semaphore:wait` or `semaphore:waitnb` to the `semaphore:signal` of
//!     the same task and semaphore (last in, first out); a `waitnb` never
//!     signalled most likely failed and draws none (counted in
//!     [`ConvertStats::unpaired`](crate::export::ConvertStats::unpaired)), a blocking `wait` never signalled is
//!     shown held until the end of the trace (an end with no annotation).
//!
//!   Slice times never go back on a track (a time earlier than the track's
//!   previous one is raised to it), so slices nest on every track.
//! - **Compression.** By default each sequence's packets are gathered into
//!   a chunk of their own, of about 256 KiB, and each chunk is written as
//!   one packet whose `compressed_packets` (field 50) is the zlib stream
//!   (pure-Rust zlib-rs, level 2 with a longer match search, deflated on two
//!   threads while the next chunks are encoded, each chunk on its own and
//!   written in the order made) of the chunk's packets, each with its
//!   `Trace.packet` key and length, as Perfetto's tracing service writes a
//!   trace with `compression_type: COMPRESSION_TYPE_DEFLATE`
//!   (`src/tracing/service/zlib_compressor.cc`: `deflateInit(&stream_, 6)`,
//!   a zlib header (the level is the writer's choice: readers inflate any);
//!   a `Trace.packet` preamble per packet; one `compressed_packets` packet
//!   per batch). The trace processor inflates it and reads the packets
//!   inside as if they were in the file
//!   (`src/trace_processor/importers/proto/proto_trace_tokenizer.cc`,
//!   `has_compressed_packets`); a sequence's state (clock, interning,
//!   default track) carries on from one chunk to the next. It makes the file
//!   several times smaller (docs/benchmarks-history.md, "Perfetto: compressed packets").
//!   One sequence's packets repeat much more than the sequences'
//!   interleaved, so a chunk per sequence deflates to fewer bytes at a
//!   cheaper level (docs/benchmarks-history.md, "Perfetto: a chunk per sequence"). The
//!   file then holds each sequence's packets in the order written, but not
//!   the sequences' packets interleaved in time; the trace processor sorts
//!   packets by time. Three rules keep what it reads the same as in time
//!   order:
//!   - sequence 1's chunk is written before any other chunk once it holds
//!     a track descriptor, so a track's descriptor comes before every
//!     packet that uses it (the trace processor needs a counter track's
//!     descriptor before its values);
//!   - a slice begin, end or counter value on a track that another sequence
//!     wrote at the same time or later (a task's track, a task/semaphore
//!     pair's, the loss counter) first writes that sequence's chunk: packets
//!     of equal times keep the order written (the trace processor keeps
//!     ties in file order), so slices still nest;
//!   - the sequences' chunks hold at most 8 MiB together: past that, every
//!     chunk is written (a trace of many sources keeps a few MiB, not a
//!     chunk a source).
//!
//!   The output is the same bytes on every run (the chunks are cut where
//!   the input says, whatever the threads' timing), and the same packets,
//!   in the same order, with compression off.
//!   A tool that cannot inflate reads the output of
//!   [`PerfettoWriter::with_compression`]`(false)`: the same packets, not
//!   compressed.
//! - **Losses.** A hoops record is an instant `hoops` (category `tracer`,
//!   arguments `lost` and `queue`) on the tracer's track, and a step of the
//!   `lost events` counter track, which counts the events lost so far.
//!
//! # Memory
//!
//! Per source: its track, open task, pending interrupt and sequence (clock
//! and interning tables, each bounded by the catalog's events and
//! [`PerfettoOptions::max_interned`]); per task: its track
//! and the source it runs on; per task/semaphore pair: its track and open
//! waits; the names learned (at most
//! [`crate::model::combine::Names::MAX`] of each kind) and the combine runs being
//! reassembled (at most [`crate::model::combine::Assembler::MAX_PENDING`]). Each is
//! bounded by
//! [`PerfettoOptions::max_tracks`], [`PerfettoOptions::max_open_waits`] and
//! [`PerfettoOptions::max_interned`]; past those limits events are still
//! written as instants (on their source's track, or a shared `other sources`
//! track, where a schedule or interrupt is an instant too) and counted in
//! [`ConvertStats::unpaired`](crate::export::ConvertStats::unpaired). A pair whose open waits fill
//! [`PerfettoOptions::max_open_waits`] forgets its oldest open `waitnb`; if
//! the oldest is a blocking wait (whose begin is written), the new wait opens
//! nothing.
//!
//! # Encoder
//!
//! Written with the crate's own small protobuf encoder (see
//! `src/export/perfetto/protobuf.rs` for why no protobuf crate).
//!
//! ```
//! use qtrace::classes::{system, Catalog};
//! use qtrace::export::{self, perfetto::PerfettoWriter};
//! use qtrace::Event;
//!
//! let catalog = Catalog::builtin();
//! let events = vec![
//!     Event::new(1_000, system::SCHEDULE, 0, [3, 0]),
//!     Event::new(5_000, system::SCHEDULE, 0, [4, 0]),
//! ];
//! let mut trace = Vec::new();
//! let stats = export::convert(PerfettoWriter::new(&catalog, 0, &mut trace)?, events)?;
//! assert_eq!((stats.events, stats.slices), (2, 4)); // task 3 and 4, on the CPU and task tracks
//! // One Trace.packet (field 1, length-delimited) holding compressed_packets
//! // (field 50: key 0x92 0x03), the zlib stream of every packet.
//! assert_eq!(trace[0], 0x0a);
//! assert!(trace.windows(2).any(|w| w == [0x92, 0x03]));
//! # Ok::<(), qtrace::Error>(())
//! ```

mod events;
mod interning;
mod packets;
mod protobuf;
mod schema;
mod tracks;
mod writer;
mod zipper;

pub use writer::{PerfettoOptions, PerfettoWriter};
