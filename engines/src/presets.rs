//! Engine presets: what benchpass knows about each engine so that a plan stays short. Every
//! value names where it was read (`sources`: repository@commit, file and line), and a value
//! that could not be read from an engine's public source is listed in `assumed`;
//! docs/plans.md says the same for readers, with links.

pub use crate::drafts::FinalChunkStats;

/// How an engine tells its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionFrom {
    /// `GET` this path; the version is at the JSON pointer.
    Endpoint { path: &'static str, pointer: &'static str },
    /// Run the engine executable with this argument; the first line of output is the version.
    Command { arg: &'static str },
    /// Run another program of the engine's install (`mlx_lm --version` beside
    /// `mlx_lm.server`, `lms version`): looked up beside the engine executable first, then on
    /// `PATH` (the lookup is the harness's: `VersionArgv` in harness/src/plan/engine_files.rs).
    Program { program: &'static str, args: &'static [&'static str] },
}

/// How an engine is asked to run past EOS (steps with `ignore_eos`, e.g. ppN-tgM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IgnoreEos {
    /// The request field `ignore_eos: true` (llama.cpp, vLLM, SGLang, Splash).
    Field,
    /// `logit_bias` pushing the model's EOS ids out of reach; the ids come from the weights
    /// folder's `config.json` / `generation_config.json` (mlx-lm reads no `ignore_eos`).
    LogitBias,
    /// No way past EOS: the engine reads no `ignore_eos` and either rejects a non-empty
    /// `logit_bias` (Rapid-MLX answers 400) or reads none. No `logit_bias` is added for it, so
    /// nothing is sent that it rejects; runs of `ignore_eos` steps may stop short of
    /// `max_tokens`, and such runs are flagged as short stops.
    Unsupported,
}

impl IgnoreEos {
    /// As `plan presets` prints it and `pass.json` records it (`past_eos`).
    pub fn as_str(self) -> &'static str {
        match self {
            IgnoreEos::Field => "field",
            IgnoreEos::LogitBias => "logit-bias",
            IgnoreEos::Unsupported => "unsupported",
        }
    }

    /// The way named as [`IgnoreEos::as_str`] writes it (a runs CSV's `past_eos` column).
    pub fn parse(name: &str) -> Option<IgnoreEos> {
        [IgnoreEos::Field, IgnoreEos::LogitBias, IgnoreEos::Unsupported].into_iter().find(|w| w.as_str() == name)
    }

    /// Whether `ignore_eos: true` means anything to the engine.
    pub fn honours_field(self) -> bool {
        self == IgnoreEos::Field
    }

    /// Whether benchpass adds the model's EOS ids as a `logit_bias` for `ignore_eos` steps.
    pub fn adds_logit_bias(self) -> bool {
        self == IgnoreEos::LogitBias
    }

    /// Whether runs of `ignore_eos` steps may stop before `max_tokens` on this engine.
    pub fn may_stop_short(self) -> bool {
        self == IgnoreEos::Unsupported
    }
}

/// Where an engine reports its speculative-decoding draft counts, if anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftCounters {
    /// Not reported (or not known to be).
    None,
    /// Prometheus counters on the metrics endpoint (`…_total`), scraped around each run.
    Prometheus { drafted: &'static str, accepted: &'static str },
    /// Fields of an object in the final streamed chunk (and the non-streamed body); every such
    /// shape is also in [`crate::drafts::FINAL_CHUNK_STATS`], which the client reads.
    FinalChunk(FinalChunkStats),
    /// Only a line in the engine's own log file (`~` is the home folder).
    LogOnly { file: &'static str, marker: &'static str },
}

/// `POST <url><path>` empties the engine's prefix cache; 2xx means done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheFlush {
    pub path: &'static str,
    /// What to do when the endpoint is not there (404).
    pub when_missing: &'static str,
    /// Flushed before every cell, an engine benchpass started included: its cache is in memory
    /// and keyed on the prompt, so even a fresh engine holds what the cell's probe sent
    /// (MTPLX). Otherwise only a server benchpass did not start is flushed.
    pub every_cell: bool,
}

/// Which workloads a request header goes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderScope {
    /// Every request.
    All,
    /// Every request but an agent session's turns, which are measured with the engine's cache.
    AllButAgent,
}

/// A header the engine reads that a fair benchmark wants set (MTPLX's cache bypass).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    pub name: &'static str,
    pub value: &'static str,
    pub scope: HeaderScope,
}

/// What an engine does with a request for logprobs (`logprobs: true`, `top_logprobs: K`): what
/// a `quality` workload sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logprobs {
    /// Answered, with at most `max_top_logprobs` alternatives a token where the engine caps
    /// them (a request above the cap is refused: mlx-lm raises above 11).
    Supported { max_top_logprobs: Option<u32> },
    /// Every request a quality workload sends for logprobs is refused: `why` says which the
    /// engine refuses (Splash: any; MTPLX: any streamed, or of more than one token).
    Rejected { why: &'static str },
}

impl Logprobs {
    /// Why a quality workload asking `top_logprobs` alternatives cannot run on this engine.
    pub fn refusal(self, top_logprobs: u32) -> Option<String> {
        match self {
            Logprobs::Rejected { why } => Some(why.to_owned()),
            Logprobs::Supported { max_top_logprobs: Some(max) } if top_logprobs > max => {
                Some(format!("it refuses `top_logprobs` above {max}, and this workload asks for {top_logprobs}"))
            }
            Logprobs::Supported { .. } => None,
        }
    }

    /// As `plan presets` prints it.
    pub fn describe(self) -> String {
        match self {
            Logprobs::Supported { max_top_logprobs: Some(max) } => format!("yes, top_logprobs at most {max}"),
            Logprobs::Supported { max_top_logprobs: None } => "yes".to_owned(),
            Logprobs::Rejected { .. } => "no (a request for them is refused)".to_owned(),
        }
    }
}

