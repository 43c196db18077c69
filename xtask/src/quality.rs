//! `cargo xtask quality --reference PASS[:CELL] PASS… --out FILE`: every cell with quality runs
//! in the passes against the reference cell (`analysis::quality`), written as the extension
//! says (`report::quality`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

const USAGE: &str = "usage: cargo xtask quality --reference PASS[:CELL] PASS... --out FILE.md|FILE.html|FILE.csv";

/// What the command line asked for.
#[derive(Debug, PartialEq)]
struct Options {
    reference: PathBuf,
    reference_cell: Option<String>,
    passes: Vec<PathBuf>,
    out: PathBuf,
}

fn parse(args: &[&str]) -> anyhow::Result<Options> {
    let mut reference = None;
    let mut out = None;
    let mut passes = Vec::new();
    let mut args = args.iter();
    while let Some(&arg) = args.next() {
        match arg {
            "--reference" => reference = Some(*args.next().context(USAGE)?),
            "--out" => out = Some(PathBuf::from(args.next().context(USAGE)?)),
            flag if flag.starts_with("--") => anyhow::bail!("unknown flag {flag}\n{USAGE}"),
            pass => passes.push(PathBuf::from(pass)),
        }
    }
    let (Some(reference), Some(out)) = (reference, out) else { anyhow::bail!(USAGE) };
    anyhow::ensure!(!passes.is_empty(), "no passes to compare with the reference\n{USAGE}");
    // PASS:CELL, unless the whole argument is a folder (a path may hold a colon).
    let (reference, reference_cell) = match reference.rsplit_once(':') {
        Some((dir, cell)) if !Path::new(reference).is_dir() && !cell.is_empty() => (PathBuf::from(dir), Some(cell.to_owned())),
        _ => (PathBuf::from(reference), None),
    };
    Ok(Options { reference, reference_cell, passes, out })
}

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    let options = parse(args)?;
    let ref_pass = load(&options.reference)?;
    let ref_cell = analysis::quality::reference_cell(&ref_pass, options.reference_cell.as_deref())?;
    let passes = options.passes.iter().map(|dir| load(dir)).collect::<anyhow::Result<Vec<_>>>()?;
    let rows = analysis::quality::compare(&ref_pass, ref_cell, &passes);
    anyhow::ensure!(!rows.is_empty(), "none of the passes has measured quality runs (run them with --workload quality)");
    let text = match options.out.extension().and_then(|e| e.to_str()) {
        Some("md") => report::quality::to_markdown(&rows)?,
        Some("html") => report::quality::to_html(&rows)?,
        Some("csv") => report::quality::to_csv(&rows),
        _ => anyhow::bail!("--out {}: the extension says the format: .md, .html or .csv", options.out.display()),
    };
    write(&options.out, &text)?;
    println!("{}", options.out.display());
    Ok(())
}

/// A pass, with a warning for a torn last line (as `cargo xtask report` prints it).
fn load(dir: &Path) -> anyhow::Result<harness::pass::Pass> {
    let pass = harness::pass::read_pass(dir).with_context(|| format!("reading the pass in {}", dir.display()))?;
    if let Some(torn) = &pass.torn_tail {
        eprintln!("warning: {}: line {} of runs.jsonl is cut short (the writer stopped mid-run); that run is left out", dir.display(), torn.line);
    }
    Ok(pass)
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_takes_an_optional_cell_and_the_passes_follow_in_any_order() {
        let options = parse(&["--reference", "a:llama.cpp/f16", "b", "c", "--out", "q.csv"]).unwrap();
        assert_eq!(
            options,
            Options { reference: "a".into(), reference_cell: Some("llama.cpp/f16".into()), passes: vec!["b".into(), "c".into()], out: "q.csv".into() }
        );
        let options = parse(&["b", "--out", "q.md", "--reference", "a"]).unwrap();
        assert_eq!((options.reference, options.reference_cell), (PathBuf::from("a"), None));
        assert!(parse(&["--reference", "a", "--out", "q.md"]).is_err(), "no passes");
        assert!(parse(&["--reference", "a", "b"]).is_err(), "no --out");
        assert!(parse(&["--reference", "a", "b", "--out", "q.md", "--bogus"]).is_err());
    }
}
