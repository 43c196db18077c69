//! `cargo xtask demo`: `benchpass demo` from the repository (`benchpass::demo` does the work).
//! Without `--out` the pass and its report go under the build's target folder
//! (`target/demo/<pass id>/`), never into the clone.
//!
//! `cargo xtask demo --engine llama-cpp` (or `mlx-lm`, or both: `llama-cpp,mlx-lm`) does the
//! same with the real engines `cargo xtask engine install` put in the cache, each on its tiny
//! and small models, through a plan; its pass goes to `data/passes/` and its report to
//! `reports/`, where the committed real pass lives.

use std::path::PathBuf;

use anyhow::Context as _;

use harness::progress::ProgressMode;

const USAGE: &str = "usage: cargo xtask demo [--engine sim|llama-cpp|mlx-lm|llama-cpp,mlx-lm] [--out DIR]";

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut out = None;
    let mut engine = "sim";
    let mut rest = args;
    while let [flag, value, tail @ ..] = rest {
        match *flag {
            "--out" => out = Some(PathBuf::from(value)),
            "--engine" => engine = value,
            _ => anyhow::bail!("{USAGE}"),
        }
        rest = tail;
    }
    anyhow::ensure!(rest.is_empty(), "{USAGE}");
    match engine {
        "sim" => sim_demo(out),
        list => real_demo(&list.split(',').collect::<Vec<_>>(), out),
    }
}

/// `demo-YYYYMMDD-HHMMSS`'s date and time part, for the real engines' pass ids.
fn stamp() -> String {
    benchpass::demo::pass_id().trim_start_matches("demo-").to_owned()
}

/// Writes the pass's report and prints the summary and where everything is.
fn finish(pass_dir: &std::path::Path, out: Option<&PathBuf>) -> anyhow::Result<()> {
    let pass = harness::pass::read_pass(pass_dir)?;
    let report_dir = out.map_or_else(|| crate::workspace_root().join("reports").join(&pass.info.pass_id), |dir| dir.join("report"));
    benchpass::demo::finish(pass_dir, &report_dir)?.print();
    Ok(())
}

/// The build's target folder (`CARGO_TARGET_DIR` where set), where a demo without `--out`
/// writes.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| crate::workspace_root().join("target"), PathBuf::from)
}

