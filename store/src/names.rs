//! Dictionary-encoded string columns (`run`, `host`, `class`, `event`, …)
//! written page by page without the `parquet` crate's interner, which
//! hashes and compares every row's string even when it is handed an Arrow
//! dictionary (a quarter of the conversion's CPU, measured). The rows
//! arrive as keys into the part set's dictionary; each column chunk maps
//! them to keys of its own (an array lookup, no hashing) and writes the
//! same Parquet pages the crate would: a PLAIN dictionary page, then one
//! RLE_DICTIONARY data page (format v1, zstd) per batch.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, StringArray};
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use crate::zstd_page::Zstd;

/// One column chunk of a dictionary-encoded string column being written.
pub(crate) struct NameChunk {
    descr: ColumnDescPtr,
    nullable: bool,
    compressor: Zstd,
    /// Set key → this chunk's key + 1 (0: not seen in this chunk).
    remap: Vec<u32>,
    /// This chunk's key → set key.
    local: Vec<i32>,
    /// The set's dictionary as the last batch carried it (it only grows).
    strings: Option<StringArray>,
    /// Compressed data pages: bytes, uncompressed size, values, rows.
    pages: Vec<(Bytes, usize, u32)>,
    values: u64,
    keys: Vec<u32>,
    levels: Vec<u32>,
    buf: Vec<u8>,
}

fn err(what: &str) -> ParquetError {
    ParquetError::General(format!(
        "qtrace-store: {what} (a bug in qtrace-store, please report it)"
    ))
}

impl NameChunk {
    /// A chunk of the column `descr`, zstd at `level`.
    pub(crate) fn new(descr: ColumnDescPtr, level: i32) -> Result<Self, ParquetError> {
        let compressor = Zstd::new(level)?;
        Ok(NameChunk {
            nullable: descr.max_def_level() > 0,
            descr,
            compressor,
            remap: Vec::new(),
            local: Vec::new(),
            strings: None,
            pages: Vec::new(),
            values: 0,
            keys: Vec::new(),
            levels: Vec::new(),
            buf: Vec::new(),
        })
    }

