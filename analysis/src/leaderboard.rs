//! The leaderboard CSV: one row per cell, workload, target and metric, with exactly the
//! columns docs/leaderboard.md documents, so that a leaderboard site can ingest it.
//!
//! An agent step publishes the session metrics of `crate::agent` (`ttft_cold_ms`,
//! `ttft_cached_ms`, `cache_hit_ratio`, `decode_tps`), not medians over turns of different
//! sizes; quality runs publish nothing here (`crate::cells` leaves them out).
//!
//! A speed step whose streams ran side by side (concurrency N > 1) publishes its usual rows and
//! the serving rows of `crate::serving` (`output_tps`, `requests_per_s`, p50/p90/p99 of TTFT,
//! ITL, TPOT and E2E), every one of them named with the suffix `@c<N>` (`decode_tps@c4`): the
//! columns have no room for concurrency, and a row at 4 streams must never be read, ranked or
//! merged as one at 1 (docs/leaderboard.md).

pub mod typed;

use crate::cells::{CellStep, MetricKind};
use crate::reasons::join_codes;

/// The number of columns.
pub const N_COLUMNS: usize = 28;

/// The columns, in this order. Changing them breaks every consumer: don't. Columns that came
/// later are at the end, so that a reader by position finds the earlier ones where they were:
/// seven of the comparison key (`crate::key`), then the pass's measurer figures.
pub const COLUMNS: [&str; N_COLUMNS] = [
    "pass_id",
    "machine",
    "engine",
    "engine_version",
    "engine_sha256",
    "model",
    "build_sha256",
    "lane",
    "workload",
    "target_prompt_tokens",
    "metric",
    "unit",
    "median",
    "band_low",
    "band_high",
    "n",
    "n_short",
    "flags",
    "token_count_source",
    "max_tokens",
    "concurrency",
    "request_rate",
    "api",
    "temperature",
    "past_eos",
    "prompt_set",
    "harness_us_per_token",
    "self_check_ttft_error_ms",
];

/// The columns that say which figure a row is and how it was measured: rows alike in all of
/// them are ranked against each other ([`rankings`]); the rest (who, which build, the figure
/// and its flags) are what a ranking lists.
pub const RANKING_KEY: [&str; 15] = [
    "metric",
    "unit",
    "model",
    "lane",
    "workload",
    "target_prompt_tokens",
    "machine",
    "max_tokens",
    "concurrency",
    "request_rate",
    "api",
    "temperature",
    "past_eos",
    "prompt_set",
    "token_count_source",
];

/// Whether a row with `flags` may be ranked, as the report's best marks decide
/// (`report::view::can_be_best`): a decode rate from runs that stopped short may be a burst,
/// or one the server's own timings disagree with; a rate on estimated or contradicted token
/// counts is not measured like the others. Latencies are ranked whatever the token counts.
fn rankable(metric: &str, unit: &str, flags: &str) -> bool {
    let decode = metric == "decode_tps" || metric.starts_with("decode_tps@");
    !flags.split(';').any(|flag| match flag {
        "short-stop" | "reconciliation" => decode,
        "token-estimate" | "usage-mismatch" => unit == "tok/s",
        _ => false,
    })
}

/// Lower is better in milliseconds (latencies), joules and watts; higher everywhere else.
fn lower_is_better(unit: &str) -> bool {
    unit == "ms" || unit.starts_with('J') || unit == "W"
}

/// One ranking: rows alike in every [`RANKING_KEY`] column, best first, and those of them
/// that may not be ranked (a flag that keeps it out, or no number).
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// (column, value) of the key, in [`RANKING_KEY`] order.
    pub key: Vec<(&'static str, String)>,
    pub ranked: Vec<Row>,
    pub unranked: Vec<Row>,
}

