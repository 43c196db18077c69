//! A pass's leaderboard rows column by column, typed (`super::COLUMN_TYPES`), as the Parquet
//! export holds them: what a pass's `leaderboard.cache` keeps beside its CSV rows, so that an
//! export over a fleet parses no CSV and no number (docs/raw-format.md, "The typed rows").
//!
//! The text is as recorded (the CSV's guard against spreadsheets is the CSV's own); an empty
//! field is a missing value; a text kept once for a run of rows that repeat it (a pass's rows
//! repeat their pass id, machine facts, hashes and units).
//!
//! The bytes (all numbers little-endian):
//!
//! ```text
//! "BPT1"  rows: u32
//! then each column, in the CSV's order:
//!   type: u8 (0 text, 1 integer, 2 decimal, as COLUMN_TYPES says)
//!   defined: one byte a row, 1 where it has a value and 0 where the field is empty
//!   text:    runs: u32, then each run: values: u32 (≥ 1), length: u32, its UTF-8
//!   integer: an i64 a value;  decimal: an f64 a value
//! ```
//!
//! Read back only whole: [`TypedRows::decode`] takes bytes of exactly that shape or none,
//! never trusting a length it has not the bytes for.

use super::{ColumnType, Row, COLUMNS, COLUMN_TYPES, N_COLUMNS};

const MAGIC: &[u8; 4] = b"BPT1";

/// A field of a number column that is not a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotANumber {
    /// Which of [`COLUMNS`].
    pub column: usize,
    /// The field, as it is (whoever prints it makes it printable).
    pub cell: String,
    /// Why it is not one.
    pub error: String,
}

/// Rows column by column. Every column's parts are kept in a few vectors shared by all the
/// columns, not in vectors of each column's own: a fleet's export decodes a cache a pass, and
/// a handful of allocations a pass (not a few for each of its columns) is most of what
/// decoding one costs.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedRows {
    rows: usize,
    /// Every column's definition, `rows` a column, in [`COLUMNS`]' order: whether the row has
    /// a value.
    defined: Vec<bool>,
    /// The text columns' runs' texts, one after another.
    text: String,
    /// The text columns' runs: each one's end in `text`, and how many values it is.
    runs: Vec<(usize, usize)>,
    integers: Vec<i64>,
    decimals: Vec<f64>,
    /// For each of [`COLUMNS`], where its values are: its runs in `runs` (text), or its values
    /// in `integers` or `decimals`.
    columns: Vec<std::ops::Range<usize>>,
}

/// A column: which rows have a value, and the values, nulls left out.
#[derive(Debug, Clone, Copy)]
pub struct Column<'a> {
    pub defined: &'a [bool],
    pub values: Values<'a>,
}

#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    Text(Texts<'a>),
    Integer(&'a [i64]),
    Decimal(&'a [f64]),
}

/// A text column's values: each run of equal values kept once.
#[derive(Debug, Clone, Copy)]
pub struct Texts<'a> {
    /// The texts the runs' ends point into.
    text: &'a str,
    /// Where the first run's text begins in `text`.
    start: usize,
    /// Each run's end in `text`, and how many values it is.
    runs: &'a [(usize, usize)],
}

