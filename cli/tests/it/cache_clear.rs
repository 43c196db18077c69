//! The KV-cache clear against the folders it must never empty: a home folder reached through a
//! link, the folder holding the passes, the plan's own folder, and a cache folder swapped for
//! a link while the pass runs. Each case runs the real binary on a real plan.

use std::path::{Path, PathBuf};

use harness::pass::{read_pass, PassStatus};

use crate::support::*;

/// A plan in `dir/plans/` with one reference engine per `starts` entry (each a `start`
/// array's inner text), every one clearing `kv_cache_dir`, one sustained run per cell.
fn plan(dir: &Path, kv_cache_dir: &str, starts: &[String]) -> PathBuf {
    let plans = dir.join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    let mut text = String::from("[[workloads]]\nkind = \"sustained\"\nruns = 1\nmax_tokens = 8\n\n[[models]]\nname = \"m\"\n");
    for (i, start) in starts.iter().enumerate() {
        text.push_str(&format!(
            "\n[[engines]]\nname = \"e{i}\"\npreset = \"benchpass-sim\"\nstart = [{start}]\nport = {}\nkv_cache_dir = {}\n\n[[cells]]\nengine = \"e{i}\"\nmodel = \"m\"\n",
            free_port(),
            toml_string(kv_cache_dir)
        ));
    }
    let path = plans.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn sim_start() -> String {
    r#""{benchpass}", "sim", "--port", "{port}", "--model", "{model}", "--decode-tps", "2000""#.to_owned()
}

#[cfg(unix)]
fn with_home(home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BENCHPASS).args(args).env("HOME", home).output().unwrap()
}

/// A folder with a file in it, to show it was not touched.
fn precious(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("keep-me.txt");
    std::fs::write(&file, "precious").unwrap();
    file
}

#[cfg(unix)]
#[test]
fn a_home_folder_reached_through_a_link_is_never_cleared() {
    let tmp = temp_dir();
    let real_home = tmp.path().join("real-home");
    let kept = precious(&real_home);
    let home = tmp.path().join("home");
    std::os::unix::fs::symlink(&real_home, &home).unwrap();
    let plan = plan(tmp.path(), "~/", &[sim_start()]);

    let check = with_home(&home, &["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success());
    assert!(stderr.contains("plan.toml:") && stderr.contains("refusing to clear `~/`: it is your home folder"), "{stderr}");

    let out = tmp.path().join("pass");
    let run = with_home(&home, &["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap()]);
    assert!(!run.status.success(), "a plan that fails its checks does not run");
    assert!(kept.exists());
}

#[test]
fn the_folder_holding_the_passes_is_never_cleared() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let data = tmp.path().join("data");
    let kept = precious(&data);
    let plan = plan(tmp.path(), "../data", &[sim_start()]);
    // Nothing is in data/ yet but a note: the plan checks. The pass then goes into it.
    let check = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));

    let out = data.join("passes/p1");
    let run = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap(), "--progress", "plain"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(kept.exists(), "{stderr}");
    let pass = read_pass(&out).unwrap();
    // The cell is not run, and says why: its run is recorded as failed, nothing is dropped.
    assert_eq!(pass.runs.len(), 1);
    let error = pass.runs[0].error.as_ref().unwrap();
    assert_eq!(error.class, "engine-start");
    assert!(error.message.contains("refusing to clear the KV-cache folder") && error.message.contains("this pass"), "{}", error.message);
    assert_eq!(pass.info.status, PassStatus::Complete);

    // Once a pass is there, `plan check` refuses the folder too, whatever --out will be.
    let check = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success() && stderr.contains("it holds a benchpass pass"), "{stderr}");
}

