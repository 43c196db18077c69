//! `cargo xtask report`, `diff` and `leaderboard`: read passes, ask `analysis` for the figures
//! and `report` for the files, write them.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use harness::pass::{read_pass, read_passes, Pass};

fn load(dir: &Path) -> anyhow::Result<Pass> {
    let pass = read_pass(dir)?;
    if let Some(torn) = &pass.torn_tail {
        eprintln!(
            "warning: {}: line {} of runs.jsonl is cut short (the writer stopped mid-run); that run is left out",
            dir.display(),
            torn.line
        );
    }
    Ok(pass)
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

/// Writes report.md, report.html, charts/*.svg and leaderboard.csv into `out`.
pub fn write_report(pass: &Pass, out: &Path) -> anyhow::Result<()> {
    let steps = analysis::cells::summarize(pass)?;
    let rendered = report::render_pass(pass, &steps)?;
    write(&out.join("report.md"), &rendered.markdown)?;
    write(&out.join("report.html"), &rendered.html)?;
    write(&out.join("leaderboard.csv"), &rendered.leaderboard_csv)?;
    let charts = out.join("charts");
    // Charts of an earlier render that this one no longer draws would be stale: start clean.
    let _ = std::fs::remove_dir_all(&charts);
    for chart in &rendered.charts {
        write(&charts.join(&chart.file), &chart.svg)?;
    }
    Ok(())
}

pub fn report(args: &[&str]) -> anyhow::Result<()> {
    let (pass_dir, out) = match args {
        [pass] => (PathBuf::from(pass), None),
        [pass, "--out", dir] => (PathBuf::from(pass), Some(PathBuf::from(dir))),
        _ => anyhow::bail!("usage: cargo xtask report PASS [--out DIR]"),
    };
    let pass = load(&pass_dir)?;
    let out = out.unwrap_or_else(|| crate::workspace_root().join("reports").join(&pass.info.pass_id));
    write_report(&pass, &out)?;
    println!("{}", out.join("report.html").display());
    Ok(())
}

pub fn diff(args: &[&str]) -> anyhow::Result<()> {
    const USAGE: &str = "usage: cargo xtask diff PASS_A PASS_B --out FILE.md|FILE.html|FILE.csv [--correction none|holm]";
    let (a, b, out, correction) = match args {
        [a, b, "--out", out] => (a, b, out, "none"),
        [a, b, "--out", out, "--correction", c] | [a, b, "--correction", c, "--out", out] => (a, b, out, *c),
        _ => anyhow::bail!(USAGE),
    };
    let Some(correction) = analysis::diff::Correction::parse(correction) else {
        anyhow::bail!("--correction {correction}: `none` (each row at its own α) or `holm` (Holm's family-wise correction)\n{USAGE}");
    };
    let out = PathBuf::from(out);
    let (a, b) = (load(Path::new(a))?, load(Path::new(b))?);
    let (sa, sb) = (analysis::cells::summarize(&a)?, analysis::cells::summarize(&b)?);
    let d = analysis::diff::diff_with(&a, &sa, &b, &sb, correction);
    let text = match out.extension().and_then(|e| e.to_str()) {
        Some("md") => report::diff::to_markdown(&d)?,
        Some("html") => report::diff::to_html(&d)?,
        Some("csv") => report::diff::to_csv(&d),
        _ => anyhow::bail!("--out {}: the extension says the format: .md, .html or .csv", out.display()),
    };
    write(&out, &text)?;
    println!("{}", out.display());
    Ok(())
}

pub fn leaderboard(args: &[&str]) -> anyhow::Result<()> {
    let Some(at) = args.iter().position(|a| *a == "--out") else {
        anyhow::bail!("usage: cargo xtask leaderboard PASS... --out FILE.csv");
    };
    let (dirs, rest) = args.split_at(at);
    let [_, out] = rest else { anyhow::bail!("usage: cargo xtask leaderboard PASS... --out FILE.csv") };
    anyhow::ensure!(!dirs.is_empty(), "usage: cargo xtask leaderboard PASS... --out FILE.csv");
    let dirs: Vec<PathBuf> = dirs.iter().map(PathBuf::from).collect();
    let passes = read_passes(&dirs)?;
    let mut seen = std::collections::HashSet::new();
    for (pass, dir) in passes.iter().zip(&dirs) {
        anyhow::ensure!(
            seen.insert(pass.info.pass_id.as_str()),
            "{}: pass id `{}` appears twice; a leaderboard row is keyed on it",
            dir.display(),
            pass.info.pass_id
        );
    }
    let steps = analysis::cells::summarize_many(&passes)?;
    let csv = analysis::leaderboard::to_csv(steps.iter().map(Vec::as_slice));
    write(Path::new(out), &csv)?;
    println!("{out}");
    Ok(())
}
