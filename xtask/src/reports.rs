//! `cargo xtask report`, `diff` and `leaderboard`: read passes, ask `analysis` for the figures
//! and `report` for the files, write them.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use harness::pass::{read_pass, read_passes, Pass, Workload};

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
    write_report_with(pass, out, report::ReportOptions::default())
}

/// [`write_report`] with a quality column, or whatever else `options` asks for.
pub fn write_report_with(pass: &Pass, out: &Path, options: report::ReportOptions<'_>) -> anyhow::Result<()> {
    let steps = analysis::cells::summarize(pass)?;
    let rendered = report::render_pass_with(pass, &steps, options)?;
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

const REPORT_USAGE: &str = "usage: cargo xtask report PASS [--out DIR] [--quality-reference REF_PASS[:CELL]]";

/// What `cargo xtask report` was asked for.
#[derive(Debug, PartialEq)]
struct ReportArgs {
    pass: PathBuf,
    out: Option<PathBuf>,
    /// The reference pass and, where it has several cells with quality runs, which cell.
    quality_reference: Option<(PathBuf, Option<String>)>,
}

fn report_args(args: &[&str]) -> anyhow::Result<ReportArgs> {
    let (mut pass, mut out, mut quality_reference) = (None, None, None);
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        match arg {
            "--out" => out = Some(PathBuf::from(args.next().context(REPORT_USAGE)?)),
            "--quality-reference" => quality_reference = Some(reference(args.next().context(REPORT_USAGE)?)),
            flag if flag.starts_with("--") => anyhow::bail!("unknown flag {flag}\n{REPORT_USAGE}"),
            dir if pass.is_none() => pass = Some(PathBuf::from(dir)),
            _ => anyhow::bail!(REPORT_USAGE),
        }
    }
    Ok(ReportArgs { pass: pass.context(REPORT_USAGE)?, out, quality_reference })
}

/// `PASS:CELL`, unless the whole argument is a folder (a path may hold a colon).
fn reference(arg: &str) -> (PathBuf, Option<String>) {
    match arg.rsplit_once(':') {
        Some((dir, cell)) if !Path::new(arg).is_dir() && !cell.is_empty() => (PathBuf::from(dir), Some(cell.to_owned())),
        _ => (PathBuf::from(arg), None),
    }
}

pub fn report(args: &[&str]) -> anyhow::Result<()> {
    let args = report_args(args)?;
    let pass = load(&args.pass)?;
    let out = args.out.unwrap_or_else(|| crate::workspace_root().join("reports").join(&pass.info.pass_id));
    let quality = match &args.quality_reference {
        Some((dir, cell)) => {
            let ref_pass = load(dir).with_context(|| format!("reading the quality reference {}", dir.display()))?;
            let ref_cell = analysis::quality::reference_cell(&ref_pass, cell.as_deref())?;
            let rows = analysis::quality::compare(&ref_pass, ref_cell, std::slice::from_ref(&pass));
            anyhow::ensure!(
                !rows.is_empty(),
                "pass {} has no measured quality runs to compare with the reference (run it with --workload quality)",
                pass.info.pass_id
            );
            // The column sits in the speed tables: a pass of quality runs alone has none.
            let speed = [Workload::Sustained, Workload::PromptMatrix, Workload::PpTg];
            if !pass.runs.iter().any(|r| speed.contains(&r.workload)) {
                eprintln!(
                    "warning: pass {} has no sustained, prompt-matrix or pp-tg runs, so no speed table to put the quality column in; \
                     `cargo xtask quality` writes the quality table",
                    pass.info.pass_id
                );
            }
            Some(rows)
        }
        None => None,
    };
    write_report_with(&pass, &out, report::ReportOptions { quality: quality.as_deref() })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quality_reference_takes_an_optional_cell_anywhere_after_the_pass() {
        let args = report_args(&["p", "--quality-reference", "r:llama.cpp/f16", "--out", "o"]).unwrap();
        assert_eq!(
            args,
            ReportArgs { pass: "p".into(), out: Some("o".into()), quality_reference: Some(("r".into(), Some("llama.cpp/f16".into()))) }
        );
        let args = report_args(&["--quality-reference", "r", "p"]).unwrap();
        assert_eq!((args.pass, args.quality_reference), (PathBuf::from("p"), Some((PathBuf::from("r"), None))));
        assert_eq!(report_args(&["p"]).unwrap().quality_reference, None);
        assert!(report_args(&["p", "q"]).is_err(), "one pass");
        assert!(report_args(&["p", "--quality-reference"]).is_err());
        assert!(report_args(&["p", "--bogus"]).is_err());
    }
}
