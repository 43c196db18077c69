//! `benchpass import --format vllm-bench FILE.json`: the result file of vLLM's
//! `vllm bench serve --save-result --save-detailed` (formerly `benchmarks/benchmark_serving.py`)
//! as a pass. Each request becomes a run, in a lane of its own (`vllm-bench …`: vLLM's client
//! timed it, not benchpass's), so that reports never mix its figures with benchpass's own.
//!
//! The format is read from vLLM's source (docs/raw-format.md, "Importing vllm bench serve
//! results"): `input_lens`, `output_lens`, `ttfts` (seconds), `itls` (per request, seconds
//! between streamed chunks after the first) and `errors` hold one entry per request, in the
//! order the requests were sent, failed ones included.
//!
//! - TTFT is `ttfts[i]`; the decode span is `sum(itls[i])` (last chunk − first chunk), so
//!   benchpass's decode tok/s, (completion_tokens − 1) / decode, is (output_len − 1) / sum(itl).
//! - A request failed when its `errors` entry is not empty (or, with an empty entry, when no
//!   chunk arrived and nothing was counted). It becomes a run with error class `imported-error`
//!   and vLLM's text as the message; what arrived before the failure (TTFT, chunks) is kept,
//!   its counts are not (vLLM writes 0 output tokens for every failed request).
//! - The file does not record finish reasons or token caps: `finish_reason` is absent and
//!   `max_tokens` is 0.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::format::*;
use super::store::write_imported;
use crate::metrics;

/// The error class of an imported request that failed.
pub const ERROR_CLASS: &str = "imported-error";

/// The most requests one file may bring (over all its results): a plan's bound on the runs of a
/// pass (`plan::file::MAX_PLANNED_RUNS`). A file of more is refused, nothing written: a pass
/// made from a hostile file holds no more runs than one benchpass could have measured.
pub const MAX_REQUESTS: usize = 1_000_000;

/// The longest error text of a request a run keeps, as for a server's error body
/// (`client.rs`); the cut is marked with `…`. Names (`model_id`, `backend`) are cut to
/// [`bounded::MAX_SERVER_STRING_CHARS`](crate::bounded::MAX_SERVER_STRING_CHARS): they are
/// repeated into every row of a CSV export.
pub const MAX_ERROR_CHARS: usize = 2000;

/// The per-request arrays `--save-detailed` keeps, that the import needs.
const PER_REQUEST: [&str; 5] = ["input_lens", "output_lens", "ttfts", "itls", "errors"];

pub struct VllmBenchImport<'a> {
    pub file: &'a Path,
    pub out_dir: &'a Path,
    pub pass_id: Option<String>,
    pub machine: Option<String>,
    /// The engine that served the requests: the file names only the client's backend.
    pub engine: Option<String>,
}

/// One request as vLLM recorded it.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    input_len: u64,
    output_len: u64,
    ttft_s: f64,
    itl_s: Vec<f64>,
    error: String,
}

/// One result object (a file written with `--append-result` holds several, one a line).
#[derive(Debug, Clone, PartialEq)]
struct BenchResult {
    model_id: String,
    lane: String,
    max_concurrency: Option<u64>,
    requests: Vec<Request>,
}

pub fn import(options: VllmBenchImport<'_>) -> anyhow::Result<PathBuf> {
    let path = options.file;
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
    let results = parse(&text, &name)?;

    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "vllm-bench".to_owned());
    let pass_id = options.pass_id.unwrap_or_else(|| format!("vllm-bench-{stem}"));
    crate::pass_id::check_pass_id(&pass_id)?;
    let engine = options.engine.unwrap_or_else(|| "openai-compatible".to_owned());

    let mut cells: Vec<CellInfo> = Vec::new();
    let mut reps: Vec<u32> = Vec::new();
    let mut runs = Vec::new();
    for result in &results {
        let index = match cells.iter().position(|c| c.model == result.model_id && c.lane == result.lane) {
            Some(i) => i,
            None => {
                let cell = CellInfo::new(format!("c{}", cells.len()), EngineInfo::named(engine.clone()), result.model_id.clone());
                cells.push(CellInfo { lane: result.lane.clone(), ..cell });
                reps.push(0);
                cells.len() - 1
            }
        };
        // No client-side limit: at most every request of the result was in flight at once.
        let concurrency = u32::try_from(result.max_concurrency.unwrap_or(result.requests.len() as u64)).unwrap_or(u32::MAX);
        for request in &result.requests {
            let rep = reps[index];
            reps[index] += 1;
            runs.push(RunRecord { concurrency, ..run_record(&cells[index].id, rep, request) });
        }
    }

    let dir = options.out_dir.join(&pass_id);
    let machine = options.machine.unwrap_or_else(|| "unknown".to_owned());
    let from = format!("vllm-bench {}", path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    write_imported(&dir, pass_id, machine, cells, &runs, Some(from))?;
    Ok(dir)
}

