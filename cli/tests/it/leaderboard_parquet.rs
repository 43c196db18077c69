//! `benchpass leaderboard --parquet DIR`: every row of the CSV, typed, in Hive's layout by
//! machine and engine; text as recorded (not the CSV's spreadsheet guard); a hostile machine
//! name names one folder inside DIR and reads back whole; an existing DIR is refused and left as
//! it was (docs/leaderboard.md, "Parquet").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ::parquet::file::reader::{FileReader as _, SerializedFileReader};
use ::parquet::record::Field;

use crate::support::*;

/// A machine name that would climb out of the export if it were a path, with a space and a
/// letter outside ASCII.
const HOSTILE_MACHINE: &str = "../../M1 Max/é";

/// Two passes on the reference engine: sustained runs of an engine whose version starts like a
/// formula, on a machine named [`HOSTILE_MACHINE`]; and a 1,2-stream sweep (serving rows, whose
/// bands are empty).
fn measured(root: &Path) -> Vec<PathBuf> {
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "100000"]);
    let sustained = root.join("sustained");
    run_pass(&sim, &sustained, &["--pass-id", "sustained", "--runs", "3", "--max-tokens", "8", "--engine-version=-beta"]);
    let pass_json = sustained.join(harness::pass::PASS_FILE);
    let mut info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&pass_json).unwrap()).unwrap();
    info["machine"]["name"] = HOSTILE_MACHINE.into();
    std::fs::write(&pass_json, serde_json::to_string(&info).unwrap()).unwrap();
    let sweep = root.join("sweep");
    run_pass(&sim, &sweep, &["--pass-id", "sweep", "--concurrency", "1,2", "--runs", "4", "--max-tokens", "8"]);
    vec![sustained, sweep]
}

/// A value of one cell as both formats can say it.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
enum Cell {
    Null,
    Text(String),
    Integer(i64),
    Decimal(f64),
}

/// The CSV's rows, each cell typed by the leaderboard's column types, the guard undone where
/// this test knows it was applied (`'-beta` was `-beta`).
fn csv_cells(csv: &str) -> Vec<Vec<Cell>> {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(reader.headers().unwrap().iter().collect::<Vec<_>>(), analysis::leaderboard::COLUMNS);
    reader
        .records()
        .map(|record| {
            record
                .unwrap()
                .iter()
                .zip(analysis::leaderboard::COLUMN_TYPES)
                .map(|(field, ty)| match (field, ty) {
                    ("", _) => Cell::Null,
                    ("'-beta", _) => Cell::Text("-beta".into()),
                    (v, analysis::leaderboard::ColumnType::Text) => Cell::Text(v.into()),
                    (v, analysis::leaderboard::ColumnType::Integer) => Cell::Integer(v.parse().unwrap()),
                    (v, analysis::leaderboard::ColumnType::Decimal) => Cell::Decimal(v.parse().unwrap()),
                })
                .collect()
        })
        .collect()
}

/// `%XX` decoded, as DuckDB, polars and Spark read a Hive folder name.
fn percent_decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&value[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Every `.parquet` file under `root`, with the (column, value) pairs of its folders.
fn files(root: &Path) -> Vec<(PathBuf, Vec<(String, String)>)> {
    let mut found = Vec::new();
    let mut stack = vec![(root.to_owned(), Vec::new())];
    while let Some((dir, partitions)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                let (column, value) = name.split_once('=').unwrap_or_else(|| panic!("{name}: not a Hive folder"));
                let mut partitions = partitions.clone();
                partitions.push((column.to_owned(), value.to_owned()));
                stack.push((path, partitions));
            } else {
                assert!(name.starts_with("part-") && name.ends_with(".parquet"), "{name}");
                found.push((path, partitions.clone()));
            }
        }
    }
    found.sort();
    found
}

/// The rows of every file, in the CSV's column order, the partition values decoded back in.
fn parquet_cells(root: &Path) -> Vec<Vec<Cell>> {
    let mut rows = Vec::new();
    for (path, partitions) in files(root) {
        let partitions: BTreeMap<String, Cell> = partitions
            .into_iter()
            .map(|(c, v)| (c, if v == "__HIVE_DEFAULT_PARTITION__" { Cell::Null } else { Cell::Text(percent_decoded(&v)) }))
            .collect();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let names: Vec<String> = reader.metadata().file_metadata().schema_descr().columns().iter().map(|c| c.name().to_owned()).collect();
        let expected: Vec<&str> = analysis::leaderboard::COLUMNS.iter().copied().filter(|c| *c != "machine" && *c != "engine").collect();
        assert_eq!(names, expected, "{}: the CSV's columns but the partitions", path.display());
        for row in reader.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            let mut fields: BTreeMap<String, Cell> = row
                .get_column_iter()
                .map(|(name, field)| {
                    let cell = match field {
                        Field::Null => Cell::Null,
                        Field::Str(s) => Cell::Text(s.clone()),
                        Field::Long(v) => Cell::Integer(*v),
                        Field::Double(v) => Cell::Decimal(*v),
                        other => panic!("{name}: {other:?} is not a leaderboard type"),
                    };
                    (name.clone(), cell)
                })
                .collect();
            fields.extend(partitions.clone());
            rows.push(analysis::leaderboard::COLUMNS.iter().map(|c| fields.remove(*c).unwrap()).collect());
        }
    }
    rows
}

fn sorted(mut rows: Vec<Vec<Cell>>) -> Vec<Vec<Cell>> {
    rows.sort_by(|a, b| a.partial_cmp(b).unwrap());
    rows
}

fn leaderboard(args: &[&str]) -> std::process::Output {
    let mut all = vec!["leaderboard"];
    all.extend_from_slice(args);
    benchpass(&all)
}

