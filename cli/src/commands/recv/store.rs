//! `qtrace recv --store DIR`: the `--roll`/`--keep` amounts and the run
//! into a Parquet store (crate qtrace-store).

use std::time::Duration;

use qtrace::receiver::{Receiver, ReceiverSummary, RunLimit};
use qtrace_store::{Store, StoreConfig};

use super::{summary_json, RecvArgs, MAX_DURATION_S};
use crate::spine::Exit;

/// A `--roll`/`--keep` value: a size (`64MiB`, `1GB`, `500000` bytes) or a
/// time (`60s`, `10m`, `12h`, `7d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Amount {
    Bytes(u64),
    Time(Duration),
}

fn parse_amount(flag: &str, text: &str) -> Result<Amount, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        format!(
            "{flag} {text}: give a size (64MiB, 1GB, 500000 bytes) or a time (60s, 10m, 12h, 7d)"
        )
    };
    let n: f64 = num.parse().map_err(|_| bad())?;
    if !(n.is_finite() && n > 0.0) {
        return Err(bad());
    }
    let bytes = |m: f64| Ok(Amount::Bytes((n * m).min(u64::MAX as f64) as u64));
    let time = |s: f64| {
        let secs = n * s;
        if secs > MAX_DURATION_S {
            return Err(bad());
        }
        Ok(Amount::Time(Duration::from_secs_f64(secs)))
    };
    match unit.trim() {
        "" | "B" => bytes(1.0),
        "KB" | "kB" => bytes(1e3),
        "MB" => bytes(1e6),
        "GB" => bytes(1e9),
        "TB" => bytes(1e12),
        "KiB" => bytes(1024.0),
        "MiB" => bytes(1024.0 * 1024.0),
        "GiB" => bytes(1024.0 * 1024.0 * 1024.0),
        "TiB" => bytes(1024.0 * 1024.0 * 1024.0 * 1024.0),
        "s" => time(1.0),
        "m" | "min" => time(60.0),
        "h" => time(3600.0),
        "d" => time(86_400.0),
        _ => Err(bad()),
    }
}

/// The store's settings from `--roll` and `--keep`.
pub(super) fn store_config(args: &RecvArgs) -> Result<StoreConfig, String> {
    let mut c = StoreConfig::default();
    for r in &args.roll {
        match parse_amount("--roll", r)? {
            Amount::Bytes(b) => c.roll_bytes = Some(b),
            Amount::Time(t) => c.roll_age = Some(t),
        }
    }
    if args.roll.is_empty() {
        c.roll_bytes = Some(StoreConfig::DEFAULT_ROLL_BYTES);
        c.roll_age = Some(StoreConfig::DEFAULT_ROLL_AGE);
    }
    for k in &args.keep {
        match parse_amount("--keep", k)? {
            Amount::Bytes(b) => c.keep_bytes = Some(b),
            Amount::Time(t) => c.keep_age = Some(t),
        }
    }
    Ok(c)
}

/// Receives into the Parquet store `dir`.
pub(super) fn run_store(
    mut receiver: Receiver,
    mut store: Store,
    dir: &std::path::Path,
    limit: RunLimit,
    json: bool,
) -> Exit {
    let summary = match receiver.run_streams(limit, &mut store) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qtrace: {e}");
            if json {
                let error = e.to_string();
                let empty = ReceiverSummary::default();
                let o = summary_json("store", dir, Exit::Failed, Some(&error), &empty).finish();
                println!("{o}");
            }
            return Exit::Failed;
        }
    };
    if json {
        eprintln!("{summary}");
    } else {
        println!("{summary}");
    }
    match store.finish(&summary) {
        Ok(report) => {
            // The session file not written: a later receiver would accept
            // a replay of this run's keyed streams.
            let status = if summary.sessions_error.is_some() {
                Exit::Cut
            } else {
                Exit::Ok
            };
            if json {
                let o = summary_json("store", dir, status, None, &summary)
                    .u64("store_events", report.events)
                    .u64("store_lost", report.lost)
                    .u64("parts_closed", report.parts_closed)
                    .u64("bytes", report.bytes)
                    .u64("parts_deleted", report.deleted)
                    .str("store_error", None)
                    .finish();
                println!("{o}");
                return status;
            }
            println!(
                "store: {} events, {} lost, in {} part sets ({} bytes){}",
                report.events,
                report.lost,
                report.parts_closed,
                report.bytes,
                if report.deleted > 0 {
                    format!("; {} old part sets deleted (--keep)", report.deleted)
                } else {
                    String::new()
                }
            );
            if report.events > 0 || report.lost > 0 {
                println!(
                    "read it with: qtrace sql {} \"SELECT event, count(*) FROM events GROUP BY ALL\"",
                    dir.display()
                );
            }
            status
        }
        Err(e) => {
            eprintln!("qtrace: the store stopped on a write error: {e}");
            if json {
                let error = e.to_string();
                let o = summary_json("store", dir, Exit::Cut, None, &summary)
                    .str("store_error", Some(&error))
                    .finish();
                println!("{o}");
            }
            Exit::Cut
        }
    }
}
