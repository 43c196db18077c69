//! fixtures/diff/keys/: a sweep diffed against one level pairs level with level, and
//! leaderboard rows measured at other caps or arrivals differ in their key columns. Every
//! figure below is worked out by hand in that folder's README.

use std::path::{Path, PathBuf};

use analysis::cells::{summarize, CellStep, MetricKind};
use analysis::diff::{diff, Attribution, Verdict};
use analysis::reasons::ReasonCode;
use harness::pass::{read_pass, Pass};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff/keys").join(name)
}

fn passes(name: &str, tmp: &tempfile::TempDir) -> Vec<(Pass, Vec<CellStep>)> {
    let dirs = harness::pass::csv::import_runs(&fixture(name), tmp.path()).unwrap();
    dirs.iter()
        .map(|d| {
            let pass = read_pass(d).unwrap();
            let steps = summarize(&pass).unwrap();
            (pass, steps)
        })
        .collect()
}

#[test]
fn a_sweep_against_one_level_pairs_level_with_level() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (passes("a.csv", &tmp).remove(0), passes("b.csv", &tmp).remove(0));
    let d = diff(&a.0, &a.1, &b.0, &b.1);
    let decode: Vec<_> = d.rows.iter().filter(|r| r.metric == MetricKind::DecodeTps).collect();
    assert_eq!(decode.len(), 2, "{decode:#?}");
    let one = decode.iter().find(|r| r.concurrency == 1).unwrap();
    assert_eq!(one.verdict, Verdict::Gone);
    let why: Vec<&str> = one.reasons.iter().filter(|r| r.code == ReasonCode::Params).map(|r| r.detail.as_str()).collect();
    assert_eq!(why, ["concurrency 1 → 2: each level is compared only with the same level"]);
    let two = decode.iter().find(|r| r.concurrency == 2).unwrap();
    assert!(!matches!(two.verdict, Verdict::Gone | Verdict::New), "{two:#?}");
    assert_eq!(two.attribution, Some(Attribution::None));
    assert!((two.a_median.unwrap() - 100.0).abs() < 1e-9);
    assert!((two.b_median.unwrap() - 255.0 / 2.525).abs() < 1e-9);
    assert!((two.delta_pct.unwrap() - 0.990).abs() < 1e-3, "{two:#?}");
}

#[test]
fn rows_at_other_caps_or_arrivals_differ_in_their_key_columns_and_are_never_compared() {
    let tmp = tempfile::tempdir().unwrap();
    let all = passes("c.csv", &tmp);
    let steps: Vec<&[CellStep]> = all.iter().map(|(_, s)| s.as_slice()).collect();
    let csv = analysis::leaderboard::to_csv(steps);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let decode: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect::<Vec<_>>()).filter(|r| r[at("metric")].starts_with("decode_tps")).collect();
    assert_eq!(decode.len(), 4, "{csv}");
    assert!(decode.iter().all(|r| r[at("median")] == "100.000"), "{csv}");
    let key = |r: &Vec<&str>| {
        ["engine", "model", "lane", "workload", "target_prompt_tokens", "metric", "max_tokens", "concurrency", "request_rate", "api", "temperature", "past_eos", "prompt_set"]
            .map(|c| r[at(c)].to_owned())
    };
    let of = |pass: &str| key(decode.iter().find(|r| r[at("pass_id")] == pass).unwrap());
    let differing = |x: [String; 13], y: [String; 13]| (0..13).filter(|&i| x[i] != y[i]).collect::<Vec<_>>();
    // max_tokens is the 7th key column, request_rate the 9th.
    assert_eq!(differing(of("keys-cap101"), of("keys-cap1001")), [6]);
    assert_eq!((of("keys-cap101")[6].as_str(), of("keys-cap1001")[6].as_str()), ("101", "1001"));
    assert_eq!(differing(of("keys-closed"), of("keys-rate")), [8]);
    assert_eq!((of("keys-closed")[8].as_str(), of("keys-rate")[8].as_str()), ("", "50"));

    let (rate, closed) = (all.iter().find(|(p, _)| p.info.pass_id == "keys-rate").unwrap(), all.iter().find(|(p, _)| p.info.pass_id == "keys-closed").unwrap());
    let d = diff(&rate.0, &rate.1, &closed.0, &closed.1);
    assert!(!d.rows.is_empty());
    for row in &d.rows {
        assert_eq!(row.verdict, Verdict::Incomparable, "{row:#?}");
        assert!(row.reasons.iter().any(|r| r.code == ReasonCode::Params && r.detail == "request_rate 50 → none"), "{row:#?}");
    }
}