    /// Encodes a batch's column (a `Dictionary(Int32, Utf8)` array, or,
    /// with `keyed`, an `Int32` array of keys into `keyed`) as one data page.
    pub(crate) fn write(
        &mut self,
        array: &ArrayRef,
        keyed: Option<&StringArray>,
    ) -> Result<(), ParquetError> {
        // The key of every row when they are all one (a conversion's run
        // and host, a batch of one event's rows).
        let mut one = None;
        let (dict, strings) = match keyed {
            Some(strings) => {
                let keys = array
                    .as_primitive_opt::<Int32Type>()
                    .ok_or_else(|| err("a keyed name column is not an Int32 array"))?;
                // Every key (a null's too, 0) within the strings: one tight
                // loop, where DictionaryArray::try_new asks each key's
                // validity (9 instructions a key, 5 % of a conversion).
                let (min, max) = keys.values().iter().fold((u32::MAX, 0u32), |(lo, hi), &k| {
                    (lo.min(k as u32), hi.max(k as u32))
                });
                if !keys.is_empty() && max as usize >= strings.len() {
                    return Err(err("a name key past the dictionary"));
                }
                if min == max {
                    one = Some(min as i32);
                }
                (keys, strings)
            }
            None => {
                let dict = array
                    .as_any()
                    .downcast_ref::<DictionaryArray<Int32Type>>()
                    .ok_or_else(|| err("a name column is not a Dictionary(Int32, Utf8) array"))?;
                let strings = dict
                    .values()
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .ok_or_else(|| err("a name column's dictionary is not Utf8"))?;
                (dict.keys(), strings)
            }
        };
        let n = strings.len();
        if self.remap.len() < n {
            self.remap.resize(n, 0);
        }
        self.keys.clear();
        self.keys.reserve(dict.len());
        self.levels.clear();
        let nulls = dict.nulls().filter(|b| b.null_count() > 0);
        if nulls.is_some() && !self.nullable {
            return Err(err("a null in a required name column"));
        }
        let keys = dict.values();
        // One key on every row, no nulls, 8 rows or more: the page's keys
        // are one RLE run (what `hybrid` makes of them), written without a
        // key a row mapped and then measured.
        let one = one.filter(|_| nulls.is_none() && dict.len() >= 8);
        let mut one_local = None;
        match (nulls, one) {
            (_, Some(g)) => one_local = Some(self.local_key(g)),
            (Some(b), None) => {
                for (i, &g) in keys.iter().enumerate() {
                    let valid = b.is_valid(i);
                    self.levels.push(u32::from(valid));
                    if valid {
                        let k = self.local_key(g);
                        self.keys.push(k);
                    }
                }
            }
            (None, None) => {
                // Runs of one key (a run's name, a host, a repeated event)
                // are mapped once.
                // One `extend` (no capacity check a key); -1 is no key
                // (try_new checked 0 <= key).
                let (remap, local) = (&mut self.remap, &mut self.local);
                let (mut lg, mut lk) = (-1, 0);
                self.keys.extend(keys.iter().map(|&g| {
                    if g != lg {
                        lk = local_key(remap, local, g);
                        lg = g;
                    }
                    lk
                }));
            }
        }
        self.strings = Some(strings.clone());
        self.buf.clear();
        if self.nullable {
            self.buf.extend([0; 4]);
            if nulls.is_none() {
                // All valid: one RLE run of ones.
                varint((dict.len() as u64) << 1, &mut self.buf);
                self.buf.push(1);
            } else {
                hybrid(&self.levels, 1, &mut self.buf);
            }
            let len = (self.buf.len() - 4) as u32;
            self.buf[..4].copy_from_slice(&len.to_le_bytes());
        }
        let width = key_width(self.local.len());
        self.buf.push(width);
        match one_local {
            Some(k) => rle(k, dict.len(), width, &mut self.buf),
            None => hybrid(&self.keys, width, &mut self.buf),
        }
        let page = self.compressor.compress(&self.buf)?;
        self.pages.push((page, self.buf.len(), dict.len() as u32));
        self.values += dict.len() as u64;
        Ok(())
    }

    /// This chunk's key of the set's key `g` (added if new).
    #[inline]
    fn local_key(&mut self, g: i32) -> u32 {
        local_key(&mut self.remap, &mut self.local, g)
    }

    /// The chunk's compressed size so far.
    pub(crate) fn size(&self) -> usize {
        self.pages.iter().map(|p| p.0.len()).sum()
    }

