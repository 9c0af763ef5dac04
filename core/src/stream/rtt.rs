//! An RTT-compatible memory ring (FORMAT.md 10.7): the firmware writes the
//! frames into RAM, a debugger or an emulator reads them while the core runs.

use core::fmt;
use core::sync::atomic::{fence, AtomicU32, AtomicU8, Ordering};

/// The id at the start of the control block: `SEGGER RTT` and six zeros.
pub const RTT_ID: [u8; 16] = *b"SEGGER RTT\0\0\0\0\0\0";
/// The qtrace extension's magic, after the up-buffer descriptor: `QTRR`.
pub const RTT_MAGIC: [u8; 4] = *b"QTRR";
/// The control block's length: the data follow at this offset.
pub const RTT_HEADER_LEN: usize = 64;
/// The channel's name, `qtrace`, pointed to by the descriptor.
static NAME: [u8; 7] = *b"qtrace\0";

/// Byte offsets of the control block's fields (FORMAT.md 10.7).
pub mod offset {
    /// `MaxNumUpBuffers` (1).
    pub const MAX_UP: usize = 16;
    /// `MaxNumDownBuffers` (0).
    pub const MAX_DOWN: usize = 20;
    /// The up-buffer's `sName`: the address of `qtrace\0`.
    pub const NAME: usize = 24;
    /// `pBuffer`: the address of the data.
    pub const BUFFER: usize = 28;
    /// `SizeOfBuffer`.
    pub const SIZE: usize = 32;
    /// `WrOff`: `committed mod size`.
    pub const WR_OFF: usize = 36;
    /// `RdOff` (ignored by the writer: overwrite mode).
    pub const RD_OFF: usize = 40;
    /// `Flags` (0).
    pub const FLAGS: usize = 44;
    /// The extension's magic, `QTRR`.
    pub const MAGIC: usize = 48;
    /// `reserved`: the bytes the writer has begun to write, ever.
    pub const RESERVED: usize = 52;
    /// `committed`: the bytes the writer has finished writing, ever.
    pub const COMMITTED: usize = 56;
}

/// A SEGGER-RTT-layout control block with one up-buffer of `N` bytes in
/// overwrite mode, and the data right after it, in one `static` a host
/// finds by its id (`SEGGER RTT`) or by its ELF symbol. `N` is a power of
/// two from 16 to 2^30. It is the sink of a [`Drain`](super::Drain):
/// [`write`](RttRing::write) always takes the bytes (at most `N`), never
/// waits, and overwrites the oldest; two counters in the control block say
/// exactly which bytes a reader may take and how many it missed
/// ([`RttCursor`], FORMAT.md 10.7).
///
/// One writer: call `write` from one context at a time (the drain's).
/// Safe code only: every byte is an atomic, so a host reading the RAM at
/// any moment is no data race in the firmware.
///
/// ```
/// use qtrace_core::stream::{RttCursor, RttRing, RTT_HEADER_LEN};
///
/// static RING: RttRing<64> = RttRing::new();
/// assert_eq!(RING.write(b"hello"), 5);
/// let mut image = [0u8; RTT_HEADER_LEN + 64];
/// RING.read_at(0, &mut image);
/// assert_eq!(&image[..10], b"SEGGER RTT");
/// let mut cursor = RttCursor::new();
/// let header = qtrace_core::stream::RttHeader::parse(&image).unwrap();
/// let t = cursor.take(header.committed, &image[RTT_HEADER_LEN..], header.reserved).unwrap();
/// assert_eq!((t.first, t.second, t.lost), (&b"hello"[..], &[][..], 0));
/// ```
#[repr(C)]
#[derive(Debug)]
pub struct RttRing<const N: usize> {
    id: [AtomicU8; 16],
    words: [AtomicU32; 12],
    data: [AtomicU8; N],
}

