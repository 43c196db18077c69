//! The `agent` workload: shipped coding-agent sessions replayed turn by turn (docs/agent.md).
//!
//! A trace (`data/agent/*.json`, made by `cargo xtask agent-traces`) is one whole conversation:
//! a system prompt, a user task, then rounds of assistant tool call → tool result, and a last
//! assistant answer. Turn `t` of a session sends every message before the trace's `t`-th
//! assistant message, with the trace's tools, and measures the engine's reply to it. The
//! trace's own assistant messages are replayed in later turns, never the engine's, so every
//! engine is sent the same prompts and each request's prefix is exactly the one before it.

use std::sync::{Arc, OnceLock};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::Prompt;
use crate::pass::Step;
use crate::runner::Job;

/// One shipped session, as stored in `data/agent/<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// The file's name without `.json`; recorded as each run's `prompt_id`.
    pub id: String,
    /// What the session is about, in a line (for people reading the file).
    pub task: String,
    /// The OpenAI `tools` array every request of the session carries.
    pub tools: Value,
    /// The whole conversation in OpenAI chat form: `system`, `user`, then `assistant` (with
    /// `tool_calls`) and `tool` messages, ending with the last assistant message.
    pub messages: Vec<Value>,
}

impl Trace {
    /// Indices of the assistant messages: turn `t` is everything before `assistant_at()[t]`.
    pub fn assistant_at(&self) -> Vec<usize> {
        self.messages.iter().enumerate().filter(|(_, m)| role(m) == Some("assistant")).map(|(i, _)| i).collect()
    }

    /// How many turns (requests) the session makes.
    pub fn n_turns(&self) -> usize {
        self.assistant_at().len()
    }

    /// The messages of turn `turn`: the conversation up to (not including) the trace's own
    /// reply to it, the first (system) message starting with `session_line`.
    pub fn turn_messages(&self, turn: usize, session_line: &str) -> Option<Vec<Value>> {
        let end = *self.assistant_at().get(turn)?;
        let mut messages = self.messages[..end].to_vec();
        if let Some(content) = messages.first_mut().and_then(|m| m.get_mut("content")) {
            if let Some(text) = content.as_str() {
                *content = Value::String(format!("{session_line}\n{text}"));
            }
        }
        Some(messages)
    }

    /// What a well-formed trace is: a system message with text first, a user message, every
    /// tool call answered by a tool message with its id before the next assistant message,
    /// and a last assistant message; tools given as an array.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.tools.as_array().is_some_and(|t| !t.is_empty()), "`tools` must be a non-empty array");
        anyhow::ensure!(
            self.messages.first().is_some_and(|m| role(m) == Some("system") && m["content"].is_string()),
            "the first message must be a system message with text"
        );
        anyhow::ensure!(self.messages.get(1).and_then(role) == Some("user"), "the second message must be the user's task");
        anyhow::ensure!(self.messages.last().and_then(role) == Some("assistant"), "the last message must be the assistant's");
        let mut open: Vec<String> = Vec::new();
        for (i, message) in self.messages.iter().enumerate() {
            match role(message) {
                Some("assistant") => {
                    anyhow::ensure!(open.is_empty(), "message {i}: tool calls {open:?} are not answered before it");
                    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                        let id = call["id"].as_str().with_context(|| format!("message {i}: a tool call without an id"))?;
                        anyhow::ensure!(
                            call.pointer("/function/arguments").and_then(Value::as_str).is_some_and(|a| serde_json::from_str::<Value>(a).is_ok()),
                            "message {i}: tool call {id}'s arguments must be a JSON text"
                        );
                        open.push(id.to_owned());
                    }
                }
                Some("tool") => {
                    let id = message["tool_call_id"].as_str().unwrap_or_default();
                    anyhow::ensure!(open.iter().any(|o| o == id), "message {i}: a tool result for `{id}`, which no open call has");
                    open.retain(|o| o != id);
                }
                Some("system" | "user") if i < 2 => {}
                other => anyhow::bail!("message {i}: unexpected role {other:?}"),
            }
        }
        Ok(())
    }
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// The shipped traces, shortest first, embedded so that a pass does not depend on the working
/// directory. `cargo xtask agent-traces` writes these files; add a line here for a new one.
pub(crate) const SHIPPED: [&str; 6] = [
    include_str!("../../../data/agent/session-01.json"),
    include_str!("../../../data/agent/session-02.json"),
    include_str!("../../../data/agent/session-03.json"),
    include_str!("../../../data/agent/session-04.json"),
    include_str!("../../../data/agent/session-05.json"),
    include_str!("../../../data/agent/session-06.json"),
];

/// The shipped traces, parsed and checked once.
pub fn traces() -> anyhow::Result<&'static [Trace]> {
    static TRACES: OnceLock<Result<Vec<Trace>, String>> = OnceLock::new();
    let parsed = TRACES.get_or_init(|| {
        SHIPPED
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let trace: Trace = serde_json::from_str(text).map_err(|e| format!("shipped agent trace {}: {e}", i + 1))?;
                trace.check().map_err(|e| format!("shipped agent trace {}: {e:#}", trace.id))?;
                Ok(trace)
            })
            .collect()
    });
    parsed.as_deref().map_err(|e| anyhow::anyhow!("{e}"))
}

