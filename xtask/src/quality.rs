//! `cargo xtask quality --reference PASS[:CELL] PASS… --out FILE`: an alias of `benchpass
//! quality` (the `benchpass` library does the work): every cell with quality runs in the passes
//! against the reference cell, written as the extension says.

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
    let format = benchpass::Format::of_file(&options.out)
        .filter(|f| *f != benchpass::Format::Json)
        .with_context(|| format!("--out {}: the extension says the format: .md, .html or .csv", options.out.display()))?;
    let reference = match &options.reference_cell {
        Some(cell) => format!("{}:{cell}", options.reference.display()),
        None => options.reference.display().to_string(),
    };
    benchpass::write(&options.out, &benchpass::quality(&reference, &options.passes, format)?)?;
    println!("{}", options.out.display());
    Ok(())
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
