//! The promise the store keeps: nothing is written that its readers refuse. Records full of
//! what a hostile server or a broken importer can put in them (NaN and infinities, JSON nested
//! 200 deep or hundreds of kilobytes wide, integers at u64::MAX, strings with NUL, direction
//! marks, noncharacters and replaced invalid UTF-8) are written through `PassWriter` and read
//! back by every reader of store.rs: the whole read, the light read and the line-by-line read
//! (and the streamed CSV export built on it). Seeded, so a failure names its seed.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::bounded::{self, MAX_BYTES, MAX_DEPTH};
use super::format::*;
use super::store::{read_pass, read_pass_keeping, Pass, PassWriter, RunReader};

const FLOATS: [f64; 14] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -0.0,
    0.0,
    f64::MAX,
    f64::MIN,
    f64::MIN_POSITIVE,
    5e-324,
    1e308,
    -1e-300,
    0.1,
    -50.0,
    123.456,
];

fn strings() -> Vec<String> {
    let mut strings: Vec<String> = [
        "",
        "\0",
        "a\0b",
        "\u{202E}txet lmth\u{200F}\u{200E}",
        "\u{FEFF}bom",
        "\u{FFFF}\u{FFFE}\u{10FFFF}",
        "a\"b\\c/d",
        "line\nbreak\r\ttab",
        "\u{1b}[31mred\u{1b}]0;title\u{7}",
        "\u{2028}\u{2029}\u{85}",
        "e\u{301}\u{20DD}",
        "🦀 ok",
        "[redacted]",
        "NaN",
        "-inf",
        "<cut: nested deeper than 32>",
        "}\n{\"cell\":\"forged\"}",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    // Bytes that are not UTF-8 (a lone surrogate's encoding, a cut sequence, 0xFF) as a
    // reader of the wire would keep them: replaced.
    strings.push(String::from_utf8_lossy(&[0xed, 0xa0, 0x80, b'x', 0xe2, 0x82, 0xff]).into_owned());
    // JSON a server sent with escapes: a surrogate pair, NUL, and a lone surrogate where
    // serde_json takes it (it refuses it into a String, so the server's event was never read).
    for text in [r#""\ud83e\udd80""#, r#""\u0000\u001f""#, r#""\ud800""#, r#""\udc00x""#] {
        if let Ok(Value::String(s)) = serde_json::from_str::<Value>(text) {
            strings.push(s);
        }
    }
    strings
}

struct Gen {
    rng: StdRng,
    strings: Vec<String>,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen { rng: StdRng::seed_from_u64(seed), strings: strings() }
    }

    fn float(&mut self) -> f64 {
        if self.rng.random_bool(0.7) {
            FLOATS[self.rng.random_range(0..FLOATS.len())]
        } else {
            f64::from_bits(self.rng.random())
        }
    }

    fn string(&mut self) -> String {
        match self.rng.random_range(0..10) {
            0 => "x".repeat(self.rng.random_range(0..100_000)),
            1 => {
                // Random characters, any plane.
                let n = self.rng.random_range(0..40);
                (0..n).filter_map(|_| char::from_u32(self.rng.random_range(0..0x11_0000))).collect()
            }
            _ => self.strings[self.rng.random_range(0..self.strings.len())].clone(),
        }
    }

    fn int(&mut self) -> u64 {
        [0, 1, u32::MAX as u64, 1 << 53, (1 << 53) + 1, i64::MAX as u64, u64::MAX][self.rng.random_range(0..7)]
    }

    /// A JSON value as a server may send it: scalars at their extremes, nesting up to 300
    /// deep, objects and arrays past the size bound.
    fn value(&mut self, depth: usize) -> Value {
        let leaf = depth > 300 || self.rng.random_bool(0.35);
        if leaf {
            return match self.rng.random_range(0..7) {
                0 => Value::Null,
                1 => Value::Bool(self.rng.random()),
                2 => json!(self.int()),
                3 => json!(i64::MIN),
                // Non-finite floats become null in a Value, as serde_json makes them.
                4 => json!(self.float()),
                _ => Value::String(self.string()),
            };
        }
        match self.rng.random_range(0..6) {
            // A chain: what makes depth.
            0..=2 => {
                let inner = self.value(depth + 1);
                if self.rng.random() {
                    json!({ self.string(): inner })
                } else {
                    json!([inner])
                }
            }
            3 => {
                let n = self.rng.random_range(0..6);
                Value::Object((0..n).map(|_| (self.string(), self.value(depth + 1))).collect())
            }
            4 => Value::Array((0..self.rng.random_range(0..6)).map(|_| self.value(depth + 1)).collect()),
            // Wide: many small members, over the size bound.
            _ => Value::Object((0..self.rng.random_range(0..20_000)).map(|i| (format!("k{i}"), json!(i))).collect()),
        }
    }

    /// A value for a field that holds one (`usage`, `request_extra`): any but `null`, which
    /// such a field reads back as absent, the same thing said another way.
    fn field_value(&mut self) -> Value {
        match self.value(1) {
            Value::Null => json!({}),
            value => value,
        }
    }

    fn maybe<T>(&mut self, make: impl FnOnce(&mut Gen) -> T) -> Option<T> {
        self.rng.random_bool(0.6).then(|| make(self))
    }

    fn run(&mut self, cell: &str) -> RunRecord {
        let mut run = RunRecord::unmeasured(cell, Workload::ALL[self.rng.random_range(0..6)], self.int(), self.rng.random(), self.rng.random(), self.int());
        run.concurrency = self.rng.random();
        run.started_unix_ms = self.int();
        run.prompt_sha256 = self.maybe(Gen::string);
        run.prompt_tokens = self.maybe(Gen::int);
        run.completion_tokens = self.maybe(Gen::int);
        run.ttft_ms = self.maybe(Gen::float);
        run.decode_ms = self.maybe(Gen::float);
        run.finish_reason = self.maybe(Gen::string);
        run.http_status = self.maybe(|g| g.rng.random());
        if self.rng.random() {
            run.error = Some(RunError { class: self.string(), message: self.string() });
        }
        run.output_sha256 = self.maybe(Gen::string);
        run.server_peak_rss_bytes = self.maybe(Gen::int);
        run.server_counters = self.maybe(|g| (0..g.rng.random_range(0..6)).map(|_| (g.string(), g.float())).collect::<BTreeMap<_, _>>());
        run.logged_draft_acceptance = self.maybe(Gen::float);
        run.usage = self.maybe(Gen::field_value);
        run.timings = self.maybe(Gen::field_value);
        run.prompt_id = self.maybe(Gen::string);
        run.cached_prompt_tokens = self.maybe(Gen::int);
        run.stream_conflicts = (0..self.rng.random_range(0..3)).map(|_| self.string()).collect();
        run.events = (0..self.rng.random_range(0..4))
            .map(|_| EventRecord {
                t_ns: self.int(),
                bytes: self.rng.random(),
                text: self.string(),
                reasoning: self.string(),
                tool_args: self.string(),
                logprobs: (0..self.rng.random_range(0..3))
                    .map(|_| TokenLogprob {
                        token: self.string(),
                        bytes: self.maybe(|g| g.string().into_bytes()),
                        logprob: self.float(),
                        top: (0..self.rng.random_range(0..3)).map(|_| TopLogprob { token: self.string(), logprob: self.float(), bytes: None }).collect(),
                    })
                    .collect(),
            })
            .collect();
        run
    }

    fn info(&mut self) -> PassInfo {
        let mut cell = CellInfo::new("c0", EngineInfo { version: self.string(), url: self.maybe(Gen::string), ..EngineInfo::named(self.string()) }, self.string());
        cell.request_extra = self.maybe(Gen::field_value);
        cell.ignore_eos_logit_bias = self.maybe(Gen::field_value);
        cell.cache_flush = Some(CacheFlushRecord { request: self.string(), status: Some(599), flushed: false, detail: self.maybe(Gen::string) });
        let mut info = PassInfo::synthetic("hostile", self.string(), vec![cell]);
        info.harness_cpu_seconds = self.maybe(Gen::float);
        info.measurer = self.maybe(|g| Measurer {
            wall_seconds: g.float(),
            streamed_tokens: g.int(),
            stream_events: g.int(),
            clock_tick_ns: g.int(),
            peak_rss_bytes: g.maybe(|g| g.int()),
            self_check: g.maybe(|g| SelfCheck {
                streams: g.int() as u32,
                requests: g.int() as u32,
                max_tokens: g.int(),
                ttft_error_median_ms: g.float(),
                ttft_error_max_ms: g.float(),
                decode_error_median: g.float(),
                decode_error_max: g.float(),
            }),
        });
        let step = Step { workload: Workload::Sustained, target_prompt_tokens: 0, max_tokens: u64::MAX, warmup: u32::MAX, runs: 1, ignore_eos: false, duration_s: None, top_logprobs: None, concurrency: None };
        info.request = Some(RequestParams {
            api: self.string(),
            temperature: self.float(),
            seed: self.maybe(Gen::int),
            ignore_eos: true,
            min_tokens: None,
            extra: self.maybe(Gen::field_value),
            concurrency: u32::MAX,
            first_token_timeout_s: self.float(),
            idle_timeout_s: self.float(),
            steps: vec![step],
            order: Order::Interleaved,
            model_picked: true,
            request_rate: self.maybe(Gen::float),
            arrival_seed: self.maybe(Gen::int),
            slo: Some(crate::format::Slo { ttft_ms: self.maybe(Gen::float), ..Default::default() }),
            prompt_sets: [(self.string(), self.string())].into(),
        });
        info
    }
}

