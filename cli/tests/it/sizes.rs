//! Sizes: `benchpass export` streams a pass one run at a time and writes the same bytes as an
//! export of the pass read whole; the analysis reads passes without the events no figure reads
//! (`analysis::runs::events_the_figures_read`) and every figure, chart and report stays the
//! same. The memory each saves is measured by `cargo xtask bench read`, not here.

use std::path::{Path, PathBuf};

use harness::pass::store::read_pass_keeping;
use harness::pass::{read_pass, EventRecord, PassInfo, PassWriter, RunRecord, TokenCountSource, TokenLogprob, TopLogprob, Workload};

use crate::support::{benchpass, temp_dir};

/// A pass with every kind of run whose events some reader needs or does not: measured and
/// warmup runs with long texts (reasoning too), tool-call arguments, old runs with no
/// `output_sha256` (the analysis hashes their events), a run whose usage contradicts its
/// events, a step at 4 streams (serving figures) and quality runs with logprobs.
fn write_pass(dir: &Path, runs_per_step: u32, events_per_run: u64) -> PassInfo {
    let cell = |id: &str, engine: &str| {
        serde_json::json!({"id": id, "engine": {"name": engine, "version": "1", "version_source": "user"},
            "model": "m", "lane": "text", "build": {}})
    };
    let info: PassInfo = serde_json::from_value(serde_json::json!({
        "schema_version": 1, "pass_id": "sizes", "status": "complete", "started_at": "",
        "benchpass": {"version": "0"}, "machine": {"name": "=machine"},
        "cells": [cell("c0", "-engine"), cell("c1", "other")],
    }))
    .unwrap();
    let mut writer = PassWriter::create(dir, &info).unwrap();
    let mut started = 1_700_000_000_000u64;
    let mut n = 0u64;
    for (c, cell) in ["c0", "c1"].into_iter().enumerate() {
        let steps: [(Workload, u64, u32, bool); 6] = [
            (Workload::Sustained, 0, 1, true),
            (Workload::Sustained, 0, 1, false),
            (Workload::PromptMatrix, 128, 1, false),
            (Workload::PromptMatrix, 2048, 1, false),
            (Workload::Sustained, 0, 4, false),
            (Workload::Quality, 0, 1, false),
        ];
        for (workload, target, concurrency, warmup) in steps {
            for rep in 0..runs_per_step {
                n += 1;
                started += 1_500;
                let mut run = RunRecord::unmeasured(cell, workload, target, rep, warmup, events_per_run);
                run.concurrency = concurrency;
                run.started_unix_ms = started;
                run.prompt_tokens = Some(target.max(30));
                run.completion_tokens = Some(events_per_run);
                run.token_count_source = Some(TokenCountSource::Usage);
                let ttft_ms = 40.0 + 10.0 * c as f64 + (n % 7) as f64 * 0.37 + target as f64 / 100.0;
                let gap_ms = 20.0 + 5.0 * c as f64 + (n % 5) as f64 * 0.11;
                run.ttft_ms = Some(ttft_ms);
                run.decode_ms = Some(gap_ms * (events_per_run - 1) as f64);
                run.finish_reason = Some("length".to_owned());
                run.http_status = Some(200);
                // One run in 13 says 2 tokens for all its events: usage-mismatch, its events kept.
                let usage_tokens = if n % 13 == 0 { 2 } else { events_per_run };
                run.usage = Some(serde_json::json!({"prompt_tokens": target.max(30), "completion_tokens": usage_tokens}));
                run.prompt_id = (workload == Workload::Quality).then(|| format!("q{rep}"));
                run.events = (0..events_per_run)
                    .map(|i| {
                        let text = format!(" token {i} of run {n}, long enough to weigh: ünïcödé ✓ ");
                        EventRecord {
                            t_ns: ((ttft_ms + gap_ms * i as f64) * 1e6) as u64,
                            bytes: 120 + i as u32 % 3,
                            reasoning: if c == 1 && i % 4 == 0 { format!("thinking {i}") } else { String::new() },
                            tool_args: if i % 9 == 8 { format!("{{\"path\": \"src/{i}.rs\"}}") } else { String::new() },
                            logprobs: if workload == Workload::Quality {
                                vec![TokenLogprob {
                                    token: text.clone(),
                                    bytes: None,
                                    logprob: -0.1 * i as f64,
                                    top: vec![TopLogprob { token: "x".to_owned(), logprob: -2.5, bytes: None }],
                                }]
                            } else {
                                vec![]
                            },
                            text,
                        }
                    })
                    .collect();
                // A finish event that carries no token, as servers send one.
                run.events.push(EventRecord { t_ns: run.events.last().unwrap().t_ns + 1_000, bytes: 80, ..Default::default() });
                // Passes written before the hash was recorded: the analysis hashes the events.
                run.output_sha256 = if n % 2 == 0 { RunRecord::hash_output(&run.events) } else { None };
                writer.append(&run).unwrap();
            }
        }
    }
    writer.sync().unwrap();
    info
}

