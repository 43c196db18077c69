//! `cargo xtask engine install llama-cpp`: a real llama.cpp server and small models made here,
//! from the package registries alone. The PyPI source package `llama-cpp-python` vendors the
//! whole llama.cpp tree (server, vocab-only GGUF files, the gguf Python package); cmake builds
//! `llama-server` from it, and `make_llama_gguf.py` writes seeded random-weight models on the
//! shipped vocabulary; `llama-quantize`, built from the same tree, turns the tiny model into the
//! f16 and q8_0 pair the quality test compares (docs/quality.md). Everything lands in a per-user cache keyed by version and is reused by
//! every later run, CI included. `cargo xtask engine install mlx-lm` does the same for mlx-lm
//! on MLX's Linux CPU backend.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

use harness::installs::LLAMA_CPP_PYTHON;

fn llama_cpp_dir() -> anyhow::Result<PathBuf> {
    harness::installs::llama_cpp_dir().context("no cache folder: set BENCHPASS_CACHE_DIR")
}

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    match args {
        ["install", "llama-cpp"] => {
            let dir = install_llama_cpp()?;
            println!("{}", dir.display());
            Ok(())
        }
        ["install", "mlx-lm"] => {
            let dir = install_mlx_lm()?;
            println!("{}", dir.display());
            Ok(())
        }
        ["path", "llama-cpp"] => {
            println!("{}", llama_cpp_dir()?.display());
            Ok(())
        }
        _ => anyhow::bail!("usage: cargo xtask engine install llama-cpp|mlx-lm | cargo xtask engine path llama-cpp"),
    }
}

fn step(what: &str) {
    eprintln!("engine install: {what}");
}

fn sh(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("{what}: could not start {:?}", command.get_program()))?;
    anyhow::ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}

/// Builds (once) and returns the install folder: bin/llama-server, bin/llama-quantize, the
/// vocab, gguf-py, models/tiny.gguf and models/small.gguf, and the tiny model as
/// models/tiny-f16.gguf and models/tiny-q8_0.gguf.
pub fn install_llama_cpp() -> anyhow::Result<PathBuf> {
    let dir = llama_cpp_dir()?;
    let server = dir.join("bin/llama-server");
    if !server.exists() {
        build_llama_server(&dir)?;
    }
    if !dir.join("bin/llama-quantize").exists() {
        build_llama_quantize(&dir)?;
    }
    for size in ["tiny", "small"] {
        let model = dir.join(format!("models/{size}.gguf"));
        if !model.exists() {
            make_model(&dir, size, &model)?;
        }
    }
    // The quality pair: one random model at two precisions. The q8_0 is made from the f16, so
    // the only difference between them is q8_0's rounding.
    let tiny = dir.join("models/tiny.gguf");
    let f16 = dir.join("models/tiny-f16.gguf");
    if !f16.exists() {
        quantize(&dir, &tiny, &f16, "F16")?;
    }
    let q8 = dir.join("models/tiny-q8_0.gguf");
    if !q8.exists() {
        quantize(&dir, &f16, &q8, "Q8_0")?;
    }
    Ok(dir)
}

/// Downloads the source package into `work` (emptied first) and returns its llama.cpp tree,
/// configured for a portable CPU build in `<tree>/build`.
fn configured_tree(work: &Path) -> anyhow::Result<PathBuf> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    step(&format!("downloading the llama-cpp-python {LLAMA_CPP_PYTHON} source package"));
    sh(
        Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "llama-cpp-python"])
            .arg(format!("llama-cpp-python=={LLAMA_CPP_PYTHON}"))
            .arg("-d")
            .arg(work),
        "pip download",
    )?;
    let archive = work.join(format!("llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"));
    sh(Command::new("tar").arg("xzf").arg(&archive).arg("-C").arg(work), "unpacking")?;
    let tree = work.join(format!("llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp"));
    step("configuring llama.cpp (portable CPU build, no web UI, no network features)");
    sh(
        Command::new("cmake")
            .arg("-S")
            .arg(&tree)
            .arg("-B")
            .arg(tree.join("build"))
            .args([
                "-DCMAKE_BUILD_TYPE=Release",
                "-DGGML_NATIVE=OFF",
                "-DLLAMA_USE_PREBUILT_UI=OFF",
                "-DLLAMA_BUILD_UI=OFF",
                "-DLLAMA_OPENSSL=OFF",
                "-DLLAMA_CURL=OFF",
                "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF",
                "-DBUILD_SHARED_LIBS=OFF",
            ])
            .stdout(std::process::Stdio::null()),
        "cmake configure (is cmake installed? apt-get install cmake)",
    )?;
    Ok(tree)
}

fn build_jobs() -> String {
    std::thread::available_parallelism().map_or(2, |n| n.get()).to_string()
}