/// JSON text a record compares by: NaN is not equal to itself, its written text is.
fn text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

/// Asserts `read == expected`, naming the first record and the place where they part (the
/// records are too long to print whole).
fn assert_same(read: &[String], expected: &[String], what: &str) {
    assert_eq!(read.len(), expected.len(), "{what}: the number of runs");
    for (i, (r, e)) in read.iter().zip(expected).enumerate() {
        if r != e {
            let at = r.bytes().zip(e.bytes()).position(|(a, b)| a != b).unwrap_or(r.len().min(e.len()));
            let window = |s: &str| s.get(at.saturating_sub(80)..(at + 80).min(s.len())).map(str::to_owned).unwrap_or_else(|| "(not at a character boundary)".to_owned());
            panic!("{what}: run {i} differs at byte {at}:\n  read     {}\n  expected {}", window(r), window(e));
        }
    }
}

/// The deepest nesting of arrays and objects in `value` (itself 1).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn check_bounded(value: &Option<Value>, seed: u64) {
    if let Some(value) = value {
        assert!(depth(value) <= MAX_DEPTH, "seed {seed}: {} deep", depth(value));
        assert!(serde_json::to_vec(value).unwrap().len() <= MAX_BYTES, "seed {seed}");
    }
}

#[test]
fn hostile_records_written_through_the_store_read_back_with_every_reader() {
    let tmp = tempfile::tempdir().unwrap();
    for seed in 0..16u64 {
        let mut g = Gen::new(seed);
        let dir = tmp.path().join(format!("seed-{seed}"));
        let info = g.info();
        let runs: Vec<RunRecord> = (0..12).map(|_| g.run("c0")).collect();
        let mut writer = PassWriter::create(&dir, &info).unwrap();
        for run in &runs {
            writer.append(run).unwrap();
        }
        writer.update_info(&info).unwrap();
        drop(writer);
        // What each record is once the writer has held it to its bounds.
        let expected: Vec<String> = runs.iter().map(|r| text(&*bounded::bound_run(r))).collect();

        let whole = read_pass(&dir).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(whole.damage.is_empty() && whole.torn_tail.is_none(), "seed {seed}: {:?}", whole.damage);
        assert_same(&whole.runs.iter().map(text).collect::<Vec<_>>(), &expected, &format!("seed {seed}: the whole read"));
        assert_same(&[text(&whole.info)], &[text(&*bounded::bound_info(&info))], &format!("seed {seed}: pass.json"));
        for run in &whole.runs {
            check_bounded(&run.usage, seed);
            check_bounded(&run.timings, seed);
            assert!([run.ttft_ms, run.decode_ms].into_iter().flatten().all(bounded::possible_ms), "seed {seed}");
        }
        for cell in &whole.info.cells {
            check_bounded(&cell.request_extra, seed);
            check_bounded(&cell.ignore_eos_logit_bias, seed);
        }

        let light: Pass = read_pass_keeping(&dir, |_| |_| false).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(light.damage.is_empty() && light.torn_tail.is_none(), "seed {seed}");
        let without_events = |r: &RunRecord| text(&RunRecord { events: vec![], output_sha256: None, ..r.clone() });
        assert_same(&light.runs.iter().map(without_events).collect::<Vec<_>>(), &whole.runs.iter().map(without_events).collect::<Vec<_>>(), &format!("seed {seed}: the light read"));

        let mut reader = RunReader::open(&dir).unwrap();
        let streamed: Vec<String> = reader.by_ref().map(|r| text(&r.unwrap_or_else(|e| panic!("seed {seed}: {e}")))).collect();
        assert_same(&streamed, &expected, &format!("seed {seed}: the line-by-line read"));
        assert!(reader.damage().is_empty() && reader.torn_tail().is_none(), "seed {seed}");
        let exported = super::csv::export_pass(&dir, std::io::sink(), super::csv::Audience::Tools).unwrap();
        assert_eq!((exported.runs, exported.damage.total), (runs.len(), 0), "seed {seed}: the streamed export");

        // Resuming it appends after every line, all of which read.
        let mut writer = PassWriter::reopen(&dir).unwrap();
        writer.append(&g.run("c0")).unwrap();
        drop(writer);
        assert_eq!(read_pass(&dir).unwrap().runs.len(), runs.len() + 1, "seed {seed}");
    }
}

