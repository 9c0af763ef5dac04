use super::*;
use arrow_array::cast::AsArray;
use arrow_array::Array;

/// A segment gives back the keys and queue it was made of, at their
/// extremes too; any one field differing makes another segment.
#[test]
fn a_segment_holds_its_keys_and_queue() {
    let keys = [
        RunKeys {
            run: 0,
            host: 0,
            sender: None,
        },
        RunKeys {
            run: i32::MAX,
            host: 7,
            sender: Some(0),
        },
        RunKeys {
            run: 3,
            host: i32::MAX,
            sender: Some(u32::MAX),
        },
    ];
    let queues = [None, Some(0), Some(u16::MAX)];
    let mut seen = Vec::new();
    for k in keys {
        for q in queues {
            let s = Segment::of(&k, q);
            assert_eq!(s.keys(), (k, q));
            assert!(!seen.contains(&s));
            seen.push(s);
        }
    }
}

/// Rows of two runs (one with a sender and a queue, one without), a
/// null class and event among them: each column holds each row's value
/// in order, the nulls where they were, across the runs' segments and
/// across two batches taken from the same columns.
/// The encoder's buffers come back after a batch (`Scratch`) and the
/// rows' buffer too (`Spare`); batches made in reused buffers are the
/// same columns as in fresh ones.
#[test]
fn reused_buffers_make_the_same_columns() {
    let mut d = Interner::default();
    let k = RunKeys {
        run: d.key("a.qtr"),
        host: d.key("h"),
        sender: Some(1),
    };
    let name = d.key("n");
    let fill = |cols: &mut EventCols, from: u64| {
        for i in from..from + 300 {
            let at = At {
                seq: i,
                time_ns: i as i64 * 7,
                aligned_ns: i as i64 * 7 + 1,
            };
            let row = EventRow {
                source: i as u32,
                event_id: 2,
                class: Some(name),
                event: (i % 3 != 0).then_some(name),
                args: [i, i & 0xff],
                flags: i as u16,
                queue: Some((i / 100) as u16),
            };
            cols.push(&k, &at, &row);
        }
    };
    let mut scratch = Scratch::default();
    let mut cols = EventCols::default();
    fill(&mut cols, 0);
    let (first, _, _, spare) = cols.take(&d, None).keyed(&mut scratch);
    let rows_buffer = spare.0.as_ptr();
    scratch.give_back(first);
    assert!(scratch.seq.capacity() >= 300 && scratch.queue.capacity() >= 300);
    let seq_buffer = scratch.seq.as_ptr();
    fill(&mut cols, 1000);
    let taken = cols.take(&d, Some(spare));
    fill(&mut cols, 0);
    assert_eq!(cols.rows.as_ptr(), rows_buffer);
    let (reused, ..) = taken.keyed(&mut scratch);
    let (fresh, ..) = {
        let mut again = EventCols::default();
        fill(&mut again, 1000);
        again.take(&d, None).keyed(&mut Scratch::default())
    };
    assert_eq!(reused.len(), fresh.len());
    for (r, f) in reused.iter().zip(&fresh) {
        assert_eq!(r.to_data(), f.to_data());
    }
    assert_eq!(reused[3].to_data().buffers()[0].as_ptr(), seq_buffer.cast());
}

#[test]
fn events_rows_become_columns_in_order_with_their_runs_and_nulls() {
    let mut d = Interner::default();
    let a = RunKeys {
        run: d.key("a.qtr"),
        host: d.key("h1"),
        sender: Some(7),
    };
    let b = RunKeys {
        run: d.key("b.qtr"),
        host: d.key("h2"),
        sender: None,
    };
    let name = d.key("schedule");
    let mut cols = EventCols::default();
    let rows: Vec<(RunKeys, Option<u16>, Option<i32>)> = vec![
        (a, Some(3), Some(name)),
        (a, Some(3), None),
        (b, None, Some(name)),
        (a, Some(4), Some(name)),
        (a, Some(4), Some(name)),
    ];
    for round in 0..2u64 {
        for (i, (k, queue, class)) in rows.iter().enumerate() {
            let i = i as u64 + 10 * round;
            let at = At {
                seq: i,
                time_ns: -(i as i64),
                aligned_ns: i as i64 * 3,
            };
            let row = EventRow {
                source: i as u32 + 100,
                event_id: i as u16 + 1,
                class: *class,
                event: class.map(|_| d.key("x")).or(Some(name)).filter(|_| i != 3),
                args: [i, u64::MAX - i],
                flags: 0x8000 | i as u16,
                queue: *queue,
            };
            cols.push(k, &at, &row);
        }
        assert_eq!(cols.len(), 5);
        let batch = cols.batch(&d).unwrap();
        assert_eq!(cols.len(), 0);
        let col = |n: &str| batch.column_by_name(n).unwrap().clone();
        let strings = |n: &str| -> Vec<Option<String>> {
            let c = col(n);
            let dict = c.as_dictionary::<Int32Type>();
            let values = dict.values().as_string::<i32>();
            dict.keys()
                .iter()
                .map(|k| k.map(|k| values.value(k as usize).to_string()))
                .collect()
        };
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            strings("run"),
            [s("a.qtr"), s("a.qtr"), s("b.qtr"), s("a.qtr"), s("a.qtr")]
        );
        assert_eq!(
            strings("host"),
            [s("h1"), s("h1"), s("h2"), s("h1"), s("h1")]
        );
        let want_event: Vec<_> = (0..5u64)
            .map(|j| {
                let i = j + 10 * round;
                (i != 3).then(|| {
                    if rows[j as usize].2.is_some() {
                        "x"
                    } else {
                        "schedule"
                    }
                })
            })
            .map(|v| v.map(str::to_string))
            .collect();
        assert_eq!(strings("event"), want_event, "round {round}");
        assert_eq!(
            strings("class"),
            [
                s("schedule"),
                None,
                s("schedule"),
                s("schedule"),
                s("schedule")
            ]
        );
        let sender: Vec<Option<u32>> = col("sender").as_primitive::<UInt32Type>().iter().collect();
        assert_eq!(sender, [Some(7), Some(7), None, Some(7), Some(7)]);
        let queue: Vec<Option<u16>> = col("queue").as_primitive::<UInt16Type>().iter().collect();
        assert_eq!(queue, [Some(3), Some(3), None, Some(4), Some(4)]);
        let base = 10 * round;
        let seq: Vec<u64> = col("seq").as_primitive::<UInt64Type>().values().to_vec();
        assert_eq!(seq, (base..base + 5).collect::<Vec<_>>());
        let time: Vec<i64> = col("time_ns").as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(
            time,
            (base..base + 5).map(|i| -(i as i64)).collect::<Vec<_>>()
        );
        let aligned = col("aligned_ns");
        let aligned = aligned.as_primitive::<Int64Type>().values();
        assert_eq!(aligned[4], (base as i64 + 4) * 3);
        let arg1 = col("arg1");
        assert_eq!(
            arg1.as_primitive::<UInt64Type>().value(2),
            u64::MAX - base - 2
        );
        let flags = col("flags");
        assert_eq!(
            flags.as_primitive::<UInt16Type>().value(1),
            0x8000 | (base as u16 + 1)
        );
        let source = col("source");
        assert_eq!(
            source.as_primitive::<UInt32Type>().value(0),
            base as u32 + 100
        );
        let ids = col("event_id");
        assert_eq!(ids.as_primitive::<UInt16Type>().value(4), base as u16 + 5);
        assert_eq!(col("arg0").null_count(), 0);
    }
}