/// A request as a run: figures in milliseconds, counts from vLLM (which takes them from the
/// server's `usage`), failures with vLLM's error text.
fn run_record(cell: &str, rep: u32, r: &Request) -> RunRecord {
    // A chunk arrived: vLLM set the TTFT (a real one is never exactly 0; vLLM leaves 0.0 when
    // none came).
    let first_chunk = r.ttft_s > 0.0;
    let failed = !r.error.is_empty() || (!first_chunk && r.output_len == 0 && r.itl_s.is_empty());
    let mut run = RunRecord::unmeasured(cell, Workload::PromptMatrix, 0, rep, false, 0);
    run.ttft_ms = first_chunk.then_some(r.ttft_s * 1000.0);
    // Summed from +0.0 (`Sum` for floats starts at −0.0, which would write `-0.0` for no chunks).
    run.decode_ms = first_chunk.then(|| r.itl_s.iter().fold(0.0, |a, b| a + b) * 1000.0);
    if failed {
        let message = if r.error.is_empty() {
            "vllm bench recorded this request as failed without an error text (no chunk arrived)".to_owned()
        } else {
            r.error.clone()
        };
        run.error = Some(RunError { class: ERROR_CLASS.to_owned(), message });
    } else {
        run.prompt_tokens = Some(r.input_len);
        run.completion_tokens = Some(r.output_len);
        // vLLM's client counts with its own tokenizer when usage comes in a message with choices.
        run.token_count_source = Some(TokenCountSource::Tool);
    }
    run
}

/// Every result in the file, checked: nothing is written unless all of it reads.
fn parse(text: &str, file: &str) -> anyhow::Result<Vec<BenchResult>> {
    let text = strict_json(text);
    let mut values = Vec::new();
    for value in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        let value = value.map_err(|e| {
            anyhow::anyhow!("{file}: not JSON ({e}); expected the file that `vllm bench serve --save-result --save-detailed` writes")
        })?;
        values.push(value);
    }
    anyhow::ensure!(!values.is_empty(), "{file}: the file is empty; expected the file that `vllm bench serve --save-result --save-detailed` writes");
    let several = values.len() > 1;
    let results = values
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            let place = if several { format!("{file}: result {}", i + 1) } else { file.to_owned() };
            parse_result(value, &place)
        })
        .collect::<anyhow::Result<Vec<BenchResult>>>()?;
    let n: usize = results.iter().map(|r| r.requests.len()).sum();
    anyhow::ensure!(n <= MAX_REQUESTS, "{file}: {n} requests over {} results; benchpass imports at most {MAX_REQUESTS} from one file (as many runs as a plan may hold)", results.len());
    Ok(results)
}