/// The leaderboard as rankings: per figure and way of measuring (one comparison key), the
/// rows best first; a group of one row is a ranking of one. The prompt-size rows are left
/// out: a prompt's token count is a fact of the run, not a figure to rank.
pub fn rankings(rows: impl IntoIterator<Item = Row>) -> Vec<Ranking> {
    let column = |name: &str| COLUMNS.iter().position(|c| *c == name).expect("a column");
    let (median, unit, flags, metric) = (column("median"), column("unit"), column("flags"), column("metric"));
    let mut out: Vec<Ranking> = Vec::new();
    for row in rows {
        if row[metric] == "prompt_tokens" {
            continue;
        }
        let key: Vec<(&'static str, String)> = RANKING_KEY.iter().map(|c| (*c, row[column(c)].clone())).collect();
        let at = match out.iter().position(|r| r.key == key) {
            Some(at) => at,
            None => {
                out.push(Ranking { key, ranked: Vec::new(), unranked: Vec::new() });
                out.len() - 1
            }
        };
        let rankable = row[median].parse::<f64>().is_ok_and(f64::is_finite) && rankable(&row[metric], &row[unit], &row[flags]);
        if rankable { out[at].ranked.push(row) } else { out[at].unranked.push(row) }
    }
    for ranking in &mut out {
        let lower = ranking.ranked.first().is_some_and(|r| lower_is_better(&r[unit]));
        let value = |r: &Row| r[median].parse::<f64>().unwrap_or(f64::NAN);
        // Stable: equal figures keep the order of the passes given.
        ranking.ranked.sort_by(|a, b| if lower { value(a).total_cmp(&value(b)) } else { value(b).total_cmp(&value(a)) });
    }
    out
}

/// One row: a value for each of [`COLUMNS`].
pub type Row = [String; N_COLUMNS];

/// The key columns a row gains after `token_count_source`, from `step`'s comparison key.
pub fn key_columns(key: &crate::key::ComparisonKey) -> [String; 7] {
    [
        key.max_tokens.to_string(),
        key.concurrency.to_string(),
        key.request_rate.clone(),
        key.api.clone(),
        key.temperature.clone(),
        key.past_eos.clone(),
        key.prompt_set.clone(),
    ]
}

/// Where `flags` is in [`COLUMNS`].
const FLAGS: usize = 17;

/// The rows of `steps` (one pass's figures), metric by metric.
pub fn rows(steps: &[CellStep]) -> Vec<Row> {
    let mut rows = Vec::new();
    for step in steps {
        let flags = join_codes(&step.reasons);
        // `rate-not-held` is a fact of the serving figures (the runs' schedule and ends, which the
        // runs CSV does not carry): it flags the serving rows, as `tail-is-max` does, so that a
        // pass and its CSV import publish the same per-run rows.
        let serving_flags = flags.clone();
        let flags = join_codes(&step.reasons.iter().filter(|r| r.code != crate::reasons::ReasonCode::RateNotHeld).cloned().collect::<Vec<_>>());
        if let Some(cell) = &step.agent {
            // The session rows as `agent` defines them, flagged like every other row (the
            // step's reasons hold the session reasons and those of its row, engine+build).
            let key = key_columns(&crate::key::ComparisonKey::of(step));
            rows.extend(crate::agent::leaderboard_rows(std::slice::from_ref(cell)).into_iter().map(|row| {
                let mut row: Vec<String> = row.into_iter().chain(key.iter().cloned()).chain(measurer_columns(step)).collect();
                row[FLAGS] = flags.clone();
                Row::try_from(row).expect("an agent row and its key fill every column")
            }));
            continue;
        }
        // Agent sessions keep their names: their side-by-side sessions are the workload's own.
        let concurrency = if crate::serving::applies(step.workload, step.concurrency) { step.concurrency } else { 1 };
        for kind in MetricKind::ALL {
            let Some(metric) = step.metric(kind) else { continue };
            // Fewer runs than a band needs: leave it empty rather than print a width nobody measured.
            let (low, high) = if metric.values.len() >= crate::cells::MIN_RUNS_FOR_BAND {
                (number(metric.band.low), number(metric.band.high))
            } else {
                (String::new(), String::new())
            };
            let name = crate::serving::metric_name(kind.as_str(), concurrency);
            rows.push(row(step, name, kind.unit(), number(metric.median), (low, high), metric.values.len(), flags.clone()));
        }
        // Energy rows name their source and domain in the metric (`joules_per_token:rapl:package+dram`):
        // the columns have no room for them, and rows of two sources must never be ranked as one.
        if let Some(energy) = &step.energy {
            for kind in MetricKind::ENERGY {
                let Some(metric) = step.metric(kind) else { continue };
                let (low, high) = if metric.values.len() >= crate::cells::MIN_RUNS_FOR_BAND {
                    (number(metric.band.low), number(metric.band.high))
                } else {
                    (String::new(), String::new())
                };
                let name = format!("{}:{}", kind.as_str(), energy.key);
                rows.push(row(step, name, kind.unit(), energy_number(metric.median), (low, high), metric.values.len(), flags.clone()));
            }
        }
        if let Some(serving) = &step.serving {
            for row in crate::serving::rows(serving) {
                // A percentile that is only the slowest value says so beside the step's flags.
                let flags = if row.tail_is_max { with_code(&serving_flags, crate::serving::TAIL_IS_MAX) } else { serving_flags.clone() };
                let name = crate::serving::metric_name(&row.metric, serving.concurrency);
                // A percentile or a ratio of sums has no noise band (docs/leaderboard.md).
                rows.push(self::row(step, name, row.unit, number(row.value), (String::new(), String::new()), row.n, flags));
            }
            // The step's energy over its span, named like the serving rows, then with its source
            // and domain as every energy row is (`joules_per_output_token@c4:rapl:package`).
            if let Some(energy) = &serving.energy {
                let figures = [("joules_per_output_token", "J/token", energy.joules_per_output_token), ("mean_watts", "W", Some(energy.mean_watts))];
                for (metric, unit, value) in figures {
                    let Some(value) = value else { continue };
                    let name = format!("{}:{}", crate::serving::metric_name(metric, serving.concurrency), energy.key);
                    rows.push(self::row(step, name, unit, energy_number(value), (String::new(), String::new()), serving.n_ok, serving_flags.clone()));
                }
            }
        }
    }
    rows
}

/// `flags` (the step's codes, in their order) with `code` after them.
fn with_code(flags: &str, code: &str) -> String {
    if flags.is_empty() {
        code.to_owned()
    } else {
        format!("{flags};{code}")
    }
}

/// One row of `step`: its provenance columns, then one figure (`value` already formatted, its
/// band's two ends or two empty fields, the values it was taken over) and the flags.
fn row(step: &CellStep, metric: String, unit: &str, value: String, band: (String, String), n: usize, flags: String) -> Row {
    let [max_tokens, concurrency, request_rate, api, temperature, past_eos, prompt_set] = key_columns(&crate::key::ComparisonKey::of(step));
    let [measurer_us_per_token, self_check_ttft_error_ms] = measurer_columns(step);
    [
        step.pass_id.clone(),
        step.machine.clone(),
        step.engine.clone(),
        step.engine_version.clone(),
        step.engine_sha256.clone().unwrap_or_default(),
        step.model.clone(),
        step.build_sha256.clone().unwrap_or_default(),
        step.lane.clone(),
        step.workload.as_str().to_owned(),
        step.target_prompt_tokens.to_string(),
        metric,
        unit.to_owned(),
        value,
        band.0,
        band.1,
        n.to_string(),
        step.n_short.to_string(),
        flags,
        step.token_count_source.clone(),
        max_tokens,
        concurrency,
        request_rate,
        api,
        temperature,
        past_eos,
        prompt_set,
        measurer_us_per_token,
        self_check_ttft_error_ms,
    ]
}

/// The pass's own columns: what measuring cost and how far its clock was from the truth
/// (docs/metrics.md, "What measuring costs"), empty where it was not recorded.
fn measurer_columns(step: &CellStep) -> [String; 2] {
    [step.measurer_us_per_token.map(|v| format!("{v:.2}")).unwrap_or_default(), step.self_check_ttft_error_ms.map(number).unwrap_or_default()]
}

/// Three decimals: enough for milliseconds and rates, and the same bytes on every machine.
fn number(v: f64) -> String {
    format!("{v:.3}")
}

/// Energy per token is a fraction of a joule on a GPU: six decimals.
fn energy_number(v: f64) -> String {
    format!("{v:.6}")
}

/// Which code works the rows out: a pass's `leaderboard.cache` made by another is worked out
/// again (`benchpass_format::leaderboard_cache`). Bump the number after `+rows.` whenever a
/// change here or in `crate::cells` may change a row of some pass.
pub const ROWS_VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+rows.3");

/// The header line of the file.
pub fn csv_header() -> Vec<u8> {
    csv_records(std::iter::once(COLUMNS.map(str::to_owned)))
}

/// The rows of one pass's figures as the file holds them, without the header line: what a
/// pass's `leaderboard.cache` keeps, and what [`to_csv`] joins.
pub fn csv_rows(steps: &[CellStep]) -> Vec<u8> {
    csv_of(rows(steps))
}

/// `rows` (as [`rows`] works them out) as the file holds them, without the header line.
pub fn csv_of(rows: Vec<Row>) -> Vec<u8> {
    csv_records(rows.into_iter().map(for_spreadsheet))
}

/// The columns whose text comes from engines, users and files (names, versions, ids, hashes,
/// lanes, the API): the ones the CSV guards against spreadsheets (docs/leaderboard.md). Every
/// other column holds numbers or words of this program's own.
pub const SPREADSHEET_TEXT: [usize; 9] = [0, 1, 2, 3, 4, 5, 6, 7, 22];

/// `row` as the CSV writes it: a text cell that a spreadsheet would take for a formula (it
/// starts with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a `'` in front.
pub fn for_spreadsheet(mut row: Row) -> Row {
    for i in SPREADSHEET_TEXT {
        if let std::borrow::Cow::Owned(guarded) = benchpass_format::csv::spreadsheet_cell(&row[i]) {
            row[i] = guarded;
        }
    }
    row
}

/// Whether the cells of a row as the CSV holds them are the cells as recorded: false where a
/// cell starts with `'` and a formula character, which was either guarded or written so by its
/// engine or user (`-beta` and `'-beta` are both written `'-beta`). Every other cell is as
/// [`for_spreadsheet`] was given it.
pub fn recorded_as_is(cells: &[&str; N_COLUMNS]) -> bool {
    SPREADSHEET_TEXT.iter().all(|&i| !cells[i].strip_prefix('\'').is_some_and(|rest| rest.starts_with(benchpass_format::csv::FORMULA_STARTS)))
}

/// What a column holds, for formats that type their columns (the Parquet export).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Text,
    /// A whole number: a count, a token size, a stream count.
    Integer,
    /// A number with decimals, as the CSV writes it.
    Decimal,
}

