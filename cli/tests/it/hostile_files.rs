//! Hostile files: a runs CSV whose hash columns carry markup or formulas, a link planted where
//! `pass.json` is written through a temporary, and a plan whose engine name climbs out of the
//! pass folder. Each runs the real binary where a user would.

use std::path::{Path, PathBuf};

use crate::support::*;


#[test]
fn a_hash_that_is_not_a_sha256_is_refused_on_import_and_nothing_is_written() {
    let tmp = temp_dir();
    let good = "ab".repeat(32);
    for (column, engine_sha256, build_sha256, found) in [
        ("engine_sha256", "\"<img src=x onerror=alert(1)>|\"".to_owned(), good.clone(), "<img src=x onerror=alert(1)>|".to_owned()),
        ("build_sha256", good.clone(), "[x](javascript:alert(1))".to_owned(), "[x](javascript:alert(1))".to_owned()),
        // 64 characters, but upper case: not how benchpass writes a hash.
        ("build_sha256", good.clone(), "AB".repeat(32), "AB".repeat(32)),
        ("engine_sha256", "ab".repeat(31), good.clone(), "ab".repeat(31)),
        ("engine_sha256", format!("{good}|"), good.clone(), format!("{good}|")),
    ] {
        let csv = tmp.path().join("hostile.csv");
        std::fs::write(
            &csv,
            format!(
                "{RUNS_CSV_HEADER}\n\
                 a,mac,e,1,{good},m,{good},text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n\
                 a,mac,e,1,{engine_sha256},m,{build_sha256},text,sustained,0,30,256,256,120.5,4000,length,false,1,,usage\n"
            ),
        )
        .unwrap();
        let out = tmp.path().join("passes");
        let expected = format!("hostile.csv:3: column `{column}`: expected 64 hex characters (a SHA-256), found `{found}`");
        assert_import_refused(&csv, &out, &expected);
    }

    // Empty (not hashed) and 64 lowercase hex characters are what benchpass writes: imported.
    let csv = tmp.path().join("fine.csv");
    std::fs::write(
        &csv,
        format!("{RUNS_CSV_HEADER}\na,mac,e,1,,m,{good},text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n"),
    )
    .unwrap();
    let output = import_csv(&csv, &tmp.path().join("passes"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn formulas_are_exported_as_they_are_for_tools_and_neutralised_for_spreadsheets() {
    let tmp = temp_dir();
    let csv = tmp.path().join("formulas.csv");
    // A server's own /version, an engine name and a model id a spreadsheet would run.
    std::fs::write(
        &csv,
        format!(
            "{RUNS_CSV_HEADER}\n\
             p1,@mac,\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",-beta,,+model,,text,sustained,0,30,256,256,120.5,4000,=length,false,0,,usage\n\
             p1,@mac,\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",-beta,,+model,,text,sustained,0,30,256,256,121.5,4100,=length,false,1,,usage\n"
        ),
    )
    .unwrap();
    let passes = tmp.path().join("passes");
    let output = import_csv(&csv, &passes);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let pass = passes.join("p1");

    // The default export is for tools: every value as it is, and it round-trips byte for byte.
    let first = tmp.path().join("first.csv");
    assert!(benchpass(&["export", pass.to_str().unwrap(), "--out", first.to_str().unwrap()]).status.success());
    let text = std::fs::read_to_string(&first).unwrap();
    assert!(text.contains("p1,@mac,\"=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",-beta,,+model,,text,sustained,0,30,256,256,120.500,4000.000,=length,"), "{text}");
    let again = tmp.path().join("again");
    assert!(import_csv(&first, &again).status.success());
    let second = tmp.path().join("second.csv");
    assert!(benchpass(&["export", again.join("p1").to_str().unwrap(), "--out", second.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read(&first).unwrap(), std::fs::read(&second).unwrap(), "export → import → export");

    // For a spreadsheet: each text cell that starts a formula gets a `'`; numbers do not.
    let sheet = tmp.path().join("sheet.csv");
    let output = benchpass(&["export", pass.to_str().unwrap(), "--out", sheet.to_str().unwrap(), "--for-spreadsheet"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(&sheet).unwrap();
    assert_eq!(text.lines().next().unwrap(), format!("{RUNS_CSV_HEADER},concurrency,attempt,api,temperature,request_rate,past_eos,session,turn,prompt_id,cached_prompt_tokens,prompt_set"), "the same columns, in the same order");
    assert!(
        text.contains("p1,'@mac,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'-beta,,'+model,,text,sustained,0,30,256,256,120.500,4000.000,'=length,false,0,,usage"),
        "{text}"
    );
    // Importing it keeps the `'`: nothing is guessed.
    let from_sheet = tmp.path().join("from-sheet");
    assert!(import_csv(&sheet, &from_sheet).status.success());
    let read = harness::pass::read_pass(&from_sheet.join("p1")).unwrap();
    assert_eq!(read.info.cells[0].engine.version, "'-beta");
    assert_eq!(read.info.machine.name, "'@mac");
}

/// A file outside the pass folder, to show it was not touched.
#[cfg(unix)]
fn precious(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("precious.txt");
    std::fs::write(&file, "precious").unwrap();
    file
}

#[cfg(unix)]
#[test]
fn a_link_planted_at_the_pass_json_temporary_is_removed_not_followed() {
    let tmp = temp_dir();
    let kept = precious(&tmp.path().join("elsewhere"));
    let passes = tmp.path().join("passes");
    let dir = passes.join("p1");
    std::fs::create_dir_all(&dir).unwrap();
    let temporary = dir.join(".pass.json.tmp");
    std::os::unix::fs::symlink(&kept, &temporary).unwrap();

    // `benchpass import` writes pass.json through that temporary.
    let csv = tmp.path().join("runs.csv");
    std::fs::write(&csv, format!("{RUNS_CSV_HEADER}\np1,mac,e,1,,m,,text,sustained,0,30,256,256,120.5,4000,length,false,0,,usage\n")).unwrap();
    let output = import_csv(&csv, &passes);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious", "the link's target is left whole");
    assert!(std::fs::symlink_metadata(&temporary).is_err(), "the link is gone (removed, then the temporary renamed)");
    assert!(!std::fs::symlink_metadata(dir.join(harness::pass::PASS_FILE)).unwrap().file_type().is_symlink());
    let mut pass = harness::pass::read_pass(&dir).unwrap();
    assert_eq!(pass.runs.len(), 1);

    // Rewriting pass.json (as a pass does when it ends): a dangling link, a stale temporary
    // left by a killed writer, and a link again.
    let gone = tmp.path().join("elsewhere/not-yet");
    for plant in ["dangling link", "stale file", "link"] {
        match plant {
            "dangling link" => std::os::unix::fs::symlink(&gone, &temporary).unwrap(),
            "stale file" => std::fs::write(&temporary, "{\"half\":").unwrap(),
            _ => std::os::unix::fs::symlink(&kept, &temporary).unwrap(),
        }
        pass.info.machine.name.push('x');
        harness::pass::store::write_pass_info(&dir, &pass.info).unwrap();
        assert_eq!(harness::pass::read_pass(&dir).unwrap().info.machine.name, pass.info.machine.name, "{plant}");
        assert!(std::fs::symlink_metadata(&temporary).is_err(), "{plant}");
    }
    assert!(!gone.exists(), "a dangling link is not followed to create its target");
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "precious");

    // A folder in the temporary's place is not emptied or removed: the rewrite fails instead.
    std::fs::create_dir(&temporary).unwrap();
    std::fs::write(temporary.join("inside"), "kept").unwrap();
    assert!(harness::pass::store::write_pass_info(&dir, &pass.info).is_err());
    assert_eq!(std::fs::read_to_string(temporary.join("inside")).unwrap(), "kept");
    assert!(harness::pass::read_pass(&dir).is_ok(), "pass.json is left as it was");
}

/// A plan with one engine named `name` (a server at a URL: nothing to find on disk).
fn plan_with_engine(dir: &Path, name: &str) -> PathBuf {
    let quoted = serde_json::to_string(name).unwrap();
    let text = format!(
        "[[workloads]]\nkind = \"sustained\"\nruns = 1\nmax_tokens = 8\n\n[[models]]\nname = \"m\"\n\n\
         [[engines]]\nname = {quoted}\nurl = \"http://127.0.0.1:9\"\n\n[[cells]]\nengine = {quoted}\nmodel = \"m\"\n"
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_engine_name_that_would_leave_the_pass_folder_is_refused_by_plan_check() {
    let tmp = temp_dir();
    for name in ["../x", "a/b", "a\\b", ".hidden", "a\0b", "", "x/../../y"] {
        let plan = plan_with_engine(tmp.path(), name);
        let output = benchpass(&["plan", "check", plan.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "engine name {name:?} was accepted");
        // The engine's name is on line 10 of the plan.
        let expected = format!(
            "plan.toml:10: engine name `{}` may hold only letters, digits, `-`, `_` and `.` (not first)",
            name.escape_debug()
        );
        assert!(stderr.contains(&expected), "{name:?}: {stderr}");
        assert!(stderr.contains("hint: the name is used in file names in the pass folder"), "{stderr}");

        // `run` checks the plan first: nothing is written, inside the pass folder or above it.
        let out = tmp.path().join("pass");
        let run = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "plain"]);
        assert!(!run.status.success());
        assert!(!out.exists(), "{name:?}");
    }
    for name in ["llama.cpp", "mlx-lm", "vllm_0.8", "e0"] {
        let plan = plan_with_engine(tmp.path(), name);
        let output = benchpass(&["plan", "check", plan.to_str().unwrap()]);
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
    }
}