fn parse_result(value: Value, place: &str) -> anyhow::Result<BenchResult> {
    let Value::Object(map) = value else {
        bail!(
            "{place}: a JSON {}, not a `vllm bench serve` result (a JSON object with `model_id` and per-request arrays); the `.pytorch.json` file written beside a result is not one either",
            kind(&value)
        );
    };
    if PER_REQUEST.iter().all(|key| !map.contains_key(*key)) {
        bail!(
            "{place}: no per-request arrays (`ttfts`, `itls`, `input_lens`, `output_lens`, `errors`): the result holds only aggregates; re-run vllm bench serve with --save-detailed"
        );
    }
    if !map.contains_key("ttfts") && !map.contains_key("output_lens") {
        bail!("{place}: no `ttfts` or `output_lens`: a pooling (embedding, rerank) benchmark has no generation to import; benchpass imports generation benchmarks only");
    }
    let model_id = crate::bounded::server_string(&field::<String>(&map, "model_id", place)?);
    let input_lens: Vec<u64> = field(&map, "input_lens", place)?;
    let output_lens: Vec<u64> = field(&map, "output_lens", place)?;
    let ttfts: Vec<f64> = field(&map, "ttfts", place)?;
    let itls: Vec<Vec<f64>> = field(&map, "itls", place)?;
    let errors: Vec<Option<String>> = field(&map, "errors", place)?;
    let n = ttfts.len();
    for (key, len) in [("input_lens", input_lens.len()), ("output_lens", output_lens.len()), ("itls", itls.len()), ("errors", errors.len())] {
        anyhow::ensure!(len == n, "{place}: `{key}` has {len} entries but `ttfts` has {n}: the per-request arrays must have one entry per request");
    }
    anyhow::ensure!(n > 0, "{place}: the per-request arrays are empty: no requests to import");
    anyhow::ensure!(n <= MAX_REQUESTS, "{place}: {n} requests; benchpass imports at most {MAX_REQUESTS} from one file (as many runs as a plan may hold)");
    // The bounds a runs CSV's import checks (docs/metrics.md, "Bounds"): times finite, 0 or
    // more and at most 30 days, counts at most 2^32.
    let max_s = metrics::MAX_MS / 1e3;
    for (i, (&ttft, itl)) in ttfts.iter().zip(&itls).enumerate() {
        anyhow::ensure!((0.0..=max_s).contains(&ttft), "{place}: `ttfts` entry {i} is {ttft}: expected seconds, 0 to {max_s} (30 days)");
        if let Some(bad) = itl.iter().find(|x| **x < 0.0) {
            bail!("{place}: `itls` entry {i} holds {bad}: expected seconds, 0 or more");
        }
        let span = itl.iter().fold(0.0, |a, b| a + b);
        anyhow::ensure!(span <= max_s, "{place}: `itls` entry {i} adds up to {span} s: expected a decode span of at most {max_s} s (30 days)");
    }
    for (key, lens) in [("input_lens", &input_lens), ("output_lens", &output_lens)] {
        if let Some((i, len)) = lens.iter().enumerate().find(|(_, len)| **len > metrics::MAX_COUNT) {
            bail!("{place}: `{key}` entry {i} is {len}: expected a whole number of tokens up to {}", metrics::MAX_COUNT);
        }
    }

    let requests: Vec<Request> = (0..n)
        .map(|i| Request {
            input_len: input_lens[i],
            output_len: output_lens[i],
            ttft_s: ttfts[i],
            itl_s: itls[i].clone(),
            error: errors[i].as_deref().map(|e| cut(e, MAX_ERROR_CHARS)).unwrap_or_default(),
        })
        .collect();
    // vLLM counts its successes in `completed`: the import must agree on which requests failed.
    if let Some(completed) = map.get("completed").and_then(Value::as_u64) {
        let ok = requests.iter().filter(|r| run_record("c0", 0, r).error.is_none()).count() as u64;
        anyhow::ensure!(
            ok == completed,
            "{place}: `completed` says {completed} requests succeeded but {ok} have no error; the per-request arrays do not match the totals"
        );
    }

    let max_concurrency: Option<u64> = optional(&map, "max_concurrency", place)?;
    Ok(BenchResult { lane: lane(&map, max_concurrency), model_id, max_concurrency, requests })
}

/// `vllm-bench BACKEND concurrency N rate R`: the client's protocol and load, which every
/// figure depends on. Keys an older file lacks are left out.
fn lane(map: &Map<String, Value>, max_concurrency: Option<u64>) -> String {
    let mut lane = "vllm-bench".to_owned();
    if let Some(backend) = map.get("backend").and_then(Value::as_str) {
        lane.push(' ');
        lane.push_str(&crate::bounded::server_string(backend));
    }
    match max_concurrency {
        Some(n) => lane.push_str(&format!(" concurrency {n}")),
        None => lane.push_str(" concurrency unlimited"),
    }
    if let Some(strategy) = map.get("ramp_up_strategy").and_then(Value::as_str) {
        let rps = |key: &str| map.get(key).map(plain).unwrap_or_default();
        lane.push_str(&format!(" ramp-up {strategy} {}-{}", rps("ramp_up_start_rps"), rps("ramp_up_end_rps")));
    } else if let Some(rate) = map.get("request_rate") {
        lane.push_str(&format!(" rate {}", plain(rate)));
    }
    // 1 (Poisson arrivals) is the default; `null` is Python's `Infinity` (even intervals).
    match map.get("burstiness") {
        Some(Value::Null) => lane.push_str(" burstiness inf"),
        Some(b) if b.as_f64().is_some_and(|b| b != 1.0) => lane.push_str(&format!(" burstiness {}", plain(b))),
        _ => {}
    }
    lane
}

