//! The UDP datagram: a 40-byte big-endian header, then either event records
//! or a fragment of the sender's trace header (which carries its class table,
//! so a receiver can name user-defined events). FORMAT.md specifies it.
//!
//! **Not a public API** (hidden from the documentation): the fuzz targets,
//! the `wire_throughput` example and the receiver's tests encode and decode
//! datagrams with it, and it may change in any release. Programs receive
//! datagrams with the [receiver](crate::receiver); a sender without the UDP
//! queue (a firmware) encodes them with `qtrace_core::encode::datagram`.
//!
//! | offset | size | field                                                   |
//! |--------|------|---------------------------------------------------------|
//! | 0      | 4    | magic `QTRU` (`51 54 52 55`)                            |
//! | 4      | 2    | version (1)                                             |
//! | 6      | 1    | kind: 1 = events, 2 = catalog fragment, 3 = close       |
//! | 7      | 1    | flags (0; unknown bits ignored)                         |
//! | 8      | 4    | sender id                                               |
//! | 12     | 2    | count: records (events) or fragment bytes (catalog)     |
//! | 14     | 2    | reserved (0; ignored)                                   |
//! | 16     | 8    | sequence number (per sender, +1 per datagram, any kind) |
//! | 24     | 8    | events the sender has dropped so far (cumulative)       |
//! | 32     | 8    | first event: events the sender has sent before this one |
//! | 40     | …    | payload                                                 |
//!
//! The first-event field numbers the sender's events 0, 1, 2, … in the order
//! it sends them: an events datagram carries events `first .. first + count`,
//! so a receiver knows exactly how many events a lost datagram held.
//!
//! An events datagram is exactly `40 + 32 × count` bytes. A catalog datagram
//! is `40 + 8 + count` bytes: `u32 total | u32 offset | count bytes`, the bytes
//! `offset..offset + count` of the sender's encoded
//! [`TraceHeader`] of `total` bytes. A close datagram (the sender's last
//! word, sent several times) is exactly `40 + 16` bytes with count 0:
//! `u64 logged | u64 unsent` ([`CloseCounts`]); its sequence number is the
//! one after the sender's last events or catalog datagram, its dropped and
//! first-event fields are the sender's final totals.
//!
//! Encoding writes into a caller's buffer (no allocation per datagram):
//!
//! ```
//! use qtrace::wire::datagram::{self, DatagramHeader, DatagramKind, DatagramView, EventsEncoder};
//! use qtrace::{Event, EventId};
//!
//! let mut buf = [0u8; datagram::DEFAULT_MAX_DATAGRAM_LEN];
//! let mut enc = EventsEncoder::new(&mut buf, 7, 0, 0, 0).unwrap();
//! assert_eq!(enc.capacity(), 44);
//! assert!(enc.push(&Event::new(1, EventId(0x04), 0, [3, 0])));
//! let len = enc.finish();
//! assert_eq!(len, 72);
//!
//! let view = DatagramView::new_checked(&buf[..len]).unwrap();
//! assert_eq!(
//!     view.header(),
//!     DatagramHeader {
//!         kind: DatagramKind::Events,
//!         sender: 7,
//!         sequence: 0,
//!         dropped: 0,
//!         first_event: 0,
//!     }
//! );
//! assert_eq!(view.events().count(), 1);
//! ```
#![forbid(unsafe_code)]

use super::cursor::{be16, be32, be64};
use super::header::MAX_HEADER_LEN;
use super::record::{self, RecordView, RECORD_LEN};
use super::{TraceHeader, WireError};
use crate::Event;