const W_MAX_UP: usize = 0;
const W_MAX_DOWN: usize = 1;
const W_NAME: usize = 2;
const W_BUFFER: usize = 3;
const W_SIZE: usize = 4;
const W_WR_OFF: usize = 5;
const W_MAGIC: usize = 8;
const W_RESERVED: usize = 9;
const W_COMMITTED: usize = 10;

impl<const N: usize> RttRing<N> {
    const SIZE_OK: () = assert!(N.is_power_of_two() && N >= 16 && N <= 1 << 30);

    /// An empty ring; the control block is filled by the first
    /// [`write`](RttRing::write) (or [`init`](RttRing::init)), where the
    /// ring's address is known.
    #[allow(clippy::let_unit_value)]
    pub const fn new() -> Self {
        let () = Self::SIZE_OK;
        RttRing {
            id: [const { AtomicU8::new(0) }; 16],
            words: [const { AtomicU32::new(0) }; 12],
            data: [const { AtomicU8::new(0) }; N],
        }
    }

    /// Fills the control block (once): the descriptor, the counters at
    /// zero, then the id, last and from its end, so a host scanning RAM
    /// never finds a half-made block. Called by the first `write`; call it
    /// early to let a host find the ring before the first frame.
    pub fn init(&self) {
        if self.id[0].load(Ordering::Acquire) == RTT_ID[0] {
            return;
        }
        let w = |i: usize, v: u32| self.words[i].store(v, Ordering::Relaxed);
        w(W_MAX_UP, 1);
        w(W_MAX_DOWN, 0);
        // Addresses are 32 bits on the targets (the low 32 bits on a
        // 64-bit host, where only tests run).
        w(W_NAME, NAME.as_ptr() as usize as u32);
        w(W_BUFFER, self.data.as_ptr() as usize as u32);
        w(W_SIZE, N as u32);
        w(W_MAGIC, u32::from_le_bytes(RTT_MAGIC));
        fence(Ordering::Release);
        for i in (0..16).rev() {
            self.id[i].store(RTT_ID[i], Ordering::Release);
        }
    }

    /// Writes `bytes` (at most `N` of them: returns how many it took),
    /// overwriting the oldest data; never waits. First `reserved` grows,
    /// then the bytes are stored, then `committed` and `WrOff`.
    pub fn write(&self, bytes: &[u8]) -> usize {
        self.init();
        let bytes = &bytes[..bytes.len().min(N)];
        let start = self.words[W_COMMITTED].load(Ordering::Relaxed);
        let end = start.wrapping_add(bytes.len() as u32);
        self.words[W_RESERVED].store(end, Ordering::Relaxed);
        // The reservation is visible before any byte it covers.
        fence(Ordering::Release);
        let mask = N as u32 - 1;
        // Two spans of the data (to its end, then from its start): no
        // index to mask or check a byte.
        let at = (start & mask) as usize;
        let (tail, head) = self.data.split_at(at);
        let (first, second) = bytes.split_at(bytes.len().min(head.len()));
        for (slot, &b) in head.iter().zip(first) {
            slot.store(b, Ordering::Relaxed);
        }
        for (slot, &b) in tail.iter().zip(second) {
            slot.store(b, Ordering::Relaxed);
        }
        fence(Ordering::Release);
        self.words[W_COMMITTED].store(end, Ordering::Relaxed);
        self.words[W_WR_OFF].store(end & mask, Ordering::Relaxed);
        bytes.len()
    }

    /// Copies the ring's memory as a little-endian target holds it (the
    /// control block, then the data), from byte `offset` on, into `out`;
    /// returns the bytes copied. What a debugger reads: for tests and
    /// simulated readers.
    pub fn read_at(&self, offset: usize, out: &mut [u8]) -> usize {
        let mut n = 0;
        for (k, slot) in (offset..RTT_HEADER_LEN + N).zip(out.iter_mut()) {
            *slot = if k < 16 {
                self.id[k].load(Ordering::Acquire)
            } else if k < RTT_HEADER_LEN {
                let word = self.words[(k - 16) / 4].load(Ordering::Acquire);
                word.to_le_bytes()[k % 4]
            } else {
                self.data[k - RTT_HEADER_LEN].load(Ordering::Relaxed)
            };
            n += 1;
        }
        fence(Ordering::Acquire);
        n
    }
}

