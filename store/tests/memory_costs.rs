//! The heap a parked sender takes in the receiver and a sender stream in
//! the store (RELIABILITY.md, "Receiver memory", the terms that scale with what the
//! senders send), measured with a counting allocator: 400 of them held at
//! once, with sender headers of 1.3 to 17 KiB (the built-in classes and
//! 0 to 256 events of the sender's own). Each takes at most the
//! documented bytes: a fixed part and 2 (receiver) or 3 (store) bytes per
//! header byte; a store stream also its name keys of the event ids it
//! used: 8 bytes an id below 0x100 (up to the largest), 2,048 a block of
//! 256 ids above it used, 8 a block up to the largest. The fixed-size parts
//! (`size_of`) are pinned by unit tests of each crate. And an open part
//! set (its rows before they are written, its Parquet writers) peaks
//! below the documented bytes while 1.2 M events pass.

mod common;
use common::datagrams;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use std::net::SocketAddr;

use qtrace::classes::{user, Catalog, ClassSpec};
use qtrace::clock::{Clock, ManualClock};
use qtrace::receiver::{ReceiverConfig, ReceiverCore, StreamId, StreamSink};
use qtrace::wire::TraceHeader;
use qtrace::Event;
use qtrace_store::{Store, StoreConfig};

/// Bytes allocated and not yet freed, by the whole test binary.
static LIVE: AtomicIsize = AtomicIsize::new(0);
/// The most `LIVE` was since [`reset_peak`].
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn add(n: isize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

/// Waits until no thread allocates or frees (the encoder threads of a
/// store dropped before end in the background): 100 ms without a change,
/// 10 s at most.
fn settle() {
    let mut last = LIVE.load(Ordering::Relaxed);
    let mut still = 0;
    for _ in 0..1_000 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = LIVE.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        if still == 10 {
            return;
        }
        last = now;
    }
}

fn reset_peak() -> isize {
    settle();
    let now = LIVE.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

struct Counting;

// SAFETY: every call is System's, with the caller's arguments; the counter
// is only added to.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A store stream (its state and heap, its share of the store's tables):
/// at most this many bytes, plus [`STORE_PER_HEADER_BYTE`] per byte of its
/// sender's header, plus its name keys (8 per event id below 0x100 up to
/// the largest it used; above, [`BLOCK`] per block of 256 ids it used and 8
/// per block up to the largest).
/// Measured (this test): 5,989 bytes with a 1,328-byte header, 52,302
/// with 17,128.
const STORE_STREAM: isize = 3 << 10;
const STORE_PER_HEADER_BYTE: isize = 3;
/// The name keys of 256 event ids from 0x100 up.
const BLOCK: isize = 2_048;
/// A parked sender in the receiver (its state, its header decoded): at
/// most this, plus [`PARKED_PER_HEADER_BYTE`] per header byte. Measured:
/// 5,579 bytes with a 1,328-byte header, 69,812 with 17,128.
const PARKED: isize = 2 << 10;
const PARKED_PER_HEADER_BYTE: isize = 5;

const N: u64 = 400;

/// The counter is the whole binary's: one measurement at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Headers of the built-in classes and `n` events of the sender's own
/// (40-byte descriptions, two argument names).
fn header(n: usize) -> TraceHeader {
    let mut catalog = Catalog::builtin();
    if n > 0 {
        let mut app = ClassSpec::new("app", "the application's own events");
        for e in 0..n {
            app = app.event(format!("step{e}"), "x".repeat(40), &["job", "arg"]);
        }
        catalog.define(app).unwrap();
    }
    TraceHeader::new(catalog, &Clock::manual(&ManualClock::new(0)))
}

/// The live bytes per stream of N store streams held at once, each of
/// `header` and 3 events of id `id`.
fn store_stream(id: qtrace::EventId, header: &TraceHeader) -> isize {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("store"), StoreConfig::default()).unwrap();
    let add = |store: &mut Store, k: u64| {
        let sid = StreamId {
            addr: "127.0.0.1:40000".parse().unwrap(),
            sender: k as u32,
            ordinal: k + 1,
        };
        store.stream(&sid, Some(header));
        for i in 0..3 {
            store.record(&Event::new(1_000 + i, id, 0, [k, i]));
        }
        assert!(store.tick());
    };
    // One stream first: the part set and its writers are made then, not
    // counted per stream.
    add(&mut store, 0);
    let before = reset_peak();
    for k in 1..=N {
        add(&mut store, k);
    }
    let after = LIVE.load(Ordering::Relaxed);
    assert_eq!(store.streams_held() as u64, N + 1);
    drop(store);
    settle();
    (after - before) / N as isize
}

