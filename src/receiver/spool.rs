//! The sink that spools records into the live trace file.

use super::file::LiveFile;
use super::sink::Sink;
use crate::model::event::Event;
use crate::wire::record::{self, RECORD_LEN};
use crate::wire::TraceHeader;

/// Records written to the live trace file.
pub(super) struct FileSink {
    pub(super) file: LiveFile,
    pub(super) header_gen: u64,
}

impl Sink for FileSink {
    fn event(&mut self, e: &Event) {
        let mut rec = [0u8; RECORD_LEN];
        record::emit(e, &mut rec);
        self.file.push(&rec);
    }
    fn records(&mut self, raw: &[u8]) {
        self.file.push(raw);
    }
    fn tick(&mut self, header_gen: u64, header: &dyn Fn() -> TraceHeader) -> bool {
        if header_gen != self.header_gen {
            self.header_gen = header_gen;
            self.file.set_header(&header());
        }
        self.file.tick();
        self.file.failure().is_none()
    }
}
