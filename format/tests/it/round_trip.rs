//! Export → import → export gives the same bytes for every pass the repository ships: each
//! runs CSV under `fixtures/` (imported first), each pass folder there, and the committed
//! real pass. A column the CSV writer and reader disagree on, or a value one of them rounds,
//! shows up here as the first line that differs.

use std::path::{Path, PathBuf};

use benchpass_format::csv::{export_pass, import_runs, Audience};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file under `dir` whose name passes `keep`, in path order.
fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if keep(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The runs CSV (for tools) of the pass in `dir`.
fn export(dir: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    let exported = export_pass(dir, &mut bytes, Audience::Tools).unwrap_or_else(|e| panic!("exporting {}: {e:#}", dir.display()));
    assert!(exported.torn_tail.is_none() && exported.damage.total == 0, "{}: {exported:?}", dir.display());
    bytes
}

/// `csv` imported into a folder of its own under `scratch`: the pass folders it made.
fn import(csv: &Path, scratch: &Path) -> Vec<PathBuf> {
    let out = tempfile::tempdir_in(scratch).unwrap().keep();
    import_runs(csv, &out).unwrap_or_else(|e| panic!("importing {}: {e}", csv.display()))
}

/// The pass in `dir` exported, that file imported and exported again: the same bytes.
fn assert_round_trips(dir: &Path, scratch: &Path) {
    let first = export(dir);
    let file = tempfile::tempdir_in(scratch).unwrap().keep().join("runs.csv");
    std::fs::write(&file, &first).unwrap();
    let imported = import(&file, scratch);
    assert_eq!(imported.len(), 1, "{}: one pass exported, one imported", dir.display());
    let second = export(&imported[0]);
    if first != second {
        let (a, b) = (String::from_utf8_lossy(&first), String::from_utf8_lossy(&second));
        let (line, (was, is)) = a.lines().zip(b.lines()).enumerate().find(|(_, (x, y))| x != y).unwrap_or((0, ("", "")));
        panic!("{}: export → import → export differs at line {}:\n  {was}\n  {is}", dir.display(), line + 1);
    }
}

#[test]
fn the_runs_csv_of_every_fixture_and_of_the_real_pass_round_trips() {
    let root = workspace();
    let scratch = tempfile::tempdir().unwrap();
    let is_runs_csv = |path: &Path| {
        path.extension().is_some_and(|e| e == "csv") && std::fs::read_to_string(path).is_ok_and(|text| text.starts_with("pass_id,"))
    };
    let csvs = files_under(&root.join("fixtures"), &is_runs_csv);
    assert!(csvs.len() >= 16, "the runs CSVs under fixtures/: {csvs:?}");
    let mut passes = 0;
    for csv in &csvs {
        for dir in import(csv, scratch.path()) {
            assert_round_trips(&dir, scratch.path());
            passes += 1;
        }
    }
    let mut folders: Vec<PathBuf> =
        files_under(&root.join("fixtures"), &|p| p.ends_with("pass.json")).iter().map(|p| p.parent().unwrap().to_path_buf()).collect();
    assert!(folders.len() >= 2, "the pass folders under fixtures/: {folders:?}");
    folders.push(root.join("data/passes/llama-cpp-mlx-lm-20261130-103145"));
    for dir in &folders {
        assert_round_trips(dir, scratch.path());
    }
    assert!(passes >= csvs.len(), "every CSV held a pass");
}
