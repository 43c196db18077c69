//! Where `cargo xtask engine install` puts real engines and the models it makes, so that tests
//! and demos find them: `<cache>/engines/llama-cpp-<version>-<arch>-portable/`.

use std::path::PathBuf;

/// llama-cpp-python 0.3.36 carries llama.cpp commit 0c1e57098.
pub const LLAMA_CPP_PYTHON: &str = "0.3.36";

/// The benchpass cache folder (the weight-hash cache lives there too).
pub fn cache_root() -> Option<PathBuf> {
    crate::provenance::HashCache::default_path().and_then(|f| f.parent().map(PathBuf::from))
}

/// The llama.cpp install folder: `bin/llama-server`, `models/{tiny,small}.gguf`. A portable
/// build (GGML_NATIVE=OFF), so it is keyed on the architecture, not on CPU flags.
pub fn llama_cpp_dir() -> Option<PathBuf> {
    Some(cache_root()?.join("engines").join(format!("llama-cpp-{LLAMA_CPP_PYTHON}-{}-portable", std::env::consts::ARCH)))
}

/// The mlx-lm version `cargo xtask engine install mlx-lm` pins (MLX's Linux CPU backend).
pub const MLX_LM: &str = "0.32.2";

/// The mlx-lm install folder: `venv/bin/mlx_lm.server`, `models/{tiny,small}/`, `hf-cache/`.
pub fn mlx_lm_dir() -> Option<PathBuf> {
    Some(cache_root()?.join("engines").join(format!("mlx-lm-{MLX_LM}-{}-cpu", std::env::consts::ARCH)))
}
