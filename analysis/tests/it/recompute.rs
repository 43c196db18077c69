//! The committed real report's figures recomputed from its runs.jsonl by a path of its own:
//! plain Rust over the JSON lines (no polars, no `analysis::cells`), with the definitions of
//! docs/metrics.md and the band of docs/statistics.md written out again here, then compared
//! with what the committed leaderboard.csv and report.md say. The report test checks the
//! report is current; this one checks it is right.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PASS: &str = "llama-cpp-mlx-lm-20261130-103145";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// docs/statistics.md: each side the wider of the runs on that side and the 2 % floor.
fn band(values: &[f64]) -> (f64, f64, f64) {
    let m = median(values);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let below = (m / min - 1.0).max(0.02);
    let above = (max / m - 1.0).max(0.02);
    (m, m / (1.0 + below), m * (1.0 + above))
}

#[derive(Default)]
struct Step {
    decode: Vec<f64>,
    ttft: Vec<f64>,
    prefill: Vec<f64>,
    prompt: Vec<f64>,
    n_short: usize,
}

#[test]
fn the_committed_report_matches_figures_recomputed_from_its_runs() {
    let dir = root().join("data/passes").join(PASS);
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("pass.json")).unwrap()).unwrap();
    // cell id → (engine, weights hash, family)
    let cells: BTreeMap<String, (String, String, String)> = info["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |v: &serde_json::Value| v.as_str().unwrap().to_owned();
            (s(&c["id"]), (s(&c["engine"]["name"]), s(&c["build"]["sha256"]), s(&c["family"])))
        })
        .collect();

    // (cell, workload, target) → the measured runs' values, in run order.
    let mut steps: BTreeMap<(String, String, u64), Step> = BTreeMap::new();
    for line in std::fs::read_to_string(dir.join("runs.jsonl")).unwrap().lines() {
        let run: serde_json::Value = serde_json::from_str(line).unwrap();
        if run["warmup"].as_bool().unwrap() {
            continue;
        }
        assert!(run.get("error").is_none_or(serde_json::Value::is_null), "this pass has no failed run");
        let key = (run["cell"].as_str().unwrap().to_owned(), run["workload"].as_str().unwrap().to_owned(), run["target_prompt_tokens"].as_u64().unwrap());
        let step = steps.entry(key).or_default();
        let completion = run["completion_tokens"].as_f64().unwrap();
        let (ttft_ms, decode_ms, prompt) = (run["ttft_ms"].as_f64().unwrap(), run["decode_ms"].as_f64().unwrap(), run["prompt_tokens"].as_f64().unwrap());
        // docs/metrics.md: decode tok/s = (completion_tokens − 1) / decode seconds, only from
        // runs that reached their cap; prefill tok/s = prompt tokens / TTFT seconds.
        let full = run["finish_reason"] == "length" && completion >= run["max_tokens"].as_f64().unwrap();
        if full {
            step.decode.push((completion - 1.0) / (decode_ms / 1000.0));
        } else {
            step.n_short += 1;
        }
        step.ttft.push(ttft_ms);
        step.prefill.push(prompt / (ttft_ms / 1000.0));
        step.prompt.push(prompt);
    }

    let csv_text = std::fs::read_to_string(root().join("reports").join(PASS).join("leaderboard.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut board: BTreeMap<(String, String, String, u64, String), csv::StringRecord> = BTreeMap::new();
    for record in reader.records() {
        let r = record.unwrap();
        let key = (r[col("engine")].to_owned(), r[col("build_sha256")].to_owned(), r[col("workload")].to_owned(), r[col("target_prompt_tokens")].parse().unwrap(), r[col("metric")].to_owned());
        assert!(board.insert(key, r).is_none(), "one leaderboard row per figure");
    }
    let report_md = std::fs::read_to_string(root().join("reports").join(PASS).join("report.md")).unwrap();

    let mut compared = 0;
    for ((cell, workload, target), step) in &steps {
        let (engine, build, family) = &cells[cell];
        for (metric, values) in [("decode_tps", &step.decode), ("ttft_ms", &step.ttft), ("prefill_tps", &step.prefill), ("prompt_tokens", &step.prompt)] {
            let row = &board[&(engine.clone(), build.clone(), workload.clone(), *target, metric.to_owned())];
            let number = |name: &str| row[col(name)].parse::<f64>().unwrap();
            let (m, low, high) = band(values);
            let what = format!("{engine} {family} {workload} {target} {metric}");
            // The CSV prints 3 decimals.
            assert!((number("median") - m).abs() < 0.0015, "{what}: median {} vs {m}", number("median"));
            assert_eq!(row[col("n")].parse::<usize>().unwrap(), values.len(), "{what}");
            assert_eq!(row[col("n_short")].parse::<usize>().unwrap(), step.n_short, "{what}");
            if values.len() >= 3 {
                assert!((number("band_low") - low).abs() < 0.0015, "{what}: low {} vs {low}", number("band_low"));
                assert!((number("band_high") - high).abs() < 0.0015, "{what}: high {} vs {high}", number("band_high"));
                assert!(low > 0.0, "{what}: a band never reaches zero");
            } else {
                assert_eq!((&row[col("band_low")], &row[col("band_high")]), ("", ""), "{what}: no band under 3 runs");
            }
            compared += 1;
        }

        // docs/statistics.md: drift when every decode rate is below (or above) the one before
        // and the last is more than 5 % from the first.
        let d = &step.decode;
        let monotone = d.len() >= 3 && (d.windows(2).all(|w| w[1] > w[0]) || d.windows(2).all(|w| w[1] < w[0]));
        let drift = monotone && (d[d.len() - 1] / d[0] - 1.0).abs() > 0.05;
        let flags = &board[&(engine.clone(), build.clone(), workload.clone(), *target, "decode_tps".to_owned())][col("flags")];
        assert_eq!(flags.split(';').any(|f| f == "drift"), drift, "{engine} {family} {workload} {target}: {d:?} flags {flags}");

        // The sustained decode table prints median and band at one decimal, `±x%` where both
        // sides round alike and `+x%/−y%` where they do not.
        if workload == "sustained" {
            let (m, low, high) = band(&step.decode);
            let (up, down) = (format!("{:.1}", (high / m - 1.0) * 100.0), format!("{:.1}", (1.0 - low / m) * 100.0));
            let text = if up == down { format!("{m:.1} ±{up}%") } else { format!("{m:.1} +{up}%/−{down}%") };
            let table = report_md.split("## Sustained decode").nth(1).unwrap().split("## ").next().unwrap();
            let line = table.lines().find(|l| l.starts_with(&format!("| {engine} |"))).unwrap();
            // The figure stands alone, or bold as its column's best (`**figure** ◆`).
            // Marks follow it as superscript digits or `\*`: the figure ends where a digit would not.
            let ends = |rest: &str| rest.starts_with(" |") || rest.starts_with('\\') || rest.starts_with(|c: char| "⁰¹²³⁴⁵⁶⁷⁸⁹".contains(c));
            let alone = line.match_indices(&format!(" {text}")).any(|(at, m)| ends(&line[at + m.len()..]));
            assert!(alone || line.contains(&format!(" **{text}** ◆")), "{engine} {family}: expected {text} in {line}");
        }
    }
    // 4 cells × 3 targets × 4 metrics.
    assert_eq!(compared, 48);
    // Three cells rose every run by 7–17 % with no warmup: the audit's finding, now flagged.
    assert_eq!(csv_text.lines().filter(|l| l.contains(",decode_tps,") && l.contains("drift")).count(), 3);
}
