//! Integer columns (`UINT16`, `UINT32`, `UINT64`, `INT64`) written page by
//! page without the `parquet` crate's typed column writer: each batch is one
//! data page (format v1, zstd) of PLAIN values, or of DELTA_BINARY_PACKED
//! values for the columns the table's properties give that encoding
//! (`seq` and the times, whose deltas are small), encoded by [`delta`]. The
//! other required 64-bit columns (`arg0`, `arg1`) choose per page: DELTA_BINARY_PACKED
//! when that takes at most half the PLAIN bytes, else PLAIN (zstd of PLAIN
//! counters and addresses ran at 300-375 MB/s, a fifth of a conversion's
//! CPU; their deltas are a few bits each). The
//! crate's writer went through a generic encoder per value (its delta
//! encoder alone was 9 % of a conversion's CPU, measured); here a page is a
//! copy or one pass of subtractions and bit-packing. Statistics (min, max,
//! nulls) are kept per column chunk, compared as the logical type orders
//! (unsigned for the `UINT` columns), as the crate's writer keeps them.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, Type as Physical};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use parquet::file::properties::{EnabledStatistics, WriterPropertiesPtr};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::delta;
use crate::zstd_page::Zstd;

/// Whether `t` is a column type [`NumberChunk`] writes.
pub(crate) fn handles(t: &DataType) -> bool {
    matches!(
        t,
        DataType::UInt16 | DataType::UInt32 | DataType::UInt64 | DataType::Int64
    )
}

/// Min and max of a chunk's values, in the logical type's order: unsigned
/// columns as `u64`, `INT64` as `i64`.
#[derive(Clone, Copy, Debug)]
enum Range {
    None,
    Unsigned(u64, u64),
    Signed(i64, i64),
}

impl Range {
    fn unsigned(self, lo: u64, hi: u64) -> Range {
        match self {
            Range::Unsigned(a, b) => Range::Unsigned(a.min(lo), b.max(hi)),
            _ => Range::Unsigned(lo, hi),
        }
    }
    fn signed(self, lo: i64, hi: i64) -> Range {
        match self {
            Range::Signed(a, b) => Range::Signed(a.min(lo), b.max(hi)),
            _ => Range::Signed(lo, hi),
        }
    }
}

/// One column chunk of an integer column being written.
pub(crate) struct NumberChunk {
    descr: ColumnDescPtr,
    nullable: bool,
    delta: bool,
    /// PLAIN or DELTA_BINARY_PACKED, per page, whichever is smaller.
    adaptive: bool,
    /// A required 32-bit column dictionary-encoded (RLE_DICTIONARY pages);
    /// its pages PLAIN from the first that does not fit it on.
    dict: Option<Dict>,
    statistics: bool,
    codec: Compression,
    compressor: Zstd,
    /// Compressed data pages: bytes, uncompressed size, rows, encoding.
    pages: Vec<(Bytes, usize, u32, Encoding)>,
    rows: u64,
    nulls: u64,
    range: Range,
    /// The page being encoded (levels, then values).
    buf: Vec<u8>,
    levels: Vec<u32>,
}

fn err(what: &str) -> ParquetError {
    ParquetError::General(format!(
        "qtrace-store: {what} (a bug in qtrace-store, please report it)"
    ))
}

impl NumberChunk {
    /// A chunk of the column `descr`, encoded and compressed as `props` say
    /// for it (DELTA_BINARY_PACKED where set on a required column, else
    /// PLAIN; zstd at `level`).
    ///
    /// # Errors
    /// [`ParquetError`] when the zstd context cannot be made.
    pub(crate) fn new(
        descr: ColumnDescPtr,
        props: &WriterPropertiesPtr,
        level: i32,
    ) -> Result<Self, ParquetError> {
        let path = descr.path();
        let nullable = descr.max_def_level() > 0;
        // Delta encoding for the 64-bit columns only (the times and `seq`).
        let delta = !nullable
            && descr.physical_type() == Physical::INT64
            && props.encoding(path) == Some(Encoding::DELTA_BINARY_PACKED);
        let adaptive = !nullable && !delta && descr.physical_type() == Physical::INT64;
        let dict = (!nullable
            && descr.physical_type() == Physical::INT32
            && props.dictionary_enabled(path))
        .then(Dict::default);
        let statistics = props.statistics_enabled(path) != EnabledStatistics::None;
        let codec = props.compression(path);
        let compressor = Zstd::new(level)?;
        Ok(NumberChunk {
            descr,
            nullable,
            delta,
            adaptive,
            dict,
            statistics,
            codec,
            compressor,
            pages: Vec::new(),
            rows: 0,
            nulls: 0,
            range: Range::None,
            buf: Vec::new(),
            levels: Vec::new(),
        })
    }