fn export(args: &[&str]) -> Vec<u8> {
    let output = benchpass(args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output.stdout
}

#[test]
fn a_large_pass_exports_the_same_bytes_streamed_as_read_whole() {
    let tmp = temp_dir();
    let dir = tmp.path().join("sizes");
    // 2 cells × 6 steps × 40 runs of 64 events with long texts: 480 runs, about 6 MB of runs.jsonl.
    write_pass(&dir, 40, 64);
    let pass = read_pass(&dir).unwrap();
    assert_eq!(pass.runs.len(), 480);
    let dir_arg = dir.to_str().unwrap();
    for (flags, whole) in [
        (&[][..], {
            let mut csv = Vec::new();
            harness::pass::csv::export_runs(&pass, &mut csv).unwrap();
            csv
        }),
        (&["--for-spreadsheet"][..], {
            let mut csv = Vec::new();
            harness::pass::csv::export_runs_for_spreadsheet(&pass, &mut csv).unwrap();
            csv
        }),
    ] {
        assert_eq!(String::from_utf8(whole.clone()).unwrap().lines().count(), 481, "a header and a row per run");
        let streamed = export(&[&["export", dir_arg], flags].concat());
        assert_eq!(streamed, whole, "stdout {flags:?}");
        let file = tmp.path().join("runs.csv");
        let output = benchpass(&[&["export", dir_arg, "--out", file.to_str().unwrap()], flags].concat());
        assert!(String::from_utf8_lossy(&output.stderr).contains("wrote 480 runs to"));
        assert_eq!(std::fs::read(&file).unwrap(), whole, "--out {flags:?}");
    }
    let spreadsheet = String::from_utf8(export(&["export", dir_arg, "--for-spreadsheet"])).unwrap();
    assert!(spreadsheet.lines().nth(1).unwrap().starts_with("sizes,'=machine,'-engine,"), "{spreadsheet:.300}");

    // A torn last line: the runs before it, the same bytes as the whole read, and a warning.
    let runs = dir.join("runs.jsonl");
    let mut text = std::fs::read(&runs).unwrap();
    text.extend_from_slice(b"{\"cell\":\"c0\",\"workload\":\"sust");
    std::fs::write(&runs, &text).unwrap();
    let pass = read_pass(&dir).unwrap();
    assert_eq!((pass.runs.len(), pass.torn_tail.as_ref().map(|t| t.line)), (480, Some(481)));
    let mut whole = Vec::new();
    harness::pass::csv::export_runs(&pass, &mut whole).unwrap();
    let output = benchpass(&["export", dir_arg]);
    assert!(output.status.success());
    assert_eq!(output.stdout, whole);
    assert!(String::from_utf8_lossy(&output.stderr).contains("line 481 is cut short (29 bytes;"), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn a_bad_run_part_way_through_an_export_is_named_and_the_rest_exported() {
    let tmp = temp_dir();
    let dir = tmp.path().join("sizes");
    write_pass(&dir, 3, 4);
    let runs = dir.join("runs.jsonl");
    let text = std::fs::read_to_string(&runs).unwrap();
    // The 30th of 36 runs says its first token came before the request.
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| if i == 29 { l.replacen("\"ttft_ms\":", "\"ttft_ms\":-", 1) } else { l.to_owned() })
        .collect();
    std::fs::write(&runs, lines.join("\n") + "\n").unwrap();
    let file = tmp.path().join("runs.csv");
    let output = benchpass(&["export", dir.to_str().unwrap(), "--out", file.to_str().unwrap()]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The file holds 35 rows and the warning says which run is not among them.
    assert!(stderr.contains("runs.jsonl:30 could not be read (`ttft_ms` is -"), "{stderr}");
    assert!(stderr.contains("wrote 35 runs to"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 36, "the header and 35 rows");
    let output = benchpass(&["export", dir.to_str().unwrap()]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 36, "the header and 35 rows");
}

/// Every pass this repository keeps, and the synthetic one above.
fn passes(tmp: &Path) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let synthetic = tmp.join("sizes");
    write_pass(&synthetic, 4, 24);
    let mut dirs = vec![synthetic];
    for folder in ["data/passes", "fixtures/soak"] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap() {
            let dir = entry.unwrap().path();
            if dir.join("pass.json").is_file() {
                dirs.push(dir);
            }
        }
    }
    dirs
}

#[test]
fn the_analysis_reads_without_the_events_no_figure_reads_and_every_figure_stays_the_same() {
    let tmp = temp_dir();
    for dir in passes(tmp.path()) {
        let full = read_pass(&dir).unwrap();
        let light = read_pass_keeping(&dir, analysis::runs::events_the_figures_read).unwrap();
        let context = dir.display();
        assert_eq!(full.runs.len(), light.runs.len(), "{context}");
        // Runs are the same but for the events dropped; the output hash is the events', and
        // the times kept of them are theirs.
        for (f, l) in full.runs.iter().zip(&light.runs) {
            if l.events.is_empty() {
                let hashed = RunRecord {
                    output_sha256: f.output_sha256.clone().or_else(|| RunRecord::hash_output(&f.events)),
                    events: vec![],
                    dropped_events: l.dropped_events.as_ref().map(|_| harness::pass::metrics::TokenTimes::of(&f.events)),
                    ..f.clone()
                };
                assert_eq!(&hashed, l, "{context}");
            } else {
                assert_eq!(f, l, "{context}: a run whose events are kept is kept whole");
            }
        }
        assert_eq!(analysis::runs::run_facts(&full), analysis::runs::run_facts(&light), "{context}");
        let (steps_full, steps_light) = (analysis::cells::summarize(&full).unwrap(), analysis::cells::summarize(&light).unwrap());
        assert_eq!(steps_full, steps_light, "{context}");
        let (a, b) = (report::render_pass(&full, &steps_full).unwrap(), report::render_pass(&light, &steps_light).unwrap());
        assert_eq!(a.markdown, b.markdown, "{context}");
        assert_eq!(a.html, b.html, "{context}");
        assert_eq!(a.leaderboard_csv, b.leaderboard_csv, "{context}");
        let charts = |r: &report::Rendered| r.charts.iter().map(|c| (c.file.clone(), c.svg.clone())).collect::<Vec<_>>();
        assert_eq!(charts(&a), charts(&b), "{context}");
    }
    // The synthetic pass keeps what its readers need and drops the rest: of each cell's 4
    // measured single-stream runs per step, the events of the timeline's first one and every
    // quality run's whole; the times alone of mismatched ones and of every run at 4 streams.
    let light = read_pass_keeping(&tmp.path().join("sizes"), analysis::runs::events_the_figures_read).unwrap();
    let all = |f: &dyn Fn(&RunRecord) -> bool, what: &dyn Fn(&RunRecord) -> bool| light.runs.iter().filter(|r| f(r)).all(what);
    assert!(all(&|r| r.workload == Workload::Quality, &|r| !r.events.is_empty()));
    assert!(all(&|r| r.concurrency == 4, &|r| r.token_times().is_some()));
    assert!(light.runs.iter().any(|r| r.concurrency == 4 && r.events.is_empty()), "runs at 4 streams keep their times, not their events");
    let mismatched = |r: &RunRecord| r.usage.as_ref().is_some_and(|u| u["completion_tokens"] == 2);
    assert!(all(&|r| r.warmup, &|r| r.events.is_empty() && (r.dropped_events.is_some() || !mismatched(r))));
    let dropped = light.runs.iter().filter(|r| r.events.is_empty()).count();
    assert!(dropped >= 20, "{dropped} of {} runs dropped their events", light.runs.len());
}