#[test]
fn floats_json_cannot_hold_are_written_as_text_and_read_back_as_the_same_floats() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = RunRecord::unmeasured("c0", Workload::Sustained, 0, 0, false, 8);
    run.server_counters = Some(BTreeMap::from([("foo_total".to_owned(), f64::NAN), ("bar_total".to_owned(), f64::INFINITY), ("baz_total".to_owned(), -2.5)]));
    run.events = vec![EventRecord {
        text: "x".to_owned(),
        logprobs: vec![TokenLogprob { token: "x".to_owned(), bytes: None, logprob: f64::NEG_INFINITY, top: vec![] }],
        ..EventRecord::default()
    }];
    let line = text(&run);
    assert!(line.contains(r#""server_counters":{"bar_total":"inf","baz_total":-2.5,"foo_total":"NaN"}"#), "{line}");
    assert!(line.contains(r#""logprob":"-inf""#), "{line}");
    let dir = tmp.path().join("p");
    let mut writer = PassWriter::create(&dir, &PassInfo::synthetic("p", "m", vec![])).unwrap();
    writer.append(&run).unwrap();
    drop(writer);
    let read = read_pass(&dir).unwrap().runs.remove(0);
    let counters = read.server_counters.unwrap();
    assert!(counters["foo_total"].is_nan());
    assert_eq!((counters["bar_total"], counters["baz_total"]), (f64::INFINITY, -2.5));
    assert_eq!(read.events[0].logprobs[0].logprob, f64::NEG_INFINITY);
    // A pass written before reads as it did: numbers are numbers; other text is refused.
    let old: RunRecord = serde_json::from_str(r#"{"cell":"c0","workload":"sustained","target_prompt_tokens":0,"rep":0,"warmup":false,"max_tokens":8,"server_counters":{"a_total":3,"b_total":-1.5e300}}"#).unwrap();
    assert_eq!(old.server_counters.unwrap()["b_total"], -1.5e300);
    let error = serde_json::from_str::<RunRecord>(r#"{"cell":"c0","workload":"sustained","target_prompt_tokens":0,"rep":0,"warmup":false,"max_tokens":8,"server_counters":{"a_total":"lots"}}"#).unwrap_err();
    assert!(error.to_string().contains(r#"expected a number, or "NaN", "inf" or "-inf""#), "{error}");
}

#[test]
fn server_json_past_its_bounds_is_cut_where_it_overflows_and_says_so() {
    // 126 levels under `mtplx_stats`, as a hostile MTPLX final chunk sends it.
    let mut deep = json!({"drafted_tokens": 40});
    for _ in 1..126 {
        deep = json!({ "x": deep });
    }
    let timings = json!({"mtplx_stats": deep, "draft_n": 40, "draft_n_accepted": 31});
    // Kept as it came, one level deeper in the record, it is past what serde reads (the old
    // writer's unreadable pass).
    let kept = RunRecord { timings: Some(timings.clone()), ..RunRecord::unmeasured("c0", Workload::Sustained, 0, 0, false, 8) };
    let error = serde_json::from_str::<RunRecord>(&text(&kept)).unwrap_err();
    assert!(error.to_string().starts_with("recursion limit exceeded"), "{error}");
    let cut = bounded::bound_value(&timings).into_owned();
    assert_eq!(depth(&cut), MAX_DEPTH);
    assert_eq!((cut["draft_n"].as_u64(), cut["draft_n_accepted"].as_u64()), (Some(40), Some(31)), "the figures' members stay");
    let mut at = &cut["mtplx_stats"];
    for _ in 2..MAX_DEPTH {
        at = &at["x"];
    }
    assert_eq!(at["x"], json!("<cut: nested deeper than 32>"));

    // Over the size bound: top-level numbers and short strings kept, the rest marked.
    let wide = json!({"completion_tokens": 7, "model": "m", "blob": "y".repeat(MAX_BYTES), "list": vec![1; 40_000]});
    let cut = bounded::bound_value(&wide).into_owned();
    assert_eq!(cut["completion_tokens"], json!(7));
    assert_eq!(cut["model"], json!("m"));
    assert_eq!(cut["blob"], json!(format!("<cut: {} bytes of JSON, over the 65536 kept>", MAX_BYTES + 2)));
    assert_eq!(cut["list"], json!("<cut: 80001 bytes of JSON, over the 65536 kept>"));
    // A value within both bounds is not copied.
    assert!(matches!(bounded::bound_value(&json!({"a": [1, 2]})), std::borrow::Cow::Borrowed(_)));
}

#[test]
fn a_time_no_clock_gives_is_written_absent_and_the_run_failed() {
    let mut run = RunRecord::unmeasured("c0", Workload::Sustained, 0, 0, false, 8);
    run.ttft_ms = Some(-50.0);
    run.decode_ms = Some(f64::NAN);
    let written = bounded::bound_run(&run).into_owned();
    assert_eq!((written.ttft_ms, written.decode_ms), (None, None));
    let error = written.error.unwrap();
    assert_eq!(error.class, "impossible-time");
    assert_eq!(error.message, "`ttft_ms` was -50, which no clock gives; it is written absent; `decode_ms` was NaN, which no clock gives; it is written absent");
    run.error = Some(RunError { class: "http-500".to_owned(), message: "boom".to_owned() });
    let error = bounded::bound_run(&run).into_owned().error.unwrap();
    assert_eq!(error.class, "http-500");
    assert!(error.message.starts_with("boom; `ttft_ms` was -50"), "{}", error.message);
}