    /// Encodes a batch's column as one data page.
    ///
    /// # Errors
    /// [`ParquetError`] when the array is not of the column's type, holds a
    /// null in a required column, or zstd fails.
    pub(crate) fn write(&mut self, array: &ArrayRef) -> Result<(), ParquetError> {
        let rows = array.len();
        if rows == 0 {
            return Ok(());
        }
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        if nulls.is_some() && !self.nullable {
            return Err(err("a null in a required column"));
        }
        self.buf.clear();
        if self.nullable {
            self.def_levels(nulls.as_ref(), rows);
        }
        let physical = self.descr.physical_type();
        let mut encoding = if self.delta {
            Encoding::DELTA_BINARY_PACKED
        } else {
            Encoding::PLAIN
        };
        match (physical, array.data_type()) {
            (Physical::INT32, DataType::UInt16) => {
                let v = array.as_primitive::<UInt16Type>().values();
                if self.keys(v) {
                    encoding = Encoding::RLE_DICTIONARY;
                } else {
                    self.unsigned(v, v.inner().as_slice(), nulls.as_ref(), 4);
                }
            }
            (Physical::INT32, DataType::UInt32) => {
                let v = array.as_primitive::<UInt32Type>().values();
                if self.keys(v) {
                    encoding = Encoding::RLE_DICTIONARY;
                } else {
                    self.unsigned(v, v.inner().as_slice(), nulls.as_ref(), 4);
                }
            }
            (Physical::INT64, DataType::UInt64) => {
                let v = array.as_primitive::<UInt64Type>().values();
                if self.delta {
                    let (lo, hi) = min_max(v);
                    self.range = self.range.unsigned(lo, hi);
                    // Parquet stores UINT64 as INT64: the same bits.
                    delta::encode(v.inner().typed_data::<i64>(), &mut self.buf);
                } else if self.adaptive {
                    let (lo, hi) = min_max(v);
                    self.range = self.range.unsigned(lo, hi);
                    encoding = self.smaller(v.inner().typed_data::<i64>());
                } else {
                    self.unsigned(v, v.inner().as_slice(), nulls.as_ref(), 8);
                }
            }
            (Physical::INT64, DataType::Int64) => {
                let v = array.as_primitive::<Int64Type>().values();
                if self.delta {
                    let (lo, hi) = min_max(v);
                    self.range = self.range.signed(lo, hi);
                    delta::encode(v, &mut self.buf);
                } else if self.adaptive {
                    let (lo, hi) = min_max(v);
                    self.range = self.range.signed(lo, hi);
                    encoding = self.smaller(v);
                } else {
                    self.signed(v, nulls.as_ref());
                }
            }
            (p, t) => return Err(err(&format!("an integer column of type {t} stored as {p}"))),
        }
        let page = self.compressor.compress(&self.buf)?;
        self.pages
            .push((page, self.buf.len(), rows as u32, encoding));
        self.rows += rows as u64;
        self.nulls += nulls.map_or(0, |n| n.null_count() as u64);
        Ok(())
    }

