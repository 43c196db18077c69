//! A pass's `leaderboard.cache`: written when `benchpass run` ends, and a leaderboard read
//! through it is byte for byte the one worked out from the raw runs; a cache that does not
//! match the raw files here (copied with its pass, edited, cut short, too large, a link) never
//! changes a figure; `--verify` catches one edited in place (docs/leaderboard.md).

use std::path::{Path, PathBuf};

use harness::pass::leaderboard_cache::CACHE_FILE;

use crate::support::*;

/// Passes measured on the reference engine: sustained, a prompt matrix, and a sweep (whose
/// 2-stream step has serving rows).
fn measured(root: &Path) -> Vec<PathBuf> {
    let sim = Sim::start(&["--decode-tps", "2000", "--prefill-tps", "100000"]);
    let runs: [(&str, &[&str]); 3] = [
        ("sustained", &["--runs", "3", "--max-tokens", "8"]),
        (
            "matrix",
            &[
                "--prompt-tokens",
                "64",
                "--prompt-tokens",
                "256",
                "--runs",
                "2",
                "--max-tokens",
                "8",
            ],
        ),
        (
            "sweep",
            &["--concurrency", "1,2", "--runs", "4", "--max-tokens", "8"],
        ),
    ];
    runs.iter()
        .map(|(id, args)| {
            let dir = root.join(id);
            let mut all = vec!["--pass-id", id];
            all.extend_from_slice(args);
            run_pass(&sim, &dir, &all);
            dir
        })
        .collect()
}