#[test]
fn an_empty_cache_path_and_the_plans_own_folder_are_refused() {
    let tmp = temp_dir();
    for (dir, why) in [("", "an empty path names no cache folder"), (".", "it is the plan's folder"), ("..", "it holds the plan's folder")] {
        let plan = plan(tmp.path(), dir, &[sim_start()]);
        let check = benchpass(&["plan", "check", plan.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&check.stderr);
        assert!(!check.status.success() && stderr.contains(why), "{dir:?}: {stderr}");
    }
}

#[cfg(unix)]
#[test]
fn a_cache_folder_swapped_for_a_link_between_cells_is_not_followed() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let cache = tmp.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("stale.bin"), "0123456789").unwrap();
    let target = tmp.path().join("precious");
    let kept = precious(&target);
    // The first engine, once started, replaces the cache folder with a link to a folder that
    // must survive; the second cell's clear, checked again right before it, must refuse it.
    let swap = format!(
        r#""sh", "-c", "rm -rf '{c}' && ln -s '{t}' '{c}' && exec \"$0\" sim --port {{port}} --model {{model}} --decode-tps 2000", "{{benchpass}}""#,
        c = cache.display(),
        t = target.display()
    );
    let plan = plan(tmp.path(), cache.to_str().unwrap(), &[swap, sim_start()]);
    let out = tmp.path().join("pass");
    let run = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap(), "--progress", "plain"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(kept.exists(), "the link's target was emptied: {stderr}");
    // The first clear happened, said what it deleted, in the cell's log too.
    assert!(stderr.contains(": 1 entries, 10 bytes"), "{stderr}");
    let log = std::fs::read_to_string(out.join("logs/c0-e0.log")).unwrap();
    assert!(log.contains("benchpass: cleared the KV cache") && log.contains("1 entries, 10 bytes"), "{log}");
    let pass = read_pass(&out).unwrap();
    assert!(pass.runs[0].error.is_none(), "{:?}", pass.runs[0].error);
    let error = pass.runs[1].error.as_ref().expect("the second cell refused its clear");
    assert!(error.message.contains("symbolic link"), "{}", error.message);
}

/// A plan in `dir/plans/` whose one model has `weights` and whose reference engine clears
/// `kv_cache_dir`; and the line that `kv_cache_dir` is on.
fn plan_with_weights(dir: &Path, weights: &str, kv_cache_dir: &str) -> (PathBuf, usize) {
    let text = format!(
        "[[workloads]]\nkind = \"sustained\"\nruns = 1\nmax_tokens = 8\n\n[[models]]\nname = \"qwen\"\nweights = {}\n\n\
         [[engines]]\nname = \"e\"\npreset = \"benchpass-sim\"\nstart = [{}]\nport = {}\nkv_cache_dir = {}\n\n[[cells]]\nengine = \"e\"\nmodel = \"qwen\"\n",
        toml_string(weights),
        sim_start(),
        free_port(),
        toml_string(kv_cache_dir)
    );
    let line = text.lines().position(|l| l.starts_with("kv_cache_dir")).unwrap() + 1;
    let path = dir.join("plans/plan.toml");
    std::fs::write(&path, text).unwrap();
    (path, line)
}

/// `plan check` refuses the plan at the line of its `kv_cache_dir`, and `run` does not start.
fn assert_refused_and_kept(plan: &Path, line: usize, why: &str, kept: &Path) {
    let check = benchpass(&["plan", "check", plan.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("plan.toml:{line}: {why}")), "{stderr}");
    let out = plan.parent().unwrap().parent().unwrap().join("pass");
    let run = benchpass(&["run", plan.to_str().unwrap(), "--gap-scale", "0", "--out", out.to_str().unwrap()]);
    assert!(!run.status.success(), "a plan that fails its checks does not run");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "GGUF weights", "the weights are untouched");
}

#[test]
fn a_cache_folder_holding_the_models_weights_is_refused_and_the_weights_survive() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let weights = tmp.path().join("plans/models/qwen/model.gguf");
    std::fs::create_dir_all(weights.parent().unwrap()).unwrap();
    std::fs::write(&weights, "GGUF weights").unwrap();
    let (plan, line) = plan_with_weights(tmp.path(), "models/qwen/model.gguf", "models");
    assert_refused_and_kept(&plan, line, "refusing to clear `models`: it holds the weights of model `qwen` (", &weights);
}

#[cfg(unix)]
#[test]
fn weights_that_are_a_link_into_the_cache_folder_are_refused_too() {
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let real = tmp.path().join("plans/cache/qwen.gguf");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "GGUF weights").unwrap();
    std::os::unix::fs::symlink(&real, tmp.path().join("plans/qwen.gguf")).unwrap();
    let (plan, line) = plan_with_weights(tmp.path(), "qwen.gguf", "cache");
    assert_refused_and_kept(&plan, line, "refusing to clear `cache`: it holds the weights of model `qwen` (", &real);
}