    /// A dictionary-encoded column's page of `values` (required: `buf`
    /// empty, no levels) as their keys, the bit width then the RLE /
    /// bit-packing hybrid, their min and max kept; false (nothing written)
    /// when the column is not, or no longer, dictionary-encoded, or a value
    /// does not fit its dictionary: a value of [`DICT_SPAN`] or more, or
    /// more than [`DICT_VALUES`] values in all. The dictionary then stops
    /// taking values: this page and the next are PLAIN (a column chunk
    /// may hold both, after its dictionary page).
    fn keys<T: Copy + Ord + Into<u32>>(&mut self, values: &[T]) -> bool {
        let Some(d) = self.dict.as_mut().filter(|d| d.open) else {
            return false;
        };
        let (lo, hi) = min_max(values);
        let (lo, hi) = (lo.into(), hi.into());
        if hi as usize >= DICT_SPAN {
            d.open = false;
            return false;
        }
        if d.remap.len() <= hi as usize {
            d.remap.resize(hi as usize + 1, 0);
        }
        let (remap, local) = (&mut d.remap, &mut d.local);
        let one = (lo == hi && values.len() >= 8).then(|| d_key(remap, local, lo));
        if one.is_none() {
            d.keys.clear();
            // Runs of one value (a source's burst, a repeated event) are
            // looked up once.
            let (mut last, mut key) = (u32::MAX, 0);
            d.keys.extend(values.iter().map(|&v| {
                let v: u32 = v.into();
                if v != last {
                    key = d_key(remap, local, v);
                    last = v;
                }
                key
            }));
        }
        if local.len() > DICT_VALUES {
            d.open = false;
            return false;
        }
        self.range = self.range.unsigned(u64::from(lo), u64::from(hi));
        let width = crate::names::key_width(local.len());
        self.buf.push(width);
        match one {
            Some(k) => crate::names::rle(k, values.len(), width, &mut self.buf),
            None => crate::names::hybrid(&d.keys, width, &mut self.buf),
        }
        true
    }