/// What else of the OpenAI API the engine serves, as `plan presets` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// A final chunk with `usage` when the request asks (`stream_options.include_usage`).
    pub stream_usage: bool,
    /// `usage.prompt_tokens_details.cached_tokens`: prompt tokens served from its prefix cache.
    pub cached_tokens: bool,
    /// Tool calls (`tools` in, `tool_calls` out): what an agent workload needs.
    pub tool_calls: bool,
}

/// Where an engine's KV-cache folder is, when it is not one fixed path: a base folder (a
/// command-line flag, else an environment variable, else a file that names it, else a
/// default), a settings file under the base that may name the cache folder and turn the cache
/// off, variables and flags over the file. The lookup itself is the harness's
/// (harness/src/plan/engine_files.rs); this is the rule as data. oMLX's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheFolderLookup {
    pub base_flag: &'static str,
    pub base_env: &'static str,
    /// A file whose content (trimmed, `~` expanded) is the base folder; `~` is the home folder.
    pub base_file: &'static str,
    pub base_default: &'static str,
    /// The settings file, under the base.
    pub settings_file: &'static str,
    /// The settings file's section with the cache's keys.
    pub section: &'static str,
    pub dir_key: &'static str,
    pub enabled_key: &'static str,
    pub dir_env: &'static str,
    pub enabled_env: &'static str,
    /// The flag that names the folder (and turns the cache on).
    pub dir_flag: &'static str,
    /// The flag that turns the cache off.
    pub off_flag: &'static str,
    /// The folder under the base when nothing names one.
    pub default_dir: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    /// The path polled after start until it answers 2xx: the engine's readiness path where it
    /// has one (Rapid-MLX's `/health/ready` is 503 until ready, its `/health` is 200 with
    /// `ready: false`). See `loads_lazily` for engines whose 2xx comes before the weights.
    pub health_path: &'static str,
    /// Health answers 2xx before the model's weights are loaded (loaded in a background
    /// thread, or on the first request): a plan must warm up (`warmup = 1` on the first
    /// workload) so that no measured run includes the load.
    pub loads_lazily: bool,
    pub version: VersionFrom,
    /// The folder cleared before a start (`kv_cache_dirs[0]`; `~` is the home folder).
    pub kv_cache_dir: Option<&'static str>,
    /// Every folder where the engine keeps a KV/prompt cache across restarts, the current one
    /// first (older releases' folders after it).
    pub kv_cache_dirs: &'static [&'static str],
    /// A Prometheus endpoint, where the engine has one.
    pub metrics_path: Option<&'static str>,
    /// Request fields this engine honours that a fair benchmark wants set.
    pub request_extra: &'static [(&'static str, &'static str)],
    pub ignore_eos: IgnoreEos,
    pub draft_counters: DraftCounters,
    /// An endpoint that empties the engine's in-memory prefix cache: used on a server
    /// benchpass did not start (one it starts is fresh anyway) before the cell's runs.
    pub cache_flush: Option<CacheFlush>,
    /// How the KV-cache folder is found at each start, where the engine has a rule for it
    /// (then `kv_cache_dirs` holds its default).
    pub kv_cache_lookup: Option<CacheFolderLookup>,
    /// Where the engine writes the arguments it was started with, so that they become its
    /// defaults for every later start (oMLX's settings.json).
    pub saves_arguments: Option<&'static str>,
    /// Headers sent with the requests of the workloads each names.
    pub request_headers: &'static [RequestHeader],
    pub logprobs: Logprobs,
    pub capabilities: Capabilities,
    /// A one-line summary of where the preset comes from.
    pub source: &'static str,
    /// Per value: (`key`, where it was read: repository@commit path#Lline).
    pub sources: &'static [(&'static str, &'static str)],
    /// The keys whose values were not found in the engine's public source: assumed.
    pub assumed: &'static [&'static str],
}

/// The keys a preset's `sources` and `assumed` together must cover.
pub const KEYS: &[&str] = &[
    "health_path",
    "version",
    "kv_cache_dirs",
    "metrics_path",
    "ignore_eos",
    "draft_counters",
    "logprobs",
    "stream_usage",
    "cached_tokens",
    "tool_calls",
];

/// Keys a preset cites where it has a value, without every preset having to: an engine that
/// loads lazily, or that has a cache-flush endpoint.
pub const OPTIONAL_KEYS: &[&str] = &["loads_lazily", "cache_flush", "kv_cache_lookup", "saves_arguments", "request_headers", "request_extra"];