impl<const N: usize> Default for RttRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// A control block that is not (or not yet) a qtrace RTT ring, or counters
/// no writer can have left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttError {
    /// Fewer than [`RTT_HEADER_LEN`] bytes.
    Short,
    /// The first 16 bytes are not [`RTT_ID`] (not initialised yet, or not
    /// a control block).
    NoId,
    /// Not one up-buffer, no down-buffer and the `QTRR` extension: an RTT
    /// block of another writer.
    NotQtrace,
    /// `SizeOfBuffer` is not a power of two from 16 to 2^30, or the data
    /// given to [`RttCursor::take`] are not that long.
    BadSize(u32),
    /// `reserved` is behind `committed`, or more than one write (the
    /// size) ahead; or `committed` went backwards since the last take.
    BadCounters {
        /// `committed` read.
        committed: u32,
        /// `reserved` read.
        reserved: u32,
    },
}

impl fmt::Display for RttError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RttError::Short => write!(f, "an RTT control block is {RTT_HEADER_LEN} bytes; fewer were read"),
            RttError::NoId => f.write_str("no \"SEGGER RTT\" id at the control block's address: the firmware has not called RttRing::init or write yet, or the address is wrong"),
            RttError::NotQtrace => f.write_str("an RTT control block without qtrace's QTRR extension (one up-buffer, no down-buffer): not a qtrace_core::stream::RttRing"),
            RttError::BadSize(s) => write!(f, "RTT buffer size {s} is not a power of two from 16 to 2^30, or the data read are not that long"),
            RttError::BadCounters { committed, reserved } => write!(f, "impossible RTT counters: committed {committed}, reserved {reserved}"),
        }
    }
}

/// The fields of a control block a reader needs (FORMAT.md 10.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttHeader {
    /// `pBuffer`: the data's address on the target.
    pub buffer: u32,
    /// `SizeOfBuffer`.
    pub size: u32,
    /// `WrOff`.
    pub wr_off: u32,
    /// `reserved`.
    pub reserved: u32,
    /// `committed`.
    pub committed: u32,
}

impl RttHeader {
    /// Parses the first [`RTT_HEADER_LEN`] bytes of `bytes`.
    ///
    /// # Errors
    ///
    /// [`RttError::Short`], [`NoId`](RttError::NoId),
    /// [`NotQtrace`](RttError::NotQtrace), [`BadSize`](RttError::BadSize),
    /// [`BadCounters`](RttError::BadCounters) (`reserved` behind
    /// `committed` or more than `size` ahead).
    pub fn parse(bytes: &[u8]) -> Result<Self, RttError> {
        let b = bytes.get(..RTT_HEADER_LEN).ok_or(RttError::Short)?;
        if b[..16] != RTT_ID {
            return Err(RttError::NoId);
        }
        let word = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        if word(offset::MAX_UP) != 1
            || word(offset::MAX_DOWN) != 0
            || b[offset::MAGIC..offset::MAGIC + 4] != RTT_MAGIC
        {
            return Err(RttError::NotQtrace);
        }
        let size = word(offset::SIZE);
        if !size.is_power_of_two() || !(16..=1 << 30).contains(&size) {
            return Err(RttError::BadSize(size));
        }
        let h = RttHeader {
            buffer: word(offset::BUFFER),
            size,
            wr_off: word(offset::WR_OFF),
            reserved: word(offset::RESERVED),
            committed: word(offset::COMMITTED),
        };
        if h.reserved.wrapping_sub(h.committed) > size || h.wr_off >= size {
            return Err(RttError::BadCounters {
                committed: h.committed,
                reserved: h.reserved,
            });
        }
        Ok(h)
    }
}

