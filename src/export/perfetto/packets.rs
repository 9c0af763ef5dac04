//! Trace packets: a sequence's first packet (incremental state, default
//! clock and track, clock snapshot), the timestamp of a track event's packet
//! (a delta on the sequence's incremental clock, or absolute on BOOTTIME),
//! and the chunks of packets written out, compressed or not.

use std::io::Write;

use super::protobuf::{patch_len, put_bytes, put_key_len, put_message, put_uint};
use super::schema::{
    field, BOOTTIME_CLOCK, INCREMENTAL_CLOCK, REALTIME_CLOCK, SEQUENCE_ID,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
};
use super::writer::{io_err, PerfettoWriter, CHUNK_BYTES};
use super::zipper::{zip_chunk, Zipper};
use crate::export::ExportError as Error;

impl<W: Write> PerfettoWriter<W> {
    /// The first packet: clears the incremental state, sets the default clock
    /// and maps it to BOOTTIME and REALTIME.
    pub(super) fn start(&mut self, origin_unix_ns: u64) -> Result<(), Error> {
        self.sequence_start(SEQUENCE_ID, None, Some(origin_unix_ns))
    }

    /// The first packet of sequence `id`: clears its incremental state, makes
    /// clock 64 the default clock of its packets (and `track` the default
    /// track of its track events), and maps clock 64 to BOOTTIME 0 (and, on
    /// the first sequence, REALTIME to the trace's origin).
    pub(super) fn sequence_start(
        &mut self,
        id: u64,
        track: Option<u64>,
        origin_unix_ns: Option<u64>,
    ) -> Result<(), Error> {
        let p = &mut self.packet;
        p.clear();
        put_uint(p, field::TRUSTED_SEQUENCE_ID, id);
        put_uint(
            p,
            field::SEQUENCE_FLAGS,
            SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE,
        );
        put_message(p, field::TRACE_PACKET_DEFAULTS, |m| {
            put_uint(m, field::DEFAULT_TIMESTAMP_CLOCK_ID, INCREMENTAL_CLOCK);
            if let Some(track) = track {
                put_message(m, field::TRACK_EVENT_DEFAULTS, |d| {
                    put_uint(d, field::TRACK_UUID, track);
                });
            }
        });
        put_message(p, field::CLOCK_SNAPSHOT, |m| {
            put_message(m, field::CLOCKS, |c| {
                put_uint(c, field::CLOCK_ID, INCREMENTAL_CLOCK);
                put_uint(c, field::CLOCK_TIMESTAMP, 0);
                put_uint(c, field::CLOCK_IS_INCREMENTAL, 1);
            });
            put_message(m, field::CLOCKS, |c| {
                put_uint(c, field::CLOCK_ID, BOOTTIME_CLOCK);
                put_uint(c, field::CLOCK_TIMESTAMP, 0);
            });
            if let Some(origin) = origin_unix_ns {
                put_message(m, field::CLOCKS, |c| {
                    put_uint(c, field::CLOCK_ID, REALTIME_CLOCK);
                    put_uint(c, field::CLOCK_TIMESTAMP, origin);
                });
            }
        });
        self.flush_packet()
    }

    /// Adds `self.packet` as one `Trace.packet` to the chunk, writing the
    /// chunk once it holds [`CHUNK_BYTES`].
    pub(super) fn flush_packet(&mut self) -> Result<(), Error> {
        put_bytes(&mut self.chunk, field::TRACE_PACKET, &self.packet);
        if self.chunk.len() >= CHUNK_BYTES {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Writes the chunk: its packets as they are, or (compressing) one
    /// packet whose `compressed_packets` is the zlib stream of them, made on
    /// the compression thread when there is one (written when it is back).
    pub(super) fn flush_chunk(&mut self) -> Result<(), Error> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        if !self.compress {
            self.out.write_all(&self.chunk).map_err(io_err)?;
            self.chunk.clear();
            return Ok(());
        }
        if self.zipper.is_none() && !self.zipper_failed {
            self.zipper = Zipper::start();
            self.zipper_failed = self.zipper.is_none();
        }
        if let Some(z) = &mut self.zipper {
            let chunk = std::mem::take(&mut self.chunk);
            self.chunk = z.submit(chunk, &mut self.out).map_err(io_err)?;
            return Ok(());
        }
        self.packet.clear();
        zip_chunk(&self.chunk, &mut self.zipped, &mut self.packet).map_err(io_err)?;
        self.out.write_all(&self.packet).map_err(io_err)?;
        self.chunk.clear();
        self.packet.clear();
        Ok(())
    }

    /// Writes a packet holding the track event in `self.event` (and the
    /// interned data in `self.interned`) at time `t`, straight into the
    /// chunk (its length patched in place: no copy of the packet).
    pub(super) fn emit(&mut self, t: u64) -> Result<(), Error> {
        let c = &mut self.chunk;
        put_key_len(c, field::TRACE_PACKET);
        let at = c.len();
        c.push(0);
        if t >= self.st.clock {
            put_uint(c, field::TIMESTAMP, t - self.st.clock);
            self.st.clock = t;
        } else {
            put_uint(c, field::TIMESTAMP_CLOCK_ID, BOOTTIME_CLOCK);
            put_uint(c, field::TIMESTAMP, t);
        }
        // No `sequence_flags` here (see "Sequence" in the module docs): the
        // trace processor reads SEQ_NEEDS_INCREMENTAL_STATE only to skip a
        // packet while its sequence's incremental state is invalid
        // (proto_trace_reader.cc:397-425), which it never is after our first
        // packet cleared it. `trusted_packet_sequence_id` stays: without it
        // interned data and the sequence's clock are refused
        // (proto_trace_reader.cc:691-695, 521-527; track_event_tokenizer.cc:430-433).
        put_uint(c, field::TRUSTED_SEQUENCE_ID, self.st.id);
        if !self.interned.is_empty() {
            put_bytes(c, field::INTERNED_DATA, &self.interned);
            self.interned.clear();
        }
        put_bytes(c, field::TRACK_EVENT, &self.event);
        patch_len(c, at);
        if c.len() >= CHUNK_BYTES {
            self.flush_chunk()?;
        }
        Ok(())
    }
}
