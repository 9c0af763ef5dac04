//! FORMAT.md 7.2: a store's data pages hold at most 65,536 rows, whatever
//! the datagrams' sizes. The receiver hands a store one datagram's records
//! at a time and ticks after each; full datagrams of 2,045 records do not
//! divide 65,536, so a store that checked its batches only at ticks wrote
//! pages of up to 65,536 + 2,044 rows. Read back with the `parquet` crate's
//! page reader (not qtrace's code).

use std::fs::File;

use parquet::file::reader::{FileReader, SerializedFileReader};
use qtrace::classes::user;
use qtrace::classes::Catalog;
use qtrace::clock::{Clock, ManualClock};
use qtrace::receiver::{ReceiverSummary, StreamId, StreamSink};
use qtrace::wire::TraceHeader;
use qtrace::Event;
use qtrace_store::{Store, StoreConfig};

/// Records a full 65,507-byte datagram carries (FORMAT.md 2.1).
const PER_DATAGRAM: u64 = 2_045;
const DATAGRAMS: u64 = 50;

#[test]
fn no_page_holds_more_than_65536_rows() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let mut store = Store::open(&root, StoreConfig::default()).unwrap();
    let header = TraceHeader::new(Catalog::builtin(), &Clock::manual(&ManualClock::new(0)));
    let id = StreamId {
        addr: "127.0.0.1:40000".parse().unwrap(),
        sender: 7,
        ordinal: 1,
    };
    let mut raw = Vec::new();
    for d in 0..DATAGRAMS {
        raw.clear();
        for k in 0..PER_DATAGRAM {
            let i = d * PER_DATAGRAM + k;
            let mut record = [0u8; 32];
            qtrace_core::encode::record::emit(&Event::new(i, user::USER0, 0, [i, 0]), &mut record);
            raw.extend_from_slice(&record);
        }
        store.stream(&id, Some(&header));
        store.records(&raw);
        assert!(store.tick());
    }
    let report = store.finish(&ReceiverSummary::default()).unwrap();
    let total = DATAGRAMS * PER_DATAGRAM;
    assert_eq!(report.events, total);

    let parts: Vec<_> = qtrace_store::scan(&root)
        .unwrap()
        .into_iter()
        .filter(|f| f.table.name() == "events" && !f.temp)
        .collect();
    assert!(!parts.is_empty());
    let (mut rows, mut pages, mut largest) = (0u64, 0u64, 0usize);
    for part in &parts {
        let reader = SerializedFileReader::new(File::open(&part.path).unwrap()).unwrap();
        for g in 0..reader.num_row_groups() {
            let group = reader.get_row_group(g).unwrap();
            rows += group.metadata().num_rows() as u64;
            for c in 0..group.num_columns() {
                for page in group.get_column_page_reader(c).unwrap() {
                    let page = page.unwrap();
                    if page.page_type() == parquet::basic::PageType::DICTIONARY_PAGE {
                        continue;
                    }
                    let n = page.num_values() as usize;
                    largest = largest.max(n);
                    pages += 1;
                    assert!(
                        n <= 65_536,
                        "{}: column {c} has a page of {n} rows",
                        part.path.display()
                    );
                }
            }
        }
    }
    assert_eq!(rows, total);
    // Every page full but the last of each column: 32 datagrams' worth.
    assert_eq!(largest, 32 * PER_DATAGRAM as usize);
    assert!(pages >= 14 * 2, "{pages} pages");
}
