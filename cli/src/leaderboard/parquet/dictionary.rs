//! A text column's chunk, dictionary-encoded here rather than by the Parquet writer, in work
//! proportional to its runs of equal values rather than to its rows: a pass's rows repeat
//! their pass id, machine facts, hashes and units, so a partition's million values are a few
//! thousand runs. The writer's own path takes every value one by one (a hash, a comparison for
//! the statistics, a reference count), which was most of an export's time.
//!
//! The chunk is what the writer makes of such a column (its encodings, page kinds and
//! statistics; `parquet` 60's `GenericColumnWriter`), less its page index: one dictionary page
//! (each distinct text once, PLAIN) and one v1 data page of definition levels and dictionary
//! indices, both in the RLE / bit-packing hybrid: a run of 8 or more of one value is an RLE run
//! (a ULEB128 header, `count << 1`, then the value in as many bytes as its bit width needs),
//! shorter ones are bit-packed 8 at a time (a header, `groups << 1 | 1`, then the values' low
//! bits first). A column with no value at all has no dictionary, and its data page holds the
//! definition levels alone.

use std::collections::HashMap;

use ::parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use ::parquet::column::page::{CompressedPage, Page, PageWriter as _};
use ::parquet::column::writer::ColumnCloseResult;
use ::parquet::data_type::ByteArray;
use ::parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use ::parquet::file::statistics::Statistics;
use ::parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use ::parquet::schema::types::ColumnDescPtr;
use anyhow::Context as _;
use bytes::Bytes;

/// The longest run one RLE header says: `count << 1` stays within the 32 bits readers take.
const MAX_RUN: usize = 1 << 30;

/// A text column of a file: for each row, whether it has a value (1) or is null (0), and the
/// values, nulls left out, as runs of one text.
pub struct TextColumn<'a> {
    pub defined: &'a [i16],
    /// Each run: its text and how many values it is, in order.
    pub runs: &'a [(&'a [u8], usize)],
}

