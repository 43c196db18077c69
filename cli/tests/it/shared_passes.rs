//! Passes from someone else: a pass.json whose id names a folder elsewhere, names that carry
//! terminal escapes, and an export killed part-way. Each runs the real binary on a real pass
//! folder, as a user who renders a pass they were sent would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::*;

/// One imported pass `p1` of two sustained runs of `engine` under `root/passes`.
fn imported_pass(root: &Path, engine: &str) -> PathBuf {
    let csv = root.join("runs.csv");
    let good = "ab".repeat(32);
    let mut text = format!("{RUNS_CSV_HEADER}\n");
    for rep in 0..2 {
        text.push_str(&format!("p1,mac,\"{engine}\",1,{good},m,{good},text,sustained,0,30,256,256,120.5,4000,length,false,{rep},,usage\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let passes = root.join("passes");
    let output = import_csv(&csv, &passes);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    passes.join("p1")
}

/// Sets the `pass_id` of the pass in `dir`, as an edited file would.
fn set_pass_id(dir: &Path, id: &str) {
    let path = dir.join(harness::pass::PASS_FILE);
    let mut info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    info["pass_id"] = serde_json::Value::String(id.to_owned());
    std::fs::write(&path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
}

/// A folder of someone's files, shaped like a report: what a hostile id would aim at.
fn victim(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let files = [
        (dir.join("report.md"), b"my notes".to_vec()),
        (dir.join("leaderboard.csv"), b"mine".to_vec()),
        (dir.join("charts/decode-by-cell.svg"), b"<svg>mine</svg>".to_vec()),
        (dir.join("charts/photo.jpg"), b"\xff\xd8".to_vec()),
    ];
    for (path, bytes) in &files {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    files.to_vec()
}

fn assert_intact(files: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        assert_eq!(std::fs::read(path).ok().as_ref(), Some(bytes), "{} was changed or deleted", path.display());
    }
}

fn benchpass_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BENCHPASS).current_dir(cwd).args(args).output().expect("benchpass runs")
}

#[test]
fn a_pass_id_that_names_a_folder_elsewhere_is_refused_and_the_folder_left_intact() {
    let tmp = temp_dir();
    let pass = imported_pass(tmp.path(), "e");
    let cwd = tmp.path().join("work/here");
    std::fs::create_dir_all(&cwd).unwrap();

    let absolute = tmp.path().join("abs/victim");
    let relative = tmp.path().join("victim");
    for (id, target) in [(absolute.to_str().unwrap().to_owned(), &absolute), ("../../../victim".to_owned(), &relative)] {
        let files = victim(target);
        set_pass_id(&pass, &id);
        let output = benchpass_in(&cwd, &["report", pass.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "a report was written for pass id {id}: {stderr}");
        assert!(stderr.contains("its pass id cannot name the report's folder; give the folder with --out DIR"), "{stderr}");
        assert!(stderr.contains("use letters, digits"), "{stderr}");
        assert_intact(&files);
        assert!(!cwd.join("reports").exists(), "nothing written under the current folder either");

        // The user's own folder is theirs to choose.
        let out = tmp.path().join(format!("chosen-{}", id.len()));
        let output = benchpass_in(&cwd, &["report", pass.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(out.join("report.html").is_file());
        assert_intact(&files);
    }
}

#[test]
fn a_report_deletes_nothing_it_did_not_write_and_names_charts_it_left() {
    let tmp = temp_dir();
    let pass = imported_pass(tmp.path(), "e");
    let out = tmp.path().join("out");
    // An earlier render's chart that this pass does not draw, and a file of the user's.
    let files = [(out.join("charts/throughput-latency.svg"), b"<svg>old</svg>".to_vec()), (out.join("charts/notes.txt"), b"mine".to_vec())];
    for (path, bytes) in &files {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let output = benchpass(&["report", pass.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_intact(&files);
    assert!(stderr.contains("also holds throughput-latency.svg from an earlier render"), "{stderr}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!html.contains("throughput-latency.svg"), "the left chart is not linked");
    // Nothing of the temporary files the writes went through is left beside them.
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().map(|e| e.file_name()).filter(|n| n.to_string_lossy().ends_with(".tmp")).collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Whether `bytes` hold anything a terminal would obey rather than show: C0 controls other
/// than line ends and tabs, DEL, C1 controls and the bidirectional overrides.
fn obeyed_controls(bytes: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|&c| (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'))
        .collect()
}

#[test]
fn names_with_terminal_escapes_reach_stdout_shown_not_obeyed() {
    let tmp = temp_dir();
    // Set the window title, clear the screen, a C1 CSI, a carriage return and a right-to-left
    // override: in the engine name of a pass someone sent.
    let engine = "eng\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\r\u{202e}ine";
    let a_root = tmp.path().join("a");
    let b_root = tmp.path().join("b");
    std::fs::create_dir_all(&a_root).unwrap();
    std::fs::create_dir_all(&b_root).unwrap();
    let a = imported_pass(&a_root, engine);
    let b = imported_pass(&b_root, engine);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    for args in [
        vec!["leaderboard", a],
        vec!["diff", a, b, "--format", "csv"],
        vec!["diff", a, b, "--format", "md"],
        vec!["export", a],
        vec!["list", tmp.path().to_str().unwrap()],
    ] {
        let output = benchpass(&args);
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(obeyed_controls(&output.stdout), Vec::<char>::new(), "{args:?} stdout: {}", String::from_utf8_lossy(&output.stdout));
        assert_eq!(obeyed_controls(&output.stderr), Vec::<char>::new(), "{args:?} stderr: {}", String::from_utf8_lossy(&output.stderr));
        let stdout = String::from_utf8_lossy(&output.stdout);
        if args[0] != "list" {
            // Shown escaped (Markdown escapes its own brackets too).
            assert!(stdout.contains(r"eng\u{1b}") && stdout.contains(r"\u{9b}31m") && stdout.contains(r"\u{202e}ine"), "{args:?}: {stdout}");
        }
    }

    // Written to a file with --out, the export keeps the bytes (and so round-trips).
    let file = tmp.path().join("a.csv");
    assert!(benchpass(&["export", a, "--out", file.to_str().unwrap()]).status.success());
    assert!(std::fs::read_to_string(&file).unwrap().contains(engine));
}

/// A pass of `n` sustained runs, written straight to runs.jsonl (a large pass, quickly).
fn large_pass(root: &Path, n: usize) -> PathBuf {
    let pass = imported_pass(root, "e");
    let runs = pass.join(harness::pass::RUNS_FILE);
    let text = std::fs::read_to_string(&runs).unwrap();
    let line = text.lines().next().unwrap();
    let mut all = String::with_capacity(line.len() * n + n);
    for rep in 0..n {
        all.push_str(&line.replace("\"rep\":0", &format!("\"rep\":{rep}")));
        all.push('\n');
    }
    std::fs::write(&runs, all).unwrap();
    pass
}

#[test]
fn a_killed_export_leaves_the_whole_csv_or_none_under_its_name() {
    let tmp = temp_dir();
    let pass = large_pass(tmp.path(), 200_000);
    let whole = tmp.path().join("whole.csv");
    let started = std::time::Instant::now();
    let output = benchpass(&["export", pass.to_str().unwrap(), "--out", whole.to_str().unwrap()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let took = started.elapsed();
    let whole = std::fs::read(&whole).unwrap();

    // Kills spread over the export's own time (seeded, so a failure can be re-run).
    let mut seed: u64 = 0x05ee_d0fe_40a7;
    let mut partial_seen = 0;
    for kill in 0..10 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = took.mul_f64(0.1 + 0.8 * (seed % 1000) as f64 / 1000.0);
        let out = tmp.path().join(format!("killed-{kill}.csv"));
        let mut child = Command::new(BENCHPASS)
            .args(["export", pass.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill();
        let status = child.wait().unwrap();
        match std::fs::read(&out) {
            Ok(bytes) => assert_eq!(bytes.len(), whole.len(), "kill {kill} at {at:?} ({status}): a partial CSV under the final name"),
            Err(_) => partial_seen += 1,
        }
    }
    eprintln!("{partial_seen} of 10 kills came before the rename (export took {took:?})");
}
