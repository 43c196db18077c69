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
//! Rows are held a bounded number at a time ([`HELD_ROWS`]): when that many wait, the largest
//! partitions are written out, so a partition's rows may be in several files. The export is
//! written into a new folder beside `DIR` and renamed to `DIR` when whole: an export cut short
//! leaves no `DIR` to be read as a fleet's rows.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use analysis::leaderboard::{ColumnType, Row, COLUMNS, COLUMN_TYPES, ROWS_VERSION};
use anyhow::Context as _;
use ::parquet::basic::{LogicalType, Repetition, Type as Physical};
use ::parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::Type;

use super::{for_each_pass, Options, Tally};

/// The partition columns, in the order of the folders.
const PARTITIONS: [usize; 2] = [1, 2];

/// Rows held before the largest partitions are written out: a few hundred megabytes at most.
pub const HELD_ROWS: usize = 1 << 17;

/// The Hive name of a null partition value, which every reader above takes for one.
const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// The longest file name most file systems take.
const MAX_NAME_BYTES: usize = 255;

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
    let mut dataset = Dataset::new(partial.path(), HELD_ROWS);
    let tally = for_each_pass(dirs, options, |pass| {
        let rows = match recorded_rows(pass.rows) {
            Some(rows) => rows,
            // A cell that the spreadsheet guard may have changed: the rows as recorded come from
            // the raw runs again, which say what the text was.
            None => super::raw_rows(pass.dir)?,
        };
        dataset.hold(pass.dir, rows)
    })?;
    dataset.write_all()?;
    let written = dataset.written;
    anyhow::ensure!(out.symlink_metadata().is_err(), "--parquet {}: it appeared while the export was written; nothing was put there", out.display());
    let kept = partial.keep();
    std::fs::rename(&kept, out).with_context(|| format!("renaming {} to {}", kept.display(), out.display()))?;
    Ok((tally, written))
}

/// The rows of a pass's CSV bytes as they were recorded, or `None` where a text cell cannot be
/// told from its guarded form.
fn recorded_rows(csv: &[u8]) -> Option<Vec<Row>> {
    analysis::leaderboard::parse_csv_rows(csv)?.into_iter().map(analysis::leaderboard::from_spreadsheet).collect()
}

struct Dataset {
    root: PathBuf,
    /// Rows held before the largest partitions are written out ([`HELD_ROWS`]).
    limit: usize,
    /// Rows waiting, by partition (machine, engine).
    held: BTreeMap<(String, String), Vec<Row>>,
    n_held: usize,
    written: Written,
    partitions: std::collections::BTreeSet<(String, String)>,
}

impl Dataset {
    fn new(root: &Path, limit: usize) -> Dataset {
        Dataset { root: root.to_owned(), limit, held: BTreeMap::new(), n_held: 0, written: Written::default(), partitions: Default::default() }
    }

    fn hold(&mut self, dir: &Path, rows: Vec<Row>) -> anyhow::Result<()> {
        let mut key: Option<(String, String)> = None;
        for row in rows {
            // A pass's rows are mostly of one machine and engine: the key is made again only
            // when it changes.
            let same = key.as_ref().is_some_and(|(m, e)| *m == row[PARTITIONS[0]] && *e == row[PARTITIONS[1]]);
            if !same {
                let new = (row[PARTITIONS[0]].clone(), row[PARTITIONS[1]].clone());
                // Checked once per partition: the folder's name must be one the file system takes.
                if !self.partitions.contains(&new) {
                    folder(&new).with_context(|| format!("{}", dir.display()))?;
                    self.partitions.insert(new.clone());
                }
                key = Some(new);
            }
            let key = key.as_ref().expect("made above");
            match self.held.get_mut(key) {
                Some(held) => held.push(row),
                None => {
                    self.held.insert(key.clone(), vec![row]);
                }
            }
            self.n_held += 1;
        }
        // The largest first: a partition that gathers many rows gets large files, and small
        // ones wait for more.
        while self.n_held >= self.limit {
            let largest = self.held.iter().max_by_key(|(_, rows)| rows.len()).map(|(k, _)| k.clone()).expect("rows are held");
            self.write_partition(&largest)?;
        }
        Ok(())
    }

    fn write_partition(&mut self, key: &(String, String)) -> anyhow::Result<()> {
        let mut rows = self.held.remove(key).unwrap_or_default();
        self.n_held -= rows.len();
        let dir = self.root.join(folder(key)?);
        std::fs::create_dir_all(&dir).with_context(|| format!("making {}", dir.display()))?;
        let path = dir.join(format!("part-{:05}.parquet", self.written.files));
        write_file(&path, &mut rows).with_context(|| format!("writing {}", path.display()))?;
        self.written.files += 1;
        self.written.rows += rows.len();
        Ok(())
    }

