//! `benchpass leaderboard PASS... --parquet DIR`: the leaderboard's rows as Parquet files,
//! partitioned by machine and engine in Hive's layout, so that DuckDB, polars or Spark read a
//! fleet's passes directly (docs/leaderboard.md, "Parquet").
//!
//! `DIR/machine=<machine>/engine=<engine>/part-NNNNN.parquet`: the two values are
//! percent-encoded in the folder names (a reader decodes them, and a name holding `/` or `..`
//! names no other folder), and are not in the files, as Hive's readers expect. Every other
//! column is the CSV's, typed (`analysis::leaderboard::COLUMN_TYPES`); an empty CSV field is a
//! null. Text is as it was recorded: the CSV's guard against spreadsheets is the CSV's own.
//!
//! Rows are held a bounded number at a time ([`HELD_ROWS`]), each pass's rows as its cache
//! decoded them (column by column, numbers parsed, a run of equal texts kept once), shared by
//! the partitions they fall in and copied nowhere: when that many wait, the largest partitions
//! are written out, so a partition's rows may be in several files. A pass whose rows are in
//! several partitions is kept, and counted, whole until the last of them is written. Each pass's rows are
//! decoded on every core ([`parse_pass`], beside the read of its cache) and held in the
//! passes' order on one thread; the files are encoded on threads of their own ([`Writer`])
//! while the rows that follow are held, the text columns by [`dictionary`] from their runs.
//! The export is written into a new folder beside `DIR` and renamed to `DIR` when whole: an export
//! cut short leaves no `DIR` to be read as a fleet's rows.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use analysis::leaderboard::typed::{self, TypedRows};
use analysis::leaderboard::{ColumnType, Row, COLUMNS, COLUMN_TYPES, N_COLUMNS, ROWS_VERSION};
use anyhow::Context as _;
use harness::pass::leaderboard_cache::Parts;
use ::parquet::basic::{LogicalType, Repetition, Type as Physical};
use ::parquet::data_type::{DoubleType, Int64Type};
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::Type;

use super::{for_each_pass_prepared, Options, PassRows, Tally};

mod dictionary;

/// The partition columns, in the order of the folders.
const PARTITIONS: [usize; 2] = [1, 2];

/// Rows held before the largest partitions are written out: a few hundred megabytes at most.
pub const HELD_ROWS: usize = 1 << 19;

/// The Hive name of a null partition value, which every reader above takes for one.
const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// The longest file name most file systems take.
const MAX_NAME_BYTES: usize = 255;

/// A partition: its machine and engine.
type Key = (String, String);

/// The rows of one pass, typed: from its cache where that holds them, and otherwise from its
/// raw runs.
fn parse_pass(_: &mut (), pass: PassRows<'_>) -> anyhow::Result<TypedRows> {
    if let Some(typed) = TypedRows::decode(pass.typed) {
        return Ok(typed);
    }
    // A cache whose rows could not be typed (a field not of its column's type) keeps none:
    // worked out again, the field is named.
    typed_rows(&super::raw_rows(pass.dir)?)
}

/// `rows` typed; a field that is not its column's type is the error, naming its column.
fn typed_rows(rows: &[Row]) -> anyhow::Result<TypedRows> {
    TypedRows::from_rows(rows).map_err(|e| {
        anyhow::anyhow!("column `{}`: `{}` is not a number: {}", COLUMNS[e.column], harness::progress::printable(&e.cell), e.error)
    })
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    pub rows: usize,
    pub files: usize,
    pub partitions: usize,
}