/// The chunk's bytes (its offsets start at 0) and what the row group's writer needs to
/// splice it in (`SerializedRowGroupWriter::append_column`).
pub fn text_chunk(descr: ColumnDescPtr, column: &TextColumn<'_>) -> anyhow::Result<(Bytes, ColumnCloseResult)> {
    let rows = column.defined.len();
    let values: usize = column.runs.iter().map(|&(_, n)| n).sum();
    debug_assert_eq!(values, column.defined.iter().filter(|&&d| d == 1).count());
    let (entries, indices) = dictionary(column.runs);

    let mut sink = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut sink);
    let mut dictionary_offset = None;
    let mut encoding_stats = Vec::new();
    let (mut compressed, mut uncompressed) = (0u64, 0u64);
    if !entries.is_empty() {
        let mut buf = Vec::with_capacity(entries.iter().map(|e| 4 + e.len()).sum());
        for entry in &entries {
            let len = u32::try_from(entry.len()).ok().filter(|&n| i32::try_from(n).is_ok()).context("a text longer than 2 GiB")?;
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(entry);
        }
        let n = u32::try_from(entries.len()).context("more than 2³² distinct texts in one file")?;
        let spec = pages.write_page(page(Page::DictionaryPage { buf: buf.into(), num_values: n, encoding: Encoding::PLAIN, is_sorted: false })?)?;
        dictionary_offset = Some(spec.offset as i64);
        (compressed, uncompressed) = (spec.compressed_size as u64, spec.uncompressed_size as u64);
        encoding_stats.push(PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 });
    }

    // The definition levels (bit width 1), after their length as a 4-byte integer; then the
    // indices, after their bit width as a byte.
    let mut levels = Hybrid::new(vec![0; 4], 1);
    let mut at = 0;
    while at < rows {
        let level = column.defined[at];
        let end = column.defined[at..].iter().position(|&d| d != level).map_or(rows, |n| at + n);
        levels.put(u32::from(level == 1), end - at);
        at = end;
    }
    let mut buf = levels.finish();
    let levels = u32::try_from(buf.len() - 4).context("definition levels longer than 4 GiB")?;
    buf[..4].copy_from_slice(&levels.to_le_bytes());
    let encoding = if entries.is_empty() {
        Encoding::PLAIN
    } else {
        // At least one bit: one entry could take none, but no reader is left to agree.
        let width = (u32::BITS - (entries.len() as u32 - 1).leading_zeros()).max(1);
        buf.push(width as u8);
        let mut hybrid = Hybrid::new(buf, width);
        for &(index, n) in &indices {
            hybrid.put(index, n);
        }
        buf = hybrid.finish();
        Encoding::RLE_DICTIONARY
    };
    let num_values = u32::try_from(rows).context("more than 2³² rows in one file")?;
    let data = page(Page::DataPage {
        buf: buf.into(),
        num_values,
        encoding,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    })?;
    let spec = pages.write_page(data)?;
    pages.close()?;
    compressed += spec.compressed_size as u64;
    uncompressed += spec.uncompressed_size as u64;
    encoding_stats.push(PageEncodingStats { page_type: PageType::DATA_PAGE, encoding, count: 1 });

    // Parquet orders UTF-8 by its bytes, unsigned: `[u8]`'s own order.
    let min = entries.iter().min().map(|e| ByteArray::from(e.to_vec()));
    let max = entries.iter().max().map(|e| ByteArray::from(e.to_vec()));
    let statistics = Statistics::byte_array(min, max, None, Some((rows - values) as u64), false);
    let mut encodings = vec![Encoding::RLE, encoding];
    if dictionary_offset.is_some() {
        encodings.push(Encoding::PLAIN);
    }
    let metadata = ColumnChunkMetaData::builder(descr)
        .set_compression(Compression::UNCOMPRESSED)
        .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
        .set_page_encoding_stats(encoding_stats)
        .set_total_compressed_size(compressed as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_num_values(rows as i64)
        .set_data_page_offset(spec.offset as i64)
        .set_dictionary_page_offset(dictionary_offset)
        .set_statistics(statistics)
        .build()?;
    let bytes = Bytes::from(sink.into_inner()?);
    let close = ColumnCloseResult {
        bytes_written: bytes.len() as u64,
        rows_written: rows as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: None,
    };
    Ok((bytes, close))
}

/// Each distinct text once, in the order first seen, and each run's entry, runs of one entry
/// merged.
fn dictionary<'a>(runs: &[(&'a [u8], usize)]) -> (Vec<&'a [u8]>, Vec<(u32, usize)>) {
    let mut index: HashMap<&[u8], u32, foldhash::fast::RandomState> = HashMap::default();
    let mut entries = Vec::new();
    let mut indices: Vec<(u32, usize)> = Vec::with_capacity(runs.len());
    for &(text, n) in runs {
        let i = *index.entry(text).or_insert_with(|| {
            entries.push(text);
            (entries.len() - 1) as u32
        });
        match indices.last_mut() {
            Some((last, count)) if *last == i => *count += n,
            _ => indices.push((i, n)),
        }
    }
    (entries, indices)
}

/// Values `width` bits wide in the RLE / bit-packing hybrid, given as runs.
struct Hybrid {
    out: Vec<u8>,
    width: u32,
    /// Values waiting to be bit-packed: fewer than [`MAX_PACKED`].
    packed: Vec<u32>,
}

/// The most values one bit-packed run holds here (63 groups of 8: a one-byte header).
const MAX_PACKED: usize = 63 * 8;

impl Hybrid {
    /// Appends to `out`.
    fn new(out: Vec<u8>, width: u32) -> Hybrid {
        Hybrid { out, width, packed: Vec::with_capacity(MAX_PACKED) }
    }

    /// `n` repeats of `value`.
    fn put(&mut self, value: u32, mut n: usize) {
        // A bit-packed run is whole groups of 8: the one begun is filled first.
        let fill = ((8 - self.packed.len() % 8) % 8).min(n);
        self.pack(value, fill);
        n -= fill;
        if n >= 8 {
            self.flush_packed();
            rle_run(&mut self.out, value, n, self.width.div_ceil(8) as usize);
        } else {
            self.pack(value, n);
        }
    }