/// The first 4 bytes of every datagram.
pub const MAGIC: [u8; 4] = field::MAGIC_BYTES;
/// The datagram format version this crate writes.
pub const VERSION: u16 = field::VERSION_VALUE;
/// The datagram version of a compact stream (FORMAT.md 2.7): events
/// datagrams carry one compact chunk; catalog and close datagrams are those
/// of version 1 with this version.
pub const COMPACT_VERSION: u16 = 3;
/// Every datagram format version this crate reads.
/// Version 2 is a keyed datagram (FORMAT.md 2.6): [`keyed`] checks its tag
/// and hands on the version 1 datagram it carries; version 4 is a keyed
/// compact one, carrying a version 3 datagram.
pub const SUPPORTED_DATAGRAM_VERSIONS: &[u16] = &[
    1,
    keyed::KEYED_VERSION,
    COMPACT_VERSION,
    keyed::KEYED_COMPACT_VERSION,
];
pub use qtrace_core::layout::datagram::{CLOSE_PAYLOAD_LEN, FRAGMENT_PREFIX_LEN, HEADER_LEN};
/// The default largest datagram: 1472 bytes of UDP payload fit a 1500-byte
/// Ethernet MTU over IPv4 (1500 − 20 IP − 8 UDP); 44 records (a 1448-byte
/// datagram).
pub const DEFAULT_MAX_DATAGRAM_LEN: usize = 1472;
/// The largest datagram (the largest UDP payload over IPv4).
pub const MAX_DATAGRAM_LEN: usize = 65507;
/// The smallest useful datagram: a header and one record.
pub const MIN_DATAGRAM_LEN: usize = HEADER_LEN + RECORD_LEN;
/// The smallest compact events datagram a sender may be limited to: a
/// header, a chunk header and one record of the largest size (127 bytes).
pub const MIN_COMPACT_DATAGRAM_LEN: usize =
    HEADER_LEN + qtrace_core::compact::HEADER_LEN + qtrace_core::compact::MAX_RECORD_LEN;

// The field offsets: the core's table, which its header encoder writes at.
use qtrace_core::layout::datagram as field;

/// How many records an events datagram of at most `max_len` bytes carries
/// (`max_len` is clamped to `MIN_DATAGRAM_LEN..=MAX_DATAGRAM_LEN`).
///
/// ```
/// use qtrace::wire::datagram::{records_per_datagram, DEFAULT_MAX_DATAGRAM_LEN};
/// assert_eq!(records_per_datagram(DEFAULT_MAX_DATAGRAM_LEN), 44);
/// assert_eq!(records_per_datagram(9000 - 28), 279); // jumbo frames
/// ```
pub const fn records_per_datagram(max_len: usize) -> usize {
    let len = clamp_len(max_len);
    (len - HEADER_LEN) / RECORD_LEN
}

/// How many header bytes a catalog datagram of at most `max_len` bytes carries.
pub const fn fragment_bytes_per_datagram(max_len: usize) -> usize {
    clamp_len(max_len) - HEADER_LEN - FRAGMENT_PREFIX_LEN
}

const fn clamp_len(max_len: usize) -> usize {
    if max_len < MIN_DATAGRAM_LEN {
        MIN_DATAGRAM_LEN
    } else if max_len > MAX_DATAGRAM_LEN {
        MAX_DATAGRAM_LEN
    } else {
        max_len
    }
}

pub use qtrace_core::encode::datagram::{DatagramHeader, DatagramKind};

/// A [`WireError::Truncated`] for `what`.
fn truncated(offset: usize, needed: usize, available: usize, what: &'static str) -> WireError {
    WireError::Truncated {
        offset: offset as u64,
        needed: needed as u64,
        available: available as u64,
        what,
    }
}

mod catalog;
mod encode;
pub mod keyed;
mod view;