/// Which trace session `rep` replays: measured sessions take the traces in order and warmup
/// sessions the ones after them, so that with enough traces a warmup never replays a measured
/// session's conversation.
pub fn trace_index(step: &Step, rep: u32, warmup: bool, n_traces: usize) -> usize {
    let index = if warmup { step.runs as usize + rep as usize } else { rep as usize };
    index % n_traces
}

/// The line put in front of the system prompt of session `rep`. Sessions that replay the same
/// trace (more sessions than traces) then still share no more than a few tokens of prefix, so
/// that every session's first turn is cold.
pub fn session_line(rep: u32, warmup: bool) -> String {
    let kind = if warmup { "warmup session" } else { "session" };
    format!("Benchmark {kind} {rep}.")
}

/// The jobs of session `rep` of an agent step (a warmup session when `warmup`): its turns in
/// order, each with `session: Some(rep)` and its `turn`, so that they run one after another.
pub fn jobs(step: &Step, rep: u32, warmup: bool) -> anyhow::Result<Vec<Job>> {
    let traces = traces()?;
    anyhow::ensure!(!traces.is_empty(), "no agent traces are shipped");
    let trace = &traces[trace_index(step, rep, warmup, traces.len())];
    let line = session_line(rep, warmup);
    let tools = Some(trace.tools.clone());
    (0..trace.n_turns())
        .map(|turn| {
            let messages = trace.turn_messages(turn, &line).context("a turn past the trace's end")?;
            Ok(Job {
                workload: step.workload,
                target: step.target_prompt_tokens,
                max_tokens: step.max_tokens,
                ignore_eos: step.ignore_eos,
                rep,
                warmup,
                prompt: Arc::new(Prompt::Conversation { messages, tools: tools.clone() }),
                session: Some(rep),
                turn: Some(turn as u32),
                prompt_id: Some(trace.id.clone()),
                top_logprobs: None,
                concurrency: step.concurrency,
                attempt: 0,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::Workload;

    fn step(runs: u32) -> Step {
        Step {
            workload: Workload::Agent,
            target_prompt_tokens: 0,
            max_tokens: 64,
            warmup: 1,
            runs,
            ignore_eos: false,
            duration_s: None,
            top_logprobs: None,
            concurrency: None,
        }
    }

    #[test]
    fn shipped_traces_are_well_formed_and_of_the_promised_shape() {
        let traces = traces().unwrap();
        assert_eq!(traces.len(), SHIPPED.len());
        for trace in traces {
            assert!((10..=20).contains(&trace.n_turns()), "{}: {} turns", trace.id, trace.n_turns());
            let all = trace.turn_messages(trace.n_turns() - 1, "").unwrap();
            let text = Prompt::Conversation { messages: all, tools: None }.text_for_counting();
            let tokens = crate::tokens::count_reference_tokens(&text);
            assert!((7_000..=33_000).contains(&tokens), "{}: {tokens} tokens in its last turn", trace.id);
        }
        let ids: std::collections::HashSet<_> = traces.iter().map(|t| &t.id).collect();
        assert_eq!(ids.len(), traces.len(), "ids are unique");
    }

    #[test]
    fn each_turn_extends_the_one_before_with_the_traces_own_reply() {
        let jobs = jobs(&step(2), 1, false).unwrap();
        let trace = &traces().unwrap()[1];
        assert_eq!(jobs.len(), trace.n_turns());
        for (t, pair) in jobs.windows(2).enumerate() {
            let (Prompt::Conversation { messages: a, tools: ta }, Prompt::Conversation { messages: b, tools: tb }) = (&*pair[0].prompt, &*pair[1].prompt) else {
                panic!("agent prompts are conversations");
            };
            assert_eq!(&b[..a.len()], &a[..], "turn {} starts with turn {t}", t + 1);
            assert_eq!(b[a.len()], trace.messages[a.len()], "the trace's assistant message is replayed");
            assert_eq!(ta, tb);
            assert_eq!((pair[0].session, pair[0].turn), (Some(1), Some(t as u32)));
        }
        let Prompt::Conversation { messages, .. } = &*jobs[0].prompt else { unreachable!() };
        assert!(messages[0]["content"].as_str().unwrap().starts_with("Benchmark session 1.\n"));
        assert_eq!(messages.len(), 2, "the first turn is the system prompt and the task");
    }

    #[test]
    fn warmup_sessions_replay_traces_after_the_measured_ones() {
        let n = traces().unwrap().len();
        assert_eq!(trace_index(&step(2), 0, false, n), 0);
        assert_eq!(trace_index(&step(2), 0, true, n), 2);
        assert_eq!(trace_index(&step(2), n as u32, false, n), 0, "more sessions than traces wrap");
        let a = jobs(&step(2), 0, true).unwrap();
        assert_eq!(a[0].prompt_id.as_deref(), Some(traces().unwrap()[2].id.as_str()));
        assert!(a.iter().all(|j| j.warmup && j.session == Some(0)));
    }

    #[test]
    fn a_malformed_trace_is_refused_with_the_reason() {
        let mut trace = traces().unwrap()[0].clone();
        let at = trace.assistant_at()[0];
        trace.messages.remove(at + 1);
        let error = trace.check().unwrap_err().to_string();
        assert!(error.contains("not answered"), "{error}");
    }
}