    /// Writes the dictionary page and the data pages; the chunk's bytes and
    /// what `SerializedRowGroupWriter::append_column` needs to place them.
    pub(crate) fn close(mut self) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
        let mut dict = Vec::new();
        if let Some(strings) = &self.strings {
            for &g in &self.local {
                let s = strings.value(g as usize);
                dict.extend((s.len() as u32).to_le_bytes());
                dict.extend(s.as_bytes());
            }
        }
        let compressed = self.compressor.compress(&dict)?;
        let mut sink = TrackedWrite::new(Vec::new());
        let mut index = OffsetIndexBuilder::new();
        let mut uncompressed = 0u64;
        let mut data_offset = 0i64;
        let mut count = 0i32;
        {
            let mut pages = SerializedPageWriter::new(&mut sink);
            let spec = pages.write_page(CompressedPage::new(
                Page::DictionaryPage {
                    buf: compressed,
                    num_values: self.local.len() as u32,
                    encoding: Encoding::PLAIN,
                    is_sorted: false,
                },
                dict.len(),
            ))?;
            uncompressed += spec.uncompressed_size as u64;
            for (i, (buf, size, rows)) in std::mem::take(&mut self.pages).into_iter().enumerate() {
                let spec = pages.write_page(CompressedPage::new(
                    Page::DataPage {
                        buf,
                        num_values: rows,
                        encoding: Encoding::RLE_DICTIONARY,
                        def_level_encoding: Encoding::RLE,
                        rep_level_encoding: Encoding::RLE,
                        statistics: None,
                    },
                    size,
                ))?;
                if i == 0 {
                    data_offset = spec.offset as i64;
                }
                count += 1;
                uncompressed += spec.uncompressed_size as u64;
                index.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
                index.append_row_count(i64::from(rows));
            }
            pages.close()?;
        }
        let data = sink.into_inner()?;
        let metadata = ColumnChunkMetaData::builder(Arc::clone(&self.descr))
            .set_compression(Compression::ZSTD(ZstdLevel::default())) // the file says the codec, not the level
            .set_encodings(vec![
                Encoding::PLAIN,
                Encoding::RLE,
                Encoding::RLE_DICTIONARY,
            ])
            .set_num_values(self.values as i64)
            .set_total_compressed_size(data.len() as i64)
            .set_total_uncompressed_size(uncompressed as i64)
            .set_dictionary_page_offset(Some(0))
            .set_data_page_offset(data_offset)
            .set_page_encoding_stats(vec![
                PageEncodingStats {
                    page_type: PageType::DICTIONARY_PAGE,
                    encoding: Encoding::PLAIN,
                    count: 1,
                },
                PageEncodingStats {
                    page_type: PageType::DATA_PAGE,
                    encoding: Encoding::RLE_DICTIONARY,
                    count,
                },
            ])
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: data.len() as u64,
            rows_written: self.values,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(index.build()),
        };
        Ok((Bytes::from(data), close))
    }
}

/// A chunk's key of the set's key `g` (added if new), given the chunk's
/// `remap` (set key → chunk key + 1, 0: not seen) and `local` (chunk key →
/// set key).
#[inline]
fn local_key(remap: &mut [u32], local: &mut Vec<i32>, g: i32) -> u32 {
    // DictionaryArray::try_new, or `write`, checked 0 <= g < n.
    let slot = &mut remap[g as usize];
    if *slot == 0 {
        local.push(g);
        *slot = local.len() as u32;
    }
    *slot - 1
}

/// Bits a key of a dictionary of `n` strings takes (at least 1).
pub(crate) fn key_width(n: usize) -> u8 {
    let max = n.saturating_sub(1) as u32;
    (32 - max.leading_zeros()).max(1) as u8
}

/// Appends `v` as ULEB128.
pub(crate) fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `values` in Parquet's RLE / bit-packing hybrid of `width` bits
/// (without the length prefix): runs of 8 or more equal values as RLE
/// runs, the rest bit-packed in groups of 8 (the last group padded with
/// zeros; a reader knows the count from the page header).
pub(crate) fn hybrid(values: &[u32], width: u8, out: &mut Vec<u8>) {
    let mut packed_from = 0;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        // A run shorter than 8 is never an RLE run (it needs `fill + 8`):
        // one look 7 values ahead passes most values of a varied column
        // (an event id's) without measuring their runs. The output is the
        // same: a maximal run's first value is still reached (steps of one,
        // or jumps to a run's end), and a value inside a run is followed by
        // fewer than 8 of its kind.
        if values.get(i + 7) != Some(&v) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < values.len() && values[j] == v {
            j += 1;
        }
        let run = j - i;
        // The values waiting to be packed fill whole groups of 8 first,
        // taking the first of this run if need be.
        let fill = (8 - (i - packed_from) % 8) % 8;
        if run >= fill + 8 {
            bitpack(&values[packed_from..i + fill], width, out);
            rle(v, run - fill, width, out);
            packed_from = j;
        }
        i = j;
    }
    bitpack(&values[packed_from..], width, out);
}

/// An RLE run: its length, then the value in whole bytes.
pub(crate) fn rle(v: u32, run: usize, width: u8, out: &mut Vec<u8>) {
    varint((run as u64) << 1, out);
    let bytes = usize::from(width).div_ceil(8);
    out.extend(&v.to_le_bytes()[..bytes]);
}