/// The installed real engines as plan entries: (the [[engines]] entry, model entries, cells).
fn engine_entries(engine: &str, port: u16) -> anyhow::Result<(String, String, String)> {
    let models_and_cells = |dir: &std::path::Path, name: &str, path_of: &dyn Fn(&str) -> String, default_model_id: bool| {
        let mut models = String::new();
        let mut cells = String::new();
        for size in ["tiny", "small"] {
            let id = if default_model_id { "id = \"default_model\"\n".to_owned() } else { String::new() };
            models.push_str(&format!(
                "[[models]]\nname = \"{name}-{size}\"\nfamily = \"benchpass-{size}\"\nweights = \"{}\"\n{id}\n",
                path_of(size)
            ));
            cells.push_str(&format!("[[cells]]\nengine = \"{name}\"\nmodel = \"{name}-{size}\"\n\n"));
        }
        let _ = dir;
        (models, cells)
    };
    match engine {
        "llama-cpp" => {
            let dir = harness::installs::llama_cpp_dir().context("no cache folder: set BENCHPASS_CACHE_DIR")?;
            anyhow::ensure!(
                dir.join("models/small.gguf").exists(),
                "llama.cpp is not installed at {}: run `cargo xtask engine install llama-cpp` first (about 10 minutes, once)",
                dir.display()
            );
            let engine = format!(
                "[[engines]]\nname = \"llama.cpp\"\npreset = \"llama-cpp\"\n\
                 # One thread: with two on a 2-core machine, decode falls several-fold under load.\n\
                 start = [\"{}\", \"-m\", \"{{weights}}\", \"--host\", \"127.0.0.1\", \"--port\", \"{{port}}\", \"-t\", \"1\", \"--metrics\"]\nport = {port}\n\n",
                dir.join("bin/llama-server").display()
            );
            let path_of = |size: &str| dir.join(format!("models/{size}.gguf")).display().to_string();
            let (models, cells) = models_and_cells(&dir, "llama.cpp", &path_of, false);
            Ok((engine, models, cells))
        }
        "mlx-lm" => {
            let dir = harness::installs::mlx_lm_dir().context("no cache folder: set BENCHPASS_CACHE_DIR")?;
            anyhow::ensure!(
                dir.join("models/small/model.safetensors").exists(),
                "mlx-lm is not installed at {}: run `cargo xtask engine install mlx-lm` first (about a minute, once)",
                dir.display()
            );
            let engine = format!(
                "[[engines]]\nname = \"mlx-lm\"\npreset = \"mlx-lm\"\n\
                 start = [\"{}\", \"--model\", \"{{weights}}\", \"--host\", \"127.0.0.1\", \"--port\", \"{{port}}\", \"--prompt-cache-size\", \"0\"]\nport = {port}\n\
                 version_command = [\"{}\", \"-c\", \"import mlx_lm; print(mlx_lm.__version__)\"]\n\
                 env = {{ HF_HUB_OFFLINE = \"1\", HF_HUB_CACHE = \"{}\" }}\n\n",
                dir.join("venv/bin/mlx_lm.server").display(),
                dir.join("venv/bin/python").display(),
                dir.join("hf-cache").display()
            );
            // mlx-lm serves the --model model under the name `default_model` (any other name it
            // would try to fetch), which also keeps machine paths out of the pass.
            let path_of = |size: &str| dir.join(format!("models/{size}")).display().to_string();
            let (models, cells) = models_and_cells(&dir, "mlx-lm", &path_of, true);
            Ok((engine, models, cells))
        }
        other => anyhow::bail!("no demo engine `{other}`: sim, llama-cpp, mlx-lm, or a comma-separated list of the real ones"),
    }
}

