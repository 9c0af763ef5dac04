//! The trace-file header: a fixed 44-byte part, then strings and the class
//! table, padded to a multiple of 8 bytes. FORMAT.md specifies it byte by byte.
//!
//! [`HeaderView`] is the checked view (its constructor validates the magic,
//! version, byte order, record size and lengths once); [`TraceHeader`] is the
//! value type, which can only hold what the format can carry.

use super::catalog;
use super::cursor::{be16, be32, be64, Cursor};
use super::header_error::HeaderFieldError;
use super::WireError;
use crate::classes::{validate_name, Catalog, MAX_NAME_LEN};
use crate::model::clock::Clock;
use crate::QueueHandle;
use qtrace_core::encode::header::HeaderSpec;

pub use qtrace_core::layout::header::{
    BYTE_ORDER_MARK, FIXED_LEN, FORMAT_VERSION, MAX_HOST_LEN, NANOS_PER_SECOND, NO_QUEUE,
    RECORD_SIZE,
};
/// The first 8 bytes of every trace file: `QTRC` then CR LF SUB LF, so a file
/// mangled by a text-mode transfer is detected.
pub const MAGIC: [u8; 8] = qtrace_core::layout::header::MAGIC_BYTES;
/// Every format version this crate reads.
pub const SUPPORTED_FILE_VERSIONS: &[u16] = &[1, COMPACT_FILE_VERSION];
/// The trace-file version whose records are compact chunks (FORMAT.md 1.11).
pub(crate) const COMPACT_FILE_VERSION: u16 = 2;
/// The largest header a reader accepts (a larger claim is corrupt, not an
/// allocation).
pub const MAX_HEADER_LEN: usize = 4 << 20;
// The largest header qtrace can write fits under the cap readers enforce.
const _: () = assert!(
    FIXED_LEN + 3 * 2 + MAX_NAME_LEN * 2 + MAX_HOST_LEN + catalog::MAX_CATALOG_LEN + 8
        <= MAX_HEADER_LEN
);

// The field offsets of the fixed part: the core's table, which its encoder
// writes at too.
use qtrace_core::layout::header as field;

/// Validates the fixed part at the start of `prefix` (at least
/// [`FIXED_LEN`] bytes) and returns the header length: how many bytes from
/// the start of the file the whole header takes.
///
/// Checks, in order (FORMAT.md 4.1): magic, version (as soon as its two
/// bytes are there: a later version may have another fixed part), length of
/// the fixed part, byte order, record size, header length, clock rate.
pub fn check_fixed(prefix: &[u8]) -> Result<usize, WireError> {
    if prefix.len() < field::MAGIC.end || prefix[field::MAGIC] != MAGIC {
        if prefix.len() < field::MAGIC.end && MAGIC.starts_with(prefix) {
            return Err(WireError::Truncated {
                offset: 0,
                needed: FIXED_LEN as u64,
                available: prefix.len() as u64,
                what: "header",
            });
        }
        return Err(WireError::BadMagic { what: "trace file" });
    }
    let truncated = || WireError::Truncated {
        offset: 0,
        needed: FIXED_LEN as u64,
        available: prefix.len() as u64,
        what: "header",
    };
    if prefix.len() < field::VERSION + 2 {
        return Err(truncated());
    }
    let version = be16(prefix, field::VERSION);
    if !SUPPORTED_FILE_VERSIONS.contains(&version) {
        return Err(WireError::UnsupportedVersion {
            offset: field::VERSION as u64,
            version,
            supported: SUPPORTED_FILE_VERSIONS,
        });
    }
    if prefix.len() < FIXED_LEN {
        return Err(truncated());
    }
    let bom = be16(prefix, field::BYTE_ORDER);
    if bom != BYTE_ORDER_MARK {
        return Err(WireError::BadByteOrder { found: bom });
    }
    let record_size = be16(prefix, field::RECORD_SIZE_AT);
    if record_size != RECORD_SIZE {
        return Err(WireError::BadRecordSize { found: record_size });
    }
    let header_len = be32(prefix, field::HEADER_LEN) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(WireError::TooLarge {
            offset: field::HEADER_LEN as u64,
            what: "header",
            len: header_len as u64,
            max: MAX_HEADER_LEN as u64,
        });
    }
    if header_len < FIXED_LEN {
        return Err(WireError::Invalid {
            offset: field::HEADER_LEN as u64,
            what: "header length",
            reason: format!("{header_len} is shorter than the fixed part ({FIXED_LEN} bytes)"),
        });
    }
    let ticks = be64(prefix, field::TICKS_PER_SECOND);
    if ticks == 0 {
        return Err(WireError::Invalid {
            offset: field::TICKS_PER_SECOND as u64,
            what: "clock rate",
            reason: "zero ticks per second".into(),
        });
    }
    Ok(header_len)
}

