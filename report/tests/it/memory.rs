//! The memory section: the peak column in the pass's one measure, the `weights-mapped` mark on
//! the rows of an engine that maps its weights beside one that does not, and the per-cell table
//! of lifetime peaks and how the weights are held.

use analysis::cells::summarize;
use harness::pass::machine::MemoryMeasure;
use harness::pass::{Pass, Workload};

use crate::fixture_pass;

const MIB: u64 = 1 << 20;

/// One engine's cell: its name, its sustained runs' footprint peaks, and at its end the
/// lifetime peak and whether it maps its weights.
type CellMemory<'a> = (&'a str, &'a [u64], Option<u64>, Option<bool>);

/// fixtures/diff/a.csv (llama.cpp, mlx-lm, ollama, vllm on one machine) as if measured on a Mac:
/// each engine's sustained runs with the footprint peaks given, and each cell's end as given.
fn mac_pass(tmp: &tempfile::TempDir, cells: &[CellMemory<'_>]) -> Pass {
    let mut pass = fixture_pass("a.csv", "fx-a", tmp);
    for (engine, peaks, lifetime, mapped) in cells {
        let cell = pass.info.cells.iter_mut().find(|c| c.engine.name == *engine).unwrap();
        cell.engine.memory_measure = Some(MemoryMeasure::PhysFootprint);
        cell.engine.memory_lifetime_peak_bytes = *lifetime;
        cell.engine.weights_mapped = *mapped;
        let id = cell.id.clone();
        let mut runs = pass.runs.iter_mut().filter(|r| r.cell == id && r.workload == Workload::Sustained && !r.warmup);
        for peak in *peaks {
            runs.next().expect("a sustained run").server_peak_rss_bytes = Some(*peak);
        }
    }
    pass
}

fn markdown(pass: &Pass) -> String {
    report::render_pass(pass, &summarize(pass).unwrap()).unwrap().markdown
}

fn section(markdown: &str) -> &str {
    let start = markdown.find("## Server memory").expect("a memory section");
    let end = markdown[start + 3..].find("\n## ").map_or(markdown.len(), |e| start + 3 + e);
    &markdown[start..end]
}

#[test]
fn an_engine_that_maps_its_weights_beside_one_that_copies_them_is_marked() {
    let tmp = tempfile::tempdir().unwrap();
    // llama.cpp maps its GGUF: 300, 310, 305 MiB of footprint (peak 310.0); mlx-lm holds its
    // weights in Metal buffers: 4608 MiB (4.5 GiB) in each run; ollama maps them too, with no
    // run measured; vllm's cell has nothing recorded.
    let pass = mac_pass(
        &tmp,
        &[
            ("llama.cpp", &[300 * MIB, 310 * MIB, 305 * MIB], Some(512 * MIB), Some(true)),
            ("mlx-lm", &[4608 * MIB, 4608 * MIB, 4608 * MIB], Some(5120 * MIB), Some(false)),
            ("ollama", &[], None, Some(true)),
        ],
    );
    let md = markdown(&pass);
    let memory = section(&md);
    println!("{memory}");
    assert!(memory.contains("as its physical footprint"), "the peak column's one measure");
    assert!(memory.contains("| llama.cpp · qwen | sustained | 0 | 310.0 MiB¹ |"), "{memory}");
    assert!(memory.contains("| mlx-lm · qwen | sustained | 0 | 4608.0 MiB |"), "{memory}");
    assert!(!memory.contains("ollama · qwen | sustained"), "no run measured, no row");
    assert!(memory.contains("¹ this engine maps its weights from their files"), "the mark's sentence");
    assert!(memory.contains("(weights-mapped)"), "and its code");
    assert!(memory.contains("the lifetime peak is the kernel's lifetime peak of the physical footprint (ri_lifetime_max_phys_footprint)"), "{memory}");
    assert!(memory.contains("| llama.cpp · qwen | 512.0 MiB | mapped from their files |"), "{memory}");
    assert!(memory.contains("| mlx-lm · qwen | 5120.0 MiB | held in the engine's memory |"), "{memory}");
    assert!(memory.contains("| ollama · qwen | — | mapped from their files |"), "{memory}");
    assert!(!memory.contains("vllm"), "nothing recorded for vllm");
}

#[test]
fn engines_that_all_map_their_weights_compare_and_are_not_marked() {
    let tmp = tempfile::tempdir().unwrap();
    // Every cell maps its weights (llama.cpp and ollama measured, mlx-lm and vllm told so):
    // their footprints all leave the weights out, so nothing is marked.
    let pass = mac_pass(
        &tmp,
        &[
            ("llama.cpp", &[300 * MIB, 310 * MIB, 305 * MIB], None, Some(true)),
            ("mlx-lm", &[], None, Some(true)),
            ("ollama", &[280 * MIB, 280 * MIB, 280 * MIB], None, Some(true)),
            ("vllm", &[], None, Some(true)),
        ],
    );
    let md = markdown(&pass);
    let memory = section(&md);
    assert!(memory.contains("| llama.cpp · qwen | sustained | 0 | 310.0 MiB |"), "{memory}");
    assert!(memory.contains("| ollama · qwen | sustained | 0 | 280.0 MiB |"), "{memory}");
    assert!(!memory.contains('¹') && !memory.contains("weights-mapped"), "{memory}");
    // An engine not known to map its weights (vllm, nothing told) is one that may hold them:
    // then the mapping engines' rows are marked again.
    let tmp = tempfile::tempdir().unwrap();
    let pass = mac_pass(&tmp, &[("llama.cpp", &[300 * MIB, 310 * MIB, 305 * MIB], None, Some(true)), ("vllm", &[1024 * MIB, 1024 * MIB, 1024 * MIB], None, None)]);
    let md = markdown(&pass);
    let memory = section(&md);
    assert!(memory.contains("| llama.cpp · qwen | sustained | 0 | 310.0 MiB¹ |"), "{memory}");
    assert!(memory.contains("| vllm · qwen | sustained | 0 | 1024.0 MiB |"), "{memory}");
}

#[test]
fn a_pass_of_one_engine_marks_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pass = mac_pass(&tmp, &[("llama.cpp", &[300 * MIB, 310 * MIB, 305 * MIB], None, Some(true))]);
    let id = pass.info.cells.iter().find(|c| c.engine.name == "llama.cpp").unwrap().id.clone();
    pass.info.cells.retain(|c| c.id == id);
    pass.runs.retain(|r| r.cell == id);
    let md = markdown(&pass);
    let memory = section(&md);
    assert!(memory.contains("| llama.cpp · qwen | sustained | 0 | 310.0 MiB |"), "{memory}");
    assert!(!memory.contains('¹'), "{memory}");
}