/// The leaderboard of `dirs` as `benchpass leaderboard` prints it, with what it said on stderr.
fn leaderboard(dirs: &[PathBuf], extra: &[&str]) -> (String, String) {
    let mut args: Vec<&str> = vec!["leaderboard"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend_from_slice(extra);
    let output = benchpass(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// The leaderboard as the analysis works it out from the raw runs, with no cache anywhere.
fn from_raw_runs(dirs: &[PathBuf]) -> String {
    let passes: Vec<_> = dirs
        .iter()
        .map(|d| harness::pass::store::read_pass(d).unwrap())
        .collect();
    let steps = analysis::cells::summarize_many(&passes).unwrap();
    analysis::leaderboard::to_csv(steps.iter().map(Vec::as_slice))
}

/// A copy of the pass in `from` at `to`, as someone sent it: the raw files, and its cache
/// where `with_cache`.
fn copy_pass(from: &Path, to: &Path, with_cache: bool) {
    std::fs::create_dir_all(to).unwrap();
    for file in [harness::pass::PASS_FILE, harness::pass::RUNS_FILE] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    if with_cache {
        std::fs::copy(from.join(CACHE_FILE), to.join(CACHE_FILE)).unwrap();
    }
}

/// The cache in `dir` with every `from` in its rows made `to`, its header kept as it is.
fn edit_rows(dir: &Path, from: &str, to: &str) {
    let path = dir.join(CACHE_FILE);
    let bytes = std::fs::read(&path).unwrap();
    let edited = replaced(&bytes, from, to);
    assert_ne!(edited, bytes, "the rows hold {from}");
    assert_eq!(
        edited.len(),
        bytes.len(),
        "an edit of the same length keeps rows_bytes right"
    );
    std::fs::write(&path, edited).unwrap();
}

/// `bytes` with every `from` made `to`. A cache is its header and CSV rows, then its typed
/// rows, which are binary: a text with commas in it is found only in the CSV rows.
fn replaced(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Whether `bytes` hold `text` anywhere.
fn holds(bytes: &[u8], text: &str) -> bool {
    bytes.windows(text.len()).any(|w| w == text.as_bytes())
}

#[test]
fn a_leaderboard_read_through_caches_is_byte_for_byte_the_one_from_the_raw_runs() {
    let tmp = temp_dir();
    let dirs = measured(&tmp.path().join("measured"));
    for dir in &dirs {
        assert!(
            dir.join(CACHE_FILE).is_file(),
            "`benchpass run` leaves {CACHE_FILE} in {}",
            dir.display()
        );
    }
    let expected = from_raw_runs(&dirs);
    assert!(
        expected.contains(",decode_tps@c2,") && expected.contains(",ttft_ms,"),
        "{expected}"
    );
    let (cached, _) = leaderboard(&dirs, &[]);
    assert_eq!(cached, expected);
    // The same passes with no cache: worked out from the raw runs, which write the caches.
    let bare: Vec<PathBuf> = dirs
        .iter()
        .map(|d| {
            let to = tmp.path().join("bare").join(d.file_name().unwrap());
            copy_pass(d, &to, false);
            to
        })
        .collect();
    let (worked_out, _) = leaderboard(&bare, &[]);
    assert_eq!(worked_out, expected);
    assert!(
        bare.iter().all(|d| d.join(CACHE_FILE).is_file()),
        "the first read writes the caches"
    );
    let (again, _) = leaderboard(&bare, &[]);
    assert_eq!(again, expected, "and the second reads them");
    let (verified, notes) = leaderboard(&bare, &["--verify"]);
    assert_eq!(verified, expected);
    assert!(!notes.contains("disagreed"), "{notes}");
    // Markdown and JSON are made from the same rows.
    for ext in ["md", "json"] {
        let (a, b) = (
            tmp.path().join(format!("a.{ext}")),
            tmp.path().join(format!("b.{ext}")),
        );
        leaderboard(&dirs, &["--out", a.to_str().unwrap()]);
        leaderboard(&bare, &["--out", b.to_str().unwrap(), "--verify"]);
        assert_eq!(
            std::fs::read(a).unwrap(),
            std::fs::read(b).unwrap(),
            ".{ext}"
        );
    }
}

#[test]
fn a_cache_that_does_not_match_its_raw_files_never_changes_a_figure() {
    let tmp = temp_dir();
    let dirs = measured(&tmp.path().join("measured"));
    let expected = from_raw_runs(&dirs);
    let sustained = &dirs[0];
    let median = |csv: &str| -> String {
        let row = csv
            .lines()
            .find(|l| l.starts_with("sustained,") && l.contains(",decode_tps,"))
            .unwrap();
        row.split(',').nth(12).unwrap().to_owned()
    };
    let true_median = median(&expected);
    let forged = format!("{:0>width$}", "9", width = true_median.len());

    // Sent with its pass from elsewhere (a copy: new files, new stamps), edited or not: ignored,
    // then rewritten from the raw runs.
    let sent = tmp.path().join("sent");
    copy_pass(sustained, &sent, true);
    edit_rows(&sent, &format!(",{true_median},"), &format!(",{forged},"));
    let (csv, _) = leaderboard(std::slice::from_ref(&sent), &[]);
    assert_eq!(median(&csv), true_median);
    assert!(
        !holds(
            &std::fs::read(sent.join(CACHE_FILE)).unwrap(),
            &format!(",{forged},")
        ),
        "rewritten"
    );

    // Not a cache, cut short, larger than any cache, or a link to one that matches: ignored.
    let garbage = tmp.path().join("garbage");
    copy_pass(sustained, &garbage, false);
    for contents in [b"not a cache".to_vec(), Vec::new()] {
        std::fs::write(garbage.join(CACHE_FILE), contents).unwrap();
        assert_eq!(
            leaderboard(std::slice::from_ref(&garbage), &[]).0,
            from_raw_runs(std::slice::from_ref(&garbage))
        );
    }
    let cut = std::fs::read(garbage.join(CACHE_FILE)).unwrap();
    std::fs::write(garbage.join(CACHE_FILE), &cut[..cut.len() - 10]).unwrap();
    assert_eq!(
        leaderboard(std::slice::from_ref(&garbage), &[]).0,
        from_raw_runs(std::slice::from_ref(&garbage))
    );
    let huge = std::fs::File::create(garbage.join(CACHE_FILE)).unwrap();
    huge.set_len(harness::pass::leaderboard_cache::MAX_CACHE_BYTES + 1)
        .unwrap();
    drop(huge);
    assert_eq!(
        leaderboard(std::slice::from_ref(&garbage), &[]).0,
        from_raw_runs(std::slice::from_ref(&garbage))
    );
    assert!(
        std::fs::metadata(garbage.join(CACHE_FILE)).unwrap().len() < 1 << 20,
        "rewritten"
    );
    #[cfg(unix)]
    {
        // A link to this very pass's own (edited) cache: the link is not followed.
        let elsewhere = tmp.path().join("elsewhere.cache");
        std::fs::rename(garbage.join(CACHE_FILE), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, garbage.join(CACHE_FILE)).unwrap();
        let bytes = std::fs::read(&elsewhere).unwrap();
        let edited = replaced(&bytes, &format!(",{true_median},"), &format!(",{forged},"));
        std::fs::write(&elsewhere, edited).unwrap();
        assert_eq!(
            median(&leaderboard(std::slice::from_ref(&garbage), &[]).0),
            true_median
        );
    }

    // Runs appended since the cache was written: stale, worked out again.
    let grown = tmp.path().join("grown");
    copy_pass(sustained, &grown, false);
    leaderboard(std::slice::from_ref(&grown), &[]);
    let runs = std::fs::read_to_string(grown.join(harness::pass::RUNS_FILE)).unwrap();
    let last = runs
        .lines()
        .last()
        .unwrap()
        .replace("\"rep\":2", "\"rep\":3");
    std::fs::write(
        grown.join(harness::pass::RUNS_FILE),
        format!("{runs}{last}\n"),
    )
    .unwrap();
    let (csv, _) = leaderboard(std::slice::from_ref(&grown), &[]);
    assert_eq!(csv, from_raw_runs(std::slice::from_ref(&grown)));
    assert!(
        csv.lines()
            .any(|l| l.contains(",decode_tps,") && l.contains(",4,0,")),
        "four runs now: {csv}"
    );

    // Edited in place here, its header left as it was: its stamp still matches the raw files,
    // so the default read takes it (whoever can write the cache here can write the runs);
    // `--verify` works every row out again, says so, and rewrites it.
    edit_rows(
        sustained,
        &format!(",{true_median},"),
        &format!(",{forged},"),
    );
    assert_eq!(
        median(&leaderboard(std::slice::from_ref(sustained), &[]).0),
        forged
    );
    let (verified, notes) = leaderboard(std::slice::from_ref(sustained), &["--verify"]);
    assert_eq!(median(&verified), true_median);
    assert!(
        notes.contains("leaderboard.cache disagreed with its raw runs"),
        "{notes}"
    );
    assert_eq!(
        median(&leaderboard(std::slice::from_ref(sustained), &[]).0),
        true_median,
        "rewritten by --verify"
    );
}

#[test]
fn a_pass_id_seen_twice_stops_the_leaderboard_while_the_next_slice_is_being_read() {
    let tmp = temp_dir();
    let dirs = measured(&tmp.path().join("measured"));
    // More copies than one slice of passes (512), so the reader is ahead, in the next slice,
    // when the second `sustained` is taken: an error there must stop it, not hang on it.
    let mut all = vec![dirs[2].clone(), dirs[0].clone()];
    for i in 0..600 {
        let to = tmp.path().join("copies").join(format!("{i:03}"));
        copy_pass(&dirs[0], &to, i % 2 == 0);
        all.push(to);
    }
    let parquet = tmp.path().join("fleet");
    for extra in [&[][..], &["--parquet", parquet.to_str().unwrap()][..]] {
        let mut args: Vec<&str> = vec!["leaderboard"];
        args.extend(all.iter().map(|d| d.to_str().unwrap()));
        args.extend_from_slice(extra);
        let output = benchpass(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: pass id `sustained` appears twice",
                all[2].display()
            )),
            "{extra:?}: {stderr}"
        );
    }
}