/// Writes the leaderboard rows of `dirs` as a partitioned Parquet dataset in the new folder
/// `out`. Nothing is written where `out` already is, and nothing is removed there.
pub fn write(dirs: &[PathBuf], options: Options, out: &Path) -> anyhow::Result<(Tally, Written)> {
    let name = out.file_name().with_context(|| format!("--parquet {}: name a folder to create", out.display()))?;
    anyhow::ensure!(
        out.symlink_metadata().is_err(),
        "--parquet {}: it exists; give a folder that does not (an export neither overwrites nor deletes)",
        out.display()
    );
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let partial = tempfile::Builder::new()
        .prefix(&format!(".{}.partial.", name.to_string_lossy()))
        .tempdir_in(parent)
        .with_context(|| format!("making a folder in {}", parent.display()))?;
    // Made after `partial`, so dropped before it: on an error, the files queued are written
    // (or fail) before the folder they go in is removed.
    let mut dataset = Dataset::new(partial.path(), HELD_ROWS)?;
    // Each pass's rows are parsed on every core; the dataset holds them in order.
    let tally = for_each_pass_prepared(dirs, options, Parts::Typed, || (), parse_pass, |pass, parsed| {
        let parsed = parsed.with_context(|| format!("{}", pass.dir.display()))?;
        dataset.take(pass.dir, parsed)?;
        dataset.write_largest_while_full()
    })?;
    dataset.write_all()?;
    let written = dataset.written;
    anyhow::ensure!(out.symlink_metadata().is_err(), "--parquet {}: it appeared while the export was written; nothing was put there", out.display());
    let kept = partial.keep();
    std::fs::rename(&kept, out).with_context(|| format!("renaming {} to {}", kept.display(), out.display()))?;
    Ok((tally, written))
}

struct Dataset {
    root: PathBuf,
    /// Rows held before the largest partitions are written out ([`HELD_ROWS`]).
    limit: usize,
    /// Rows waiting, by partition.
    held: BTreeMap<Key, Held>,
    /// The rows of every pass kept for a partition's rows: a pass is in memory whole until
    /// the last of its partitions is written, so its rows count until then.
    n_held: usize,
    /// For each pass kept (by its number), its chunks not yet written and its rows.
    kept: std::collections::HashMap<usize, (usize, usize)>,
    /// The number the next pass gets.
    passes: usize,
    /// What has been handed to `writer`; the export's figures once `write_all` returns.
    written: Written,
    partitions: std::collections::BTreeSet<Key>,
    writer: Writer,
}

impl Dataset {
    fn new(root: &Path, limit: usize) -> anyhow::Result<Dataset> {
        Ok(Dataset {
            root: root.to_owned(),
            limit,
            held: BTreeMap::new(),
            n_held: 0,
            kept: Default::default(),
            passes: 0,
            written: Written::default(),
            partitions: Default::default(),
            writer: Writer::start()?,
        })
    }

    /// Holds the rows of the pass in `dir`, after the rows of the passes before it.
    fn take(&mut self, dir: &Path, pass: TypedRows) -> anyhow::Result<()> {
        let pass = Arc::new(pass);
        let (machines, engines) = (pass.texts(PARTITIONS[0]), pass.texts(PARTITIONS[1]));
        // The pass's runs of rows of one partition: a pass's rows are mostly of one machine
        // and engine.
        let mut segments = Vec::new();
        let mut start = 0;
        while start < pass.len() {
            let key = (machines[start].to_owned(), engines[start].to_owned());
            let end = (start..pass.len()).find(|&r| machines[r] != key.0 || engines[r] != key.1).unwrap_or(pass.len());
            // Checked once per partition: the folder's name must be one the file system takes.
            if !self.partitions.contains(&key) {
                folder(&key).with_context(|| format!("{}", dir.display()))?;
                self.partitions.insert(key.clone());
            }
            segments.push((key, start..end));
            start = end;
        }
        if segments.is_empty() {
            return Ok(());
        }
        let mut starts = vec![Vec::with_capacity(N_COLUMNS); segments.len()];
        for i in file_columns() {
            for (start, at) in column_starts(&pass, i, segments.iter().map(|(_, rows)| rows.clone())).into_iter().zip(&mut starts) {
                at.push(start);
            }
        }
        let number = self.passes;
        self.passes += 1;
        self.kept.insert(number, (segments.len(), pass.len()));
        self.n_held += pass.len();
        for ((key, rows), columns) in segments.into_iter().zip(starts) {
            let held = self.held.entry(key).or_default();
            held.rows += rows.len();
            held.chunks.push(Chunk { pass: Arc::clone(&pass), number, rows, columns });
        }
        Ok(())
    }