/// The real engines named, each on its tiny and small model, through a plan: stopped, started
/// fresh, measured, stopped, cell by cell.
fn real_demo(engines: &[&str], out: Option<PathBuf>) -> anyhow::Result<()> {
    let mut plan_text = String::from("# Written by `cargo xtask demo`.\nname = \"demo-real\"\n\n");
    let (mut models, mut cells) = (String::new(), String::new());
    for engine in engines {
        // Not port 0 handed on: an outgoing connection could take it before the engine binds it.
        let port = harness::ports::unclaimed_port();
        let (e, m, c) = engine_entries(engine, port)?;
        plan_text.push_str(&e);
        models.push_str(&m);
        cells.push_str(&c);
    }
    plan_text.push_str(&models);
    plan_text.push_str(&cells);
    plan_text.push_str(
        "[[workloads]]\nkind = \"sustained\"\nruns = 3\nmax_tokens = 128\n\n\
         [[workloads]]\nkind = \"prompt-matrix\"\nmax_tokens = 128\n\
         targets = [{ tokens = 128, runs = 3 }, { tokens = 2048, runs = 2 }]\n",
    );
    // Not `demo-…`: a real pass is worth keeping (git ignores the reference-engine demos only).
    let pass_id = format!("{}-{}", engines.join("-").replace('.', ""), stamp());
    let pass_dir = out.as_ref().map_or_else(|| crate::workspace_root().join("data/passes").join(&pass_id), |d| d.join("pass"));
    let scratch = std::env::temp_dir().join(format!("benchpass-{pass_id}"));
    std::fs::create_dir_all(&scratch)?;
    let plan_path = scratch.join("demo.toml");
    std::fs::write(&plan_path, plan_text)?;
    let plan = harness::plan::load(&plan_path).map_err(|errors| {
        anyhow::anyhow!("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let options = harness::plan::PlanRunOptions {
        out: Some(pass_dir.clone()),
        pass_id: Some(pass_id),
        gap_scale: 0.0,
        progress: ProgressMode::Auto,
        hash_cache: None,
        api_key_env: None,
        resume: None,
        self_check: Some(benchpass::start_self_check_engine()?),
        saturation: None,
    };
    runtime.block_on(harness::plan::run_plan(&plan, options))?;
    let _ = std::fs::remove_dir_all(&scratch);
    finish(&pass_dir, out.as_ref())
}

fn sim_demo(out: Option<PathBuf>) -> anyhow::Result<()> {
    let pass_id = benchpass::demo::pass_id();
    let out = out.unwrap_or_else(|| target_dir().join("demo").join(&pass_id));
    benchpass::demo::run(&pass_id, &out.join("pass"), &out.join("report"), ProgressMode::Auto)?.print();
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// The README's main command, end to end: the demo's pass has its agent session, and its
    /// report the Agent sessions section with the chart, in Markdown and in the HTML a browser
    /// reads. (The section's figures are held to the sim's schedule in report/tests/it/agent.rs.)
    #[test]
    fn the_demo_report_shows_the_agent_session() {
        let out = std::env::temp_dir().join(format!("benchpass-demo-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let started = std::time::Instant::now();
        super::sim_demo(Some(out.clone())).unwrap();
        let seconds = started.elapsed().as_secs_f64();
        // About 24 s on two cores, 4 of them the agent session; a demo is meant to stay short.
        assert!(seconds < 90.0, "the demo took {seconds:.0} s");

        let pass = harness::pass::read_pass(&out.join("pass")).unwrap();
        let turns = pass.runs.iter().filter(|r| r.workload == harness::pass::Workload::Agent).count();
        let trace = &harness::workloads::agent::traces().unwrap()[0];
        assert_eq!(turns, trace.n_turns(), "one session of the first trace");
        assert!(pass.runs.iter().filter(|r| r.turn.is_some_and(|t| t > 0)).all(|r| r.cached_prompt_tokens.is_some_and(|c| c > 0)));

        let report = out.join("report");
        let md = std::fs::read_to_string(report.join("report.md")).unwrap();
        assert!(md.contains("## Agent sessions"), "{md}");
        assert!(md.contains("](charts/agent-ttft-by-turn.svg)"));
        assert!(report.join("charts/agent-ttft-by-turn.svg").exists());
        let html = std::fs::read_to_string(report.join("report.html")).unwrap();
        let section = html.split("<section id=\"agent-sessions\">").nth(1).expect("the section").split("</section>").next().unwrap();
        assert!(section.contains("<svg"), "the chart is inline");

        // The HTML as a browser reads it, where one is installed (CI installs Chromium).
        let browser = ["chromium", "chromium-browser"].into_iter().find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()));
        if let Some(browser) = browser {
            let profile = out.join("chromium-profile");
            let dom = Command::new(browser)
                .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update"])
                .arg(format!("--user-data-dir={}", profile.display()))
                .args(["--dump-dom", &format!("file://{}", report.join("report.html").display())])
                .output()
                .unwrap();
            let dom = String::from_utf8_lossy(&dom.stdout);
            let section = dom.split("<section id=\"agent-sessions\">").nth(1).expect("the section is in the DOM").split("</section>").next().unwrap();
            assert!(section.contains("<h2>Agent sessions</h2>") && section.contains("<svg"), "{section}");
            // The table's one row: engine, then the figures the section computed.
            let cell = analysis::agent::summarize(&pass).remove(0);
            assert!(section.contains(&format!("<td>{}</td><td>{}</td>", cell.n_sessions, cell.n_turns)), "{section}");
            assert!(section.contains(&format!("<td>{:.1} %</td>", cell.cache_hit_ratio.unwrap() * 100.0)), "{section}");
        } else {
            assert!(std::env::var_os("CI").is_none(), "Chromium is missing in CI");
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}