/// What one [`RttCursor::take`] gives: the bytes to feed, in order (the
/// data wrap: `first` then `second`), and how many were overwritten before
/// they could be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttTake<'a> {
    /// The older bytes.
    pub first: &'a [u8],
    /// The newer bytes (empty unless the range wraps).
    pub second: &'a [u8],
    /// Bytes lost just before `first` (overwritten; at the first take,
    /// the bytes written before the reader attached that are gone).
    pub lost: u64,
}

/// A host's position in an [`RttRing`]'s byte stream: applies the rule of
/// FORMAT.md 10.7 to each poll, so it takes only bytes the writer has
/// finished and can no longer be overwriting, and counts exactly the bytes
/// it missed, without ever writing to the target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttCursor {
    next: Option<u32>,
    taken: u64,
    lost: u64,
}

impl RttCursor {
    /// A reader that has not polled yet.
    pub fn new() -> Self {
        RttCursor::default()
    }

    /// The number (mod 2^32) of the first stream byte not taken yet;
    /// `None` before the first take. A reader that copies only the bytes
    /// a take can return copies from `next` (or `committed − size` when
    /// that is later) to `committed`.
    pub fn next(&self) -> Option<u32> {
        self.next
    }

    /// Bytes taken so far.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Bytes missed so far: overwritten before they could be taken, from
    /// the first take's start on (what came before it, the reader never
    /// attached to).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// One poll: `committed` read **before** copying `data` (the whole
    /// buffer, `size` bytes), `reserved` read **after**. Takes the bytes
    /// from where the last take stopped (at the first, from the oldest the
    /// buffer can hold) to `committed`, less those the writer may have
    /// overwritten by `reserved`.
    ///
    /// # Errors
    ///
    /// [`RttError::BadSize`] when `data` is not a power of two from 16 to
    /// 2^30 long; [`RttError::BadCounters`] when `reserved` is behind
    /// `committed`, or `committed` is behind the last take (the firmware
    /// restarted: start a new cursor). The cursor is unchanged.
    pub fn take<'a>(
        &mut self,
        committed: u32,
        data: &'a [u8],
        reserved: u32,
    ) -> Result<RttTake<'a>, RttError> {
        let size = u32::try_from(data.len()).unwrap_or(0);
        if !size.is_power_of_two() || !(16..=1 << 30).contains(&size) {
            return Err(RttError::BadSize(size));
        }
        let bad = RttError::BadCounters {
            committed,
            reserved,
        };
        // Read after the copy, `reserved` may be any distance ahead; never
        // behind.
        let ahead = reserved.wrapping_sub(committed);
        if ahead >= 1 << 31 {
            return Err(bad);
        }
        let next = self
            .next
            .unwrap_or_else(|| committed.wrapping_sub(committed.min(size)));
        let behind = committed.wrapping_sub(next);
        if behind > 1 << 31 {
            return Err(bad);
        }
        // The oldest byte the writer cannot have overwritten by `reserved`.
        // Taking from next, the bytes before it are gone: (R - C) + (C -
        // next) - size of them, none if that is negative, at most behind.
        let gone = i64::from(ahead) + i64::from(behind) - i64::from(size);
        let lost = gone.clamp(0, i64::from(behind)) as u32;
        let start = next.wrapping_add(lost);
        let len = (behind - lost) as usize;
        let mask = size - 1;
        let at = (start & mask) as usize;
        // len <= size: bytes before R - size are lost and R <= C + size.
        let (first_part, second_part) = if at + len <= data.len() {
            (data.get(at..at + len), data.get(..0))
        } else {
            (data.get(at..), data.get(..at + len - data.len()))
        };
        let (Some(first_part), Some(second_part)) = (first_part, second_part) else {
            return Err(bad);
        };
        self.next = Some(committed);
        self.taken += len as u64;
        self.lost += u64::from(lost);
        Ok(RttTake {
            first: first_part,
            second: second_part,
            lost: u64::from(lost),
        })
    }
}
