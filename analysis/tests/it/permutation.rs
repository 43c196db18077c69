//! The order of a pass's cells is not a fact about the engines: listing them otherwise must
//! change no row of a diff. Each fixture pair is diffed as written and then with the cells of
//! both passes shuffled (seeded), their runs kept in order within each cell; the rows, drift
//! and counts must be the same, row for row once sorted. Pairing that followed list order
//! (two versions of one engine, two builds under one model id, two steps alike in every
//! field) fails here.

use std::path::{Path, PathBuf};

use analysis::cells::{summarize, CellStep};
use analysis::diff::{diff_with, Correction, Diff};
use harness::pass::{read_pass, Pass};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff")
}

fn import(csv: &Path, tmp: &tempfile::TempDir) -> Pass {
    let dirs = harness::pass::csv::import_runs(csv, tmp.path()).unwrap();
    read_pass(&dirs[0]).unwrap()
}

/// A small seeded generator (xorshift64*): the same shuffles on every machine.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}

/// `pass` with its cells in a shuffled order and its runs grouped cell by cell in that order,
/// each cell's runs in the order they were recorded.
fn shuffled(pass: &Pass, rng: &mut Seeded) -> Pass {
    let mut out = pass.clone();
    for i in (1..out.info.cells.len()).rev() {
        out.info.cells.swap(i, rng.below(i + 1));
    }
    out.runs = out.info.cells.iter().flat_map(|c| pass.runs.iter().filter(|r| r.cell == c.id).cloned()).collect();
    out
}

/// Every row of the diff, its drift and its counts, in an order that does not depend on the
/// passes' (`Debug` text sorted: every field, figures and reasons included).
fn canonical(d: &Diff) -> (Vec<String>, Vec<String>, usize, String, usize) {
    let mut rows: Vec<String> = d.rows.iter().map(|r| format!("{r:?}")).collect();
    rows.sort();
    let mut drift: Vec<String> = d.drift.iter().map(|x| format!("{x:?}")).collect();
    drift.sort();
    (rows, drift, d.n_tested, format!("{:.12}", d.expected_false_calls), d.withdrawn)
}

fn diff_of(a: &Pass, b: &Pass, extra: &dyn Fn(&mut Vec<CellStep>)) -> Diff {
    let (mut sa, mut sb) = (summarize(a).unwrap(), summarize(b).unwrap());
    extra(&mut sa);
    extra(&mut sb);
    diff_with(a, &sa, b, &sb, Correction::Holm)
}

fn assert_order_free(a: &Pass, b: &Pass, extra: &dyn Fn(&mut Vec<CellStep>)) {
    let as_written = canonical(&diff_of(a, b, extra));
    assert!(!as_written.0.is_empty());
    for seed in 1..=24u64 {
        let mut rng = Seeded(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (a2, b2) = (shuffled(a, &mut rng), shuffled(b, &mut rng));
        let now = canonical(&diff_of(&a2, &b2, extra));
        let only = |x: &[String], y: &[String]| x.iter().filter(|r| !y.contains(r)).cloned().collect::<Vec<_>>();
        assert_eq!(now, as_written, "seed {seed}: rows only as written {:#?}; rows only shuffled {:#?}", only(&as_written.0, &now.0), only(&now.0, &as_written.0));
    }
}

#[test]
fn shuffling_the_cells_of_either_pass_changes_no_diff_row() {
    let tmp = tempfile::tempdir().unwrap();
    let pairs = [("a.csv", "b.csv"), ("more/a.csv", "more/b.csv"), ("versions/a.csv", "versions/b.csv"), ("burst/a.csv", "burst/b.csv")];
    for (a, b) in pairs {
        let (pa, pb) = (import(&fixtures().join(a), &tmp), import(&fixtures().join(b), &tmp));
        assert_order_free(&pa, &pb, &|_| {});
    }
}

#[test]
fn steps_alike_in_every_field_the_diff_pairs_on_are_never_paired_whatever_the_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (pa, pb) = (import(&fixtures().join("versions/a.csv"), &tmp), import(&fixtures().join("versions/b.csv"), &tmp));
    // A second cell alike in everything to the first cell's steps (another id, other figures):
    // which of the two is B's partner is not known, so neither is paired.
    let twin = |steps: &mut Vec<CellStep>| {
        let first = steps.iter().map(|s| s.cell.clone()).min().unwrap();
        let copies: Vec<CellStep> = steps
            .iter()
            .filter(|s| s.cell == first)
            .map(|s| CellStep { cell: format!("{first}-twin"), ..s.clone() })
            .collect();
        steps.extend(copies);
    };
    assert_order_free(&pa, &pb, &twin);
    let d = diff_of(&pa, &pb, &twin);
    let alike: Vec<_> = d.rows.iter().filter(|r| r.reasons.iter().any(|x| x.detail.contains("steps alike"))).collect();
    assert!(!alike.is_empty(), "{:#?}", d.rows);
    assert!(alike.iter().all(|r| matches!(r.verdict, analysis::diff::Verdict::Gone | analysis::diff::Verdict::New)), "{alike:#?}");
}
