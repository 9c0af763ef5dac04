//! Writing a ring as a complete standard trace file (FORMAT.md 1): header
//! with catalog, records, hoops records for the losses, close run.

use crate::encode::catalog::CatalogSource;
use crate::encode::close::{hoops, CloseRecord, QueueTotals, CLOSE_RUN_LEN};
use crate::encode::header::HeaderSpec;
use crate::encode::record::{self, RECORD_LEN};
use crate::ring::Ring;
use crate::Event;

/// Events moved out of the ring per critical section during a dump.
const CHUNK: usize = 16;

/// What a dump wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpSummary {
    /// Bytes fed to the sink.
    pub bytes: u64,
    /// Event records written (hoops records and the close run not counted).
    pub events: u64,
    /// Hoops records written.
    pub hoops: u64,
    /// Events lost, as the hoops records state.
    pub lost: u64,
}

/// Writes `ring` (queue handle `queue`) into `sink` as a complete trace
/// file: the header of `spec` with `catalog` (flag "closes" set, the queue's
/// handle and type name), then the ring's queued events, oldest first
/// (moved out of the ring, counted delivered): a hoops record for the
/// events the ring overwrote, stamped with the time of the oldest kept
/// event and placed before it, and one for the events it dropped after the
/// last kept one (stamped with that event's time); then the close run with
/// the ring's counters, stamped `clock()`. A hoops record with no kept event
/// to stand by is stamped `clock()` too. Slots reserved but not posted when
/// the dump reaches them (a logger the dump interrupted) are given up
/// ([`Ring::abandon_reserved`]): counted overwritten and stated by a hoops
/// record at their place, as the std circular queue states an event claimed
/// but never committed. FORMAT.md 1.4 and 1.5.
///
/// Events logged while the dump runs may be included or not; the counters
/// in the close run are read after the last event is taken, so they always
/// satisfy `accepted = delivered + overwritten + queued`, and every event
/// the ring accepted before the dump is in the file or in a hoops record.
///
/// ```
/// use qtrace_core::classes::system;
/// use qtrace_core::encode::header::HeaderSpec;
/// use qtrace_core::ring::{CircularRing, Ring};
/// use qtrace_core::{dump_ring, Event, StaticCatalog};
///
/// static RING: CircularRing<2> = CircularRing::new();
/// for t in 1..=3 {
///     RING.push(&Event::new(t, system::SCHEDULE, 0, [t, 0]));
/// }
/// let mut file = Vec::new();
/// let summary = dump_ring(&RING, 0, &StaticCatalog::BUILTIN, &HeaderSpec::default(),
///     || 10, &mut |b: &[u8]| file.extend_from_slice(b));
/// assert_eq!((summary.events, summary.hoops, summary.lost), (2, 1, 1));
/// assert_eq!(summary.bytes, file.len() as u64);
/// ```
pub fn dump_ring<C: CatalogSource + ?Sized>(
    ring: &dyn Ring,
    queue: u16,
    catalog: &C,
    spec: &HeaderSpec<'_>,
    clock: fn() -> u64,
    sink: &mut impl FnMut(&[u8]),
) -> DumpSummary {
    let mut summary = DumpSummary::default();
    let spec = HeaderSpec {
        closes: true,
        queue: Some((queue, ring.type_name())),
        ..*spec
    };
    let mut out = |bytes: &[u8]| {
        sink(bytes);
    };
    let mut header_bytes = 0u64;
    spec.emit(catalog, &mut |b: &[u8]| {
        header_bytes += b.len() as u64;
        out(b);
    });
    summary.bytes = header_bytes;
    let mut write = |e: &Event, summary: &mut DumpSummary| {
        let mut buf = [0u8; RECORD_LEN];
        record::emit(e, &mut buf);
        out(&buf);
        summary.bytes += RECORD_LEN as u64;
    };
    let mut last_time = None;
    let mut dropped = 0u64;
    let mut buf = [Event::ZERO; CHUNK];
    loop {
        let taken = ring.take(&mut buf);
        dropped += taken.dropped;
        if taken.overwritten > 0 {
            let time = if taken.events > 0 {
                buf[0].time
            } else {
                clock()
            };
            write(&hoops(time, taken.overwritten, queue), &mut summary);
            summary.hoops += 1;
            summary.lost = summary.lost.saturating_add(taken.overwritten);
        }
        for e in &buf[..taken.events] {
            write(e, &mut summary);
            summary.events += 1;
            last_time = Some(e.time);
        }
        if taken.events == 0 {
            // Slots reserved and never posted (a logger this dump
            // interrupted) would hold back everything behind them: give them
            // up, and the next take states them as overwritten.
            if ring.abandon_reserved() > 0 {
                continue;
            }
            break;
        }
    }
    if dropped > 0 {
        let time = last_time.unwrap_or_else(clock);
        write(&hoops(time, dropped, queue), &mut summary);
        summary.hoops += 1;
        summary.lost = summary.lost.saturating_add(dropped);
    }
    let close = CloseRecord::new(
        clock(),
        QueueTotals::from(ring.counters()),
        summary.events + summary.hoops,
        summary.lost,
    );
    let run: [Event; CLOSE_RUN_LEN] = close.to_records();
    for e in &run {
        write(e, &mut summary);
    }
    summary
}
