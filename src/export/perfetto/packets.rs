//! Trace packets: a sequence's first packet (incremental state, default
//! clock and track, clock snapshot), the timestamp of a track event's packet
//! (a delta on the sequence's incremental clock, or absolute on BOOTTIME),
//! and the chunks of packets written out, compressed or not.

use std::io::Write;

use super::protobuf::{
    patch_len, put_bytes, put_key_len, put_message, put_prefix, put_uint, put_uint_at,
};
use super::schema::{
    field, BOOTTIME_CLOCK, INCREMENTAL_CLOCK, REALTIME_CLOCK, SEQUENCE_ID,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
};
use super::writer::{io_err, PerfettoWriter, CHUNK_BYTES, MAX_HELD};
use super::zipper::{Deflater, Zipper};
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
        let seq = self.cur;
        self.flush_packet(seq)
    }

    /// The chunk of sequence `seq` (an index in `seqs`; the current one is
    /// in `st`).
    fn chunk_of(&mut self, seq: usize) -> &mut Vec<u8> {
        if seq == self.cur {
            &mut self.st.chunk
        } else {
            &mut self.seqs[seq].chunk
        }
    }

    /// Adds `self.packet` as one `Trace.packet` to the chunk of sequence
    /// `seq`, writing the chunk once it holds [`CHUNK_BYTES`].
    pub(super) fn flush_packet(&mut self, seq: usize) -> Result<(), Error> {
        let packet = std::mem::take(&mut self.packet);
        let c = self.chunk_of(seq);
        let capacity = c.capacity();
        put_bytes(c, field::TRACE_PACKET, &packet);
        let (len, grown) = (c.len(), c.capacity() - capacity);
        self.packet = packet;
        self.filled(seq, len, grown)
    }

    /// After a packet was added to the chunk of `seq` (now `len` bytes, its
    /// buffer `grown` bytes larger): writes the chunk once it holds
    /// [`CHUNK_BYTES`], or every chunk once the buffers hold [`MAX_HELD`].
    #[inline]
    pub(super) fn filled(&mut self, seq: usize, len: usize, grown: usize) -> Result<(), Error> {
        self.held += grown;
        if len >= CHUNK_BYTES {
            self.flush_chunk(seq, true)?;
        }
        if self.held >= MAX_HELD {
            self.flush_all(true)?;
        }
        Ok(())
    }

    /// Writes the chunks of every sequence, in the order of the sequences;
    /// with `release`, lets their buffers go.
    pub(super) fn flush_all(&mut self, release: bool) -> Result<(), Error> {
        for seq in 0..self.seqs.len() {
            self.flush_chunk(seq, !release)?;
        }
        if release {
            // Every buffer was taken (and none given back).
            self.held = 0;
        }
        Ok(())
    }

    /// Before a slice edge or counter value on `track` at `t` on the
    /// current sequence: if another sequence last wrote on that track at
    /// the same time or later, its chunk is written now, so that the two
    /// packets keep the order written in the file (the trace processor
    /// sorts by time and keeps ties in file order; a track that only one
    /// sequence writes never needs this).
    #[inline]
    pub(super) fn ordered(&mut self, track: u64, t: u64) -> Result<(), Error> {
        let i = track as usize;
        if i >= self.last_writer.len() {
            self.last_writer.resize(i + 1, (0, 0));
        }
        let me = self.cur as u32 + 1;
        let (by, at) = self.last_writer[i];
        self.last_writer[i] = (me, t.max(at));
        if by != 0 && by != me && t <= at {
            self.flush_chunk(by as usize - 1, true)?;
        }
        Ok(())
    }

    /// Writes the chunk of sequence `seq` (sequence 1's first when it holds
    /// a track descriptor not yet written): its packets as they are, or
    /// (compressing) one packet whose `compressed_packets` is the zlib
    /// stream of them, made on a compression thread when there is one
    /// (written when it is back). With `keep`, the sequence gets a buffer
    /// back (the busy ones are written again soon); without, none.
    pub(super) fn flush_chunk(&mut self, seq: usize, keep: bool) -> Result<(), Error> {
        if seq != 0 && self.descriptors {
            self.flush_chunk(0, keep)?;
        }
        if seq == 0 {
            self.descriptors = false;
        }
        let chunk = std::mem::take(self.chunk_of(seq));
        if chunk.is_empty() {
            if keep {
                *self.chunk_of(seq) = chunk;
            }
            return Ok(());
        }
        self.held -= chunk.capacity().min(self.held);
        let mut back = self.write_chunk(chunk)?;
        back.clear();
        if !keep {
            back = Vec::new();
        }
        self.held += back.capacity();
        *self.chunk_of(seq) = back;
        Ok(())
    }

    /// Writes `chunk` (compressed or not) and returns a buffer to reuse.
    fn write_chunk(&mut self, mut chunk: Vec<u8>) -> Result<Vec<u8>, Error> {
        if !self.compress {
            self.out.write_all(&chunk).map_err(io_err)?;
            return Ok(chunk);
        }
        if self.zipper.is_none() && !self.zipper_failed {
            self.zipper = Zipper::start();
            self.zipper_failed = self.zipper.is_none();
        }
        if let Some(z) = &mut self.zipper {
            return z.submit(chunk, &mut self.out).map_err(io_err);
        }
        self.packet.clear();
        self.deflater
            .get_or_insert_with(Deflater::new)
            .zip(&chunk, &mut self.packet)
            .map_err(io_err)?;
        self.out.write_all(&self.packet).map_err(io_err)?;
        self.packet.clear();
        chunk.clear();
        Ok(chunk)
    }

    /// Writes a packet holding the track event in `self.event` (and the
    /// interned data in `self.interned`) at time `t`, straight into the
    /// chunk (its length patched in place: no copy of the packet).
    pub(super) fn emit(&mut self, t: u64) -> Result<(), Error> {
        let c = &mut self.st.chunk;
        let capacity = c.capacity();
        put_key_len(c, field::TRACE_PACKET);
        let at = c.len();
        c.push(0);
        if t >= self.st.clock && self.st.id < 1 << 56 {
            // The usual packet: a delta and the sequence id, both small,
            // encoded on the stack and appended in one copy.
            let mut head = [0u8; 32];
            let n = put_uint_at(&mut head, 0, field::TIMESTAMP, t - self.st.clock);
            let n = put_uint_at(&mut head, n, field::TRUSTED_SEQUENCE_ID, self.st.id);
            put_prefix(c, &head, n);
            self.st.clock = t;
        } else {
            if t >= self.st.clock {
                put_uint(c, field::TIMESTAMP, t - self.st.clock);
                self.st.clock = t;
            } else {
                put_uint(c, field::TIMESTAMP_CLOCK_ID, BOOTTIME_CLOCK);
                put_uint(c, field::TIMESTAMP, t);
            }
            put_uint(c, field::TRUSTED_SEQUENCE_ID, self.st.id);
        }
        // No `sequence_flags` here (see "Sequence" in the module docs): the
        // trace processor reads SEQ_NEEDS_INCREMENTAL_STATE only to skip a
        // packet while its sequence's incremental state is invalid
        // (proto_trace_reader.cc:397-425), which it never is after our first
        // packet cleared it. `trusted_packet_sequence_id` stays: without it
        // interned data and the sequence's clock are refused
        // (proto_trace_reader.cc:691-695, 521-527; track_event_tokenizer.cc:430-433).
        if !self.interned.is_empty() {
            put_bytes(c, field::INTERNED_DATA, &self.interned);
            self.interned.clear();
        }
        put_bytes(c, field::TRACK_EVENT, &self.event);
        patch_len(c, at);
        let (len, grown) = (c.len(), c.capacity() - capacity);
        self.filled(self.cur, len, grown)
    }
}