/// Each of [`COLUMNS`]' type, in order. An empty CSV field is a missing value of its type.
pub const COLUMN_TYPES: [ColumnType; N_COLUMNS] = {
    use ColumnType::{Decimal as D, Integer as I, Text as T};
    [
        T, T, T, T, T, T, T, T, T, I, // pass_id … target_prompt_tokens
        T, T, D, D, D, I, I, T, T, I, // metric … max_tokens
        I, D, T, D, T, T, D, D, // concurrency … self_check_ttft_error_ms
    ]
};

fn csv_records(records: impl IntoIterator<Item = Row>) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in records {
        writer.write_record(&row).expect("writing to memory");
    }
    writer.into_inner().expect("writing to memory")
}

/// The rows in `csv_rows`'s bytes (a cache's), or `None` where they are not rows of
/// [`N_COLUMNS`] fields.
pub fn parse_csv_rows(bytes: &[u8]) -> Option<Vec<Row>> {
    let mut rows = CachedRows::default();
    rows.read(bytes).then(|| rows.iter().map(|cells| cells.map(str::to_owned)).collect())
}

/// Rows as a cache holds them, parsed: every field a slice of one text.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CsvRows {
    /// Every field, unquoted, one after another.
    text: String,
    /// Where each field ends in `text`, [`N_COLUMNS`] a row.
    ends: Vec<usize>,
}

