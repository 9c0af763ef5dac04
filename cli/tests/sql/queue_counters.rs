//! `qtrace sql` over an online queue's file with its counters (FORMAT.md
//! 1.3.4, 7.5b): the `counters` view holds the three samples of each
//! counter; the `events` table counts them as rows, the `losses` table the
//! 24 lost once.

use std::process::{Command, Output};

use crate::common::queue_counters_file::counters_file;

fn sql(file: &std::path::Path, query: &str) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["sql", "--format", "csv"])
        .arg(file)
        .arg(query)
        // Conversions of .qtr inputs go into a cache of this call's own.
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("run qtrace")
}

#[test]
fn the_counters_view_holds_the_queue_counters_samples() {
    let dir = tempfile::tempdir().unwrap();
    let file = counters_file(dir.path());
    let out = sql(
        &file,
        "SELECT name, source, value_u64 FROM counters ORDER BY seq",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "name,source,value_u64\n\
         qtrace:queue.fill (queue 0),4294967295,16\n\
         qtrace:queue.lost (queue 0),4294967295,24\n\
         qtrace:queue.fill (queue 0),4294967295,0\n\
         qtrace:queue.lost (queue 0),4294967295,24\n\
         qtrace:queue.fill (queue 0),4294967295,0\n\
         qtrace:queue.lost (queue 0),4294967295,24\n"
    );
    let out = sql(
        &file,
        "SELECT (SELECT count(*) FROM events) AS events, (SELECT sum(count) FROM losses) AS lost",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "events,lost\n22,24\n"
    );
}

/// Two online queues' files read together (FORMAT.md 1.3.4, 7.5b): the
/// `counters` view names each queue's series apart and gives its `queue`.
#[test]
fn the_counters_view_keeps_the_queues_apart() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b] = crate::common::queue_counters_file::two_queues_files(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qtrace"))
        .args(["sql", "--format", "csv"])
        .arg(&a)
        .arg(&b)
        .arg(
            "SELECT name, queue, count(*) AS n, min(value_u64) AS lo, max(value_u64) AS hi, \
             list(value_u64 ORDER BY time_ns, run, seq) AS v FROM counters \
             GROUP BY name, queue ORDER BY name",
        )
        .env("XDG_CACHE_HOME", cache.path())
        .output()
        .expect("run qtrace");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "name,queue,n,lo,hi,v\n\
         qtrace:queue.fill (queue 0),0,3,0,16,\"[16, 0, 0]\"\n\
         qtrace:queue.fill (queue 1),1,3,0,5,\"[5, 0, 0]\"\n\
         qtrace:queue.lost (queue 0),0,3,24,24,\"[24, 24, 24]\"\n\
         qtrace:queue.lost (queue 1),1,3,0,0,\"[0, 0, 0]\"\n"
    );
}