/// A checked view of a whole header. After [`HeaderView::new_checked`] the
/// accessors cannot panic.
#[derive(Clone, Copy, Debug)]
pub struct HeaderView<T: AsRef<[u8]>> {
    buffer: T,
    len: usize,
}

impl<T: AsRef<[u8]>> HeaderView<T> {
    /// Checks the fixed part (see [`check_fixed`]) and that `buffer` holds the
    /// whole header. Bytes after the header (records) are allowed.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let bytes = buffer.as_ref();
        let len = check_fixed(bytes)?;
        if bytes.len() < len {
            return Err(WireError::Truncated {
                offset: 0,
                needed: len as u64,
                available: bytes.len() as u64,
                what: "header",
            });
        }
        Ok(HeaderView { buffer, len })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The format version.
    pub fn version(&self) -> u16 {
        be16(self.b(), field::VERSION)
    }

    /// Header flags: bit 0 is [`CLOSES_FLAG`](super::close::CLOSES_FLAG);
    /// readers ignore bits they do not know.
    pub fn flags(&self) -> u16 {
        be16(self.b(), field::FLAGS)
    }

    /// The header length: where the first record starts.
    pub fn header_len(&self) -> usize {
        self.len
    }

    /// The producing process.
    pub fn process_id(&self) -> u32 {
        be32(self.b(), field::PROCESS_ID)
    }

    /// Wall-clock time of timestamp 0, in ns since the Unix epoch.
    pub fn clock_origin_unix_ns(&self) -> u64 {
        be64(self.b(), field::CLOCK_ORIGIN)
    }

    /// Timestamp ticks per second (1,000,000,000: nanoseconds).
    pub fn ticks_per_second(&self) -> u64 {
        be64(self.b(), field::TICKS_PER_SECOND)
    }

    /// The producing queue's handle, or [`NO_QUEUE`].
    pub fn queue_handle(&self) -> u16 {
        be16(self.b(), field::QUEUE)
    }

    /// The variable part: strings, class table, padding.
    pub fn variable(&self) -> &[u8] {
        &self.b()[FIXED_LEN..self.len]
    }
}

/// Everything a trace file says about itself before its records.
///
/// Built with [`TraceHeader::new`] or [`TraceHeader::for_queue`] and the
/// `with_*` setters, which refuse values the format cannot carry, so every
/// `TraceHeader` can be written and read back equal.
///
/// ```
/// use qtrace::classes::Catalog;
/// use qtrace::clock::{Clock, ManualClock};
/// use qtrace::wire::TraceHeader;
///
/// let clock = Clock::manual(&ManualClock::new(0));
/// let header = TraceHeader::new(Catalog::builtin(), &clock)
///     .with_process_id(42)
///     .with_host("bench-7")?;
/// let bytes = header.to_bytes();
/// assert_eq!(&bytes[..8], b"QTRC\r\n\x1a\n");
/// assert_eq!(bytes.len() % 8, 0);
/// let (back, len) = TraceHeader::decode(&bytes)?;
/// assert_eq!((back.host(), back.process_id()), ("bench-7", 42));
/// assert_eq!((back, len), (header, bytes.len()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceHeader {
    version: u16,
    clock_kind: String,
    ticks_per_second: u64,
    clock_origin_unix_ns: u64,
    host: String,
    process_id: u32,
    queue: Option<(QueueHandle, String)>,
    catalog: Catalog,
    closes: bool,
}

fn bad(field: &'static str, reason: impl Into<String>) -> HeaderFieldError {
    HeaderFieldError {
        field,
        reason: reason.into(),
    }
}

