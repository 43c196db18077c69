//! Engine presets: what benchpass knows about each engine so that a plan stays short. Every
//! entry names its source; docs/plans.md says the same for readers.

/// How an engine tells its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionFrom {
    /// `GET` this path; the version is at the JSON pointer.
    Endpoint { path: &'static str, pointer: &'static str },
    /// Run the engine executable with this argument; the first line of output is the version.
    Command { arg: &'static str },
}

/// How an engine is asked to run past EOS (steps with `ignore_eos`, e.g. ppN-tgM).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IgnoreEos {
    /// The request field `ignore_eos: true` (llama.cpp, vLLM and their kin).
    Field,
    /// `logit_bias` pushing the model's EOS ids out of reach; the ids come from the weights
    /// folder's `config.json` / `generation_config.json` (mlx-lm ignores `ignore_eos`).
    LogitBias,
}

#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    /// Answers 200 once the model is loaded.
    pub health_path: &'static str,
    pub version: VersionFrom,
    /// Where the engine keeps a KV cache across restarts, if it does (`~` is the home folder).
    pub kv_cache_dir: Option<&'static str>,
    /// A Prometheus endpoint, where the engine has one.
    pub metrics_path: Option<&'static str>,
    /// Request fields this engine honours that a fair benchmark wants set.
    pub request_extra: &'static [(&'static str, &'static str)],
    pub ignore_eos: IgnoreEos,
    pub source: &'static str,
}

pub const PRESETS: &[Preset] = &[
    Preset {
        name: "llama-cpp",
        health_path: "/health",
        version: VersionFrom::Command { arg: "--version" },
        kv_cache_dir: None,
        metrics_path: Some("/metrics"),
        // Prompt caching is on by default and would serve repeated prefixes from cache.
        request_extra: &[("cache_prompt", "false")],
        ignore_eos: IgnoreEos::Field,
        source: "llama.cpp tools/server/README.md: /health (503 while loading), /props build_info, --metrics, cache_prompt",
    },
    Preset {
        name: "vllm",
        health_path: "/health",
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        metrics_path: Some("/metrics"),
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "vLLM docs, OpenAI-compatible server: /health, /version, /metrics; ignore_eos and min_tokens are extra sampling params",
    },
    Preset {
        name: "mlx-lm",
        health_path: "/v1/models",
        version: VersionFrom::Command { arg: "--version" },
        kv_cache_dir: None,
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::LogitBias,
        source: "mlx-lm SERVER.md: /v1/models, /v1/chat/completions, logit_bias; --prompt-cache-size 0 disables its prompt cache; server.py reads no ignore_eos",
    },
    Preset {
        name: "ollama",
        health_path: "/api/version",
        version: VersionFrom::Endpoint { path: "/api/version", pointer: "/version" },
        kv_cache_dir: None,
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "Ollama docs/api.md: GET /api/version; OpenAI compatibility at /v1",
    },
    Preset {
        name: "lm-studio",
        health_path: "/v1/models",
        version: VersionFrom::Endpoint { path: "/api/v0/models", pointer: "/object" },
        kv_cache_dir: None,
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "LM Studio docs, OpenAI compatibility endpoints (/v1/models); version is best read from `lms version`",
    },
    Preset {
        name: "omlx",
        health_path: "/v1/models",
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: Some("~/.omlx/cache"),
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "oMLX README: OpenAI-compatible server with a persistent prefix cache on disk",
    },
    Preset {
        name: "rapid-mlx",
        health_path: "/health",
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        metrics_path: Some("/metrics"),
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "vllm-mlx README: vLLM-style server (/health, /version, /metrics) on MLX",
    },
    Preset {
        name: "benchpass-sim",
        health_path: "/health",
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "this project: `benchpass sim` (docs/raw-format.md, ARCHITECTURE.md)",
    },
    Preset {
        name: "openai-compatible",
        health_path: "/v1/models",
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        source: "the OpenAI API: GET /v1/models is the one endpoint every compatible server has",
    },
];

pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}
