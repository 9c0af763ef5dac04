//! A sender's trace header reassembled from its catalog datagrams
//! ([`CatalogAssembler`]), in bounded memory.

#![forbid(unsafe_code)]

use super::*;

/// Reassembles a sender's trace header from catalog datagrams sent in order
/// (offset 0, then each next offset). A fragment that does not continue the
/// current one restarts at offset 0 or is ignored, so memory stays at most
/// 4 MiB (the largest header) per sender.
#[derive(Debug, Default)]
pub struct CatalogAssembler {
    buf: Vec<u8>,
    total: usize,
}

impl CatalogAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        CatalogAssembler::default()
    }

    /// Adds a fragment. Returns the decoded header once the last fragment is
    /// in, `Ok(None)` while more are needed (or when the fragment does not
    /// continue the current header and was dropped), and an error when the
    /// completed bytes are not a valid header.
    pub fn push(
        &mut self,
        fragment: &CatalogFragment<'_>,
    ) -> Result<Option<TraceHeader>, WireError> {
        let total = fragment.total_len as usize;
        let offset = fragment.offset as usize;
        if total > MAX_HEADER_LEN || offset + fragment.bytes.len() > total {
            return Ok(None);
        }
        if offset == 0 {
            self.buf.clear();
            self.total = total;
        } else if total != self.total || offset != self.buf.len() {
            return Ok(None);
        }
        self.buf.extend_from_slice(fragment.bytes);
        if self.buf.len() < self.total {
            return Ok(None);
        }
        let result = TraceHeader::decode(&self.buf).map(|(h, _)| h);
        self.buf = Vec::new();
        self.total = 0;
        result.map(Some)
    }
}