    /// The largest partitions written out while the passes kept are [`HELD_ROWS`] rows or
    /// more: a partition
    /// that gathers many rows gets large files, and small ones wait for more.
    fn write_largest_while_full(&mut self) -> anyhow::Result<()> {
        while self.n_held >= self.limit {
            let largest = self.held.iter().max_by_key(|(_, held)| held.rows).map(|(k, _)| k.clone()).expect("rows are held");
            self.write_partition(&largest)?;
        }
        Ok(())
    }

    fn write_partition(&mut self, key: &Key) -> anyhow::Result<()> {
        let held = self.held.remove(key).unwrap_or_default();
        for chunk in &held.chunks {
            let (left, rows) = self.kept.get_mut(&chunk.number).expect("a held pass is kept");
            *left -= 1;
            if *left == 0 {
                self.n_held -= *rows;
                self.kept.remove(&chunk.number);
            }
        }
        let dir = self.root.join(folder(key)?);
        std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
        // Numbered here, in the order the files are handed over: the same passes give the
        // same files whatever the writer's pace.
        let path = dir.join(format!("part-{:05}.parquet", self.written.files));
        self.written.files += 1;
        self.written.rows += held.rows;
        self.writer.write(path, held)
    }

    /// Writes every partition still held, and waits for every file.
    fn write_all(&mut self) -> anyhow::Result<()> {
        let keys: Vec<_> = self.held.keys().cloned().collect();
        for key in keys {
            self.write_partition(&key)?;
        }
        self.written.partitions = self.partitions.len();
        self.writer.finish()
    }
}

/// Files handed to threads that encode and write them (one a core), while the caller reads
/// and holds the rows that follow: encoding is the larger part of an export's CPU. At most one
/// file waits beside those being written, so the rows out of [`HELD_ROWS`] are a few
/// partitions' at most.
struct Writer {
    files: Option<std::sync::mpsc::SyncSender<(PathBuf, Held)>>,
    threads: Vec<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Writer {
    fn start() -> anyhow::Result<Writer> {
        let (files, queue) = std::sync::mpsc::sync_channel::<(PathBuf, Held)>(1);
        let queue = Arc::new(std::sync::Mutex::new(queue));
        // Set by the first thread that fails: the others stop at their next file, and once
        // every thread has stopped (and dropped `queue`) the caller's next hand-over fails.
        let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let (queue, failed) = (Arc::clone(&queue), Arc::clone(&failed));
                std::thread::Builder::new()
                    .name("parquet writer".to_owned())
                    .spawn(move || loop {
                        // The lock is held only to take a file; dropped with the guard's line.
                        let next = queue.lock().map_err(|_| anyhow::anyhow!("a Parquet writer's thread panicked"))?.recv();
                        let Ok((path, held)) = next else { return Ok(()) };
                        if failed.load(std::sync::atomic::Ordering::Relaxed) {
                            return Ok(());
                        }
                        let written = write_file(&path, held).with_context(|| format!("writing {}", path.display()));
                        if written.is_err() {
                            failed.store(true, std::sync::atomic::Ordering::Relaxed);
                            return written;
                        }
                    })
                    .context("starting the Parquet writer's threads")
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Writer { files: Some(files), threads })
    }

    /// Hands a file over; where every thread has stopped, the first error.
    fn write(&mut self, path: PathBuf, held: Held) -> anyhow::Result<()> {
        let files = self.files.as_ref().context("the Parquet writer has finished")?;
        if files.send((path, held)).is_err() {
            self.finish()?;
            anyhow::bail!("the Parquet writer stopped before its files were written");
        }
        Ok(())
    }

    /// Waits for every file handed over: the first error in writing them, if any.
    fn finish(&mut self) -> anyhow::Result<()> {
        drop(self.files.take());
        let mut first = Ok(());
        for thread in self.threads.drain(..) {
            let done = thread.join().map_err(|_| anyhow::anyhow!("a Parquet writer's thread panicked")).and_then(|r| r);
            if first.is_ok() {
                first = done;
            }
        }
        first
    }
}