pub use catalog::CatalogAssembler;
pub use encode::{
    encode_catalog_fragment, encode_close, encode_events, set_version, CatalogFragment,
    CompactEventsEncoder, EventsEncoder,
};
pub use view::{CloseCounts, DatagramView};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::{Catalog, ClassSpec};
    use crate::model::clock::{Clock, ManualClock};
    use crate::EventId;

    fn events(n: usize) -> Vec<Event> {
        (0..n as u64)
            .map(|i| {
                Event::new(
                    i * 10,
                    EventId(i as u16 % 0x17),
                    i as u32,
                    [i, u64::MAX - i],
                )
            })
            .collect()
    }

    #[test]
    fn default_size_fits_ethernet() {
        assert_eq!(records_per_datagram(DEFAULT_MAX_DATAGRAM_LEN), 44);
        assert_eq!(HEADER_LEN + 44 * RECORD_LEN, 1448);
        const { assert!(HEADER_LEN + 45 * RECORD_LEN > DEFAULT_MAX_DATAGRAM_LEN) };
        assert_eq!(records_per_datagram(0), 1);
        assert_eq!(records_per_datagram(usize::MAX), 2045);
    }

    #[test]
    fn events_round_trip_and_exact_header_bytes() {
        let evs = events(50);
        let mut buf = [0u8; DEFAULT_MAX_DATAGRAM_LEN];
        let (len, n) = encode_events(&mut buf, 0x0102_0304, 9, 77, 0x1_0000_0005, &evs).unwrap();
        assert_eq!((len, n), (1448, 44));
        assert_eq!(
            &buf[..40],
            &[
                b'Q', b'T', b'R', b'U', 0, 1, 1, 0, 1, 2, 3, 4, 0, 44, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                9, 0, 0, 0, 0, 0, 0, 0, 77, 0, 0, 0, 1, 0, 0, 0, 5
            ]
        );
        let v = DatagramView::new_checked(&buf[..len]).unwrap();
        assert_eq!(v.events().collect::<Vec<_>>(), evs[..44]);
        assert_eq!(v.header().dropped, 77);
        assert_eq!(v.header().first_event, 0x1_0000_0005);
        assert!(v.fragment().is_none());
    }

    #[test]
    fn bad_datagrams_are_typed_errors() {
        let mut buf = [0u8; 128];
        let (len, _) = encode_events(&mut buf, 1, 2, 3, 4, &events(2)).unwrap();
        let good = buf[..len].to_vec();
        assert!(DatagramView::new_checked(&good[..]).is_ok());
        // Every truncation is an error, never a panic.
        for cut in 0..len {
            let e = DatagramView::new_checked(&good[..cut]).unwrap_err();
            assert!(e.is_truncated(), "cut {cut}: {e}");
        }
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(
            DatagramView::new_checked(&long[..]),
            Err(WireError::Invalid { offset: 104, .. })
        ));
        let mut magic = good.clone();
        magic[0] = b'X';
        assert_eq!(
            DatagramView::new_checked(&magic[..]).unwrap_err(),
            WireError::BadMagic { what: "datagram" }
        );
        let mut version = good.clone();
        version[5] = 5;
        assert!(matches!(
            DatagramView::new_checked(&version[..]),
            Err(WireError::UnsupportedVersion { version: 5, .. })
        ));
        let mut kind = good.clone();
        kind[6] = 4;
        assert!(matches!(
            DatagramView::new_checked(&kind[..]),
            Err(WireError::Invalid { offset: 6, .. })
        ));
        let mut count = good.clone();
        count[13] = 3;
        assert!(DatagramView::new_checked(&count[..])
            .unwrap_err()
            .is_truncated());
        // Unknown flags and the reserved field are ignored.
        let mut flags = good.clone();
        flags[7] = 0xff;
        flags[14] = 0xff;
        let v = DatagramView::new_checked(&flags[..]).unwrap();
        assert_eq!(v.flags(), 0xff);
        assert_eq!(v.events().count(), 2);
    }

    #[test]
    fn catalog_fragments_reassemble_into_the_header() {
        let mut catalog = Catalog::builtin();
        catalog
            .define(ClassSpec::new("net", "network").event("rx", "received", &["len"]))
            .unwrap();
        let header = TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)));
        let bytes = header.to_bytes();
        let mut buf = [0u8; 256];
        let mut asm = CatalogAssembler::new();
        let mut offset = 0;
        let mut seq = 0;
        let mut result = None;
        while offset < bytes.len() {
            let (len, n) = encode_catalog_fragment(&mut buf, 5, seq, 0, 9, &bytes, offset).unwrap();
            assert_eq!(n, (bytes.len() - offset).min(256 - 48));
            assert_eq!(len, 48 + n);
            let v = DatagramView::new_checked(&buf[..len]).unwrap();
            assert_eq!(v.kind(), DatagramKind::Catalog);
            assert_eq!(v.record_count(), 0);
            assert_eq!(v.header().first_event, 9);
            assert!(result.is_none());
            result = asm.push(&v.fragment().unwrap()).unwrap();
            offset += n;
            seq += 1;
        }
        assert_eq!(result, Some(header));
    }

    #[test]
    fn close_datagram_exact_bytes_and_checks() {
        let mut buf = [0u8; 64];
        let counts = CloseCounts {
            logged: 0x0107,
            unsent: 3,
        };
        let len = encode_close(&mut buf, 9, 5, 4, 0x0100, counts).unwrap();
        assert_eq!(len, 56);
        assert_eq!(
            &buf[..56],
            &[
                b'Q', b'T', b'R', b'U', 0, 1, 3, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5,
                0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 7, 0, 0, 0, 0,
                0, 0, 0, 3
            ]
        );
        let v = DatagramView::new_checked(&buf[..56]).unwrap();
        assert_eq!(v.close(), Some(counts));
        assert_eq!((v.record_count(), v.events().count()), (0, 0));
        assert!(v.fragment().is_none());
        for cut in 0..56 {
            assert!(DatagramView::new_checked(&buf[..cut])
                .unwrap_err()
                .is_truncated());
        }
        assert!(matches!(
            DatagramView::new_checked(&buf[..57]),
            Err(WireError::Invalid { offset: 56, .. })
        ));
        let mut count = buf;
        count[13] = 1;
        assert!(matches!(
            DatagramView::new_checked(&count[..56]),
            Err(WireError::Invalid { offset: 12, .. })
        ));
        assert!(encode_close(&mut [0u8; 55], 1, 1, 1, 1, counts)
            .unwrap_err()
            .is_truncated());
    }

    #[test]
    fn fragment_outside_the_catalog_is_an_error_in_one_range_notation() {
        let bytes = [7u8; 100];
        let mut buf = [0u8; 256];
        let (len, n) = encode_catalog_fragment(&mut buf, 5, 0, 0, 0, &bytes, 90).unwrap();
        assert_eq!((len, n), (58, 10));
        // Claim a 95-byte catalog: bytes 90 to 99 stick out.
        buf[field::FRAGMENT_TOTAL..field::FRAGMENT_OFFSET].copy_from_slice(&95u32.to_be_bytes());
        let e = DatagramView::new_checked(&buf[..len]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "corrupt at byte 44: catalog fragment: bytes 90 to 99 do not lie within the 95-byte catalog"
        );
        // A fragment that carries nothing.
        let (len, _) = encode_catalog_fragment(&mut buf, 5, 0, 0, 0, &bytes, 0).unwrap();
        buf[12..14].copy_from_slice(&0u16.to_be_bytes());
        let e = DatagramView::new_checked(&buf[..HEADER_LEN + FRAGMENT_PREFIX_LEN]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "corrupt at byte 44: catalog fragment: the fragment is empty"
        );
        assert!(len > HEADER_LEN + FRAGMENT_PREFIX_LEN);
    }

    #[test]
    fn out_of_order_fragments_are_ignored() {
        let mut asm = CatalogAssembler::new();
        let f = CatalogFragment {
            total_len: 100,
            offset: 50,
            bytes: &[0; 10],
        };
        assert_eq!(asm.push(&f), Ok(None));
        let bad = CatalogFragment {
            total_len: 4,
            offset: 0,
            bytes: b"QTRC",
        };
        // Complete but not a header: an error, and the assembler resets.
        assert!(asm.push(&bad).is_err());
    }
}