impl<'a> Texts<'a> {
    /// Each run: its text and how many values it is, in order.
    pub fn runs(&self) -> impl Iterator<Item = (&'a str, usize)> + 'a {
        self.runs_from(0, 0, usize::MAX)
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.runs.iter().map(|&(_, n)| n).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The runs of values `range` (counted from the first value), each cut to the range: walked
    /// from the first run, the tests' reference for [`Texts::runs_from`], which the export uses.
    #[cfg(test)]
    fn runs_in(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = (&'a str, usize)> + 'a {
        let mut first = 0;
        self.runs().filter_map(move |(text, n)| {
            let (start, end) = (first.max(range.start), (first + n).min(range.end));
            first += n;
            (start < end).then(|| (text, end - start))
        })
    }

    /// Each run's count of values, in order.
    pub fn counts(&self) -> impl Iterator<Item = usize> + 'a {
        self.runs.iter().map(|&(_, n)| n)
    }

    /// The runs of `n` values from the `skip`th value of run `run` on, each cut to them: what
    /// `runs_in` gives, for a caller that knows which run its range begins in (a
    /// range late in many runs, not walked from the first).
    pub fn runs_from(&self, run: usize, skip: usize, n: usize) -> impl Iterator<Item = (&'a str, usize)> + 'a {
        let text = self.text;
        let mut start = run.checked_sub(1).map_or(self.start, |i| self.runs[i].0);
        let (mut skip, mut left) = (skip, n);
        self.runs[run.min(self.runs.len())..].iter().map_while(move |&(end, count)| {
            let value = &text[start..end];
            start = end;
            let taken = (count - skip.min(count)).min(left);
            skip = 0;
            left -= taken;
            (taken > 0).then_some((value, taken))
        })
    }

    /// Each value, in order.
    pub fn values(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.runs().flat_map(|(text, n)| std::iter::repeat_n(text, n))
    }
}

impl TypedRows {
    fn empty(rows: usize) -> TypedRows {
        TypedRows {
            rows,
            defined: Vec::with_capacity(rows * N_COLUMNS),
            text: String::new(),
            runs: Vec::new(),
            integers: Vec::new(),
            decimals: Vec::new(),
            columns: Vec::with_capacity(N_COLUMNS),
        }
    }

    /// Where the next column's values will begin, in the vector of column type `ty`.
    fn next_start(&self, ty: ColumnType) -> usize {
        match ty {
            ColumnType::Text => self.runs.len(),
            ColumnType::Integer => self.integers.len(),
            ColumnType::Decimal => self.decimals.len(),
        }
    }

    /// Where run `r`'s text begins in `text`: where the run before it ends.
    fn run_start(&self, r: usize) -> usize {
        r.checked_sub(1).map_or(0, |before| self.runs[before].0)
    }

    /// `value` after the text column's values so far, its runs from `first` on: the last run
    /// where it repeats that run's text.
    fn push_text(&mut self, first: usize, value: &str) {
        if let Some(last) = self.runs.len().checked_sub(1).filter(|&l| l >= first) {
            if self.text[self.run_start(last)..self.runs[last].0] == *value {
                self.runs[last].1 += 1;
                return;
            }
        }
        self.text.push_str(value);
        self.runs.push((self.text.len(), 1));
    }

    /// `rows` (as recorded, before the CSV's spreadsheet guard), typed: a field that is not
    /// its column's type is the error (of the first column that has one, its first such row).
    pub fn from_rows(rows: &[Row]) -> Result<TypedRows, NotANumber> {
        let mut typed = TypedRows::empty(rows.len());
        for (i, ty) in COLUMN_TYPES.iter().enumerate() {
            let first = typed.next_start(*ty);
            typed.defined.extend(rows.iter().map(|row| !row[i].is_empty()));
            for cell in rows.iter().map(|row| &row[i]).filter(|cell| !cell.is_empty()) {
                let not_a_number = |e: &dyn std::fmt::Display| NotANumber { column: i, cell: cell.clone(), error: e.to_string() };
                match ty {
                    ColumnType::Text => typed.push_text(first, cell),
                    ColumnType::Integer => typed.integers.push(cell.parse().map_err(|e| not_a_number(&e))?),
                    ColumnType::Decimal => typed.decimals.push(cell.parse().map_err(|e| not_a_number(&e))?),
                }
            }
            typed.columns.push(first..typed.next_start(*ty));
        }
        Ok(typed)
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Column `i` of [`COLUMNS`].
    pub fn column(&self, i: usize) -> Column<'_> {
        let range = self.columns[i].clone();
        let values = match COLUMN_TYPES[i] {
            ColumnType::Text => Values::Text(Texts {
                text: &self.text,
                start: self.run_start(range.start),
                runs: &self.runs[range],
            }),
            ColumnType::Integer => Values::Integer(&self.integers[range]),
            ColumnType::Decimal => Values::Decimal(&self.decimals[range]),
        };
        Column { defined: &self.defined[i * self.rows..(i + 1) * self.rows], values }
    }

    /// Each row's value of text column `i` (`""` where it has none).
    pub fn texts(&self, i: usize) -> Vec<&str> {
        let column = self.column(i);
        let Values::Text(texts) = column.values else { panic!("column `{}` is not text", COLUMNS[i]) };
        let mut values = texts.values();
        column.defined.iter().map(|&defined| if defined { values.next().expect("a value a defined row") } else { "" }).collect()
    }

    /// The bytes a cache keeps (the module's doc says their shape).
    pub fn encode(&self) -> Vec<u8> {
        let rows = u32::try_from(self.rows).expect("a pass has fewer than 2³² rows");
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&rows.to_le_bytes());
        for i in 0..N_COLUMNS {
            let column = self.column(i);
            let u32_of = |n: usize| u32::try_from(n).expect("a cache is far smaller than 4 GiB").to_le_bytes();
            out.push(match column.values {
                Values::Text(_) => 0,
                Values::Integer(_) => 1,
                Values::Decimal(_) => 2,
            });
            out.extend(column.defined.iter().map(|&d| u8::from(d)));
            match column.values {
                Values::Text(texts) => {
                    out.extend_from_slice(&u32_of(texts.runs.len()));
                    for (text, n) in texts.runs() {
                        out.extend_from_slice(&u32_of(n));
                        out.extend_from_slice(&u32_of(text.len()));
                        out.extend_from_slice(text.as_bytes());
                    }
                }
                Values::Integer(values) => values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
                Values::Decimal(values) => values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            }
        }
        out
    }

    /// The rows in `bytes`, or `None` where they are not exactly what [`TypedRows::encode`]
    /// writes for rows of these columns.
    pub fn decode(bytes: &[u8]) -> Option<TypedRows> {
        let mut input = Input(bytes);
        if input.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let rows = input.u32()? as usize;
        // Each row takes a byte in every column: a count the bytes cannot hold is refused
        // before anything is made that large.
        if rows.checked_mul(N_COLUMNS)? > input.0.len() {
            return None;
        }
        let mut typed = TypedRows::empty(rows);
        // Each column's values are at most one a row: known before any is read, so that
        // neither vector grows value by value.
        let of = |ty| COLUMN_TYPES.iter().filter(|&&t| t == ty).count() * rows;
        typed.integers.reserve(of(ColumnType::Integer));
        typed.decimals.reserve(of(ColumnType::Decimal));
        for ty in COLUMN_TYPES {
            let tag = input.take(1)?[0];
            let defined = input.take(rows)?;
            if defined.iter().any(|&b| b > 1) {
                return None;
            }
            typed.defined.extend(defined.iter().map(|&b| b == 1));
            let n = defined.iter().filter(|&&b| b == 1).count();
            let first = typed.next_start(ty);
            match (ty, tag) {
                (ColumnType::Text, 0) => {
                    let runs = input.u32()? as usize;
                    // Each run has at least one value.
                    if runs > n {
                        return None;
                    }
                    // The runs' lengths first, so that the texts are copied in once.
                    let (mut ahead, mut bytes) = (Input(input.0), 0usize);
                    for _ in 0..runs {
                        ahead.u32()?;
                        let len = ahead.u32()? as usize;
                        ahead.take(len)?;
                        bytes += len;
                    }
                    typed.text.reserve(bytes);
                    typed.runs.reserve(runs);
                    let mut values = 0usize;
                    for _ in 0..runs {
                        let count = input.u32()? as usize;
                        let len = input.u32()? as usize;
                        let text = std::str::from_utf8(input.take(len)?).ok()?;
                        if count == 0 {
                            return None;
                        }
                        values = values.checked_add(count)?;
                        typed.text.push_str(text);
                        typed.runs.push((typed.text.len(), count));
                    }
                    if values != n {
                        return None;
                    }
                }
                (ColumnType::Integer, 1) => typed.integers.extend(input.words(n)?.map(i64::from_le_bytes)),
                (ColumnType::Decimal, 2) => typed.decimals.extend(input.words(n)?.map(f64::from_le_bytes)),
                _ => return None,
            }
            typed.columns.push(first..typed.next_start(ty));
        }
        input.0.is_empty().then_some(typed)
    }
}

/// The bytes a pass's cache keeps of `rows`: [`TypedRows::encode`]'s, or none where a field is
/// not its column's type (an export then works the rows out again, and names the field).
pub fn encoded(rows: &[Row]) -> Vec<u8> {
    TypedRows::from_rows(rows).map(|typed| typed.encode()).unwrap_or_default()
}

/// What is left of the bytes being decoded.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(taken)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    /// `n` eight-byte words.
    fn words(&mut self, n: usize) -> Option<impl Iterator<Item = [u8; 8]> + 'a> {
        let bytes = self.take(n.checked_mul(8)?)?;
        Some(bytes.chunks_exact(8).map(|w| w.try_into().expect("eight bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row with every column filled from `seed`, some fields empty, texts repeating.
    fn row(seed: u64) -> Row {
        std::array::from_fn(|i| {
            let x = seed.wrapping_mul(6364136223846793005).wrapping_add((i as u64).wrapping_mul(1442695040888963407)) >> 33;
            if x % 7 == 0 {
                return String::new();
            }
            match COLUMN_TYPES[i] {
                ColumnType::Text => ["pass-a", "é, \"quoted\"\nline", "=1+1", "x"][(x % 4) as usize].to_owned(),
                ColumnType::Integer => format!("{}", x as i64 - 1000),
                ColumnType::Decimal => format!("{:.3}", x as f64 / 7.0),
            }
        })
    }

    fn rows(n: u64) -> Vec<Row> {
        (0..n).map(|s| row(s / 3)).collect()
    }

    /// Every cell reads back as its text parses, and the bytes decode to the same rows.
    #[test]
    fn typed_rows_hold_every_cell_and_read_back_whole() {
        let rows = rows(50);
        let typed = TypedRows::from_rows(&rows).unwrap();
        assert_eq!(typed.len(), 50);
        for i in 0..N_COLUMNS {
            let column = typed.column(i);
            let cells: Vec<&str> = rows.iter().map(|r| r[i].as_str()).collect();
            assert_eq!(column.defined, cells.iter().map(|c| !c.is_empty()).collect::<Vec<_>>(), "{}", COLUMNS[i]);
            let present = cells.iter().filter(|c| !c.is_empty());
            match &column.values {
                Values::Text(_) => assert_eq!(typed.texts(i), cells),
                Values::Integer(v) => assert_eq!(*v, present.map(|c| c.parse::<i64>().unwrap()).collect::<Vec<_>>()),
                Values::Decimal(v) => assert_eq!(*v, present.map(|c| c.parse::<f64>().unwrap()).collect::<Vec<_>>()),
            }
        }
        // Rows of three alike: the pass id's runs are far fewer than its values.
        let Values::Text(ids) = &typed.column(0).values else { unreachable!() };
        assert!(ids.runs.len() < ids.len());
        assert_eq!(TypedRows::decode(&typed.encode()), Some(typed));
        let none = TypedRows::from_rows(&[]).unwrap();
        assert_eq!(TypedRows::decode(&none.encode()), Some(none));
    }

    /// Rows whose second text column holds `values`, and that column: the first holds others,
    /// so that its texts begin inside the texts the columns share.
    fn with_texts(values: &[&str]) -> (TypedRows, usize) {
        let column = (1..N_COLUMNS).find(|&i| COLUMN_TYPES[i] == ColumnType::Text).unwrap();
        let rows: Vec<Row> = values
            .iter()
            .enumerate()
            .map(|(r, value)| {
                let mut row: Row = std::array::from_fn(|_| String::new());
                (row[0], row[column]) = (format!("id-{r}"), (*value).to_owned());
                row
            })
            .collect();
        (TypedRows::from_rows(&rows).unwrap(), column)
    }

    /// From any run and any value of it, the same runs as the range walked from the start.
    #[test]
    fn runs_from_a_known_run_are_the_ranges_runs() {
        let (typed, column) = with_texts(&["a", "a", "b", "c", "c", "c", "d"]);
        let Values::Text(texts) = typed.column(column).values else { unreachable!() };
        let mut first = 0;
        for (run, count) in texts.counts().enumerate() {
            for skip in 0..count {
                for n in 0..=7 - first - skip {
                    let start = first + skip;
                    assert_eq!(texts.runs_from(run, skip, n).collect::<Vec<_>>(), texts.runs_in(start..start + n).collect::<Vec<_>>(), "{run} {skip} {n}");
                }
            }
            first += count;
        }
        assert_eq!(texts.runs_from(texts.counts().count(), 0, 0).count(), 0);
    }

    #[test]
    fn runs_in_a_range_are_cut_to_it() {
        let (typed, column) = with_texts(&["a", "a", "b", "c", "c", "c"]);
        let Values::Text(texts) = typed.column(column).values else { unreachable!() };
        let runs = |range| texts.runs_in(range).collect::<Vec<_>>();
        assert_eq!(runs(0..6), [("a", 2), ("b", 1), ("c", 3)]);
        assert_eq!(runs(1..5), [("a", 1), ("b", 1), ("c", 2)]);
        assert_eq!(runs(2..3), [("b", 1)]);
        assert_eq!(runs(3..3), []);
    }

    #[test]
    fn a_field_that_is_not_its_columns_type_is_named() {
        let mut bad = row(1);
        bad[12] = "fast".to_owned();
        let error = TypedRows::from_rows(&[bad]).unwrap_err();
        assert_eq!(error, NotANumber { column: 12, cell: "fast".to_owned(), error: "invalid float literal".to_owned() });
    }

    /// Bytes cut anywhere, grown by one, or with any one byte changed decode to nothing or to
    /// rows of the same shape: never a panic, never more than the bytes hold.
    #[test]
    fn bytes_that_are_not_whole_typed_rows_decode_to_none() {
        let bytes = TypedRows::from_rows(&rows(12)).unwrap().encode();
        for cut in 0..bytes.len() {
            assert_eq!(TypedRows::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(TypedRows::decode(&longer), None);
        for at in 0..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut changed = bytes.clone();
                changed[at] ^= flip;
                if let Some(typed) = TypedRows::decode(&changed) {
                    assert_eq!(typed.encode(), changed, "what decodes encodes to its bytes");
                }
            }
        }
        // A row count no bytes could hold.
        let mut huge = MAGIC.to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(TypedRows::decode(&huge), None);
    }
}
