//! Zstd compression of pages into one reused buffer: a page's bytes are then
//! copied out at their compressed size. Compressing into a fresh vector of
//! the bound's size (the input's, about) allocated and freed hundreds of
//! KiB a page, which glibc handed back to the kernel and faulted in again
//! (page faults and `madvise` were 4 % of a conversion's CPU, measured).

use bytes::Bytes;
use parquet::errors::ParquetError;

/// A zstd context and its output buffer.
pub(crate) struct Zstd {
    compressor: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
}

fn zstd_err(e: std::io::Error) -> ParquetError {
    ParquetError::General(format!("zstd: {e}"))
}

impl Zstd {
    /// A context at `level`.
    ///
    /// # Errors
    /// [`ParquetError`] when zstd cannot make it.
    pub(crate) fn new(level: i32) -> Result<Self, ParquetError> {
        Ok(Zstd {
            compressor: zstd::bulk::Compressor::new(level).map_err(zstd_err)?,
            out: Vec::new(),
        })
    }

    /// `page` compressed (one zstd frame).
    ///
    /// # Errors
    /// [`ParquetError`] when zstd fails.
    pub(crate) fn compress(&mut self, page: &[u8]) -> Result<Bytes, ParquetError> {
        self.out.clear();
        self.out
            .reserve(zstd::zstd_safe::compress_bound(page.len()));
        self.compressor
            .compress_to_buffer(page, &mut self.out)
            .map_err(zstd_err)?;
        Ok(Bytes::copy_from_slice(&self.out))
    }
}