/// This machine's host name, or "unknown".
fn local_host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let name = raw.trim();
    if valid_host(name) {
        name.to_string()
    } else {
        "unknown".to_string()
    }
}

fn valid_host(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_HOST_LEN && !name.chars().any(char::is_control)
}

impl TraceHeader {
    /// A header for events timed by `clock` and named by `catalog`, from this
    /// host and process, not tied to a queue.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::wire::TraceHeader;
    ///
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    /// assert_eq!(header.ticks_per_second(), 1_000_000_000);
    /// assert_eq!(header.queue(), None);
    /// assert_eq!(header.catalog().event(system::SCHEDULE).unwrap().name, "schedule");
    /// ```
    pub fn new(catalog: Catalog, clock: &Clock) -> Self {
        TraceHeader {
            version: FORMAT_VERSION,
            clock_kind: clock.kind().name().to_string(),
            ticks_per_second: NANOS_PER_SECOND,
            clock_origin_unix_ns: clock.origin_unix_ns(),
            host: local_host_name(),
            process_id: std::process::id(),
            queue: None,
            catalog,
            closes: false,
        }
    }

    /// Sets the clock description: a kind name (`[A-Za-z0-9_.-]`, 1–64
    /// bytes), the timestamp rate (non-zero; qtrace clocks count
    /// nanoseconds, 1,000,000,000 per second) and the wall-clock time of
    /// timestamp 0 in ns since the Unix epoch.
    ///
    /// # Errors
    ///
    /// [`HeaderFieldError`] naming the field when the kind name is not a
    /// valid name or the rate is zero.
    pub fn with_clock(
        mut self,
        kind: &str,
        ticks_per_second: u64,
        origin_unix_ns: u64,
    ) -> Result<Self, HeaderFieldError> {
        validate_name("clock kind", kind).map_err(|e| bad("clock kind", e.to_string()))?;
        if ticks_per_second == 0 {
            return Err(bad("clock rate", "ticks per second must not be zero"));
        }
        self.clock_kind = kind.to_string();
        self.ticks_per_second = ticks_per_second;
        self.clock_origin_unix_ns = origin_unix_ns;
        Ok(self)
    }

    /// Sets the host name (1–255 bytes, no control characters).
    ///
    /// # Errors
    ///
    /// [`HeaderFieldError`] when the name is empty, longer than 255 bytes or
    /// holds a control character.
    pub fn with_host(mut self, host: &str) -> Result<Self, HeaderFieldError> {
        if !valid_host(host) {
            return Err(bad(
                "host",
                format!("{host:?}: use 1 to {MAX_HOST_LEN} bytes without control characters"),
            ));
        }
        self.host = host.to_string();
        Ok(self)
    }

    /// Sets the process id.
    pub fn with_process_id(mut self, pid: u32) -> Self {
        self.process_id = pid;
        self
    }

    /// Names the queue that produced the file (handle below 65535, type name
    /// as a class name).
    ///
    /// # Errors
    ///
    /// [`HeaderFieldError`] when the handle is 65535 (reserved for "no
    /// queue") or the type name is not a valid class name.
    pub fn with_queue(
        mut self,
        handle: impl Into<QueueHandle>,
        type_name: &str,
    ) -> Result<Self, HeaderFieldError> {
        let handle = handle.into();
        validate_name("queue type", type_name).map_err(|e| bad("queue type", e.to_string()))?;
        if handle.0 == NO_QUEUE {
            return Err(bad("queue handle", "65535 is reserved for \"no queue\""));
        }
        self.queue = Some((handle, type_name.to_string()));
        Ok(self)
    }

    /// Says the file comes from no particular queue (merged or received traces).
    pub fn without_queue(mut self) -> Self {
        self.queue = None;
        self
    }

    /// Sets or clears header flag bit 0 (FORMAT.md 1.5):
    /// "this writer closes its files". A file with the flag that does not
    /// end with a close run ([`TraceWriter::finish_with_close`](super::TraceWriter::finish_with_close))
    /// reads as cut short. [`TraceHeader::for_queue`] sets it;
    /// [`TraceHeader::new`] does not.
    pub fn with_close_run(mut self, closes: bool) -> Self {
        self.closes = closes;
        self
    }