impl Drop for Writer {
    /// An export stopped early still waits for the files it handed over, so that none is
    /// written after the caller has moved on (and removed their folder).
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// One partition's rows: runs of the rows of passes, in order, each pass's rows kept as its
/// cache decoded them (and shared by its partitions) until the file is encoded, so that
/// holding them copies nothing.
#[derive(Default)]
struct Held {
    rows: usize,
    chunks: Vec<Chunk>,
}

/// A run of one pass's rows in a partition.
struct Chunk {
    pass: Arc<TypedRows>,
    /// The pass's number, in the order passes were held.
    number: usize,
    rows: std::ops::Range<usize>,
    /// Where they begin in each of [`file_columns`], in order.
    columns: Vec<ColumnStart>,
}

/// Where a chunk's rows begin in a column: its values (nulls left out), and for a text column
/// the run the first is in and how many values of that run come before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ColumnStart {
    values: (usize, usize),
    run: usize,
    skip: usize,
}

/// Where each of `chunks` (runs of rows, in order) begins in column `i` of `pass`: one walk
/// of the column, however many chunks.
fn column_starts(pass: &TypedRows, i: usize, chunks: impl Iterator<Item = std::ops::Range<usize>>) -> Vec<ColumnStart> {
    let column = pass.column(i);
    let counts: Vec<usize> = match column.values {
        typed::Values::Text(texts) => texts.counts().collect(),
        _ => Vec::new(),
    };
    // The next value: its index, its run, and how many values of that run come before it.
    let (mut value, mut run, mut skip) = (0, 0, 0);
    chunks
        .map(|rows| {
            let n = column.defined[rows].iter().filter(|&&d| d).count();
            let start = ColumnStart { values: (value, value + n), run, skip };
            value += n;
            if !counts.is_empty() {
                let mut advance = n;
                while advance > 0 {
                    let left = counts[run] - skip;
                    if advance < left {
                        skip += advance;
                        break;
                    }
                    advance -= left;
                    (run, skip) = (run + 1, 0);
                }
            }
            start
        })
        .collect()
}

impl Held {
    /// Column `i`'s definition levels, in `levels` (emptied first): 1 where a row has a
    /// value, 0 for a null (an empty field).
    fn levels(&self, i: usize, levels: &mut Vec<i16>) {
        levels.clear();
        for chunk in &self.chunks {
            levels.extend(chunk.pass.column(i).defined[chunk.rows.clone()].iter().map(|&d| i16::from(d)));
        }
    }
}

/// `machine=<m>/engine=<e>`, each value percent-encoded.
fn folder((machine, engine): &Key) -> anyhow::Result<PathBuf> {
    let mut path = PathBuf::new();
    for (column, value) in PARTITIONS.iter().zip([machine, engine]) {
        let name = format!("{}={}", COLUMNS[*column], partition_value(value));
        anyhow::ensure!(
            name.len() <= MAX_NAME_BYTES,
            "its {} `{}` is too long to name a partition folder ({} bytes encoded; at most {MAX_NAME_BYTES})",
            COLUMNS[*column],
            harness::progress::printable(value),
            name.len()
        );
        path.push(name);
    }
    Ok(path)
}

