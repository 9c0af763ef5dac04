//! The byte layouts of FORMAT.md as field-offset tables: the one source of
//! truth that the core's encoders and the std crate's checked parsers
//! (`qtrace::wire`) both index with. Every integer is big-endian.

/// The 32-byte event record (FORMAT.md 1.4).
pub mod record {
    /// The size of one record, in bytes.
    pub const LEN: usize = 32;
    /// `u64` time.
    pub const TIME: usize = 0;
    /// `u16` event id.
    pub const ID: usize = 8;
    /// `u16` flags.
    pub const FLAGS: usize = 10;
    /// `u32` source.
    pub const SOURCE: usize = 12;
    /// `u64` first argument.
    pub const ARG0: usize = 16;
    /// `u64` second argument.
    pub const ARG1: usize = 24;
}

/// The fixed part of the trace-file header (FORMAT.md 1.1).
pub mod header {
    /// The first 8 bytes of every trace file: `QTRC` then CR LF SUB LF, so a
    /// file mangled by a text-mode transfer is detected.
    pub const MAGIC_BYTES: [u8; 8] = *b"QTRC\r\n\x1a\n";
    /// The format version written.
    pub const FORMAT_VERSION: u16 = 1;
    /// The byte-order mark: `01 02` in the file means big-endian.
    pub const BYTE_ORDER_MARK: u16 = 0x0102;
    /// The record size field's value.
    pub const RECORD_SIZE: u16 = 32;
    /// The size of the fixed part.
    pub const FIXED_LEN: usize = 44;
    /// The queue-handle value meaning "no queue".
    pub const NO_QUEUE: u16 = 0xffff;
    /// Longest host name carried.
    pub const MAX_HOST_LEN: usize = 255;
    /// Timestamps in nanoseconds: the ticks-per-second value qtrace's std
    /// clocks write.
    pub const NANOS_PER_SECOND: u64 = 1_000_000_000;
    /// Header flag bit 0: "this writer closes its files" (a complete file
    /// ends with a close run, FORMAT.md 1.5).
    pub const CLOSES_FLAG: u16 = 0x0001;

    /// `[u8; 8]` magic (a range: the only field that is not an integer).
    pub const MAGIC: core::ops::Range<usize> = 0..8;
    /// `u16` format version.
    pub const VERSION: usize = 8;
    /// `u16` byte-order mark.
    pub const BYTE_ORDER: usize = 10;
    /// `u16` record size.
    pub const RECORD_SIZE_AT: usize = 12;
    /// `u16` header flags.
    pub const FLAGS: usize = 14;
    /// `u32` header length *H*.
    pub const HEADER_LEN: usize = 16;
    /// `u32` process id.
    pub const PROCESS_ID: usize = 20;
    /// `u64` clock origin (ns since the Unix epoch).
    pub const CLOCK_ORIGIN: usize = 24;
    /// `u64` clock ticks per second.
    pub const TICKS_PER_SECOND: usize = 32;
    /// `u16` queue handle.
    pub const QUEUE: usize = 40;
    /// `u16` reserved.
    pub const RESERVED: usize = 42;
}

/// The 40-byte datagram header and its payload prefixes (FORMAT.md 2.1, 2.2).
pub mod datagram {
    /// The first 4 bytes of every datagram.
    pub const MAGIC_BYTES: [u8; 4] = *b"QTRU";
    /// The datagram format version written.
    pub const VERSION_VALUE: u16 = 1;
    /// The size of the header.
    pub const HEADER_LEN: usize = 40;
    /// The size of a catalog fragment's `total | offset` prefix.
    pub const FRAGMENT_PREFIX_LEN: usize = 8;
    /// The size of a close datagram's payload (`logged | unsent`).
    pub const CLOSE_PAYLOAD_LEN: usize = 16;

    /// `[u8; 4]` magic.
    pub const MAGIC: core::ops::Range<usize> = 0..4;
    /// `u16` version.
    pub const VERSION: usize = 4;
    /// `u8` kind.
    pub const KIND: usize = 6;
    /// `u8` flags.
    pub const FLAGS: usize = 7;
    /// `u32` sender id.
    pub const SENDER: usize = 8;
    /// `u16` count.
    pub const COUNT: usize = 12;
    /// `u16` reserved.
    pub const RESERVED: usize = 14;
    /// `u64` sequence number.
    pub const SEQUENCE: usize = 16;
    /// `u64` cumulative dropped events.
    pub const DROPPED: usize = 24;
    /// `u64` first event.
    pub const FIRST_EVENT: usize = 32;
    /// Catalog fragment: `u32` total header length.
    pub const FRAGMENT_TOTAL: usize = 40;
    /// Catalog fragment: `u32` offset of the fragment.
    pub const FRAGMENT_OFFSET: usize = 44;
    /// Close: `u64` events logged.
    pub const CLOSE_LOGGED: usize = 40;
    /// Close: `u64` events never sent.
    pub const CLOSE_UNSENT: usize = 48;
}

/// The default UDP port of the `udp` queue and the receiver (`qtrace recv`).
pub const DEFAULT_UDP_PORT: u16 = 5510;