/// The live bytes per parked sender of a receiver with one slot: N + 1
/// senders send their header and one events datagram each, in turn, so
/// that N are parked.
fn parked_sender(header: &TraceHeader) -> isize {
    let config = ReceiverConfig {
        max_senders: 1,
        idle_datagrams: 0,
        ..ReceiverConfig::default()
    };
    let mut core = ReceiverCore::new(config);
    let bytes = header.to_bytes();
    let from: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let add = |core: &mut ReceiverCore, k: u64| {
        let id = 1 + k as u32;
        let catalog = datagrams::catalog(id, &bytes);
        for d in &catalog {
            core.handle(from, d, &mut |_| {});
        }
        let events = datagrams::events(id, catalog.len() as u64, 0, 3, k);
        core.handle(from, &events, &mut |_| {});
    };
    add(&mut core, 0);
    // The second one parks the first: the parked table is made then.
    add(&mut core, 1);
    let before = reset_peak();
    for k in 2..N + 2 {
        add(&mut core, k);
    }
    let after = LIVE.load(Ordering::Relaxed);
    let summary = core.summary();
    assert_eq!(summary.senders.len() as u64, N + 2);
    assert_eq!(summary.events(), 3 * (N + 2));
    (after - before) / N as isize
}

#[test]
fn store_streams_and_parked_senders_take_at_most_the_documented_heap() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    settle();
    for n in [0, 8, 64, 256] {
        let header = header(n);
        let len = header.to_bytes().len() as isize;
        let store = store_stream(user::USER0, &header);
        let parked = parked_sender(&header);
        eprintln!("a {len}-byte header: a store stream {store} bytes, a parked sender {parked}");
        assert!(
            store > 0 && store <= STORE_STREAM + STORE_PER_HEADER_BYTE * len,
            "{n}: {store}"
        );
        assert!(
            parked > 0 && parked <= PARKED + PARKED_PER_HEADER_BYTE * len,
            "{n}: {parked}"
        );
    }
}

#[test]
fn a_store_streams_name_keys_grow_with_the_ids_it_uses() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    settle();
    let header = datagrams::header();
    let len = header.to_bytes().len() as isize;
    let low = store_stream(user::USER0, &header);
    let high = store_stream(qtrace::EventId(0xffff), &header);
    eprintln!("a {len}-byte header: {low} bytes a store stream (user0), {high} (event id 0xffff)");
    // Event id 0xffff: its block and 255 block places, not 8 bytes for
    // every id up to it (524 KiB).
    assert!(high > low, "{high} {low}");
    assert!(high - low <= BLOCK + 8 * 255, "{high} {low}");
    assert!(
        high <= STORE_STREAM + STORE_PER_HEADER_BYTE * len + BLOCK + 8 * 255,
        "{high}"
    );
}

/// An open part set of one partition, with the set closing before it
/// (its encoder thread): at most this many bytes at the default roll
/// (64 MiB or 60 s). Measured (this test, one stream's 1.2 M events, past
/// one row group): 37.5 and 41.2 MB.
const PART_SET: isize = 64 << 20;

#[test]
fn an_open_part_set_takes_at_most_the_documented_bytes() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    settle();
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        roll_bytes: Some(StoreConfig::DEFAULT_ROLL_BYTES),
        roll_age: Some(StoreConfig::DEFAULT_ROLL_AGE),
        ..StoreConfig::default()
    };
    let mut store = Store::open(&dir.path().join("store"), config).unwrap();
    let header = datagrams::header();
    let sid = StreamId {
        addr: "127.0.0.1:40000".parse().unwrap(),
        sender: 1,
        ordinal: 1,
    };
    store.stream(&sid, Some(&header));
    store.record(&Event::new(0, user::USER0, 0, [0, 0]));
    assert!(store.tick());
    let before = reset_peak();
    // Arguments that do not compress away (a linear congruential
    // sequence), one event a microsecond.
    let mut x = 1u64;
    for i in 0..1_200_000u64 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        store.record(&Event::new(1_000 + i * 1_000, user::USER0, 0, [x >> 20, i]));
        if i % 100 == 0 {
            assert!(store.tick());
        }
    }
    let peak = PEAK.load(Ordering::Relaxed) - before;
    eprintln!("an open part set: peak {peak} bytes over 1,200,000 events");
    assert!(peak > 0 && peak <= PART_SET, "{peak}");
}