    /// Whether the file's writer closes it with a close run (header flag
    /// bit 0); `false` for files from writers before close runs existed.
    pub fn closes(&self) -> bool {
        self.closes
    }

    /// Chooses the body of the file written with this header (FORMAT.md
    /// 1.11): compact chunks (file version 2, about 5 bytes an event) when
    /// `compact`, else 32-byte records (version 1, what
    /// [`TraceHeader::new`] gives). [`TraceWriter`](super::TraceWriter)
    /// encodes accordingly; every reader of this crate reads both.
    ///
    /// ```
    /// use qtrace::classes::{system, Catalog};
    /// use qtrace::clock::{Clock, ManualClock};
    /// use qtrace::reader::TraceReader;
    /// use qtrace::wire::{TraceHeader, TraceWriter};
    /// use qtrace::Event;
    ///
    /// let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
    ///     .with_compact(true);
    /// assert_eq!((header.version(), header.is_compact()), (2, true));
    /// let mut w = TraceWriter::new(Vec::new(), &header)?;
    /// for t in 0..100 {
    ///     w.write_event(&Event::new(1_000 + 10 * t, system::SCHEDULE, 0, [t % 4, 0]))?;
    /// }
    /// let bytes = w.finish()?;
    /// // One 48-byte chunk header, then the first record as a literal
    /// // (4 bytes), 2 bytes an event of argument 0 and 3 for the others.
    /// assert_eq!(bytes.len(), header.to_bytes().len() + 48 + 4 + 24 * 2 + 75 * 3);
    /// let back: Vec<Event> = TraceReader::new(&bytes[..])?.collect::<Result<_, _>>()?;
    /// assert_eq!(back.len(), 100);
    /// assert_eq!(back[99], Event::new(1_990, system::SCHEDULE, 0, [3, 0]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_compact(mut self, compact: bool) -> Self {
        self.version = if compact {
            COMPACT_FILE_VERSION
        } else {
            FORMAT_VERSION
        };
        self
    }

    /// Whether the file's records are compact chunks (file version 2,
    /// FORMAT.md 1.11) rather than 32-byte records.
    pub fn is_compact(&self) -> bool {
        self.version == COMPACT_FILE_VERSION
    }

    /// Replaces the class table.
    pub fn with_catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = catalog;
        self
    }

    /// The format version: of the file read, or the one this crate writes
    /// (FORMAT.md).
    pub fn version(&self) -> u16 {
        self.version
    }

    /// The clock's kind name (`tsc`, `monotonic`, `manual`, …).
    pub fn clock_kind(&self) -> &str {
        &self.clock_kind
    }

    /// Timestamp ticks per second (1,000,000,000 for qtrace's ns clocks).
    pub fn ticks_per_second(&self) -> u64 {
        self.ticks_per_second
    }

    /// Wall-clock time of timestamp 0, ns since the Unix epoch.
    pub fn clock_origin_unix_ns(&self) -> u64 {
        self.clock_origin_unix_ns
    }

    /// Converts a timestamp to nanoseconds since the clock origin.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        if self.ticks_per_second == NANOS_PER_SECOND {
            ticks
        } else {
            let ns = ticks as u128 * NANOS_PER_SECOND as u128 / self.ticks_per_second as u128;
            ns.min(u64::MAX as u128) as u64
        }
    }

    /// The producing host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The producing process.
    pub fn process_id(&self) -> u32 {
        self.process_id
    }

    /// The producing queue's handle and type name, if the file came from one.
    pub fn queue(&self) -> Option<(QueueHandle, &str)> {
        self.queue.as_ref().map(|(h, n)| (*h, n.as_str()))
    }

    /// The class and event table.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The header as the core's encoder takes it.
    fn spec(&self) -> HeaderSpec<'_> {
        HeaderSpec {
            closes: self.closes,
            process_id: self.process_id,
            clock_origin_unix_ns: self.clock_origin_unix_ns,
            ticks_per_second: self.ticks_per_second,
            clock_kind: &self.clock_kind,
            host: &self.host,
            queue: self.queue.as_ref().map(|(h, n)| (h.0, n.as_str())),
        }
    }

    /// The number of bytes [`TraceHeader::to_bytes`] returns (a multiple of 8).
    pub(crate) fn buffer_len(&self) -> usize {
        self.spec().buffer_len(&self.catalog)
    }

    /// The encoded header (the core's encoder,
    /// [`qtrace_core::encode::header::HeaderSpec::emit`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buffer_len());
        self.spec()
            .emit(&self.catalog, &mut |b: &[u8]| out.extend_from_slice(b));
        // The core's encoder writes version 1; the body kind is this crate's.
        out[field::VERSION..field::VERSION + 2].copy_from_slice(&self.version.to_be_bytes());
        out
    }

    /// Decodes the header from a checked view.
    pub(crate) fn parse<T: AsRef<[u8]>>(view: &HeaderView<T>) -> Result<Self, WireError> {
        let mut cur = Cursor::new(view.variable());
        let r = (|| {
            let kind_at = cur.pos();
            let kind = cur.str("clock kind", MAX_NAME_LEN)?;
            validate_name("clock kind", kind).map_err(|e| WireError::Invalid {
                offset: kind_at as u64,
                what: "clock kind",
                reason: e.to_string(),
            })?;
            let host_at = cur.pos();
            let host = cur.str("host name", MAX_HOST_LEN)?;
            if !valid_host(host) {
                return Err(WireError::Invalid {
                    offset: host_at as u64,
                    what: "host name",
                    reason: "empty or has control characters".into(),
                });
            }
            let type_at = cur.pos();
            let type_name = cur.str("queue type name", MAX_NAME_LEN)?;
            let handle = view.queue_handle();
            let queue = match (handle, type_name) {
                (NO_QUEUE, "") => None,
                (NO_QUEUE, _) | (_, "") => {
                    return Err(WireError::Invalid {
                        offset: type_at as u64,
                        what: "queue type name",
                        reason: "present without a queue handle, or missing with one".into(),
                    })
                }
                (h, name) => {
                    validate_name("queue type", name).map_err(|e| WireError::Invalid {
                        offset: type_at as u64,
                        what: "queue type name",
                        reason: e.to_string(),
                    })?;
                    Some((QueueHandle(h), name.to_string()))
                }
            };
            let catalog = catalog::parse_from(&mut cur)?;
            Ok(TraceHeader {
                version: view.version(),
                clock_kind: kind.to_string(),
                ticks_per_second: view.ticks_per_second(),
                clock_origin_unix_ns: view.clock_origin_unix_ns(),
                host: host.to_string(),
                process_id: view.process_id(),
                queue,
                catalog,
                closes: view.flags() & super::close::CLOSES_FLAG != 0,
            })
        })();
        // The view holds the whole header (its length field says how long it
        // is), so running out of bytes inside it is corruption, not a file cut
        // short: more input would not help.
        r.map_err(|e| match e {
            WireError::Truncated { offset, what, .. } => WireError::Invalid {
                offset,
                what,
                reason: format!(
                    "it runs past the end of the header ({} bytes, as its length field at byte {} says)",
                    view.header_len(),
                    field::HEADER_LEN
                ),
            },
            other => other,
        }
        .shifted(FIXED_LEN as u64))
    }

    /// Checks and decodes the header at the start of `bytes`; returns it and
    /// its length (where the records start).
    ///
    /// # Errors
    ///
    /// [`WireError`] naming the byte offset when the bytes are not a trace
    /// header this crate reads (bad magic, unsupported version, a length
    /// past the end, an invalid name), or are cut short
    /// ([`WireError::is_truncated`]).
    pub fn decode(bytes: &[u8]) -> Result<(Self, usize), WireError> {
        let view = HeaderView::new_checked(bytes)?;
        Ok((TraceHeader::parse(&view)?, view.header_len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Was `supported_versions_are_listed` in tests/wire/format.rs.
    #[test]
    fn supported_versions_are_listed() {
        assert_eq!(SUPPORTED_FILE_VERSIONS, &[1, 2]);
        assert_eq!(
            super::super::datagram::SUPPORTED_DATAGRAM_VERSIONS,
            &[1, 2, 3, 4]
        );
        assert_eq!(FORMAT_VERSION, 1);
    }
}