    /// A required column's page (`buf` empty: no levels) DELTA_BINARY_PACKED
    /// if that takes at most half the PLAIN bytes, else PLAIN; the encoding
    /// chosen.
    fn smaller(&mut self, values: &[i64]) -> Encoding {
        delta::encode(values, &mut self.buf);
        if self.buf.len() * 2 <= values.len() * 8 {
            return Encoding::DELTA_BINARY_PACKED;
        }
        self.buf.clear();
        self.buf.reserve(values.len() * 8);
        for v in values {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        Encoding::PLAIN
    }

    /// The definition levels of a nullable column's page: their byte length
    /// (4 bytes), then the RLE / bit-packing hybrid of width 1.
    fn def_levels(&mut self, nulls: Option<&NullBuffer>, rows: usize) {
        let start = self.buf.len();
        self.buf.extend([0; 4]);
        match nulls {
            // All valid: one RLE run of ones.
            None => {
                crate::names::varint((rows as u64) << 1, &mut self.buf);
                self.buf.push(1);
            }
            // All null (a conversion's `sender`): one RLE run of zeros.
            Some(n) if n.null_count() == rows => {
                crate::names::varint((rows as u64) << 1, &mut self.buf);
                self.buf.push(0);
            }
            Some(n) => {
                self.levels.clear();
                self.levels.extend(n.iter().map(u32::from));
                crate::names::hybrid(&self.levels, 1, &mut self.buf);
            }
        }
        let len = (self.buf.len() - start - 4) as u32;
        self.buf[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// PLAIN values of an unsigned column (`raw`: their bytes in memory),
    /// `width` bytes each (its physical type's), the valid ones only; their
    /// unsigned min and max kept.
    fn unsigned<T: Copy + Ord + Into<u64>>(
        &mut self,
        values: &[T],
        raw: &[u8],
        nulls: Option<&NullBuffer>,
        width: usize,
    ) {
        match nulls {
            None => {
                let (lo, hi) = min_max(values);
                self.range = self.range.unsigned(lo.into(), hi.into());
                if width == size_of::<T>() && cfg!(target_endian = "little") {
                    // The values as they lie: Parquet's PLAIN is little-endian.
                    self.buf.extend_from_slice(raw);
                } else {
                    // UINT16 widened to INT32: into room made at once (a
                    // push a value does not vectorize).
                    let start = self.buf.len();
                    self.buf.resize(start + values.len() * width, 0);
                    let room = self.buf[start..].chunks_exact_mut(width);
                    for (out, &v) in room.zip(values) {
                        let v: u64 = v.into();
                        out.copy_from_slice(&v.to_le_bytes()[..width]);
                    }
                }
            }
            Some(n) if n.null_count() == values.len() => {}
            Some(n) => {
                let mut range = self.range;
                for (&v, ok) in values.iter().zip(n.iter()) {
                    if ok {
                        let v: u64 = v.into();
                        range = range.unsigned(v, v);
                        self.buf.extend_from_slice(&v.to_le_bytes()[..width]);
                    }
                }
                self.range = range;
            }
        }
    }

    /// PLAIN values of an `INT64` column, the valid ones only; their min and
    /// max kept.
    fn signed(&mut self, values: &[i64], nulls: Option<&NullBuffer>) {
        let mut lo = i64::MAX;
        let mut hi = i64::MIN;
        let mut any = false;
        self.buf.reserve(values.len() * 8);
        for (i, &v) in values.iter().enumerate() {
            if nulls.is_some_and(|n| n.is_null(i)) {
                continue;
            }
            any = true;
            lo = lo.min(v);
            hi = hi.max(v);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        if any {
            self.range = self.range.signed(lo, hi);
        }
    }

    /// The chunk's compressed size so far.
    pub(crate) fn size(&self) -> usize {
        self.pages.iter().map(|p| p.0.len()).sum()
    }

    /// Writes the data pages; the chunk's bytes and what
    /// `SerializedRowGroupWriter::append_column` needs to place them.
    ///
    /// # Errors
    /// [`ParquetError`] when the metadata cannot be built.
    pub(crate) fn close(mut self) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
        // Pages per encoding, in the order of first use.
        let mut used: Vec<PageEncodingStats> = Vec::new();
        for page in &self.pages {
            match used.iter_mut().find(|s| s.encoding == page.3) {
                Some(s) => s.count += 1,
                None => used.push(PageEncodingStats {
                    page_type: PageType::DATA_PAGE,
                    encoding: page.3,
                    count: 1,
                }),
            }
        }
        let keyed = used.iter().any(|s| s.encoding == Encoding::RLE_DICTIONARY);
        if keyed {
            used.insert(
                0,
                PageEncodingStats {
                    page_type: PageType::DICTIONARY_PAGE,
                    encoding: Encoding::PLAIN,
                    count: 1,
                },
            );
        }
        let mut sink = TrackedWrite::new(Vec::new());
        let mut index = OffsetIndexBuilder::new();
        let mut uncompressed = 0u64;
        let mut data_offset = None;
        {
            let mut pages = SerializedPageWriter::new(&mut sink);
            if let Some(d) = self.dict.as_ref().filter(|_| keyed) {
                // The values in key order, PLAIN (INT32: their bits).
                let plain: Vec<u8> = d.local.iter().flat_map(|v| v.to_le_bytes()).collect();
                let spec = pages.write_page(CompressedPage::new(
                    Page::DictionaryPage {
                        buf: self.compressor.compress(&plain)?,
                        num_values: d.local.len() as u32,
                        encoding: Encoding::PLAIN,
                        is_sorted: false,
                    },
                    plain.len(),
                ))?;
                uncompressed += spec.uncompressed_size as u64;
            }
            for (buf, size, rows, encoding) in std::mem::take(&mut self.pages) {
                let spec = pages.write_page(CompressedPage::new(
                    Page::DataPage {
                        buf,
                        num_values: rows,
                        encoding,
                        def_level_encoding: Encoding::RLE,
                        rep_level_encoding: Encoding::RLE,
                        statistics: None,
                    },
                    size,
                ))?;
                uncompressed += spec.uncompressed_size as u64;
                data_offset.get_or_insert(spec.offset as i64);
                index.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
                index.append_row_count(i64::from(rows));
            }
            pages.close()?;
        }
        let data = sink.into_inner()?;
        // The encodings used (the dictionary page's PLAIN first), and RLE
        // (the levels') after the first, as the crate's writer lists them.
        let mut encodings: Vec<Encoding> = Vec::new();
        for s in &used {
            if !encodings.contains(&s.encoding) {
                encodings.push(s.encoding);
            }
        }
        encodings.insert(usize::from(keyed), Encoding::RLE);
        let mut metadata = ColumnChunkMetaData::builder(Arc::clone(&self.descr))
            .set_compression(self.codec)
            .set_encodings(encodings)
            .set_num_values(self.rows as i64)
            .set_total_compressed_size(data.len() as i64)
            .set_total_uncompressed_size(uncompressed as i64)
            .set_dictionary_page_offset(keyed.then_some(0))
            .set_data_page_offset(data_offset.unwrap_or(0))
            .set_page_encoding_stats(used);
        if self.statistics {
            metadata = metadata.set_statistics(self.statistics());
        }
        let close = ColumnCloseResult {
            bytes_written: data.len() as u64,
            rows_written: self.rows,
            metadata: metadata.build()?,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(index.build()),
        };
        Ok((Bytes::from(data), close))
    }

    /// The chunk's statistics, min and max as the physical type's bits (the
    /// deprecated signed-order fields only for the signed column, as the
    /// crate's writer does).
    fn statistics(&self) -> Statistics {
        let nulls = Some(self.nulls);
        let int32 = self.descr.physical_type() == Physical::INT32;
        match self.range {
            Range::Unsigned(lo, hi) if int32 => Statistics::from(
                ValueStatistics::<i32>::new(Some(lo as i32), Some(hi as i32), None, nulls, false)
                    .with_backwards_compatible_min_max(false),
            ),
            Range::Unsigned(lo, hi) => Statistics::from(
                ValueStatistics::<i64>::new(Some(lo as i64), Some(hi as i64), None, nulls, false)
                    .with_backwards_compatible_min_max(false),
            ),
            Range::Signed(lo, hi) => Statistics::from(
                ValueStatistics::<i64>::new(Some(lo), Some(hi), None, nulls, false)
                    .with_backwards_compatible_min_max(true),
            ),
            Range::None if int32 => {
                Statistics::from(ValueStatistics::<i32>::new(None, None, None, nulls, false))
            }
            Range::None => {
                Statistics::from(ValueStatistics::<i64>::new(None, None, None, nulls, false))
            }
        }
    }
}

/// Values a dictionary-encoded column's dictionary holds at most (keys of
/// 12 bits): a column of more distinct values is written PLAIN from there
/// on, its dictionary page as it was.
const DICT_VALUES: usize = 1 << 12;

/// Values of a dictionary-encoded column are below this (its keys are
/// found in an array this long, no hash); a greater one ends the
/// dictionary (a source id that is a hash, not a number).
const DICT_SPAN: usize = 1 << 16;

/// The dictionary of a column chunk of integers: its values in the order
/// first seen (their keys), and each value's key + 1 (0: not seen).
#[derive(Debug)]
struct Dict {
    remap: Vec<u32>,
    local: Vec<u32>,
    /// A page's keys.
    keys: Vec<u32>,
    /// Still taking pages.
    open: bool,
}

impl Default for Dict {
    fn default() -> Self {
        Dict {
            remap: Vec::new(),
            local: Vec::new(),
            keys: Vec::new(),
            open: true,
        }
    }
}

/// The key of `v` in the dictionary `local` (added if new), `remap`
/// (value → key + 1) holding `v`'s slot.
#[inline]
fn d_key(remap: &mut [u32], local: &mut Vec<u32>, v: u32) -> u32 {
    let slot = &mut remap[v as usize];
    if *slot == 0 {
        local.push(v);
        *slot = local.len() as u32;
    }
    *slot - 1
}

/// Min and max of a non-empty slice, in `T`'s order.
fn min_max<T: Copy + Ord>(v: &[T]) -> (T, T) {
    let mut lo = v[0];
    let mut hi = v[0];
    for &x in v {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    (lo, hi)
}
