//! The agent workload on a real llama.cpp server (built by `cargo xtask engine install
//! llama-cpp`), with its prompt cache on and, as a control, off: later turns reuse the cache
//! (`cache_n` > 0, the previous turn's whole prompt) and their first token comes sooner than the
//! same turn prefilled from nothing. `#[ignore]`d: it runs when asked for
//! (`--include-ignored`, as CI does), and then a missing install fails it.

use harness::pass::{RunRecord, Workload};

use crate::support::*;

fn install() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("BENCHPASS_LLAMA_CPP_DIR").map(Into::into).or_else(harness::installs::llama_cpp_dir);
    real_engine("llama-cpp", dir, &["bin/llama-server", "models/tiny.gguf"])
}

fn turns<'a>(runs: &'a [RunRecord], cell: &str) -> Vec<&'a RunRecord> {
    let mut turns: Vec<_> = runs.iter().filter(|r| r.cell == cell && r.workload == Workload::Agent).collect();
    turns.sort_by_key(|r| r.turn);
    turns
}

#[test]
#[ignore = "needs llama.cpp (cargo xtask engine install llama-cpp); run with --include-ignored"]
fn a_real_llama_cpp_server_reuses_its_prompt_cache_across_an_agent_sessions_turns() {
    let Some(dir) = install() else { return };
    let _one_at_a_time = engine_lock();
    let tmp = temp_dir();
    let server = dir.join("bin/llama-server");
    // The tiny model prefills ~15k tok/s on one thread: a whole 10k-token session without the
    // cache stays within seconds, and prefill still dominates each turn's first token.
    let model = dir.join("models/tiny.gguf");
    let port = || free_port();
    // --jinja: llama-server accepts `tools` only with its Jinja chat templates. The model was
    // made with a 4k context and the session reaches about 10k tokens: llama-server caps a
    // slot's context at the model's training context, so the model's metadata says 32k
    // (--override-kv) and -c gives it. -np 1: one slot, so the whole context is its, and every
    // turn comes back to the slot that holds its prefix.
    let start = |port: u16| {
        format!(r#"start = ["{}", "-m", "{{weights}}", "--host", "127.0.0.1", "--port", "{{port}}", "-t", "1", "--jinja", "-c", "32768", "-np", "1", "--override-kv", "llama.context_length=int:32768"]
port = {port}"#, server.display())
    };
    let plan = tmp.path().join("agent.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "llama-cpp-agent"

# The preset sends cache_prompt = false (the other workloads measure cold prompts); an agent
# turn sends true in its place, unless the plan set it: the control cell sets it false.
[[engines]]
name = "llama.cpp-cache"
preset = "llama-cpp"
{cache}

[[engines]]
name = "llama.cpp-nocache"
preset = "llama-cpp"
extra = {{ cache_prompt = false }}
{nocache}

[[models]]
name = "tiny"
weights = "{model}"

[[cells]]
engine = "llama.cpp-cache"
model = "tiny"

[[cells]]
engine = "llama.cpp-nocache"
model = "tiny"

[[workloads]]
kind = "agent"
sessions = 1
max_tokens = 8
"#,
            cache = start(port()),
            nocache = start(port()),
            model = model.display(),
        ),
    )
    .unwrap();
    let pass = run_plan(&plan, &tmp.path().join("pass"));
    let cell = |engine: &str| pass.info.cells.iter().find(|c| c.engine.name == engine).map(|c| c.id.as_str()).unwrap();
    let (cached, cold) = (turns(&pass.runs, cell("llama.cpp-cache")), turns(&pass.runs, cell("llama.cpp-nocache")));
    let n_turns = harness::workloads::agent::traces().unwrap()[0].n_turns();
    assert_eq!((cached.len(), cold.len()), (n_turns, n_turns));

    let (mut slower, mut mostly_cached) = (Vec::new(), 0);
    for (turn, (hot, control)) in cached.iter().zip(&cold).enumerate() {
        assert_eq!((hot.error.as_ref(), control.error.as_ref()), (None, None), "turn {turn}");
        // Both cells were sent the same conversation.
        assert_eq!(hot.prompt_sha256, control.prompt_sha256);
        assert_eq!(hot.prompt_tokens, control.prompt_tokens);
        let hot_cached = hot.cached_prompt_tokens.expect("llama.cpp reports its cached tokens");
        if turn == 0 {
            assert_eq!(hot_cached, 0, "the first turn is cold");
            continue;
        }
        // The trace's own replies are replayed, so the previous turn's whole prompt is a prefix
        // of this one, and llama.cpp keeps it in the slot: at least that much is cached.
        assert!(hot_cached > 0 && hot_cached >= cached[turn - 1].prompt_tokens.unwrap() - 1, "turn {turn}: {hot_cached} cached");
        assert_eq!(hot.timings.as_ref().unwrap()["cache_n"].as_u64(), Some(hot_cached));
        // The control cell prefilled everything (cache_prompt = false): llama.cpp still says 0.
        assert_eq!(control.cached_prompt_tokens, Some(0), "turn {turn}");
        // What the cache is worth, turn by turn, where it is worth a margin that load cannot
        // undo: a turn whose cache covers at least three quarters of its prompt gets its first
        // token sooner than the same turn prefilled from nothing (seen: 0.05–0.29 of the
        // control's TTFT). Where the new part is larger (this trace's turns 1, 3, 5 and 6: a
        // quarter to a half new) the cached turn still does less of the same work, but took
        // 0.44–0.85 of the control's time, and the two cells run one after the other on two
        // shared cores: a burst of load elsewhere made such turns slower than their control
        // (turn 1: 77.6 against 71.2 ms; turn 5: 727 against 618 ms). Those turns count in the
        // session's sum below, not one by one.
        let (hot_ttft, control_ttft) = (hot.ttft_ms.unwrap(), control.ttft_ms.unwrap());
        let prompt = hot.prompt_tokens.unwrap();
        if hot_cached * 4 < prompt * 3 {
            continue;
        }
        mostly_cached += 1;
        if hot_ttft >= control_ttft {
            slower.push(format!("turn {turn} ({hot_cached} of {prompt} tokens cached): {hot_ttft} ms with the cache, {control_ttft} ms without"));
        }
    }
    assert!(mostly_cached >= 3, "only {mostly_cached} turns had three quarters of their prompt cached");
    assert!(slower.is_empty(), "{slower:?}");
    // Over the session the cache saves most of the prefill time (seen: 21–36 % of the control's
    // TTFT summed over turns 1–10). Per *uncached* token a cached turn is not faster than the
    // cold one: its few new tokens attend to the whole context, and the fixed cost per request
    // is spread over fewer tokens (docs/agent.md).
    let sum = |turns: &[&RunRecord]| turns[1..].iter().map(|r| r.ttft_ms.unwrap()).sum::<f64>();
    assert!(sum(&cached) < 0.6 * sum(&cold), "{} ms with the cache, {} ms without", sum(&cached), sum(&cold));
    // By the last turn the cache saves most of the prefill.
    let last = cached.last().unwrap();
    assert!(last.cached_prompt_tokens.unwrap() * 2 > last.prompt_tokens.unwrap());
}
