//! Where engine knowledge sits, checked on the sources: below the client and the pass format,
//! above nothing. A text check is enough: each rule is about what a file names.

use std::path::{Path, PathBuf};

fn workspace_file(path: &str) -> (PathBuf, String) {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    (full, text)
}

/// The lines of `text` that name any of `words`, as `file:line: text` for the failure message.
fn naming(file: &Path, text: &str, words: &[&str]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| words.iter().any(|w| line.contains(w)))
        .map(|(i, line)| format!("{}:{}: {}", file.display(), i + 1, line.trim()))
        .collect()
}

/// The client streams and reads what a stream holds (draft counts by their shape, from
/// `engines::drafts`); it does not know the table of engines nor the plan that runs them. When
/// it named `plan::presets::PRESETS`, the plan imported the client and the client the plan's
/// table: neither could move into a crate of its own, and each engine added to the table
/// changed what the client read from every server. Whatever engine-specific choice a request
/// needs reaches the client through its `RequestConfig`.
#[test]
fn the_client_names_neither_the_plan_nor_the_presets_table() {
    let (file, text) = workspace_file("harness/src/client.rs");
    let found = naming(&file, &text, &["plan::", "PRESETS", "presets::"]);
    assert!(found.is_empty(), "the client must not name the plan or the presets table:\n{}", found.join("\n"));
}

/// The raw pass format is a crate that any tool can read passes with (`format/`); it may name
/// `engines` types (the way past EOS a cell records) but not the plan, which drives engines.
#[test]
fn the_pass_format_names_no_plan() {
    let (file, text) = workspace_file("format/src/format.rs");
    let found = naming(&file, &text, &["plan::"]);
    assert!(found.is_empty(), "the pass format must not name the plan:\n{}", found.join("\n"));
}

/// `engines` is data at the bottom of the workspace: the client, the executor and the pass
/// format read it, so it may import none of them (Cargo refuses `harness` as a cycle; this keeps
/// out the others too), and it does no I/O, so that reading it can never touch the machine.
/// What must be looked up (a version program on `PATH`, a model's EOS ids in its weights
/// folder) is the harness's.
#[test]
fn engines_names_no_workspace_crate_and_does_no_io() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let forbidden = [
        "harness::", "analysis::", "report::", "benchpass::", "xtask::", "std::fs", "std::env", "std::process", "std::net", "std::io", "tokio", "reqwest",
    ];
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let found = naming(&file, &text, &forbidden);
        assert!(found.is_empty(), "engines must import no workspace crate and do no I/O:\n{}", found.join("\n"));
    }
    let (manifest, text) = workspace_file("engines/Cargo.toml");
    let dependencies: Vec<&str> = text
        .split("[dependencies]")
        .nth(1)
        .expect("a [dependencies] table")
        .lines()
        .take_while(|line| !line.starts_with('['))
        .filter_map(|line| line.split(['.', '=', ' ']).next().filter(|name| !name.is_empty() && !name.starts_with('#')))
        .collect();
    assert_eq!(dependencies, ["serde", "serde_json"], "{}: serde-level dependencies only", manifest.display());
}