/// `text` cut to `max_chars` characters, with `…` where it was cut.
fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A scalar as text: strings without quotes, `null` (Python's infinity, see [`strict_json`]) as `inf`.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "inf".to_owned(),
        Value::Number(n) => n.as_f64().map(|f| f.to_string()).unwrap_or_else(|| n.to_string()),
        other => other.to_string(),
    }
}

fn field<T: DeserializeOwned>(map: &Map<String, Value>, key: &str, place: &str) -> anyhow::Result<T> {
    let value = map.get(key).with_context(|| format!("{place}: no `{key}` key; expected the file that `vllm bench serve --save-result --save-detailed` writes"))?;
    serde_json::from_value(value.clone()).map_err(|e| anyhow::anyhow!("{place}: `{key}`: {e}"))
}

fn optional<T: DeserializeOwned>(map: &Map<String, Value>, key: &str, place: &str) -> anyhow::Result<Option<T>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => serde_json::from_value(value.clone()).map(Some).map_err(|e| anyhow::anyhow!("{place}: `{key}`: {e}")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Python's `json.dump` writes non-finite floats as `NaN`, `Infinity` and `-Infinity`, which
/// JSON does not allow (e.g. `"burstiness": Infinity` after `--burstiness inf`). Outside
/// strings they become `null`; nothing the import needs can be one.
fn strict_json(text: &str) -> Cow<'_, str> {
    const WORDS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    if !WORDS.iter().any(|w| text.contains(w)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(word) = WORDS.iter().find(|w| rest.starts_with(**w)) {
            out.push_str("null");
            rest = &rest[word.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(extra: &str) -> String {
        format!(
            r#"{{"backend": "vllm", "model_id": "m", "request_rate": "inf", "burstiness": 1.0, "max_concurrency": null{extra},
               "input_lens": [10, 10], "output_lens": [5, 0], "ttfts": [0.1, 0.0], "itls": [[0.01, 0.01, 0.02], []],
               "errors": ["", "Bad Gateway"]}}"#
        )
    }

    #[test]
    fn python_non_finite_numbers_become_null_outside_strings_only() {
        let text = r#"{"a": Infinity, "b": -Infinity, "c": NaN, "d": "NaN and \"Infinity\"", "e": [NaN]}"#;
        let strict = strict_json(text);
        assert_eq!(strict, r#"{"a": null, "b": null, "c": null, "d": "NaN and \"Infinity\"", "e": [null]}"#);
        assert!(matches!(strict_json(r#"{"a": 1}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn the_lane_names_backend_concurrency_and_rate() {
        let results = parse(&result(""), "f.json").unwrap();
        assert_eq!(results[0].lane, "vllm-bench vllm concurrency unlimited rate inf");
        let text = result("").replace(r#""request_rate": "inf", "burstiness": 1.0, "max_concurrency": null"#, r#""request_rate": 2.5, "burstiness": Infinity, "max_concurrency": 4"#);
        assert_eq!(parse(&text, "f.json").unwrap()[0].lane, "vllm-bench vllm concurrency 4 rate 2.5 burstiness inf");
        let text = result("").replace(r#""burstiness": 1.0"#, r#""burstiness": 0.5"#);
        assert_eq!(parse(&text, "f.json").unwrap()[0].lane, "vllm-bench vllm concurrency unlimited rate inf burstiness 0.5");
    }

    #[test]
    fn appended_results_are_read_one_after_another() {
        let text = format!("{}\n{}", result(""), result(""));
        let results = parse(&text, "f.json").unwrap();
        assert_eq!(results.len(), 2);
        let bad = format!("{}\n{}", result(""), result("").replace(r#""output_lens": [5, 0], "#, ""));
        let e = parse(&bad, "f.json").unwrap_err().to_string();
        assert!(e.starts_with("f.json: result 2: no `output_lens` key"), "{e}");
    }

    #[test]
    fn a_failed_request_keeps_what_arrived_and_no_counts() {
        let r = Request { input_len: 10, output_len: 0, ttft_s: 0.05, itl_s: vec![0.01, 0.02], error: "boom".to_owned() };
        let run = run_record("c0", 3, &r);
        assert_eq!(run.error, Some(RunError { class: ERROR_CLASS.to_owned(), message: "boom".to_owned() }));
        assert_eq!(run.ttft_ms, Some(50.0));
        assert!((run.decode_ms.unwrap() - 30.0).abs() < 1e-9);
        assert_eq!((run.prompt_tokens, run.completion_tokens, run.token_count_source), (None, None, None));
        // An HTTP failure whose reason phrase was empty: no error text, no chunk, no count.
        let silent = Request { input_len: 10, output_len: 0, ttft_s: 0.0, itl_s: vec![], error: String::new() };
        let run = run_record("c0", 0, &silent);
        assert_eq!(run.error.map(|e| e.class).as_deref(), Some(ERROR_CLASS));
        assert_eq!((run.ttft_ms, run.decode_ms), (None, None));
    }

    #[test]
    fn totals_that_disagree_with_the_arrays_are_refused() {
        let e = parse(&result(r#", "completed": 2"#), "f.json").unwrap_err().to_string();
        assert!(e.contains("`completed` says 2 requests succeeded but 1 have no error"), "{e}");
        assert!(parse(&result(r#", "completed": 1"#), "f.json").is_ok());
    }

    #[test]
    fn arrays_of_different_lengths_are_refused() {
        let text = result("").replace(r#""input_lens": [10, 10]"#, r#""input_lens": [10]"#);
        let e = parse(&text, "f.json").unwrap_err().to_string();
        assert!(e.contains("`input_lens` has 1 entries but `ttfts` has 2"), "{e}");
    }

    #[test]
    fn a_hostile_file_cannot_make_an_unbounded_pass() {
        // Names and error texts are cut, the cut marked: 200 and 2000 characters kept.
        let huge = "x".repeat(50_000);
        let text = result("").replace(r#""model_id": "m""#, &format!(r#""model_id": "{huge}""#)).replace("Bad Gateway", &huge).replace(r#""backend": "vllm""#, &format!(r#""backend": "{huge}""#));
        let results = parse(&text, "f.json").unwrap();
        assert_eq!(results[0].model_id, format!("{}…", "x".repeat(200)));
        assert_eq!(results[0].requests[1].error, format!("{}…", "x".repeat(2000)));
        assert_eq!(results[0].lane, format!("vllm-bench {}… concurrency unlimited rate inf", "x".repeat(200)));
        // Counts above 2^32 and times beyond 30 days are refused with the entry that holds them.
        let e = parse(&result("").replace("[5, 0]", "[4294967297, 0]"), "f.json").unwrap_err().to_string();
        assert!(e.contains("`output_lens` entry 0 is 4294967297: expected a whole number of tokens up to 4294967296"), "{e}");
        let e = parse(&result("").replace("[0.1, 0.0]", "[0.1, 2592001]"), "f.json").unwrap_err().to_string();
        assert!(e.contains("`ttfts` entry 1 is 2592001: expected seconds, 0 to 2592000 (30 days)"), "{e}");
        let e = parse(&result("").replace("[0.01, 0.01, 0.02]", "[2000000, 600000]"), "f.json").unwrap_err().to_string();
        assert!(e.contains("`itls` entry 0 adds up to 2600000 s"), "{e}");
        // More requests than a plan may hold: refused per result and over a file's results.
        let n = MAX_REQUESTS / 2 + 1;
        let many = |n: usize| {
            let list = |v: &str| vec![v; n].join(",");
            format!(
                r#"{{"model_id": "m", "input_lens": [{}], "output_lens": [{}], "ttfts": [{}], "itls": [{}], "errors": [{}]}}"#,
                list("1"), list("1"), list("0.1"), list("[]"), list(r#""""#)
            )
        };
        let e = parse(&format!("{}\n{}", many(n), many(n)), "f.json").unwrap_err().to_string();
        assert_eq!(e, format!("f.json: {} requests over 2 results; benchpass imports at most 1000000 from one file (as many runs as a plan may hold)", 2 * n));
        let e = parse(&many(MAX_REQUESTS + 1), "f.json").unwrap_err().to_string();
        assert!(e.contains("1000001 requests; benchpass imports at most 1000000"), "{e}");
    }

    #[test]
    fn a_pooling_result_is_named() {
        let text = r#"{"backend": "openai-embeddings", "model_id": "m", "input_lens": [3], "latencies": [0.1], "errors": [""]}"#;
        let e = parse(text, "f.json").unwrap_err().to_string();
        assert!(e.contains("pooling"), "{e}");
    }
}
