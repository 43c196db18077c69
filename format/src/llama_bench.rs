//! `benchpass import --format llama-bench FILE.json`: llama-bench's `-o json` results as a
//! pass. Each repetition (`samples_ns`) becomes a run, in a lane of its own (`llama-bench`:
//! in-process, no HTTP), so that reports show its figures beside a server's without mixing them.
//!
//! - A prompt test (`n_prompt` > 0, `n_gen` = 0) is a run whose TTFT is the sample: prefill
//!   tok/s = n_prompt / sample, which is llama-bench's own `samples_ts`.
//! - A generation test (`n_prompt` = 0, `n_gen` > 0) is a run whose decode span is set to
//!   sample × (n_gen − 1) / n_gen, so that benchpass's decode tok/s, (n − 1) / decode, equals
//!   llama-bench's n / sample exactly.
//! - Combined tests (both > 0) time prompt and generation together and cannot be split: they
//!   are refused with a line that says so.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Deserialize;

use super::format::*;
use super::store::write_imported;

#[derive(Debug, Deserialize)]
struct Test {
    build_commit: String,
    build_number: u64,
    model_filename: String,
    model_type: String,
    n_threads: u64,
    n_prompt: u64,
    n_gen: u64,
    #[serde(default)]
    n_depth: u64,
    samples_ns: Vec<u64>,
}

pub struct LlamaBenchImport<'a> {
    pub file: &'a Path,
    pub out_dir: &'a Path,
    pub pass_id: Option<String>,
    pub machine: Option<String>,
}

pub fn import(options: LlamaBenchImport<'_>) -> anyhow::Result<PathBuf> {
    let path = options.file;
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let tests: Vec<Test> = serde_json::from_str(&text)
        .with_context(|| format!("{}: not llama-bench JSON (`llama-bench -o json` writes an array of tests)", path.display()))?;
    anyhow::ensure!(!tests.is_empty(), "{}: no tests in the file", path.display());
    for (i, t) in tests.iter().enumerate() {
        anyhow::ensure!(
            !(t.n_prompt > 0 && t.n_gen > 0),
            "{}: test {} times {} prompt and {} generated tokens together (-pg); benchpass cannot split it into prefill and decode: run llama-bench with -p and -n separately",
            path.display(),
            i + 1,
            t.n_prompt,
            t.n_gen
        );
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "llama-bench".to_owned());
    let pass_id = options.pass_id.unwrap_or_else(|| format!("llama-bench-{stem}"));
    crate::pass_id::check_pass_id(&pass_id)?;

    let mut cells: Vec<CellInfo> = Vec::new();
    let mut runs = Vec::new();
    for t in &tests {
        let version = format!("b{} ({})", t.build_number, t.build_commit);
        let lane = format!("llama-bench t{}{}", t.n_threads, if t.n_depth > 0 { format!(" d{}", t.n_depth) } else { String::new() });
        let cell_id = match cells.iter().find(|c| c.engine.version == version && c.model == t.model_filename && c.lane == lane) {
            Some(c) => c.id.clone(),
            None => {
                let id = format!("c{}", cells.len());
                cells.push(CellInfo {
                    family: Some(t.model_type.clone()),
                    lane,
                    ..CellInfo::new(id.clone(), EngineInfo { version, version_source: "llama-bench".to_owned(), ..EngineInfo::named("llama.cpp") }, t.model_filename.clone())
                });
                id
            }
        };
        for (rep, &ns) in t.samples_ns.iter().enumerate() {
            let ms = ns as f64 / 1e6;
            let prompt = t.n_prompt > 0;
            runs.push(RunRecord {
                prompt_tokens: Some(t.n_prompt),
                completion_tokens: Some(t.n_gen),
                token_count_source: Some(TokenCountSource::Usage),
                ttft_ms: prompt.then_some(ms),
                decode_ms: (!prompt && t.n_gen > 1).then(|| ms * (t.n_gen - 1) as f64 / t.n_gen as f64),
                // Every test runs to its set length: nothing stops early.
                finish_reason: Some("length".to_owned()),
                ..RunRecord::unmeasured(&cell_id, Workload::PpTg, t.n_prompt, rep as u32, false, t.n_gen)
            });
        }
    }
    let dir = options.out_dir.join(&pass_id);
    let machine = options.machine.unwrap_or_else(|| "unknown".to_owned());
    let from = format!("llama-bench {}", path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    write_imported(&dir, pass_id, machine, cells, &runs, Some(from))?;
    Ok(dir)
}
