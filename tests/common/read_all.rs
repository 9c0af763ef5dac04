//! Reading a whole trace file in a test (each uses this file as
//! `common::…`).

use std::path::Path;

use qtrace::reader::{Completeness, TraceReader};
use qtrace::wire::TraceHeader;
use qtrace::Event;

/// Every record of a trace file (all must read) and what its end says.
pub fn read_all(path: &Path) -> (TraceHeader, Vec<Event>, Completeness) {
    let mut reader = TraceReader::open(path).unwrap();
    let header = reader.header().clone();
    let events = reader.by_ref().map(|e| e.unwrap()).collect();
    (header, events, reader.completeness().unwrap())
}