#[test]
fn the_parquet_export_holds_every_csv_row_typed_by_machine_and_engine() {
    let tmp = temp_dir();
    let dirs = measured(tmp.path());
    let dirs: Vec<&str> = dirs.iter().map(|d| d.to_str().unwrap()).collect();
    let csv = leaderboard(&dirs);
    assert!(csv.status.success(), "{}", String::from_utf8_lossy(&csv.stderr));
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.contains(",'-beta,"), "the CSV guards the version: {csv}");

    let out = tmp.path().join("exports").join("fleet");
    std::fs::create_dir(tmp.path().join("exports")).unwrap();
    let mut args = dirs.clone();
    args.extend(["--parquet", out.to_str().unwrap()]);
    let export = leaderboard(&args);
    let stderr = String::from_utf8_lossy(&export.stderr);
    assert!(export.status.success(), "{stderr}");

    let expected = csv_cells(&csv);
    assert!(expected.len() > 20, "both passes have rows: {}", expected.len());
    assert!(stderr.contains(&format!("{} rows of 2 passes", expected.len())), "{stderr}");
    assert_eq!(sorted(parquet_cells(&out)), sorted(expected.clone()));

    // The hostile name is one folder inside the export, and only the export was made.
    let machines: Vec<String> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(machines.contains(&"machine=..%2F..%2FM1%20Max%2F%C3%A9".to_owned()), "{machines:?}");
    assert_eq!(machines.len(), 2, "{machines:?}");
    let beside: Vec<String> = std::fs::read_dir(tmp.path().join("exports")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(beside, ["fleet"], "no partial folder is left beside the export");
    let mut top: Vec<String> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    top.sort();
    assert_eq!(top, ["exports", "sustained", "sweep"]);

    // The figures are the CSV's numbers: a median of the sweep's 2-stream step, and its band
    // (a serving percentile has none) is null, not zero.
    let median = analysis::leaderboard::COLUMNS.iter().position(|c| *c == "median").unwrap();
    let metric = analysis::leaderboard::COLUMNS.iter().position(|c| *c == "metric").unwrap();
    let band_low = median + 1;
    let parquet = parquet_cells(&out);
    let p50 = parquet.iter().find(|r| r[metric] == Cell::Text("ttft_p50_ms@c2".into())).expect("a serving row");
    assert_eq!(p50[band_low], Cell::Null);
    assert!(matches!(p50[median], Cell::Decimal(v) if v > 0.0));

    // An export never writes over a folder, nor removes one.
    let again = leaderboard(&args);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("it exists; give a folder that does not"), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(sorted(parquet_cells(&out)), sorted(expected));
}

/// docs/leaderboard.md's DuckDB query, as a user would run it on the export.
const DUCKDB_QUERY: &str = "SELECT machine, engine, engine_version, model, median, n, flags
FROM read_parquet('fleet/**/*.parquet', hive_partitioning = true,
                  hive_types = {'machine': VARCHAR, 'engine': VARCHAR})
WHERE metric = 'decode_tps' AND workload = 'sustained'
ORDER BY median DESC";

#[test]
#[ignore = "needs DuckDB for Python (python3 -m pip install duckdb); run with --include-ignored"]
fn duckdb_reads_the_export_with_the_documented_query() {
    let script = format!(
        "import duckdb, json\nprint(json.dumps(duckdb.sql({DUCKDB_QUERY:?}).fetchall()))"
    );
    let probe = std::process::Command::new("python3").args(["-c", "import duckdb"]).output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "DuckDB for Python is not installed: python3 -m pip install duckdb"
    );
    let tmp = temp_dir();
    let dirs = measured(tmp.path());
    let dirs: Vec<&str> = dirs.iter().map(|d| d.to_str().unwrap()).collect();
    let csv = String::from_utf8(leaderboard(&dirs).stdout).unwrap();
    let mut args = dirs.clone();
    let out = tmp.path().join("fleet");
    args.extend(["--parquet", out.to_str().unwrap()]);
    assert!(leaderboard(&args).status.success());

    let output = std::process::Command::new("python3").args(["-c", &script]).current_dir(tmp.path()).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    // Two sustained decode rows: the sustained pass's and the sweep's 1-stream step (at 2
    // streams the name is `decode_tps@c2`), best first, each the CSV's figure; the machine's
    // name decoded whole and the version as the engine gave it.
    let decode: Vec<Vec<Cell>> = csv_cells(&csv)
        .into_iter()
        .filter(|r| r[8] == Cell::Text("sustained".into()) && r[10] == Cell::Text("decode_tps".into()))
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(decode.len(), 2, "{decode:?}");
    let median = |r: &serde_json::Value| r[4].as_f64().unwrap();
    assert!(median(&rows[0]) >= median(&rows[1]), "ORDER BY median DESC: {rows:?}");
    for csv_row in decode {
        let (Cell::Decimal(m), Cell::Integer(n)) = (&csv_row[12], &csv_row[15]) else { panic!("{csv_row:?}") };
        let row = rows.iter().find(|r| median(r) == *m).unwrap_or_else(|| panic!("{csv_row:?} in {rows:?}"));
        assert_eq!(row[5].as_i64(), Some(*n));
        let (machine, version) = if csv_row[0] == Cell::Text("sustained".into()) {
            (HOSTILE_MACHINE.to_owned(), "-beta".to_owned())
        } else {
            let (Cell::Text(machine), Cell::Text(version)) = (&csv_row[1], &csv_row[3]) else { panic!("{csv_row:?}") };
            (machine.clone(), version.clone())
        };
        assert_eq!(row[0], machine.as_str());
        assert_eq!(row[1], "sim");
        assert_eq!(row[2], version.as_str());
        assert_eq!(row[3], "sim-model");
    }
}
