//! The reader decodes many records from one large read: whatever sizes the
//! source's reads come in, it yields the same events; it waits for no more
//! than one record (a socket's events come out as they arrive); and an I/O
//! error is reported after every whole record read before it, at the byte
//! where the failed read began.

use std::io::{self, Read};

use qtrace::classes::{system, tracer, user, Catalog};
use qtrace::clock::{Clock, ManualClock};
use qtrace::reader::{Completeness, ReadError, TraceReader};
use qtrace::wire::{QueueTotals, TraceHeader, TraceWriter};
use qtrace::Event;

/// `n` events and the file's bytes (header, records, close run).
fn trace(n: u64) -> (Vec<Event>, Vec<u8>) {
    trace_with(n, |_| false)
}

/// [`trace`] with a hoops record (3 lost) at every `i` where `hoops(i)`:
/// records that end the readers' tight loops.
fn trace_with(n: u64, hoops: impl Fn(u64) -> bool) -> (Vec<Event>, Vec<u8>) {
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)))
        .with_close_run(true);
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    let events: Vec<Event> = (0..n)
        .map(|i| {
            if hoops(i) {
                Event::new(i * 10, tracer::HOOPS, 0, [3, 0])
            } else if i % 3 == 0 {
                Event::new(i * 10, system::SCHEDULE, (i % 4) as u32, [i, 0])
            } else {
                Event::new(i * 10, user::USER0, (i % 4) as u32, [i, u64::MAX - i])
            }
        })
        .collect();
    for e in &events {
        w.write_event(e).unwrap();
    }
    (
        events,
        w.finish_with_close(n * 10, QueueTotals::default()).unwrap(),
    )
}

fn header_len(bytes: &[u8]) -> usize {
    TraceReader::new(bytes).unwrap().header_len() as usize
}

/// Hands out `data` at most `chunk` bytes a call; fails every call from byte
/// `fail_at` on; panics if asked past byte `stop_at` (a socket with nothing
/// more to give would block there).
struct Source {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
    fail_at: usize,
    stop_at: usize,
}

