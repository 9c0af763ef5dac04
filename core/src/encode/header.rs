//! The trace-file header (FORMAT.md 1.1–1.2): the 44-byte fixed part, then
//! the clock kind, host and queue type strings, the class table and zero
//! padding to a multiple of 8 bytes.
//!
//! ```
//! use qtrace_core::encode::header::HeaderSpec;
//! use qtrace_core::StaticCatalog;
//!
//! let spec = HeaderSpec {
//!     closes: true,
//!     ticks_per_second: 25_000_000,
//!     clock_kind: "systick",
//!     host: "mps2-an385",
//!     queue: Some((0, "circular")),
//!     ..HeaderSpec::default()
//! };
//! let len = spec.buffer_len(&StaticCatalog::BUILTIN);
//! let mut bytes = [0u8; 2048];
//! let mut n = 0;
//! spec.emit(&StaticCatalog::BUILTIN, &mut |piece: &[u8]| {
//!     bytes[n..n + piece.len()].copy_from_slice(piece);
//!     n += piece.len();
//! });
//! assert_eq!((n, n % 8), (len, 0));
//! assert_eq!(&bytes[..8], b"QTRC\r\n\x1a\n");
//! assert_eq!(&bytes[14..16], &[0, 1]); // closes its files
//! ```

use byteorder::{BigEndian, ByteOrder};

use super::catalog::{self, put_str, str_len, CatalogSource};
use crate::classes::MAX_NAME_LEN;
use crate::layout::header as field;
use crate::layout::header::{FIXED_LEN, MAX_HOST_LEN, NO_QUEUE};

/// The values of the fixed part that vary from file to file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedPart {
    /// Header flags (bit 0: [`CLOSES_FLAG`](field::CLOSES_FLAG)).
    pub flags: u16,
    /// The header length *H*.
    pub header_len: u32,
    /// The producing process.
    pub process_id: u32,
    /// Wall-clock time of timestamp 0, ns since the Unix epoch.
    pub clock_origin_unix_ns: u64,
    /// Timestamp ticks per second (not zero).
    pub ticks_per_second: u64,
    /// The producing queue's handle, or [`NO_QUEUE`].
    pub queue: u16,
}

/// Encodes the fixed part (magic, version, byte-order mark, record size and
/// the values of `part`).
pub fn emit_fixed(part: &FixedPart, out: &mut [u8; FIXED_LEN]) {
    out[field::MAGIC].copy_from_slice(&field::MAGIC_BYTES);
    BigEndian::write_u16(&mut out[field::VERSION..], field::FORMAT_VERSION);
    BigEndian::write_u16(&mut out[field::BYTE_ORDER..], field::BYTE_ORDER_MARK);
    BigEndian::write_u16(&mut out[field::RECORD_SIZE_AT..], field::RECORD_SIZE);
    BigEndian::write_u16(&mut out[field::FLAGS..], part.flags);
    BigEndian::write_u32(&mut out[field::HEADER_LEN..], part.header_len);
    BigEndian::write_u32(&mut out[field::PROCESS_ID..], part.process_id);
    BigEndian::write_u64(&mut out[field::CLOCK_ORIGIN..], part.clock_origin_unix_ns);
    BigEndian::write_u64(&mut out[field::TICKS_PER_SECOND..], part.ticks_per_second);
    BigEndian::write_u16(&mut out[field::QUEUE..], part.queue);
    BigEndian::write_u16(&mut out[field::RESERVED..], 0);
}

/// Everything a header says besides its class table, borrowed.
///
/// The encoder writes what it is given: the std crate's `TraceHeader`
/// checks names and values before it gets here; a firmware passes
/// constants. A queue type that is not a name, or a queue handle of
/// `0xffff`, writes "no queue" (FORMAT.md 1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderSpec<'a> {
    /// Whether the writer ends the file with a close run (header flag bit 0).
    pub closes: bool,
    /// The producing process (0 on a firmware without processes).
    pub process_id: u32,
    /// Wall-clock time of timestamp 0, ns since the Unix epoch (0 unknown).
    pub clock_origin_unix_ns: u64,
    /// Timestamp ticks per second (not zero).
    pub ticks_per_second: u64,
    /// The clock's kind name (`[A-Za-z0-9_.-]`, 1–64 bytes).
    pub clock_kind: &'a str,
    /// The producing machine (1–255 bytes, no control characters).
    pub host: &'a str,
    /// The producing queue's handle and type name.
    pub queue: Option<(u16, &'a str)>,
}

impl Default for HeaderSpec<'_> {
    /// Not closing, process 0, origin 0, nanoseconds, clock `manual`, host
    /// `unknown`, no queue.
    fn default() -> Self {
        HeaderSpec {
            closes: false,
            process_id: 0,
            clock_origin_unix_ns: 0,
            ticks_per_second: field::NANOS_PER_SECOND,
            clock_kind: "manual",
            host: "unknown",
            queue: None,
        }
    }
}

impl HeaderSpec<'_> {
    fn queue(&self) -> (u16, &str) {
        match self.queue {
            Some((h, name)) if h != NO_QUEUE && catalog::is_name(name) => (h, name),
            _ => (NO_QUEUE, ""),
        }
    }

    fn unpadded_len<C: CatalogSource + ?Sized>(&self, catalog: &C) -> usize {
        FIXED_LEN
            + str_len(self.clock_kind, MAX_NAME_LEN)
            + str_len(self.host, MAX_HOST_LEN)
            + str_len(self.queue().1, MAX_NAME_LEN)
            + catalog::buffer_len(catalog)
    }

    /// The header length *H*: the bytes [`HeaderSpec::emit`] writes (a
    /// multiple of 8).
    pub fn buffer_len<C: CatalogSource + ?Sized>(&self, catalog: &C) -> usize {
        self.unpadded_len(catalog).div_ceil(8) * 8
    }

    /// Feeds the whole header, `catalog` as its class table, to `out`.
    pub fn emit<C: CatalogSource + ?Sized>(&self, catalog: &C, out: &mut impl FnMut(&[u8])) {
        let unpadded = self.unpadded_len(catalog);
        let len = unpadded.div_ceil(8) * 8;
        let (handle, type_name) = self.queue();
        let mut fixed = [0u8; FIXED_LEN];
        emit_fixed(
            &FixedPart {
                flags: if self.closes { field::CLOSES_FLAG } else { 0 },
                header_len: len as u32,
                process_id: self.process_id,
                clock_origin_unix_ns: self.clock_origin_unix_ns,
                ticks_per_second: self.ticks_per_second,
                queue: handle,
            },
            &mut fixed,
        );
        out(&fixed);
        put_str(out, self.clock_kind, MAX_NAME_LEN);
        put_str(out, self.host, MAX_HOST_LEN);
        put_str(out, type_name, MAX_NAME_LEN);
        catalog::emit(catalog, out);
        out(&[0u8; 8][..len - unpadded]);
    }
}