impl CsvRows {
    /// Rows worked out here (from a pass's raw runs), held as a cache's are read.
    pub fn from_rows(rows: &[Row]) -> CsvRows {
        let mut held = CsvRows::default();
        for field in rows.iter().flatten() {
            held.text.push_str(field);
            held.ends.push(held.text.len());
        }
        held
    }

    pub fn len(&self) -> usize {
        self.ends.len() / N_COLUMNS
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Row `r`'s cells.
    pub fn row(&self, r: usize) -> [&str; N_COLUMNS] {
        let ends = &self.ends[r * N_COLUMNS..][..N_COLUMNS];
        let mut start = if r == 0 { 0 } else { self.ends[r * N_COLUMNS - 1] };
        std::array::from_fn(|i| {
            let field = &self.text[start..ends[i]];
            start = ends[i];
            field
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = [&str; N_COLUMNS]> {
        (0..self.len()).map(|r| self.row(r))
    }
}

/// A cache's rows (`csv_rows`'s bytes), read with one parser from one pass to the next (it is
/// reset, not built again: building one costs more than reading a pass's rows), into buffers
/// that are kept too. The Parquet export reads every row of a fleet through here.
#[derive(Debug)]
pub struct CachedRows {
    reader: csv_core::Reader,
    rows: CsvRows,
}

impl Default for CachedRows {
    fn default() -> CachedRows {
        // csv_core's defaults are the csv crate's: `,`, `"` doubled, any line ending.
        CachedRows { reader: csv_core::Reader::new(), rows: CsvRows::default() }
    }
}

impl CachedRows {
    /// Reads `bytes` in place of the rows read before; false (and no rows) where they are not
    /// UTF-8 rows of [`N_COLUMNS`] fields each.
    pub fn read(&mut self, bytes: &[u8]) -> bool {
        let read = self.parse(bytes);
        if !read {
            self.rows.text.clear();
            self.rows.ends.clear();
        }
        read
    }

    fn parse(&mut self, mut input: &[u8]) -> bool {
        use csv_core::ReadRecordResult;
        self.reader.reset();
        self.rows.ends.clear();
        let mut out = std::mem::take(&mut self.rows.text).into_bytes();
        out.clear();
        // Unquoting only takes bytes out: the fields fit in the length of the input.
        out.resize(input.len(), 0);
        let (mut written, mut row_start) = (0, 0);
        // One more than a row has: a row with too many fields fills it.
        let mut ends = [0usize; N_COLUMNS + 1];
        let mut fields = 0;
        loop {
            let (result, n_in, n_out, n_ends) = self.reader.read_record(input, &mut out[written..], &mut ends[fields..]);
            input = &input[n_in..];
            written += n_out;
            fields += n_ends;
            match result {
                // The next call, with no input left, ends the last row.
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::Record => {
                    if fields != N_COLUMNS {
                        return false;
                    }
                    // A row's ends are counted from where the row starts.
                    self.rows.ends.extend(ends[..N_COLUMNS].iter().map(|end| row_start + end));
                    row_start = written;
                    fields = 0;
                }
                ReadRecordResult::End => break,
                // More fields than a row has; or (it cannot be, see above) no room left.
                ReadRecordResult::OutputEndsFull | ReadRecordResult::OutputFull => return false,
            }
        }
        out.truncate(written);
        match String::from_utf8(out) {
            Ok(text) => self.rows.text = text,
            Err(_) => return false,
        }
        // Whole, the fields are UTF-8; each is where none ends inside a character.
        self.rows.ends.iter().all(|&end| self.rows.text.is_char_boundary(end))
    }

    /// The rows read last.
    pub fn rows(&self) -> &CsvRows {
        &self.rows
    }

    /// The rows read last, taken out: the next read starts new buffers.
    pub fn take(&mut self) -> CsvRows {
        std::mem::take(&mut self.rows)
    }

    /// The rows read last, each as its cells.
    pub fn iter(&self) -> impl Iterator<Item = [&str; N_COLUMNS]> {
        self.rows.iter()
    }
}

/// The whole file: header, then the rows of every pass given.
pub fn to_csv<'a>(passes: impl IntoIterator<Item = &'a [CellStep]>) -> String {
    let mut bytes = csv_header();
    for steps in passes {
        bytes.extend_from_slice(&csv_rows(steps));
    }
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_index_names_the_flags_column() {
        assert_eq!(COLUMNS[FLAGS], "flags");
    }

    /// What a cache holds reads back field for field, quoting included; anything but rows of
    /// exactly `N_COLUMNS` fields is no rows at all.
    #[test]
    fn cached_rows_read_back_or_not_at_all() {
        let row = |first: &str| -> Row { std::array::from_fn(|i| if i == 0 { first.to_owned() } else { format!("f{i}") }) };
        let rows = vec![row("plain"), row("a, \"quoted\"\nfield"), row("")];
        assert_eq!(parse_csv_rows(&csv_records(rows.clone())), Some(rows));
        assert_eq!(parse_csv_rows(b""), Some(Vec::new()));
        let short = "a,b,c\n".to_owned();
        assert_eq!(parse_csv_rows(short.as_bytes()), None, "3 fields");
        let mut one_long = csv_records([row("x")]);
        one_long.truncate(one_long.len() - 1);
        one_long.extend_from_slice(b",extra\n");
        assert_eq!(parse_csv_rows(&one_long), None, "one field too many");
        let mut not_utf8 = csv_records([row("x")]);
        not_utf8[0] = 0xff;
        assert_eq!(parse_csv_rows(&not_utf8), None);
    }

    /// The rows of `bytes` as the csv crate reads them (the crate the caches are written with),
    /// or `None` where it finds a row of another length or a field that is not UTF-8.
    fn csv_crate(bytes: &[u8]) -> Option<Vec<Row>> {
        let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(bytes);
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.ok()?;
            if record.len() != N_COLUMNS {
                return None;
            }
            rows.push(std::array::from_fn(|i| record[i].to_owned()));
        }
        Some(rows)
    }

    /// One reader, reset from input to input, reads each as a new csv crate reader does (the
    /// crate the caches are written with): the same rows, or none where that reader would
    /// find a row of another length or a field that is not UTF-8.
    #[test]
    fn one_reader_reads_every_input_as_a_new_csv_reader_does() {
        let line = |first: &str| -> Vec<u8> {
            let mut line = first.as_bytes().to_vec();
            for i in 1..N_COLUMNS {
                line.extend_from_slice(format!(",f{i}").as_bytes());
            }
            line
        };
        let with = |parts: &[&[u8]]| parts.concat();
        let inputs: Vec<Vec<u8>> = vec![
            with(&[&line("a"), b"\n", &line("b"), b"\n"]),
            with(&[&line("short"), b",x\n"]),
            with(&[&line("no end of line")]),
            b"".to_vec(),
            with(&[&line("crlf"), b"\r\n", &line("cr"), b"\r"]),
            with(&[b"\n\n", &line("after blank lines"), b"\n\n"]),
            with(&[b"\xef\xbb\xbf", &line("after a byte-order mark"), b"\n"]),
            // A later line's is a field's: the byte-order mark, and the quotes after it.
            with(&[&line("a"), b"\n", b"\xef\xbb\xbf", &line("\"q\""), b"\n"]),
            with(&[&line("\"quoted, \"\"twice\"\"\nover lines\""), b"\n"]),
            // "é" split by a comma: whole, the fields' bytes are UTF-8; one by one, they are not.
            with(&[b"\xc3,\xa9", &line("")[3..], b"\n"]),
            with(&[&line("\u{e9}t\u{e9}"), b"\n"]),
            with(&[&line("unterminated \"quote")]),
            b"a,b\n".to_vec(),
            with(&[&line("\"\""), b"\n", &line("a"), b"\n"]),
        ];
        let mut reader = CachedRows::default();
        for input in inputs.iter().chain(inputs.iter().rev()) {
            let read = reader.read(input).then(|| reader.iter().map(|cells| cells.map(str::to_owned)).collect::<Vec<Row>>());
            assert_eq!(read, csv_crate(input), "{:?}", String::from_utf8_lossy(input));
            if read.is_none() {
                assert!(reader.rows().is_empty(), "no rows are left from an input that is not rows");
            }
        }
        // Rows worked out here are held as the same rows read back.
        let rows: Vec<Row> = vec![std::array::from_fn(|i| format!("x{i}")), std::array::from_fn(|_| String::new())];
        assert!(reader.read(&csv_records(rows.clone())));
        assert_eq!(*reader.rows(), CsvRows::from_rows(&rows));
    }

    /// Inputs made of plain lines and lines that quote, hold a carriage return or run over
    /// lines, in any order, with every kind of line end, blank lines, byte-order marks, rows too
    /// short or too long, and bytes that are not UTF-8: read as the csv crate reads them, every
    /// one.
    #[test]
    fn plain_and_quoted_lines_mixed_read_as_the_csv_crate_reads_them() {
        const BOM: &[u8] = b"\xef\xbb\xbf";
        const FIELDS: [&[u8]; 14] = [
            b"", b"x", b"engine-1.0", b"\"q\"", b"\"a,b\"", b"\"two\nlines\"", b"\"\"\"\"", b"\xc3\xa9",
            b"\xc3", b"\xa9", b"a\"b", b"\"unclosed", BOM, b"\xef\xbb\xbf\"q\"",
        ];
        const ENDS: [&[u8]; 5] = [b"\n", b"\r\n", b"\r", b"\n\n", b""];
        // A fixed sequence of choices (xorshift): the same inputs on every run.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut pick = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut read_some, mut read_none) = (0, 0);
        let mut reader = CachedRows::default();
        for _ in 0..4000 {
            // A byte-order mark at the start is the file's, not a field's.
            let mut input = if pick(8) == 0 { BOM.to_vec() } else { Vec::new() };
            for _ in 0..pick(4) {
                let n_fields = match pick(8) {
                    0 => N_COLUMNS - 1,
                    1 => N_COLUMNS + 1,
                    _ => N_COLUMNS,
                };
                for f in 0..n_fields {
                    if f > 0 {
                        input.push(b',');
                    }
                    // Mostly plain fields, as a cache's are.
                    let field = if pick(6) == 0 { FIELDS[pick(FIELDS.len())] } else { FIELDS[pick(3)] };
                    input.extend_from_slice(field);
                }
                input.extend_from_slice(ENDS[pick(ENDS.len())]);
            }
            let read = reader.read(&input).then(|| reader.iter().map(|cells| cells.map(str::to_owned)).collect::<Vec<Row>>());
            assert_eq!(read, csv_crate(&input), "{:?}", String::from_utf8_lossy(&input));
            if read.is_some() { read_some += 1 } else { read_none += 1 }
        }
        // Both outcomes are tried many times over.
        assert!(read_some > 500 && read_none > 500, "{read_some} read, {read_none} not");
    }

    #[test]
    fn the_spreadsheet_columns_are_the_documented_ones() {
        let names: Vec<&str> = SPREADSHEET_TEXT.iter().map(|&i| COLUMNS[i]).collect();
        assert_eq!(
            names,
            ["pass_id", "machine", "engine", "engine_version", "engine_sha256", "model", "build_sha256", "lane", "api"]
        );
        assert!(SPREADSHEET_TEXT.iter().all(|&i| COLUMN_TYPES[i] == ColumnType::Text));
    }

    fn cells(row: &Row) -> [&str; N_COLUMNS] {
        row.each_ref().map(String::as_str)
    }

    #[test]
    fn a_guarded_row_reads_back_unless_it_cannot_be_told() {
        let mut row: Row = std::array::from_fn(|_| String::new());
        row[3] = "-beta".into();
        row[22] = "chat".into();
        let guarded = for_spreadsheet(row.clone());
        assert_eq!(guarded[3], "'-beta");
        // Guarded or written so by its engine: both read `'-beta`, so neither is guessed.
        assert!(!recorded_as_is(&cells(&guarded)));
        for text in ["'quoted", "1.2.3"] {
            row[3] = text.into();
            let written = for_spreadsheet(row.clone());
            assert!(recorded_as_is(&cells(&written)), "{text}");
            assert_eq!(written, row, "{text} is written as it was recorded");
        }
    }
}