impl Source {
    fn new(data: Vec<u8>, chunk: usize) -> Self {
        Source {
            pos: 0,
            chunk,
            fail_at: usize::MAX,
            stop_at: usize::MAX,
            data,
        }
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        assert!(
            self.pos < self.stop_at,
            "read past byte {}: would block",
            self.stop_at
        );
        if self.pos >= self.fail_at {
            return Err(io::Error::other("disk on fire"));
        }
        let end = self
            .data
            .len()
            .min(self.pos.saturating_add(self.chunk))
            .min(self.fail_at)
            .min(self.stop_at);
        let n = (end - self.pos).min(buf.len());
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn every_read_size_yields_the_same_events_and_completeness() {
    // 10 000 records: several read-ahead blocks of 2048.
    let (events, bytes) = trace(10_000);
    for chunk in [1, 7, 31, 32, 33, 4096, 128 * 1024, 1 << 30] {
        let mut r = TraceReader::new(Source::new(bytes.clone(), chunk)).unwrap();
        let got: Vec<Event> = r.by_ref().map(|e| e.unwrap()).collect();
        assert!(
            got == events,
            "reads of {chunk} bytes: {} events",
            got.len()
        );
        assert!(matches!(r.completeness(), Some(Completeness::Complete(_))));
        assert_eq!(r.records_read(), 10_000);
        assert_eq!(
            r.offset(),
            bytes.len() as u64,
            "close run read, not yielded"
        );
    }
}

#[test]
fn a_record_is_yielded_as_soon_as_it_has_arrived() {
    let (events, bytes) = trace(3);
    let first_end = header_len(&bytes) + 32;
    let mut source = Source::new(bytes, usize::MAX);
    source.stop_at = first_end;
    let mut r = TraceReader::new(source).unwrap();
    // The first record is all there is so far: yielded without another read.
    assert_eq!(r.next().unwrap().unwrap(), events[0]);
    assert_eq!(r.offset(), first_end as u64);
}

#[test]
fn an_io_error_comes_after_every_whole_record_before_it() {
    let (events, bytes) = trace(5000);
    let h = header_len(&bytes);
    // Fail in the middle of record 4500 (byte 10 of it), and right at a record.
    for (fail_at, whole) in [(h + 4500 * 32 + 10, 4500), (h + 4200 * 32, 4200)] {
        for chunk in [7, 4096, usize::MAX] {
            let mut source = Source::new(bytes.clone(), chunk);
            source.fail_at = fail_at;
            let mut r = TraceReader::new(source).unwrap();
            let got: Vec<Event> = r.by_ref().map_while(|e| e.ok()).collect();
            assert!(
                got == events[..whole],
                "fail at {fail_at}, reads of {chunk}: {}",
                got.len()
            );
            let mut source = Source::new(bytes.clone(), chunk);
            source.fail_at = fail_at;
            let err = TraceReader::new(source)
                .unwrap()
                .find_map(|e| e.err())
                .unwrap();
            match err {
                ReadError::Io { offset, .. } => assert_eq!(offset, fail_at as u64),
                other => panic!("expected an I/O error, got {other}"),
            }
            assert!(r.next().is_none(), "nothing after the error");
            assert_eq!(
                r.completeness(),
                Some(Completeness::Cut {
                    records: whole as u64,
                    lost: 0
                })
            );
        }
    }
}

#[test]
fn a_cut_record_is_reported_at_its_offset_after_the_whole_ones() {
    let (events, bytes) = trace(5000);
    let h = header_len(&bytes);
    let cut = &bytes[..h + 4999 * 32 + 5];
    let mut r = TraceReader::new(cut).unwrap();
    let got: Vec<Event> = r.by_ref().map_while(|e| e.ok()).collect();
    assert!(got == events[..4999], "{} events", got.len());
    let err = TraceReader::new(cut)
        .unwrap()
        .find_map(|e| e.err())
        .unwrap();
    assert_eq!(err.offset(), (h + 4999 * 32) as u64);
    assert!(err.to_string().contains("record"), "{err}");
}

/// Reads 10,000 records whole, cut inside a record and failing mid-file,
/// in reads of 7 bytes, 4 KiB and all, with `take` first (it appends what a
/// fast path hands over and says whether it handed any) and `next` when
/// `take` hands nothing: the same events, errors, counts and offsets as
/// `next` alone.
fn gives_what_next_alone_gives(
    what: &str,
    mut take: impl FnMut(&mut TraceReader<Source>, &mut Vec<Result<Event, String>>) -> bool,
) {
    // Hoops records at varied places in the runs and in their 128-event
    // stages (the 32-byte reader's, `STAGE`): first, last, inside.
    let (events, bytes) = trace_with(10_000, |i| {
        matches!(i, 127 | 128 | 129 | 255 | 256) || i % 301 == 130
    });
    let h = header_len(&bytes);
    for (len, fail_at) in [
        (bytes.len(), usize::MAX),
        (h + 9000 * 32 + 3, usize::MAX),
        (bytes.len(), h + 5000 * 32 + 7),
    ] {
        for chunk in [7, 4096, usize::MAX] {
            let source = || {
                let mut s = Source::new(bytes[..len].to_vec(), chunk);
                s.fail_at = fail_at;
                s
            };
            let mut plain = TraceReader::new(source()).unwrap();
            let want: Vec<Result<Event, String>> = plain
                .by_ref()
                .map(|e| e.map_err(|e| e.to_string()))
                .collect();
            let mut fast = TraceReader::new(source()).unwrap();
            let mut got = Vec::new();
            loop {
                if take(&mut fast, &mut got) {
                    continue;
                }
                match fast.next() {
                    Some(e) => got.push(e.map_err(|e| e.to_string())),
                    None => break,
                }
            }
            assert!(
                got == want,
                "{what}: len {len}, fail at {fail_at}, reads of {chunk}"
            );
            assert_eq!(fast.completeness(), plain.completeness());
            assert_eq!(
                (fast.records_read(), fast.lost_read(), fast.offset()),
                (plain.records_read(), plain.lost_read(), plain.offset())
            );
            assert!(want.len() > 5000 && want.len() <= events.len() + 1);
        }
    }
}

#[test]
fn read_buffered_then_next_gives_what_next_alone_gives() {
    for limit in [1, 3, 1000, usize::MAX] {
        let mut batch = Vec::new();
        gives_what_next_alone_gives(&format!("runs of {limit}"), |r, got| {
            let n = r.read_buffered(&mut batch, limit);
            assert!(n <= limit && n == batch.len());
            got.extend(batch.drain(..).map(Ok));
            n > 0
        });
    }
}

#[test]
fn next_buffered_then_next_gives_what_next_alone_gives() {
    gives_what_next_alone_gives("next_buffered", |r, got| {
        r.next_buffered().map(|e| got.push(Ok(e))).is_some()
    });
}