/// A partition value as a folder name: ASCII letters, digits, `-`, `_` and `.` as they are,
/// every other byte of its UTF-8 as `%XX` (which DuckDB, polars, pyarrow and Spark decode); an
/// empty value is Hive's null, and a value that is Hive's null's own name is encoded so that it
/// is not read as one.
pub fn partition_value(value: &str) -> String {
    if value.is_empty() {
        return NULL_PARTITION.to_owned();
    }
    let mut out = String::with_capacity(value.len());
    for (i, byte) in value.bytes().enumerate() {
        let literal = byte.is_ascii_alphanumeric() || b"-_.".contains(&byte);
        if literal && !(i == 0 && value == NULL_PARTITION) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The columns a file holds: all but the partitions, in the CSV's order.
fn file_columns() -> impl Iterator<Item = usize> {
    (0..COLUMNS.len()).filter(|i| !PARTITIONS.contains(i))
}

fn schema() -> anyhow::Result<Type> {
    let fields = file_columns()
        .map(|i| {
            let (physical, logical) = match COLUMN_TYPES[i] {
                ColumnType::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                ColumnType::Integer => (Physical::INT64, None),
                ColumnType::Decimal => (Physical::DOUBLE, None),
            };
            Ok(Arc::new(
                Type::primitive_type_builder(COLUMNS[i], physical)
                    .with_repetition(Repetition::OPTIONAL)
                    .with_logical_type(logical)
                    .build()?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Type::group_type_builder("leaderboard").with_fields(fields).build()?)
}

fn properties() -> WriterProperties {
    WriterProperties::builder()
        .set_created_by(format!("benchpass {}", env!("CARGO_PKG_VERSION")))
        // Which code worked the rows out, as a pass's leaderboard.cache says it.
        .set_key_value_metadata(Some(vec![KeyValue::new("benchpass.rows_version".to_owned(), ROWS_VERSION.to_owned())]))
        .build()
}

/// A number column's values over every chunk, one after another (`of` takes the column's
/// values as its type).
fn numbers<'a, T: Copy + 'a>(
    rows: usize,
    chunks: impl Iterator<Item = (typed::Values<'a>, ColumnStart)>,
    of: impl Fn(typed::Values<'a>) -> Option<&'a [T]>,
) -> Vec<T> {
    let mut all = Vec::with_capacity(rows);
    for (values, start) in chunks {
        let values = of(values).expect("typed rows hold each column as its type");
        all.extend_from_slice(&values[start.values.0..start.values.1]);
    }
    all
}

/// One file of a partition's rows, one row group.
fn write_file(path: &Path, held: Held) -> anyhow::Result<()> {
    let file = File::create_new(path)?;
    let mut writer = SerializedFileWriter::new(BufWriter::new(file), Arc::new(schema()?), Arc::new(properties()))?;
    let descriptors: Vec<_> = writer.schema_descr().columns().to_vec();
    let mut group = writer.next_row_group()?;
    // Made once a file, for every column in turn: a text column has no more runs than rows.
    let (mut levels, mut runs) = (Vec::with_capacity(held.rows), Vec::<(&[u8], usize)>::with_capacity(held.rows));
    for ((at, i), descr) in file_columns().enumerate().zip(descriptors) {
        held.levels(i, &mut levels);
        let values = held.chunks.iter().map(|chunk| (chunk.pass.column(i).values, chunk.columns[at]));
        match COLUMN_TYPES[i] {
            ColumnType::Text => {
                runs.clear();
                for (values, start) in values {
                    let typed::Values::Text(texts) = values else { unreachable!("typed rows hold each column as its type") };
                    let n = start.values.1 - start.values.0;
                    runs.extend(texts.runs_from(start.run, start.skip, n).map(|(text, n)| (text.as_bytes(), n)));
                }
                let (chunk, close) = dictionary::text_chunk(descr, &dictionary::TextColumn { defined: &levels, runs: &runs })?;
                group.append_column(&chunk, close)?;
            }
            ColumnType::Integer => {
                let all = numbers(held.rows, values, |v| if let typed::Values::Integer(v) = v { Some(v) } else { None });
                let mut column = group.next_column()?.context("the schema has a field per file column")?;
                column.typed::<Int64Type>().write_batch(&all, Some(&levels), None)?;
                column.close()?;
            }
            ColumnType::Decimal => {
                let all = numbers(held.rows, values, |v| if let typed::Values::Decimal(v) = v { Some(v) } else { None });
                let mut column = group.next_column()?.context("the schema has a field per file column")?;
                column.typed::<DoubleType>().write_batch(&all, Some(&levels), None)?;
                column.close()?;
            }
        }
    }
    group.close()?;
    writer.close()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(machine: &str, engine: &str, median: &str) -> Row {
        let mut row: Row = std::array::from_fn(|_| String::new());
        (row[0], row[1], row[2], row[12], row[15]) = ("p".into(), machine.into(), engine.into(), median.into(), "3".into());
        row
    }

    /// Holds a pass's rows as the export does: whole, then the largest partitions written
    /// while full.
    fn hold(dataset: &mut Dataset, dir: &Path, rows: Vec<Row>) -> anyhow::Result<()> {
        let parsed = typed_rows(&rows).with_context(|| format!("{}", dir.display()))?;
        dataset.take(dir, parsed)?;
        dataset.write_largest_while_full()
    }

    fn rows_in(path: &Path) -> i64 {
        use ::parquet::file::reader::FileReader as _;
        let reader = ::parquet::file::reader::SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        reader.metadata().file_metadata().num_rows()
    }

    /// Held 4 rows at most: the largest partition goes out whenever the passes kept are 4 rows,
    /// the rest at the end; every row is in exactly one file.
    #[test]
    fn held_rows_go_out_largest_partition_first() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 4).unwrap();
        let dir = Path::new("pass");
        hold(&mut dataset, dir, vec![row("a", "x", "1.000"), row("a", "x", "2.000"), row("b", "x", "3.000")]).unwrap();
        assert_eq!(dataset.written.files, 0);
        // The fourth row: a/x (2 rows, the largest) is written, but the first pass is kept for
        // b/x, so its 3 rows still count; then b/y (the last of the largest), which frees the
        // second pass. b/x is held.
        hold(&mut dataset, dir, vec![row("b", "y", "4.000")]).unwrap();
        assert_eq!((dataset.written.files, dataset.written.rows, dataset.n_held), (2, 3, 3));
        dataset.write_all().unwrap();
        assert_eq!(dataset.written, Written { rows: 4, files: 3, partitions: 3 });
        assert_eq!(dataset.n_held, 0);
        assert_eq!(rows_in(&tmp.path().join("machine=a/engine=x/part-00000.parquet")), 2);
        assert_eq!(rows_in(&tmp.path().join("machine=b/engine=y/part-00001.parquet")), 1);
        assert_eq!(rows_in(&tmp.path().join("machine=b/engine=x/part-00002.parquet")), 1);
    }

    /// Every text column's values read back as held, by the `parquet` crate's own reader,
    /// through the patterns the dictionary and its runs must survive: a value on every row,
    /// one alternating with another row by row (bit-packed), runs of 9 and more (RLE), nulls
    /// between equal values, 300 distinct values (9-bit indices), and a column with none.
    #[test]
    fn text_columns_read_back_as_held() {
        use ::parquet::file::reader::FileReader as _;
        let texts: Vec<usize> = file_columns().filter(|&i| COLUMN_TYPES[i] == ColumnType::Text).collect();
        let cell = |column: usize, r: usize| -> String {
            match texts.iter().position(|&c| c == column).expect("a text column") % 6 {
                0 => "same".to_owned(),
                1 => ["tok/s", "ms"][r % 2].to_owned(),
                2 => format!("run-{}", r / 9),
                3 => if r % 3 == 1 { String::new() } else { format!("v{}", r / 5) },
                4 => format!("distinct-{r}"),
                _ => String::new(),
            }
        };
        let rows: Vec<Row> = (0..700)
            .map(|r| {
                // Rows 350..500 are of another partition: the pass is three chunks, the later
                // ones beginning inside runs and after nulls.
                let mut row = row("m", if (350..500).contains(&r) { "f" } else { "e" }, "1.000");
                for &i in &texts {
                    row[i] = cell(i, r);
                }
                row
            })
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 1 << 20).unwrap();
        hold(&mut dataset, Path::new("pass"), rows.clone()).unwrap();
        dataset.write_all().unwrap();
        let open = |engine: &str, file: usize| {
            let path = tmp.path().join(format!("machine=m/engine={engine}/part-{file:05}.parquet"));
            ::parquet::file::reader::SerializedFileReader::new(File::open(&path).unwrap()).unwrap()
        };
        let (reader, other) = (open("e", 0), open("f", 1));
        let mut read: Vec<_> = reader.get_row_iter(None).unwrap().map(|r| r.unwrap()).collect();
        // In the rows' order again: e's first 350, f's 150, then e's last 200.
        let tail = read.split_off(350);
        read.extend(other.get_row_iter(None).unwrap().map(|r| r.unwrap()));
        read.extend(tail);
        assert_eq!(read.len(), rows.len());
        for (r, (row, read)) in rows.iter().zip(&read).enumerate() {
            let fields: std::collections::HashMap<&str, &::parquet::record::Field> = read.get_column_iter().map(|(n, f)| (n.as_str(), f)).collect();
            for &i in &texts {
                let expected = match row[i].as_str() {
                    "" => ::parquet::record::Field::Null,
                    text => ::parquet::record::Field::Str(text.to_owned()),
                };
                assert_eq!(*fields[COLUMNS[i]], expected, "row {r}, column `{}`", COLUMNS[i]);
            }
        }
        // The statistics a reader skips files by: the least and greatest text, and the nulls.
        let group = reader.metadata().row_group(0);
        let stats = |name: &str| group.columns().iter().find(|c| c.column_descr().name() == name).unwrap().statistics().unwrap().clone();
        let distinct = stats(COLUMNS[texts[4]]);
        assert_eq!((distinct.min_bytes_opt(), distinct.max_bytes_opt()), (Some(b"distinct-0".as_slice()), Some(b"distinct-99".as_slice())));
        assert_eq!(distinct.null_count_opt(), Some(0));
        // Rows 1, 4, … 697 have no value, 50 of them among rows 350..500.
        assert_eq!(stats(COLUMNS[texts[3]]).null_count_opt(), Some(233 - 50));
        let none = stats(COLUMNS[texts[5]]);
        assert_eq!((none.min_bytes_opt(), none.null_count_opt()), (None, Some(550)));
    }

    #[test]
    fn a_field_that_is_not_its_columns_type_stops_the_export() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 4).unwrap();
        let error = format!("{:#}", hold(&mut dataset, Path::new("data/passes/p"), vec![row("a", "x", "fast")]).unwrap_err());
        assert_eq!(error, "data/passes/p: column `median`: `fast` is not a number: invalid float literal");
        assert_eq!(dataset.n_held, 0, "a row is held whole or not at all");
    }

    /// A file the writer's thread cannot write: its error, naming the file, comes back to the
    /// caller, at the latest when the export waits for every file.
    #[test]
    fn a_file_that_cannot_be_written_stops_the_export_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let taken = tmp.path().join("machine=a/engine=x/part-00000.parquet");
        std::fs::create_dir_all(taken.parent().unwrap()).unwrap();
        std::fs::write(&taken, "not the export's").unwrap();
        let mut dataset = Dataset::new(tmp.path(), 2).unwrap();
        let held = hold(&mut dataset, Path::new("pass"), vec![row("a", "x", "1.000"), row("a", "x", "2.000")]);
        let error = format!("{:#}", held.and_then(|()| dataset.write_all()).unwrap_err());
        assert!(error.starts_with(&format!("writing {}: ", taken.display())), "{error}");
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "not the export's", "nothing is overwritten");
    }

    #[test]
    fn a_name_too_long_for_a_folder_names_its_pass() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 4).unwrap();
        let error = format!("{:#}", hold(&mut dataset, Path::new("data/passes/p"), vec![row(&"é".repeat(60), "x", "1.000")]).unwrap_err());
        assert!(error.starts_with("data/passes/p: its machine"), "{error}");
        assert!(error.contains("too long to name a partition folder (368 bytes encoded; at most 255)"), "{error}");
    }

    #[test]
    fn partition_values_name_one_folder_each() {
        assert_eq!(partition_value("llama.cpp"), "llama.cpp");
        assert_eq!(partition_value("M1 Max/../x"), "M1%20Max%2F..%2Fx");
        assert_eq!(partition_value("é"), "%C3%A9");
        assert_eq!(partition_value("100%"), "100%25");
        assert_eq!(partition_value(""), "__HIVE_DEFAULT_PARTITION__");
        assert_eq!(partition_value("__HIVE_DEFAULT_PARTITION__"), "%5F_HIVE_DEFAULT_PARTITION__");
    }
}
