//! `cargo xtask report`, `diff` and `leaderboard`: aliases of `benchpass report`, `diff` and
//! `leaderboard` (the `benchpass` library does the work), kept for the repository's workflow:
//! a report goes under this repository's `reports/` unless `--out` says otherwise.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

const REPORT_USAGE: &str = "usage: cargo xtask report PASS [--out DIR] [--quality-reference REF_PASS[:CELL]]";

/// What `cargo xtask report` was asked for.
#[derive(Debug, PartialEq)]
struct ReportArgs {
    pass: PathBuf,
    out: Option<PathBuf>,
    quality_reference: Option<String>,
}

fn report_args(args: &[&str]) -> anyhow::Result<ReportArgs> {
    let (mut pass, mut out, mut quality_reference) = (None, None, None);
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        match arg {
            "--out" => out = Some(PathBuf::from(args.next().context(REPORT_USAGE)?)),
            "--quality-reference" => quality_reference = Some((*args.next().context(REPORT_USAGE)?).to_owned()),
            flag if flag.starts_with("--") => anyhow::bail!("unknown flag {flag}\n{REPORT_USAGE}"),
            dir if pass.is_none() => pass = Some(PathBuf::from(dir)),
            _ => anyhow::bail!(REPORT_USAGE),
        }
    }
    Ok(ReportArgs { pass: pass.context(REPORT_USAGE)?, out, quality_reference })
}

pub fn report(args: &[&str]) -> anyhow::Result<()> {
    let args = report_args(args)?;
    let out = benchpass::report(&args.pass, args.out.as_deref(), &crate::workspace_root(), args.quality_reference.as_deref())?;
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
    let format = benchpass::Format::of_file(&out)
        .filter(|f| *f != benchpass::Format::Json)
        .with_context(|| format!("--out {}: the extension says the format: .md, .html or .csv", out.display()))?;
    let d = benchpass::diff(Path::new(a), Path::new(b), correction)?;
    benchpass::write(&out, &benchpass::render_diff(&d, format)?)?;
    eprintln!("{}", benchpass::diff_summary(&d));
    println!("{}", out.display());
    Ok(())
}

pub fn leaderboard(args: &[&str]) -> anyhow::Result<()> {
    const USAGE: &str = "usage: cargo xtask leaderboard PASS... --out FILE.csv|FILE.md|FILE.json";
    let Some(at) = args.iter().position(|a| *a == "--out") else { anyhow::bail!(USAGE) };
    let (dirs, rest) = args.split_at(at);
    let [_, out] = rest else { anyhow::bail!(USAGE) };
    anyhow::ensure!(!dirs.is_empty(), USAGE);
    let out = PathBuf::from(out);
    let format = benchpass::Format::of_file(&out)
        .filter(|f| *f != benchpass::Format::Html)
        .with_context(|| format!("--out {}: the extension says the format: .csv, .md or .json", out.display()))?;
    let dirs: Vec<PathBuf> = dirs.iter().map(PathBuf::from).collect();
    benchpass::write(&out, &benchpass::leaderboard(&dirs, format)?)?;
    println!("{}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quality_reference_takes_an_optional_cell_anywhere_after_the_pass() {
        let args = report_args(&["p", "--quality-reference", "r:llama.cpp/f16", "--out", "o"]).unwrap();
        assert_eq!(args, ReportArgs { pass: "p".into(), out: Some("o".into()), quality_reference: Some("r:llama.cpp/f16".into()) });
        let args = report_args(&["--quality-reference", "r", "p"]).unwrap();
        assert_eq!((args.pass, args.quality_reference), (PathBuf::from("p"), Some("r".to_owned())));
        assert_eq!(report_args(&["p"]).unwrap().quality_reference, None);
        assert!(report_args(&["p", "q"]).is_err(), "one pass");
        assert!(report_args(&["p", "--quality-reference"]).is_err());
        assert!(report_args(&["p", "--bogus"]).is_err());
    }
}
