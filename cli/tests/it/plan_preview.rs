//! A plan read and previewed before its engines are installed, and the values a shipped plan
//! leaves to its user: `plan check` and `--dry-run` name what is missing and go on; `run`
//! refuses the plan, before anything is started or written.

use crate::support::*;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `benchpass ARGS` with PATH set to `path` only.
fn benchpass_with_path(path: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BENCHPASS).args(args).env("PATH", path).output().expect("benchpass runs")
}

/// The line numbers of `plans/seed-mlx.toml` that hold `needle`, in order.
fn lines_of_seed_mlx(needle: &str) -> Vec<usize> {
    let text = std::fs::read_to_string(root().join("plans/seed-mlx.toml")).unwrap();
    text.lines().enumerate().filter(|(_, l)| !l.starts_with('#') && l.contains(needle)).map(|(i, _)| i + 1).collect()
}

#[test]
fn the_seed_mlx_plan_checks_and_previews_without_its_engines_naming_each_missing_program_and_placeholder() {
    let tmp = temp_dir();
    let empty_path = tmp.path().join("bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let plan = root().join("plans/seed-mlx.toml");
    let output = benchpass_with_path(&empty_path, &["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // The five `start` lines (each engine's at its own line) and five placeholders: oMLX's
    // model folder and the four model ids.
    let starts = lines_of_seed_mlx("start = [");
    assert_eq!(starts.len(), 5);
    for (line, program) in starts.iter().zip(["omlx", "rapid-mlx", "splash", "mtplx", "kapitsa"]) {
        assert!(stderr.contains(&format!("seed-mlx.toml:{line}: `{program}` is neither a file nor on PATH")), "{program}: {stderr}");
    }
    let marked = lines_of_seed_mlx("\"<");
    assert_eq!(marked.len(), 5, "{marked:?}");
    assert!(stderr.contains(&format!("seed-mlx.toml:{}: `<the folder that holds your model folders>` is a placeholder", marked[0])), "{stderr}");
    for (line, id) in marked[1..].iter().zip(["Qwen3.6-35B-A3B-4bit", "mlx-community/Qwen3.6-35B-A3B-4bit", "incoai/Qwen3.6-35B-A3B-Splash", "35b"]) {
        assert!(stderr.contains(&format!("seed-mlx.toml:{line}: `<{id}>` is a placeholder: put your own value in its place")), "{id}: {stderr}");
    }
    assert_eq!(stderr.matches("hint: ").count(), 10, "a hint each: {stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("5 engines, 4 models, 5 cells, 4 steps: checks, with 10 to fix above before `benchpass run` takes it"), "{stdout}");

    // The preview: 5 cells × (3 + 3 + 2 + 1) runs of 256 tokens = 11520 tokens, 384 s at 30 tok/s;
    // a 150 s gap in each cell and 300 s between cells: 750 + 1200 s; 2334 s in all.
    let output = benchpass_with_path(&empty_path, &["run", plan.to_str().unwrap(), "--dry-run"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let schedule = String::from_utf8_lossy(&output.stdout);
    assert!(schedule.contains("5 cells, 45 runs, 11520 tokens: 1950 s of gaps + about 384 s of decoding at 30 tok/s ≈ 0h38m54s"), "{schedule}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("`kapitsa` is neither a file nor on PATH"));
}

#[cfg(unix)]
#[test]
fn with_the_engines_installed_the_seed_mlx_plan_is_still_refused_by_run_until_its_placeholders_are_filled() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = temp_dir();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // Stand-ins for the five engines: any start would leave a file behind.
    let started = tmp.path().join("started");
    for program in ["omlx", "rapid-mlx", "splash", "mtplx", "kapitsa"] {
        let stub = bin.join(program);
        std::fs::write(&stub, format!("#!/bin/sh\ntouch '{}'\nexit 1\n", started.display())).unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let plan = root().join("plans/seed-mlx.toml");
    let output = benchpass_with_path(&bin, &["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("nor on PATH"), "{stderr}");
    assert_eq!(stderr.matches("is a placeholder").count(), 5, "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("checks, with 5 to fix above"));

    let out = tmp.path().join("pass");
    let output = benchpass_with_path(&bin, &["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the plan is not ready to run on this machine (5 things to fix first; nothing was started or written)"), "{stderr}");
    assert!(stderr.contains("`<35b>` is a placeholder"), "{stderr}");
    assert!(!out.exists(), "no pass folder");
    assert!(!started.exists(), "no engine started");
}

#[test]
fn a_program_not_installed_is_a_warning_for_check_and_dry_run_and_an_error_for_run() {
    let tmp = temp_dir();
    let plan = tmp.path().join("plan.toml");
    std::fs::write(
        &plan,
        "[[engines]]\nname = \"e\"\nstart = [\"no-such-engine-here\", \"--port\", \"{port}\"]\nport = 8080\n\n[[models]]\nname = \"m\"\n\n\
         [[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\nruns = 1\n",
    )
    .unwrap();
    let check = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{stderr}");
    assert!(stderr.contains("plan.toml:3: `no-such-engine-here` is neither a file nor on PATH"), "{stderr}");
    assert!(stderr.contains("hint: install the engine, or give the full path to its executable"), "{stderr}");
    let dry = benchpass(&["run", plan.to_str().unwrap(), "--dry-run"]);
    assert!(dry.status.success());
    assert!(String::from_utf8_lossy(&dry.stdout).contains("1 cells, 1 runs, 256 tokens"), "{}", String::from_utf8_lossy(&dry.stdout));

    let out = tmp.path().join("pass");
    let run = benchpass(&["run", plan.to_str().unwrap(), "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("(1 thing to fix first; nothing was started or written)"), "{stderr}");
    assert!(stderr.contains("plan.toml:3: `no-such-engine-here` is neither a file nor on PATH"), "{stderr}");
    assert!(!out.exists(), "no pass folder");
}

#[test]
fn a_placeholder_is_named_wherever_it_is_and_a_comment_or_a_longer_string_is_not_one() {
    let tmp = temp_dir();
    let plan = tmp.path().join("plan.toml");
    // Line 2: a placeholder in a comment (not one); 6: in an env value; 11: a literal string;
    // 12: a value that only holds `<` … `>` inside it (not one).
    std::fs::write(
        &plan,
        "name = \"p\"\n# start = [\"<not a value>\"]\n[[engines]]\nname = \"e\"\nurl = \"http://127.0.0.1:1\"\nenv = { TOKEN = \"<your token>\" }\n\n\
         [[models]]\nname = \"m\"\nfamily = \"f\"\nid = '<model id>'\nlane = \"a <b> c\"\n\n\
         [[cells]]\nengine = \"e\"\nmodel = \"m\"\n\n[[workloads]]\nkind = \"sustained\"\nruns = 1\n",
    )
    .unwrap();
    let check = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{stderr}");
    assert!(stderr.contains("plan.toml:6: `<your token>` is a placeholder"), "{stderr}");
    assert!(stderr.contains("plan.toml:11: `<model id>` is a placeholder"), "{stderr}");
    assert_eq!(stderr.matches("is a placeholder").count(), 2, "{stderr}");
}