fn build_llama_server(dir: &Path) -> anyhow::Result<()> {
    let work = dir.with_extension("build");
    let tree = configured_tree(&work)?;
    step("building llama-server (about 10 minutes on 2 cores; cmake prints its progress)");
    // llama-quantize shares the libraries llama-server needs, so building it here costs
    // little; an install made before it was added gets it from build_llama_quantize.
    sh(
        Command::new("cmake").arg("--build").arg(tree.join("build")).args(["--target", "llama-server", "llama-quantize", "-j", &build_jobs()]),
        "cmake build",
    )?;
    let staging = dir.with_extension("staging");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(staging.join("bin"))?;
    std::fs::create_dir_all(staging.join("models"))?;
    std::fs::copy(tree.join("build/bin/llama-server"), staging.join("bin/llama-server"))?;
    std::fs::copy(tree.join("build/bin/llama-quantize"), staging.join("bin/llama-quantize"))?;
    std::fs::copy(tree.join("models/ggml-vocab-llama-spm.gguf"), staging.join("ggml-vocab-llama-spm.gguf"))?;
    sh(Command::new("cp").arg("-r").arg(tree.join("gguf-py")).arg(staging.join("gguf-py")), "copying gguf-py")?;
    // Appear whole or not at all: a build killed half-way leaves no install that looks complete.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&staging, dir)?;
    let _ = std::fs::remove_dir_all(&work);
    step(&format!("installed in {}", dir.display()));
    Ok(())
}

/// Adds `bin/llama-quantize` to an install that has llama-server but not it, built from the
/// same source package and flags (the libraries are compiled again: the server's build folder
/// is not kept, as it is ten times the size of the install).
fn build_llama_quantize(dir: &Path) -> anyhow::Result<()> {
    let work = dir.with_extension("quantize-build");
    let tree = configured_tree(&work)?;
    step("building llama-quantize (about 8 minutes on 2 cores; cmake prints its progress)");
    sh(
        Command::new("cmake").arg("--build").arg(tree.join("build")).args(["--target", "llama-quantize", "-j", &build_jobs()]),
        "cmake build",
    )?;
    // Copied under a temporary name and renamed, so that a half-copied binary never looks installed.
    let tmp = dir.join("bin/llama-quantize.tmp");
    std::fs::copy(tree.join("build/bin/llama-quantize"), &tmp).context("copying llama-quantize")?;
    std::fs::rename(&tmp, dir.join("bin/llama-quantize"))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// `llama-quantize IN OUT TYPE`, written under a temporary name first.
fn quantize(dir: &Path, input: &Path, out: &Path, kind: &str) -> anyhow::Result<()> {
    step(&format!("writing {} ({kind} of {})", out.display(), input.display()));
    let tmp = out.with_extension("gguf.tmp");
    // It lists every tensor it converts: kept for an error, not printed on success.
    let output = Command::new(dir.join("bin/llama-quantize"))
        .arg(input)
        .arg(&tmp)
        .arg(kind)
        .output()
        .context("llama-quantize: could not start it")?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
        anyhow::bail!("llama-quantize to {kind} failed ({}):\n{}", output.status, tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    std::fs::rename(&tmp, out)?;
    Ok(())
}

fn make_model(dir: &Path, size: &str, out: &Path) -> anyhow::Result<()> {
    let venv = dir.join("venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        step("creating a Python environment with numpy and PyYAML for the gguf writer");
        sh(Command::new("python3").args(["-m", "venv"]).arg(&venv), "python3 -m venv")?;
        sh(Command::new(&python).args(["-m", "pip", "install", "--quiet", "numpy", "pyyaml"]), "pip install numpy pyyaml")?;
    }
    step(&format!("writing the {size} model (seeded random weights)"));
    let script = crate::workspace_root().join("xtask/python/make_llama_gguf.py");
    let tmp = out.with_extension("gguf.tmp");
    sh(
        Command::new(&python).arg(script).arg(dir.join("gguf-py")).arg(dir.join("ggml-vocab-llama-spm.gguf")).arg(&tmp).arg(size),
        "make_llama_gguf.py",
    )?;
    std::fs::rename(&tmp, out)?;
    Ok(())
}

/// mlx-lm on MLX's Linux CPU backend, in its own virtual environment, with tiny and small
/// model folders made from the project's corpus (seeded weights, a BPE tokenizer trained here).
pub fn install_mlx_lm() -> anyhow::Result<PathBuf> {
    use harness::installs::MLX_LM;
    let dir = harness::installs::mlx_lm_dir().context("no cache folder: set BENCHPASS_CACHE_DIR")?;
    let python = dir.join("venv/bin/python");
    if !dir.join("venv/bin/mlx_lm.server").exists() {
        step(&format!("installing mlx-lm {MLX_LM} with MLX's CPU backend (about a minute)"));
        let _ = std::fs::remove_dir_all(dir.join("venv"));
        std::fs::create_dir_all(&dir)?;
        sh(Command::new("python3").args(["-m", "venv"]).arg(dir.join("venv")), "python3 -m venv")?;
        sh(Command::new(&python).args(["-m", "pip", "install", "--quiet"]).arg(format!("mlx-lm[cpu]=={MLX_LM}")), "pip install mlx-lm[cpu]")?;
    }
    // mlx-lm's /v1/models fails without an existing Hugging Face cache folder, even offline.
    std::fs::create_dir_all(dir.join("hf-cache"))?;
    let corpus = crate::workspace_root().join("data/corpus/corpus.txt");
    for size in ["tiny", "small"] {
        let model = dir.join("models").join(size);
        if model.join("model.safetensors").exists() {
            continue;
        }
        step(&format!("writing the {size} MLX model (seeded weights, tokenizer trained on the corpus)"));
        let tmp = dir.join("models").join(format!("{size}.tmp"));
        let _ = std::fs::remove_dir_all(&tmp);
        sh(
            Command::new(&python).arg(crate::workspace_root().join("xtask/python/make_mlx_model.py")).arg(&corpus).arg(&tmp).arg(size),
            "make_mlx_model.py",
        )?;
        std::fs::rename(&tmp, &model)?;
    }
    Ok(dir)
}