pub const PRESETS: &[Preset] = &[
    Preset {
        name: "llama-cpp",
        health_path: "/health",
        loads_lazily: false,
        version: VersionFrom::Command { arg: "--version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: Some("/metrics"),
        // Prompt caching is on by default and would serve repeated prefixes from cache.
        request_extra: &[("cache_prompt", "false")],
        ignore_eos: IgnoreEos::Field,
        draft_counters: DraftCounters::Prometheus {
            drafted: "llamacpp:spec_decode_num_draft_tokens_total",
            accepted: "llamacpp:spec_decode_num_accepted_tokens_total",
        },
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "llama.cpp tools/server/README.md: /health (503 while loading), /props build_info, --metrics, cache_prompt",
        sources: &[
            ("health_path", "llama.cpp tools/server/README.md: GET /health, 503 while the model loads"),
            ("version", "llama.cpp common/arg.cpp: --version"),
            ("kv_cache_dirs", "llama.cpp tools/server/README.md: slots are saved only on request (--slot-save-path)"),
            ("metrics_path", "llama.cpp tools/server/README.md: --metrics, GET /metrics"),
            ("ignore_eos", "llama.cpp tools/server/README.md: ignore_eos"),
            ("draft_counters", "this project's tests against a real llama-server (docs/plans.md, Engine counters)"),
        ],
        assumed: &["logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "vllm",
        health_path: "/health",
        loads_lazily: false,
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: Some("/metrics"),
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        draft_counters: DraftCounters::Prometheus {
            drafted: "vllm:spec_decode_num_draft_tokens_total",
            accepted: "vllm:spec_decode_num_accepted_tokens_total",
        },
        cache_flush: Some(CacheFlush {
            path: "/reset_prefix_cache",
            when_missing: "vLLM serves /reset_prefix_cache only when started with VLLM_SERVER_DEV_MODE=1",
            every_cell: false,
        }),
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "vLLM docs, OpenAI-compatible server: /health, /version, /metrics; ignore_eos and min_tokens are extra sampling params",
        sources: &[
            ("health_path", "vLLM docs, OpenAI-compatible server: GET /health"),
            ("version", "vLLM docs, OpenAI-compatible server: GET /version"),
            ("kv_cache_dirs", "vLLM keeps its prefix cache in GPU memory only"),
            ("metrics_path", "vLLM docs, production metrics: GET /metrics"),
            ("ignore_eos", "vLLM docs, extra sampling parameters: ignore_eos"),
            ("cache_flush", "vllm-project/vllm@09cb327f1183 vllm/entrypoints/serve/cache/api_router.py#L22-L46 (POST, 200 with no check), #L73-L76 (only with VLLM_SERVER_DEV_MODE)"),
        ],
        assumed: &["draft_counters", "logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "sglang",
        health_path: "/health",
        loads_lazily: false,
        version: VersionFrom::Endpoint { path: "/get_server_info", pointer: "/version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        // Only with --enable-metrics.
        metrics_path: Some("/metrics"),
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        draft_counters: DraftCounters::None,
        // Waits up to 30 s for running requests to finish; 400 if they do not.
        cache_flush: Some(CacheFlush {
            path: "/flush_cache?timeout=30",
            when_missing: "this SGLang has no /flush_cache",
            every_cell: false,
        }),
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "SGLang native API docs (sglang-native-apis.md): /health, /get_server_info, /flush_cache; http_server.py; sampling params ignore_eos",
        sources: &[
            ("health_path", "sgl-project/sglang@3ba38dc00951 python/sglang/srt/entrypoints/http_server.py#L665-L743 (503 while starting; 200 once a 1-token generation answers)"),
            ("version", "sgl-project/sglang@3ba38dc00951 python/sglang/srt/entrypoints/http_server.py#L804-L840 (/get_server_info, a deprecated alias of /server_info, has version)"),
            ("kv_cache_dirs", "sgl-project docs, native APIs: POST /flush_cache flushes the in-memory radix cache; nothing on disk"),
            ("metrics_path", "sgl-project/sglang@3ba38dc00951 python/sglang/srt/entrypoints/http_server.py#L288-L289 (only with --enable-metrics)"),
            ("ignore_eos", "sgl-project docs, sampling parameters: ignore_eos"),
            ("cache_flush", "sgl-project/sglang@3ba38dc00951 python/sglang/srt/entrypoints/http_server.py#L986-L1000 (GET or POST, ?timeout waits for idle, 200 or 400); scheduler_components/flush_wrapper.py@36ccf150daa5#L25-L65"),
        ],
        assumed: &["draft_counters", "logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "mlx-lm",
        health_path: "/health",
        // The model loads on the generation thread after the HTTP server is up.
        loads_lazily: true,
        version: VersionFrom::Program { program: "mlx_lm", args: &["--version"] },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::LogitBias,
        draft_counters: DraftCounters::None,
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: Some(11) },
        capabilities: Capabilities { stream_usage: true, cached_tokens: true, tool_calls: true },
        source: "ml-explore/mlx-lm mlx_lm/server.py: /health always 200, model loaded on the generation thread, logit_bias read, no ignore_eos; mlx_lm/cli.py --version",
        sources: &[
            ("health_path", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1595-L1611 (200 with no check of the model)"),
            ("loads_lazily", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L430-L431, #L630-L631 (load_default on the generation thread)"),
            ("version", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/cli.py#L41-L44, setup.py#L54 (`mlx_lm --version`)"),
            ("kv_cache_dirs", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1712 (LRUPromptCache in memory, --prompt-cache-size)"),
            ("metrics_path", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1589-L1600 (GET serves /v1/models and /health only)"),
            ("ignore_eos", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1137, #L1200-L1206 (logit_bias read; no ignore_eos)"),
            ("draft_counters", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py (no counter endpoint)"),
            ("logprobs", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1138-L1139, #L1194 (top_logprobs 0 to 11, or -1), #L1175-L1176 (ValueError above it)"),
            ("stream_usage", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1111, #L1487 (usage when stream_options.include_usage)"),
            ("cached_tokens", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1293-L1296 (usage.prompt_tokens_details.cached_tokens)"),
            ("tool_calls", "ml-explore/mlx-lm@d78bf58e217c mlx_lm/server.py#L1311-L1312, #L1474 (tool_calls, finish_reason tool_calls)"),
        ],
        assumed: &[],
    },
    Preset {
        name: "ollama",
        health_path: "/api/version",
        loads_lazily: true,
        version: VersionFrom::Endpoint { path: "/api/version", pointer: "/version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Unsupported,
        draft_counters: DraftCounters::None,
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "ollama/ollama server/routes.go (GET /api/version), server/sched.go (a model loads on its first request), openai/openai.go (the chat request: no ignore_eos, no logit_bias)",
        sources: &[
            ("health_path", "ollama/ollama@fb3076099687 server/routes.go#L1880 (GET /api/version, 200 once the server is up)"),
            ("loads_lazily", "ollama/ollama@fb3076099687 server/sched.go#L201-L206 (an unloaded model is queued for loading by the request)"),
            ("version", "ollama/ollama@fb3076099687 server/routes.go#L1880 ({\"version\": version.Version})"),
            ("ignore_eos", "ollama/ollama@fb3076099687 openai/openai.go#L105-L124 (no ignore_eos, logit_bias or min_tokens; unknown fields ignored), docs/api/openai-compatibility.mdx#L190-L218 (logit_bias unsupported); api/types.go#L568-L596 (no EOS option)"),
        ],
        assumed: &["kv_cache_dirs", "metrics_path", "draft_counters", "logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "lm-studio",
        health_path: "/v1/models",
        loads_lazily: true,
        // The `lms` CLI's build (a commit hash), the one version a command gives; `--json`
        // because the plain output starts with a logo.
        version: VersionFrom::Program { program: "lms", args: &["version", "--json"] },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: None,
        request_extra: &[],
        // Documented among the accepted fields; no ignore_eos.
        ignore_eos: IgnoreEos::LogitBias,
        draft_counters: DraftCounters::None,
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "LM Studio docs (lmstudio-ai/docs): OpenAI-compatible endpoints and their fields, JIT loading; lmstudio-ai/lms: `lms version --json`",
        sources: &[
            ("health_path", "LM Studio docs, OpenAI compatibility endpoints: GET /v1/models"),
            ("loads_lazily", "lmstudio-ai/docs@c6854fba2575 1_developer/0_core/headless.md#L71-L79 (JIT loading: an inference request loads the model)"),
            ("version", "lmstudio-ai/lms@07b7252d6de2 src/subcommands/version.ts#L4-L5, #L46 ({\"version\": <the CLI's commit hash>})"),
            ("ignore_eos", "lmstudio-ai/docs@c6854fba2575 1_developer/3_openai-compat/chat-completions.md#L33-L50 (logit_bias among the supported parameters; no ignore_eos)"),
        ],
        assumed: &["kv_cache_dirs", "metrics_path", "draft_counters", "logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "omlx",
        health_path: "/health",
        // Models load on their first request (only pinned models load at start).
        loads_lazily: true,
        version: VersionFrom::Endpoint { path: "/api/status", pointer: "/version" },
        kv_cache_dir: Some("~/.omlx/cache"),
        kv_cache_dirs: &["~/.omlx/cache"],
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Unsupported,
        draft_counters: DraftCounters::LogOnly { file: "~/.omlx/logs/server.log", marker: "acceptance=" },
        cache_flush: None,
        kv_cache_lookup: Some(CacheFolderLookup {
            base_flag: "--base-path",
            base_env: "OMLX_BASE_PATH",
            base_file: "~/Library/Application Support/oMLX/base-path",
            base_default: "~/.omlx",
            settings_file: "settings.json",
            section: "cache",
            dir_key: "ssd_cache_dir",
            enabled_key: "enabled",
            dir_env: "OMLX_SSD_CACHE_DIR",
            enabled_env: "OMLX_CACHE_ENABLED",
            dir_flag: "--paged-ssd-cache-dir",
            off_flag: "--no-cache",
            default_dir: "cache",
        }),
        saves_arguments: Some("settings.json in its base folder"),
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "jundot/omlx omlx/server.py (/health, /api/status version), settings.py (~/.omlx/cache on by default), engine_pool.py (lazy load), engine/dflash.py (acceptance= in the log)",
        sources: &[
            ("health_path", "jundot/omlx@c9dc68d6ea49 omlx/server.py#L2114-L2153 (200 whatever is loaded)"),
            ("loads_lazily", "jundot/omlx@c9dc68d6ea49 omlx/engine_pool.py#L686-L708, #L1679-L1691 (get_engine loads on demand; only pinned models at start)"),
            ("version", "jundot/omlx@c9dc68d6ea49 omlx/server.py#L2156, #L2210 (GET /api/status, field version; no /version route)"),
            ("kv_cache_lookup", "jundot/omlx@004308c9cfb0 omlx/settings.py#L44-L71 (resolve_default_base_path: OMLX_BASE_PATH, the app's base-path file, ~/.omlx), CacheSettings (enabled: true; ssd_cache_dir None: base/cache; get_ssd_cache_dir), GlobalSettings.load (base/settings.json, then env, then flags), _apply_env_overrides (OMLX_CACHE_ENABLED, OMLX_SSD_CACHE_DIR), _apply_cli_overrides (--paged-ssd-cache-dir turns the cache on, --no-cache off); jundot/omlx@01496518d83b omlx/cli.py#L83 (--base-path), #L184-L196 (--no-cache, then the flag's folder, then the settings' if enabled)"),
            ("saves_arguments", "jundot/omlx@01496518d83b omlx/cli.py#L22-L55, #L135-L141 (any of --model-dir, --port, --host and others given: settings.save() writes every value in force to settings.json)"),
            ("kv_cache_dirs", "jundot/omlx@c9dc68d6ea49 omlx/settings.py#L43, #L294-L313; omlx/cli.py#L253-L265 (enabled by default, base_path/cache)"),
            ("metrics_path", "jundot/omlx@c9dc68d6ea49 omlx/server.py (no /metrics route)"),
            ("ignore_eos", "jundot/omlx@c9dc68d6ea49 omlx/api/openai_models.py#L269 (ChatCompletionRequest has neither ignore_eos nor logit_bias)"),
            ("draft_counters", "jundot/omlx@c9dc68d6ea49 omlx/engine/dflash.py#L1023-L1028; omlx/cli.py#L185-L192 (base_path/logs/server.log)"),
        ],
        assumed: &["logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "rapid-mlx",
        health_path: "/health/ready",
        loads_lazily: false,
        version: VersionFrom::Command { arg: "--version" },
        kv_cache_dir: Some("~/.cache/rapid-mlx/prefix_cache"),
        kv_cache_dirs: &["~/.cache/rapid-mlx/prefix_cache", "~/.cache/vllm-mlx/prefix_cache"],
        metrics_path: Some("/metrics"),
        request_extra: &[],
        ignore_eos: IgnoreEos::Unsupported,
        draft_counters: DraftCounters::Prometheus {
            drafted: "rapid_mlx_spec_decode_attempts_total",
            accepted: "rapid_mlx_spec_decode_accepts_total",
        },
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "raullenchai/Rapid-MLX (formerly vllm-mlx) vllm_mlx/routes/health.py, runtime/cache.py, server.py, routes/metrics.py, routes/chat.py, cli.py",
        sources: &[
            ("health_path", "raullenchai/Rapid-MLX@7222ca776c02 vllm_mlx/routes/health.py#L115-L128 (503 until ready); #L53-L107 (/health 200 with ready)"),
            ("version", "raullenchai/Rapid-MLX@7222ca776c02 vllm_mlx/cli.py#L9228-L9230 (`rapid-mlx --version`); routes/metrics.py#L1059-L1071 (rapid_mlx_build_info)"),
            ("kv_cache_dirs", "raullenchai/Rapid-MLX@7222ca776c02 vllm_mlx/runtime/cache.py#L343-L348; server.py#L341-L363, #L366-L384, #L777-L787 (saved on shutdown, loaded after start)"),
            ("metrics_path", "raullenchai/Rapid-MLX@7222ca776c02 vllm_mlx/routes/metrics.py#L1769-L1780"),
            ("ignore_eos", "raullenchai/Rapid-MLX@7222ca776c02 vllm_mlx/api/models.py#L1484 (no ignore_eos field; extra fields dropped); routes/chat.py#L3868-L3875 (non-empty logit_bias: 400)"),
            ("draft_counters", "raullenchai/Rapid-MLX@7222ca776c02 vllm_mlx/routes/metrics.py#L561-L566, #L645-L664"),
        ],
        assumed: &["logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "splash",
        health_path: "/ready",
        loads_lazily: false,
        version: VersionFrom::Command { arg: "--version" },
        // Its persistent prefix cache is opt-in (`--persistent-cache` with `--max-cache-disk`);
        // cleared whenever it is there. Its prepared-weights cache is not a KV cache and is never
        // touched.
        kv_cache_dir: Some("~/Library/Caches/Splash/prefix-cache"),
        kv_cache_dirs: &["~/Library/Caches/Splash/prefix-cache"],
        metrics_path: Some("/metrics"),
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        draft_counters: DraftCounters::Prometheus { drafted: "splash_drafted_tokens_total", accepted: "splash_accepted_draft_tokens_total" },
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Rejected { why: "it answers every request for logprobs with an error" },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "incoai/splash install/launcher.py (serve, --port, --version), server/server.py (/ready, /metrics, /tokenize), server/serve_options.py (opt-in persistent prefix cache), server/frontend.py (ignore_eos; logit_bias 400), server/metrics.py (counters)",
        sources: &[
            ("health_path", "incoai/splash@1f8254535989 server/server.py#L531-L534 (/ready: 503 until the engine is ready), #L1655-L1737 (listens only once the model is in)"),
            ("version", "incoai/splash@1f8254535989 install/launcher.py#L376, #L346-L351 (`Splash <version>`)"),
            ("kv_cache_dirs", "incoai/splash@1f8254535989 server/serve_options.py#L28, #L409-L436 (~/Library/Caches/Splash/prefix-cache; kept across restarts only with --persistent-cache and --max-cache-disk)"),
            ("metrics_path", "incoai/splash@1f8254535989 server/server.py#L540-L544 (Prometheus text)"),
            ("ignore_eos", "incoai/splash@1f8254535989 server/frontend.py#L1079-L1081, #L1129-L1130 (a boolean, honoured); #L1075-L1078 (a non-empty logit_bias: 400)"),
            ("draft_counters", "incoai/splash@1f8254535989 server/metrics.py#L173-L174"),
            ("logprobs", "incoai/splash@036ff131d007 server/frontend.py, Frontend._prepare (`logprobs` anything but false or null: 400 \"n and logprobs are not currently supported\")"),
        ],
        assumed: &["stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "mtplx",
        // The server is built after the model is loaded, so /health answers only then.
        health_path: "/health",
        loads_lazily: false,
        version: VersionFrom::Command { arg: "--version" },
        kv_cache_dir: Some("~/.mtplx/session-bank"),
        kv_cache_dirs: &["~/.mtplx/session-bank"],
        metrics_path: None,
        // MTPLX reads `enable_thinking` (a plan's `reasoning_effort = "none"` means the same).
        request_extra: &[("enable_thinking", "false")],
        ignore_eos: IgnoreEos::Unsupported,
        draft_counters: DraftCounters::FinalChunk(crate::drafts::MTPLX_STATS),
        // Its session cache is in memory, keyed on the prompt's tokens when no session id is
        // given: a fresh engine holds what the cell's probe sent, so it is flushed every cell.
        cache_flush: Some(CacheFlush {
            path: "/admin/cache/clear",
            when_missing: "this MTPLX has no /admin/cache/clear (older than the releases read)",
            every_cell: true,
        }),
        kv_cache_lookup: None,
        saves_arguments: None,
        // Runs that repeat a prompt would be served from the session cache; agent sessions use it.
        request_headers: &[RequestHeader { name: "x-mtplx-cache-mode", value: "bypass", scope: HeaderScope::AllButAgent }],
        // A quality workload streams answers of many tokens: MTPLX gives logprobs of the first
        // token only, unstreamed, with max_tokens = 1 (2.12.2), or none on chat (2.9.2).
        logprobs: Logprobs::Rejected {
            why: "it answers logprobs only unstreamed and for one token (max_tokens = 1), and a quality workload streams answers of many tokens",
        },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "youssofal/MTPLX mtplx/server/openai.py (/health, session bank, mtplx_stats), mtplx/cli.py (serve, --version, --ssd-session-cache)",
        sources: &[
            ("health_path", "youssofal/MTPLX@0001c3cbe8ff mtplx/server/openai.py#L17330, #L23388, #L23401 (model loaded in ServerState before the app and uvicorn start)"),
            ("version", "youssofal/MTPLX@0001c3cbe8ff mtplx/cli.py#L1850-L1854 (`mtplx --version`)"),
            ("kv_cache_dirs", "youssofal/MTPLX@0001c3cbe8ff mtplx/server/openai.py#L22928-L22937; mtplx/cli.py#L652-L662 (--ssd-session-cache off|on|write-only, off for serve)"),
            ("metrics_path", "youssofal/MTPLX@0001c3cbe8ff mtplx/server/openai.py (no Prometheus route)"),
            ("ignore_eos", "youssofal/MTPLX@0001c3cbe8ff mtplx/server/openai.py#L669-L699 (no ignore_eos or logit_bias; extra fields allowed and unread)"),
            ("draft_counters", "youssofal/MTPLX@0001c3cbe8ff mtplx/server/openai.py#L11815-L11817, #L21845-L21859"),
            ("cache_flush", "mtplx 2.12.2 (the PyPI wheel of youssofal/MTPLX) mtplx/server/openai.py#L37444-L37460 (POST /admin/cache/clear: every session dropped); mtplx/engine_session.py#L2028-L2110 (no session id: the session whose tokens are the prompt's longest prefix)"),
            ("request_headers", "mtplx 2.12.2 (the PyPI wheel of youssofal/MTPLX) mtplx/server/openai.py#L37751-L37759 (x-mtplx-cache-mode: bypass, stateless or off)"),
            ("request_extra", "mtplx 2.12.2 (the PyPI wheel of youssofal/MTPLX) mtplx/server/openai.py#L1781-L1803 (ChatCompletionRequest.enable_thinking); youssofal/MTPLX@0001c3cbe8ff reads no reasoning_effort"),
            ("logprobs", "mtplx 2.12.2 (the PyPI wheel of youssofal/MTPLX) mtplx/server/openai.py#L37690-L37699 (every chat request with logprobs checked), #L30139-L30185 (400 unless max_tokens = 1, stream false and no stop; top_logprobs at most MTPLX_PROMPT_LOGPROBS_MAX, 128); mtplx 2.9.2 mtplx/server/openai.py#L26588-L26595 (400 for any logprobs on /v1/chat/completions)"),
            ("tool_calls", "mtplx 2.12.2 (the PyPI wheel of youssofal/MTPLX) mtplx/server/openai.py#L1781 (ChatCompletionRequest tools), tool-call streaming throughout"),
        ],
        assumed: &["stream_usage", "cached_tokens"],
    },
    Preset {
        name: "kapitsa",
        health_path: "/v1/models",
        loads_lazily: true,
        version: VersionFrom::Command { arg: "--version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Unsupported,
        draft_counters: DraftCounters::None,
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "nace-ai/kapitsa README (OpenAI and Anthropic APIs, `kapitsa <agent> --model`); its server source was not found: every value is assumed",
        sources: &[],
        assumed: &["health_path", "version", "kv_cache_dirs", "metrics_path", "ignore_eos", "draft_counters", "logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
    Preset {
        name: "benchpass-sim",
        health_path: "/health",
        loads_lazily: false,
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        draft_counters: DraftCounters::None,
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: true, tool_calls: true },
        source: "this project: `benchpass sim` (docs/raw-format.md, ARCHITECTURE.md)",
        sources: &[
            ("health_path", "sim/src/server.rs"),
            ("version", "sim/src/server.rs"),
            ("kv_cache_dirs", "sim/src/server.rs (no cache)"),
            ("metrics_path", "sim/src/server.rs"),
            ("ignore_eos", "sim/src/server.rs"),
            ("draft_counters", "sim/src/server.rs"),
            ("logprobs", "sim/src/server.rs, sim/src/logprobs.rs (top_logprobs up to 20)"),
            ("stream_usage", "sim/src/server.rs"),
            ("cached_tokens", "sim/src/prefix_cache.rs (with --prefix-cache)"),
            ("tool_calls", "sim/src/chat.rs"),
        ],
        assumed: &[],
    },
    Preset {
        name: "openai-compatible",
        health_path: "/v1/models",
        loads_lazily: false,
        version: VersionFrom::Endpoint { path: "/version", pointer: "/version" },
        kv_cache_dir: None,
        kv_cache_dirs: &[],
        metrics_path: None,
        request_extra: &[],
        ignore_eos: IgnoreEos::Field,
        draft_counters: DraftCounters::None,
        cache_flush: None,
        kv_cache_lookup: None,
        saves_arguments: None,
        request_headers: &[],
        logprobs: Logprobs::Supported { max_top_logprobs: None },
        capabilities: Capabilities { stream_usage: true, cached_tokens: false, tool_calls: true },
        source: "the OpenAI API: GET /v1/models is the one endpoint every compatible server has",
        sources: &[("health_path", "the OpenAI API reference: GET /v1/models")],
        assumed: &["version", "kv_cache_dirs", "metrics_path", "ignore_eos", "draft_counters", "logprobs", "stream_usage", "cached_tokens", "tool_calls"],
    },
];

pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

impl Preset {
    /// Whether the value under `key` was not read from the engine's source.
    pub fn is_assumed(&self, key: &str) -> bool {
        self.assumed.contains(&key)
    }

    /// The request fields the preset adds (`request_extra`) as JSON: a value that is JSON as
    /// written (`false`, `1`) is that value, anything else a string.
    pub fn request_fields(&self) -> serde_json::Map<String, serde_json::Value> {
        self.request_extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String((*v).to_owned()))))
            .collect()
    }

    /// The dry run's line for the flush of a server's prefix cache, where the preset has one
    /// and flushes this cell's server (`started`: benchpass starts it).
    pub fn dry_run_flush(&self, started: bool) -> Option<String> {
        self.cache_flush_for(started).map(|flush| format!("  empty the server's prefix cache: POST {}\n", flush.path))
    }

    /// The flush a cell's server gets before its runs: every cell's where the preset says so,
    /// else only a server benchpass did not start (`started`: benchpass started it).
    pub fn cache_flush_for(&self, started: bool) -> Option<CacheFlush> {
        self.cache_flush.filter(|f| f.every_cell || !started)
    }

    /// The headers of the preset's that a request of an agent session's turn (`agent`), or of
    /// any other workload, carries.
    pub fn headers_for(&self, agent: bool) -> Vec<(&'static str, &'static str)> {
        self.request_headers.iter().filter(|h| h.scope == HeaderScope::All || !agent).map(|h| (h.name, h.value)).collect()
    }

    /// What the dry run adds to a step that asked to run past EOS (`asked`) on an engine that
    /// cannot be held to its cap; empty otherwise.
    pub fn dry_run_stop_short(&self, asked: bool) -> String {
        if asked && self.ignore_eos.may_stop_short() {
            format!(" (may stop short: the {} preset has no way past EOS)", self.name)
        } else {
            String::new()
        }
    }

    /// Where the value under `key` was read, if it was.
    pub fn source_of(&self, key: &str) -> Option<&'static str> {
        self.sources.iter().find(|(k, _)| *k == key).map(|(_, s)| *s)
    }
}

/// Every resolved value of a preset, each with where it came from (`benchpass plan presets
/// --json`): what the plan gets when it names the preset and sets nothing else.
pub fn describe(preset: &Preset) -> serde_json::Value {
    use serde_json::json;
    let version = match preset.version {
        VersionFrom::Endpoint { path, pointer } => json!({"endpoint": path, "pointer": pointer}),
        VersionFrom::Command { arg } => json!({"command": ["<engine executable>", arg]}),
        VersionFrom::Program { program, args } => json!({"command": std::iter::once(program).chain(args.iter().copied()).collect::<Vec<_>>()}),
    };
    let draft_counters = match preset.draft_counters {
        DraftCounters::None => serde_json::Value::Null,
        DraftCounters::Prometheus { drafted, accepted } => json!({"prometheus": {"drafted": drafted, "accepted": accepted}}),
        DraftCounters::FinalChunk(FinalChunkStats { object, drafted, accepted }) => json!({"final_chunk": {"object": object, "drafted": drafted, "accepted": accepted}}),
        DraftCounters::LogOnly { file, marker } => json!({"log": {"file": file, "marker": marker}}),
    };
    let cache_flush = match preset.cache_flush {
        Some(CacheFlush { path, every_cell, .. }) => json!({"post": path, "when": if every_cell { "before every cell" } else { "before a cell on a server benchpass did not start" }}),
        None => serde_json::Value::Null,
    };
    let kv_cache_lookup = match preset.kv_cache_lookup {
        Some(l) => json!({
            "base": [format!("{} in the start command", l.base_flag), format!("${}", l.base_env), format!("the content of {}", l.base_file), l.base_default.to_owned()],
            "folder": [
                format!("{} in the start command ({} turns the cache off)", l.dir_flag, l.off_flag),
                format!("${} (${} turns it on or off)", l.dir_env, l.enabled_env),
                format!("`{}.{}` in <base>/{} (`{}.{}`: false turns it off)", l.section, l.dir_key, l.settings_file, l.section, l.enabled_key),
                format!("<base>/{}", l.default_dir),
            ],
        }),
        None => serde_json::Value::Null,
    };
    let request_headers: Vec<serde_json::Value> = preset
        .request_headers
        .iter()
        .map(|h| json!({"name": h.name, "value": h.value, "workloads": match h.scope { HeaderScope::All => "all", HeaderScope::AllButAgent => "all but agent" }}))
        .collect();
    let ignore_eos = preset.ignore_eos.as_str();
    json!({
        "name": preset.name,
        "health_path": preset.health_path,
        "loads_lazily": preset.loads_lazily,
        "version": version,
        "kv_cache_dirs": preset.kv_cache_dirs,
        "metrics_path": preset.metrics_path,
        "request_extra": preset.request_fields(),
        "ignore_eos": ignore_eos,
        "draft_counters": draft_counters,
        "cache_flush": cache_flush,
        "kv_cache_lookup": kv_cache_lookup,
        "saves_arguments": preset.saves_arguments,
        "request_headers": request_headers,
        "logprobs": preset.logprobs.describe(),
        "stream_usage": preset.capabilities.stream_usage,
        "cached_tokens": preset.capabilities.cached_tokens,
        "tool_calls": preset.capabilities.tool_calls,
        "sources": preset.sources.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "assumed": preset.assumed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let names = names();
        for (i, name) in names.iter().enumerate() {
            assert!(!names[..i].contains(name), "{name} twice");
            assert_eq!(preset(name).unwrap().name, *name);
        }
        assert!(preset("no-such-engine").is_none());
        for name in ["splash", "mtplx", "kapitsa", "sglang", "rapid-mlx", "omlx"] {
            assert!(preset(name).is_some(), "{name}");
        }
    }

    #[test]
    fn every_value_is_sourced_or_marked_assumed_never_both() {
        for p in PRESETS {
            for key in KEYS {
                let sourced = p.source_of(key).is_some();
                assert!(sourced != p.is_assumed(key), "{}: `{key}` must be either sourced or assumed, not {}", p.name, if sourced { "both" } else { "neither" });
            }
            for (key, source) in p.sources {
                assert!(!source.is_empty() && (KEYS.contains(key) || OPTIONAL_KEYS.contains(key)), "{}: source for `{key}`", p.name);
            }
            for key in p.assumed {
                assert!(KEYS.contains(key), "{}: assumed `{key}` is no key", p.name);
            }
        }
    }

    #[test]
    fn the_cleared_folder_is_the_first_cache_folder() {
        for p in PRESETS {
            assert_eq!(p.kv_cache_dir, p.kv_cache_dirs.first().copied(), "{}", p.name);
            for dir in p.kv_cache_dirs {
                // Cleared folders are the engine's own, under the home folder: a hidden folder's
                // subfolder (`~/.omlx/cache`), or deeper in a shared one
                // (`~/Library/Caches/Splash/prefix-cache`), never the home folder or a shared one.
                let below: Vec<&str> = dir.strip_prefix("~/").unwrap_or_default().split('/').filter(|c| !c.is_empty()).collect();
                let deep_enough = if below.first().is_some_and(|c| c.starts_with('.')) { 2 } else { 3 };
                assert!(below.len() >= deep_enough && !below.contains(&".."), "{}: {dir}", p.name);
            }
        }
        assert_eq!(preset("rapid-mlx").unwrap().kv_cache_dirs, &["~/.cache/rapid-mlx/prefix_cache", "~/.cache/vllm-mlx/prefix_cache"]);
    }

    #[test]
    fn ignore_eos_ways_are_exclusive() {
        for way in [IgnoreEos::Field, IgnoreEos::LogitBias, IgnoreEos::Unsupported] {
            let count = [way.honours_field(), way.adds_logit_bias(), way.may_stop_short()].iter().filter(|b| **b).count();
            assert_eq!(count, 1, "{way:?}");
        }
        // Rapid-MLX answers a non-empty logit_bias with 400: it must never get one.
        assert!(!preset("rapid-mlx").unwrap().ignore_eos.adds_logit_bias());
        assert_eq!(preset("mlx-lm").unwrap().ignore_eos, IgnoreEos::LogitBias);
        assert_eq!(preset("splash").unwrap().ignore_eos, IgnoreEos::Field);
    }

    #[test]
    fn counters_on_a_metrics_endpoint_need_one() {
        for p in PRESETS {
            if let DraftCounters::Prometheus { drafted, accepted } = p.draft_counters {
                assert!(p.metrics_path.is_some(), "{}", p.name);
                assert!(drafted.ends_with("_total") && accepted.ends_with("_total"), "{}", p.name);
            }
        }
    }

    #[test]
    fn logprobs_are_refused_where_the_engine_refuses_them() {
        let mlx_lm = preset("mlx-lm").unwrap().logprobs;
        assert_eq!(mlx_lm, Logprobs::Supported { max_top_logprobs: Some(11) });
        assert_eq!(mlx_lm.refusal(11), None);
        assert_eq!(mlx_lm.refusal(12).unwrap(), "it refuses `top_logprobs` above 11, and this workload asks for 12");
        let splash = preset("splash").unwrap().logprobs;
        assert!(splash.refusal(1).is_some() && splash.refusal(20).is_some());
        assert_eq!(preset("benchpass-sim").unwrap().logprobs.refusal(20), None);
        // Every value that is not assumed says where it was read.
        for p in PRESETS.iter().filter(|p| !p.is_assumed("logprobs")) {
            assert!(p.source_of("logprobs").is_some(), "{}", p.name);
        }
    }

    #[test]
    fn mtplx_is_flushed_every_cell_and_bypassed_but_for_agent_sessions() {
        let mtplx = preset("mtplx").unwrap();
        for started in [true, false] {
            assert_eq!(mtplx.cache_flush_for(started).map(|f| f.path), Some("/admin/cache/clear"));
        }
        assert_eq!(mtplx.headers_for(false), vec![("x-mtplx-cache-mode", "bypass")]);
        assert!(mtplx.headers_for(true).is_empty(), "agent sessions are measured with the cache");
        assert_eq!(mtplx.request_fields().get("enable_thinking"), Some(&serde_json::json!(false)));
        // vLLM and SGLang: only a server benchpass did not start.
        for name in ["vllm", "sglang"] {
            let p = preset(name).unwrap();
            assert!(p.cache_flush_for(true).is_none() && p.cache_flush_for(false).is_some(), "{name}");
        }
        assert_eq!(preset("mtplx").unwrap().dry_run_flush(true).unwrap(), "  empty the server's prefix cache: POST /admin/cache/clear\n");
        assert_eq!(preset("vllm").unwrap().dry_run_flush(true), None);
    }

    #[test]
    fn omlx_finds_its_cache_folder_by_a_rule_whose_default_is_its_folder() {
        let omlx = preset("omlx").unwrap();
        let lookup = omlx.kv_cache_lookup.unwrap();
        assert_eq!(format!("{}/{}", lookup.base_default, lookup.default_dir), omlx.kv_cache_dirs[0]);
        assert_eq!((lookup.base_env, lookup.dir_flag, lookup.settings_file), ("OMLX_BASE_PATH", "--paged-ssd-cache-dir", "settings.json"));
        assert!(omlx.saves_arguments.is_some() && omlx.source_of("saves_arguments").is_some());
        // No other preset has a rule for its folder, and every one that has is cited.
        for p in PRESETS {
            assert_eq!(p.kv_cache_lookup.is_some(), p.source_of("kv_cache_lookup").is_some(), "{}", p.name);
            assert_eq!(p.request_headers.is_empty(), p.source_of("request_headers").is_none(), "{}", p.name);
        }
    }

    #[test]
    fn describe_lists_what_each_engine_serves() {
        let mlx = describe(preset("mlx-lm").unwrap());
        assert_eq!(mlx["logprobs"], "yes, top_logprobs at most 11");
        assert_eq!((mlx["stream_usage"].as_bool(), mlx["cached_tokens"].as_bool(), mlx["tool_calls"].as_bool()), (Some(true), Some(true), Some(true)));
        assert_eq!(describe(preset("splash").unwrap())["logprobs"], "no (a request for them is refused)");
        let kapitsa = describe(preset("kapitsa").unwrap());
        for key in ["logprobs", "stream_usage", "cached_tokens", "tool_calls", "ignore_eos"] {
            assert!(kapitsa["assumed"].as_array().unwrap().contains(&key.into()), "{key}");
        }
        let omlx = describe(preset("omlx").unwrap());
        assert_eq!(omlx["kv_cache_lookup"]["base"][1], "$OMLX_BASE_PATH");
    }

    /// The client tries the shapes in `drafts::FINAL_CHUNK_STATS` on every stream: a preset
    /// whose shape were missing there would never have its counts read, and a shape no preset
    /// names would be read from every engine on no one's word.
    #[test]
    fn the_final_chunk_shapes_are_the_presets_own_in_their_order() {
        let named: Vec<FinalChunkStats> = PRESETS
            .iter()
            .filter_map(|p| match p.draft_counters {
                DraftCounters::FinalChunk(stats) => Some(stats),
                _ => None,
            })
            .collect();
        assert_eq!(named, crate::drafts::FINAL_CHUNK_STATS);
        assert!(!named.is_empty());
    }
}