/// Bit-packed runs of at most 63 groups of 8 (a one-byte header, as other
/// writers do), least significant bit first.
fn bitpack(values: &[u32], width: u8, out: &mut Vec<u8>) {
    // Room at once: a header byte per 63 groups, `width` bytes a group.
    out.reserve(values.len().div_ceil(8) * usize::from(width) + values.len().div_ceil(504));
    for run in values.chunks(63 * 8) {
        let groups = run.len().div_ceil(8);
        varint(((groups as u64) << 1) | 1, out);
        for group in run.chunks(8) {
            let mut padded = [0u32; 8];
            padded[..group.len()].copy_from_slice(group);
            pack8(&padded, u32::from(width), out);
        }
    }
}

/// Appends 8 values of `width` bits (at most 32): `width` bytes, written 4
/// at a time.
#[inline]
fn pack8(group: &[u32; 8], width: u32, out: &mut Vec<u8>) {
    let mut acc = 0u64;
    let mut bits = 0u32;
    for &v in group {
        acc |= u64::from(v) << bits;
        bits += width;
        if bits >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            bits -= 32;
        }
    }
    // 8 * width bits in all: whole bytes are left.
    out.extend_from_slice(&acc.to_le_bytes()[..(bits / 8) as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(values: &[u32], width: u8) -> Vec<u8> {
        let mut out = Vec::new();
        hybrid(values, width, &mut out);
        out
    }

    /// The hybrid as written before the look-ahead: every run measured.
    fn enc_measuring_every_run(values: &[u32], width: u8) -> Vec<u8> {
        let mut out = Vec::new();
        let (mut packed_from, mut i) = (0, 0);
        while i < values.len() {
            let v = values[i];
            let mut j = i + 1;
            while j < values.len() && values[j] == v {
                j += 1;
            }
            let fill = (8 - (i - packed_from) % 8) % 8;
            if j - i >= fill + 8 {
                bitpack(&values[packed_from..i + fill], width, &mut out);
                rle(v, j - i - fill, width, &mut out);
                packed_from = j;
            }
            i = j;
        }
        bitpack(&values[packed_from..], width, &mut out);
        out
    }

    /// A column whose batch holds one key (a conversion's `run`, `host`)
    /// is written without a key a row, as the same bytes as the
    /// dictionary array's path (which maps and measures every key), with
    /// fewer than 8 rows and mixed batches beside.
    #[test]
    fn a_single_key_batch_writes_the_same_bytes_as_the_general_path() {
        use crate::schema::Table;
        use arrow_array::Int32Array;
        use parquet::arrow::ArrowSchemaConverter;
        let schema = ArrowSchemaConverter::new()
            .convert(&Table::Events.schema())
            .unwrap();
        let strings = StringArray::from(vec!["a", "b", "c", "d"]);
        for leaf in ["run", "class"] {
            let descr = schema
                .columns()
                .iter()
                .find(|c| c.name() == leaf)
                .unwrap()
                .clone();
            let mut keyed = NameChunk::new(descr.clone(), 1).unwrap();
            let mut general = NameChunk::new(descr, 1).unwrap();
            let batches: [Vec<i32>; 5] = [
                vec![2; 1000],
                vec![1; 5],
                vec![3, 3, 2, 3, 3, 3, 3, 3, 3],
                vec![0; 8],
                vec![2; 9],
            ];
            for keys in batches {
                let keys = Int32Array::from(keys);
                let dict =
                    DictionaryArray::<Int32Type>::try_new(keys.clone(), Arc::new(strings.clone()))
                        .unwrap();
                keyed
                    .write(&(Arc::new(keys) as ArrayRef), Some(&strings))
                    .unwrap();
                general.write(&(Arc::new(dict) as ArrayRef), None).unwrap();
            }
            let (a, _) = keyed.close().unwrap();
            let (b, _) = general.close().unwrap();
            assert_eq!(a, b, "{leaf}");
        }
    }

    #[test]
    fn the_look_ahead_writes_the_same_bytes_as_measuring_every_run() {
        // Runs of 1 to 20 values (7, 8 and 9 around the RLE threshold,
        // after every count of pending values), from a fixed xorshift.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..200 {
            let mut values = Vec::new();
            let len = 1 + (next() % 400) as usize;
            while values.len() < len {
                let r = next();
                let run = 1 + (r % 20) as usize;
                let v = ((r >> 8) % 5) as u32;
                values.extend(std::iter::repeat_n(v, run.min(len - values.len())));
            }
            for width in [3, 12] {
                assert_eq!(
                    enc(&values, width),
                    enc_measuring_every_run(&values, width),
                    "case {case}, width {width}: {values:?}"
                );
            }
        }
    }

    #[test]
    fn a_long_run_is_one_rle_run() {
        // 1000 << 1 = 2000 = 0xD0 0x0F in ULEB128, then the value in 1 byte.
        assert_eq!(enc(&[5; 1000], 3), vec![0xD0, 0x0F, 5]);
        // 12 bits: the value in 2 bytes.
        assert_eq!(enc(&[0x123; 8], 12), vec![16, 0x23, 0x01]);
    }

    #[test]
    fn short_runs_are_bit_packed_and_padded() {
        // 1 group: header (1 << 1) | 1 = 3; values 0..3 in 2 bits, LSB first,
        // padded with four zeros.
        assert_eq!(enc(&[0, 1, 2, 3], 2), vec![3, 0b1110_0100, 0]);
        assert_eq!(enc(&[], 2), Vec::<u8>::new());
    }

    #[test]
    fn pending_values_fill_a_group_before_an_rle_run() {
        // 3 values, then 13 sevens: 5 sevens complete the group, 8 go RLE.
        let mut v = vec![1, 2, 3];
        v.extend([7; 13]);
        let out = enc(&v, 3);
        // group: 1,2,3,7,7,7,7,7 in 3 bits = 24 bits.
        let bits: u32 = [1u32, 2, 3, 7, 7, 7, 7, 7]
            .iter()
            .enumerate()
            .map(|(k, x)| x << (3 * k))
            .sum();
        let mut want = vec![3];
        want.extend(&bits.to_le_bytes()[..3]);
        want.extend([16, 7]);
        assert_eq!(out, want);
        // A run too short to fill and stay 8 long stays packed.
        let mut v = vec![1, 2, 3];
        v.extend([7; 12]);
        assert_eq!(enc(&v, 3)[0], (2 << 1) | 1);
    }

    #[test]
    fn bit_packed_runs_hold_at_most_63_groups() {
        let v: Vec<u32> = (0..600).map(|k| k % 2).collect();
        let out = enc(&v, 1);
        // 504 values (63 groups, 63 bytes) then 96 (12 groups, 12 bytes).
        assert_eq!(out[0], (63 << 1) | 1);
        assert_eq!(out[64], (12 << 1) | 1);
        assert_eq!(out.len(), 1 + 63 + 1 + 12);
        assert!(out[1..64].iter().all(|&b| b == 0b1010_1010));
    }

    #[test]
    fn wide_keys_pack_whole_bytes_per_group() {
        // Width 32: each value as 4 little-endian bytes; width 12: two
        // values in 3 bytes; a short last group padded with zeros.
        let v = [0xDEAD_BEEF, 1, 2, 3, 4, 5, 6, 7];
        let out = enc(&v, 32);
        assert_eq!(out[0], 3);
        assert_eq!(&out[1..5], &[0xEF, 0xBE, 0xAD, 0xDE]);
        assert_eq!(&out[29..], &[7, 0, 0, 0]);
        assert_eq!(
            enc(&[0xABC, 0x123], 12),
            vec![3, 0xBC, 0x3A, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn key_widths() {
        assert_eq!(key_width(0), 1);
        assert_eq!(key_width(1), 1);
        assert_eq!(key_width(2), 1);
        assert_eq!(key_width(3), 2);
        assert_eq!(key_width(256), 8);
        assert_eq!(key_width(257), 9);
    }
}