    fn write_all(&mut self) -> anyhow::Result<()> {
        let keys: Vec<_> = self.held.keys().cloned().collect();
        for key in keys {
            self.write_partition(&key)?;
        }
        self.written.partitions = self.partitions.len();
        Ok(())
    }
}

/// `machine=<m>/engine=<e>`, each value percent-encoded.
fn folder((machine, engine): &(String, String)) -> anyhow::Result<PathBuf> {
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

/// One file of `rows`, one row group. Text is moved out of the rows into the file's values,
/// not copied: the rows are not read again.
fn write_file(path: &Path, rows: &mut [Row]) -> anyhow::Result<()> {
    let file = File::create_new(path)?;
    let mut writer = SerializedFileWriter::new(BufWriter::new(file), Arc::new(schema()?), Arc::new(properties()))?;
    let mut group = writer.next_row_group()?;
    let mut columns = file_columns();
    while let Some(mut column) = group.next_column()? {
        let i = columns.next().expect("the schema has a field per file column");
        // Definition levels: 1 where the row has a value, 0 for a null.
        let defined: Vec<i16> = rows.iter().map(|r| i16::from(!r[i].is_empty())).collect();
        let number = |v: &str| format!("column `{}`: `{}` is not a number", COLUMNS[i], harness::progress::printable(v));
        match COLUMN_TYPES[i] {
            ColumnType::Text => {
                let values: Vec<ByteArray> =
                    rows.iter_mut().filter(|r| !r[i].is_empty()).map(|r| ByteArray::from(std::mem::take(&mut r[i]).into_bytes())).collect();
                column.typed::<ByteArrayType>().write_batch(&values, Some(&defined), None)?;
            }
            ColumnType::Integer => {
                let values = present(rows, i).map(|v| v.parse::<i64>().with_context(|| number(v))).collect::<anyhow::Result<Vec<_>>>()?;
                column.typed::<Int64Type>().write_batch(&values, Some(&defined), None)?;
            }
            ColumnType::Decimal => {
                let values = present(rows, i).map(|v| v.parse::<f64>().with_context(|| number(v))).collect::<anyhow::Result<Vec<_>>>()?;
                column.typed::<DoubleType>().write_batch(&values, Some(&defined), None)?;
            }
        }
        column.close()?;
    }
    group.close()?;
    writer.close()?;
    Ok(())
}

/// Column `i`'s values, the nulls (empty fields) left out.
fn present(rows: &[Row], i: usize) -> impl Iterator<Item = &str> {
    rows.iter().map(move |r| r[i].as_str()).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(machine: &str, engine: &str, median: &str) -> Row {
        let mut row: Row = std::array::from_fn(|_| String::new());
        (row[0], row[1], row[2], row[12], row[15]) = ("p".into(), machine.into(), engine.into(), median.into(), "3".into());
        row
    }

    fn rows_in(path: &Path) -> i64 {
        use ::parquet::file::reader::FileReader as _;
        let reader = ::parquet::file::reader::SerializedFileReader::new(File::open(path).unwrap()).unwrap();
        reader.metadata().file_metadata().num_rows()
    }

    /// Held 4 rows at most: the largest partition goes out whenever 4 wait, the rest at the
    /// end; every row is in exactly one file.
    #[test]
    fn held_rows_go_out_largest_partition_first() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 4);
        let dir = Path::new("pass");
        dataset.hold(dir, vec![row("a", "x", "1.000"), row("a", "x", "2.000"), row("b", "x", "3.000")]).unwrap();
        assert_eq!(dataset.written.files, 0);
        // The fourth row: a/x (2 rows, the largest) is written, then b/x and b/y are held.
        dataset.hold(dir, vec![row("b", "y", "4.000")]).unwrap();
        assert_eq!((dataset.written.files, dataset.written.rows, dataset.n_held), (1, 2, 2));
        dataset.write_all().unwrap();
        assert_eq!(dataset.written, Written { rows: 4, files: 3, partitions: 3 });
        assert_eq!(rows_in(&tmp.path().join("machine=a/engine=x/part-00000.parquet")), 2);
        assert_eq!(rows_in(&tmp.path().join("machine=b/engine=x/part-00001.parquet")), 1);
        assert_eq!(rows_in(&tmp.path().join("machine=b/engine=y/part-00002.parquet")), 1);
    }

    #[test]
    fn a_field_that_is_not_its_columns_type_stops_the_export() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 4);
        dataset.hold(Path::new("pass"), vec![row("a", "x", "fast")]).unwrap();
        let error = format!("{:#}", dataset.write_all().unwrap_err());
        assert!(error.contains("column `median`: `fast` is not a number"), "{error}");
    }

    #[test]
    fn a_name_too_long_for_a_folder_names_its_pass() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dataset = Dataset::new(tmp.path(), 4);
        let error = format!("{:#}", dataset.hold(Path::new("data/passes/p"), vec![row(&"é".repeat(60), "x", "1.000")]).unwrap_err());
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
