//! Datagrams the receiver rejected (`ReceiverSummary::rejected`), written
//! into the store when it finishes: one `losses` row per source address and
//! reason (FORMAT.md 7.4, kinds `rejected_*`), so that a store says what
//! its receiver refused as its summary does.

use qtrace::classes::Catalog;
use qtrace::combine::Names;
use qtrace::receiver::RejectedSource;

use crate::partset::PartSet;
use crate::run::{kind, Run, RunInfo};

/// Writes `source`'s non-zero counts as losses rows of `set`: run
/// `ip:port/rejected/started_ms`, host its IP address, time `now_ns` (the
/// receiver's Unix time in ns), `count` the datagrams.
pub(crate) fn write(
    set: &mut PartSet,
    source: &RejectedSource,
    root: &std::path::Path,
    started_ms: u128,
    now_ns: u64,
) {
    let c = &source.counts;
    let rows = [
        (kind::REJECTED_UNKEYED, c.unkeyed),
        (kind::REJECTED_UNKNOWN_KEY, c.unknown_key),
        (kind::REJECTED_BAD_TAG, c.bad_tag),
        (kind::REJECTED_REPLAYED, c.replayed),
        (kind::REJECTED_OUTSIDE_WINDOW, c.outside_window),
        (kind::REJECTED_COUNTERS_BACKWARDS, c.counters_backwards),
        (kind::REJECTED_AFTER_CLOSE, c.after_close),
    ];
    let info = RunInfo {
        name: format!("{}/rejected/{started_ms}", source.addr),
        host: source.addr.ip().to_string(),
        sender: None,
        queue: None,
        path: root.display().to_string(),
    };
    let mut run = Run::new(info, Catalog::builtin(), Names::new());
    for (kind, n) in rows {
        if n > 0 {
            run.loss(set, now_ns, n, kind);
        }
    }
}