    fn pack(&mut self, value: u32, n: usize) {
        for _ in 0..n {
            self.packed.push(value);
            if self.packed.len() == MAX_PACKED {
                self.flush_packed();
            }
        }
    }

    /// The values waiting, as one bit-packed run (its last group padded with zeros, which a
    /// reader that knows the page's count never reads).
    fn flush_packed(&mut self) {
        if self.packed.is_empty() {
            return;
        }
        let groups = self.packed.len().div_ceil(8);
        self.packed.resize(groups * 8, 0);
        uleb128(&mut self.out, ((groups as u64) << 1) | 1);
        let (mut bits, mut filled) = (0u64, 0u32);
        for &value in &self.packed {
            bits |= u64::from(value) << filled;
            filled += self.width;
            while filled >= 8 {
                self.out.push(bits as u8);
                bits >>= 8;
                filled -= 8;
            }
        }
        debug_assert_eq!(filled, 0, "8 values of any width are whole bytes");
        self.packed.clear();
    }

    fn finish(mut self) -> Vec<u8> {
        self.flush_packed();
        self.out
    }
}

/// `n` repeats of `value`, `bytes` bytes wide, as RLE runs.
fn rle_run(out: &mut Vec<u8>, value: u32, n: usize, bytes: usize) {
    let mut left = n;
    while left > 0 {
        let run = left.min(MAX_RUN);
        uleb128(out, (run as u64) << 1);
        out.extend_from_slice(&value.to_le_bytes()[..bytes]);
        left -= run;
    }
}

fn uleb128(out: &mut Vec<u8>, mut n: u64) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// An uncompressed page, as the writer takes one.
fn page(page: Page) -> anyhow::Result<CompressedPage> {
    let len = page.buffer().len();
    anyhow::ensure!(i32::try_from(len).is_ok(), "a page of {len} bytes: Parquet's pages are under 2 GiB");
    Ok(CompressedPage::new(page, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_uleb128_headers_then_the_value() {
        let mut out = Vec::new();
        rle_run(&mut out, 5, 3, 1);
        assert_eq!(out, [6, 5]);
        out.clear();
        // 300 << 1 = 600 = 0b100_1011000: 0xd8 then 0x04; a 9-bit value in two bytes.
        rle_run(&mut out, 257, 300, 2);
        assert_eq!(out, [0xd8, 0x04, 1, 1]);
        out.clear();
        rle_run(&mut out, 1, MAX_RUN + 2, 1);
        assert_eq!(out, [0x80, 0x80, 0x80, 0x80, 0x08, 1, 4, 1], "a run longer than a header says is two");
    }

    /// Short runs are bit-packed 8 values at a time, low bits first; a run of 8 or more after a
    /// group begun fills the group, and the rest is an RLE run.
    #[test]
    fn short_runs_are_bit_packed_and_long_ones_rle() {
        let mut hybrid = Hybrid::new(Vec::new(), 3);
        for value in [1, 2, 3] {
            hybrid.put(value, 1);
        }
        hybrid.put(4, 15);
        hybrid.put(5, 1);
        // One group: 1, 2, 3, then five 4s (3 bits each, 24 bits); ten 4s as a run; 5 packed
        // in a group padded with zeros.
        let group = 1 | 2 << 3 | 3 << 6 | 4 << 9 | 4 << 12 | 4 << 15 | 4 << 18 | 4 << 21;
        let [a, b, c, _] = u32::to_le_bytes(group);
        assert_eq!(hybrid.finish(), [3, a, b, c, 20, 4, 3, 5, 0, 0]);
    }

    #[test]
    fn each_text_is_one_entry_and_runs_of_one_entry_merge() {
        let runs: [(&[u8], usize); 4] = [(b"a", 2), (b"b", 1), (b"b", 3), (b"a", 1)];
        let (entries, indices) = dictionary(&runs);
        assert_eq!(entries, [b"a".as_slice(), b"b"]);
        assert_eq!(indices, [(0, 2), (1, 4), (0, 1)]);
    }
}
