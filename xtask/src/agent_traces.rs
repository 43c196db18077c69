//! `cargo xtask agent-traces`: writes the shipped agent sessions, `data/agent/session-*.json`
//! (data/agent/README.md says how they are made and what is in them).
//!
//! Each session is a script of tool calls over this repository; the generator runs the script
//! for real over the working tree (files are read, searches are searched, folders are listed)
//! and cuts each tool result to a size drawn from a seeded generator, so that the session
//! reaches its token target. Nothing comes from a network or a model. The same tree gives the
//! same bytes; the shipped files are data, regenerated only on purpose (their prompts change
//! with the sources they quote, and passes before and after would not replay the same turns).

use std::path::Path;

use anyhow::Context as _;
use harness::client::Prompt;
use harness::tokens::count_reference_tokens;
use harness::workloads::agent::Trace;
use serde_json::{json, Value};

/// What one round of the agent does.
enum Action {
    /// List the files under a folder.
    List(&'static str),
    /// Search the session's files for a literal text.
    Search(&'static str),
    /// Read a file from a line on; how many lines the size budget says.
    Read(&'static str, usize),
    /// Run the tests of a file (their names are read from it).
    Test(&'static str),
    /// Put a line of text above the first line holding the needle.
    Edit(&'static str, &'static str, &'static str),
}

struct Session {
    task: &'static str,
    /// Tokens the last turn's conversation reaches (reference tokenizer), roughly.
    target_tokens: u64,
    /// The assistant's rounds of tool calls; one more turn follows for its answer.
    actions: Vec<Action>,
    /// What the assistant says before its calls, round by round (cycled).
    notes: &'static [&'static str],
    answer: &'static str,
}

fn sessions() -> Vec<Session> {
    use Action::*;
    vec![
        Session {
            task: "A user reports that benchpass loses an event when a network chunk ends between `\\r` and `\\n`. Find where the SSE parser splits lines, check whether that case is handled, and add a test for it.",
            target_tokens: 8_500,
            actions: vec![
                List("harness/src"),
                Search("fn feed"),
                Read("harness/src/sse.rs", 1),
                Search("SseParser::new"),
                Read("harness/src/client.rs", 240),
                Read("data/corpus/corpus.txt", 40),
                Edit("harness/src/sse.rs", "fn crlf_and_cr_end_lines", "    // A CR at the very end of a chunk may be the first half of a CRLF."),
                Test("harness/src/sse.rs"),
                Read("fuzz/src/lib.rs", 1),
                Test("harness/src/sse.rs"),
            ],
            notes: &["Let me look at the parser first.", "I will check how the client feeds it.", "Now the tests."],
            answer: "The parser keeps a CR that ends a chunk pending until the next byte arrives, so a CRLF split across chunks ends one line, not two. I added a test that splits every event at each byte and compares the events; it passes.",
        },
        Session {
            task: "Exporting an imported runs CSV should give back the same bytes. Check how the CSV writer orders and quotes its columns, compare with docs/raw-format.md, and add a round-trip test over the fixtures.",
            target_tokens: 12_000,
            actions: vec![
                List("format/src"),
                Read("format/src/csv.rs", 1),
                Search("RUNS_CSV_HEADER"),
                Read("docs/raw-format.md", 1),
                Read("cli/tests/it/csv_io.rs", 1),
                Search("fn export"),
                Read("format/src/csv.rs", 180),
                Edit("cli/tests/it/csv_io.rs", "#[test]", "// Export, import and export again: the two files must be the same bytes."),
                Test("cli/tests/it/csv_io.rs"),
                Read("data/corpus/corpus.txt", 900),
                Search("token_count_source"),
                Test("cli/tests/it/csv_io.rs"),
            ],
            notes: &["Reading the writer.", "Checking the documented columns.", "Running the CSV tests."],
            answer: "The writer emits the documented columns in order and quotes only fields that need it, so export → import → export is byte-identical. The new test checks it over every fixture pass.",
        },
        Session {
            task: "Prompts are cut from the prose corpus at paragraph starts. Read how excerpts are chosen, look at the corpus around the chapters they start in, and tell me whether two prompt targets can ever share a first paragraph.",
            target_tokens: 16_000,
            actions: vec![
                List("data/corpus"),
                Read("data/corpus/README.md", 1),
                Read("harness/src/corpus.rs", 1),
                Search("fn excerpt"),
                Read("data/corpus/corpus.txt", 120),
                Search("stride"),
                Read("harness/src/runner.rs", 500),
                Read("data/corpus/corpus.txt", 1400),
                Search("CHAPTER"),
                Read("docs/metrics.md", 1),
                Edit("harness/src/corpus.rs", "let start =", "    // The target shifts the start, so that two targets never begin at the same paragraph."),
                Test("harness/src/corpus.rs"),
                Read("data/corpus/corpus.txt", 2600),
                Test("harness/src/corpus.rs"),
            ],
            notes: &["Starting with the corpus notes.", "Looking at the excerpt code.", "Reading the prose around that start."],
            answer: "Starts are index × 97 + target × 31 modulo the paragraph count; 97 is prime to that count, so one target's indices visit every paragraph before repeating, and the existing test checks that 100 (target, index) pairs have distinct starts.",
        },
        Session {
            task: "The noise band for three runs looks too wide in the last report. Check analysis/src/band.rs against docs/statistics.md, find how the band's level is stated, and explain what a reader should expect from n = 3.",
            target_tokens: 21_000,
            actions: vec![
                List("analysis/src"),
                Read("docs/statistics.md", 1),
                Read("analysis/src/band.rs", 1),
                Search("fn band"),
                Read("analysis/src/summary.rs", 1),
                Read("analysis/src/cells.rs", 1),
                Search("level"),
                Read("data/corpus/corpus.txt", 3100),
                Read("analysis/src/cells.rs", 260),
                Edit("analysis/src/band.rs", "fn ", "// With n runs the band is the range of the middle order statistics: its level is 1 − 2·0.5ⁿ."),
                Test("analysis/src/band.rs"),
                Read("docs/metrics.md", 120),
                Search("low-n"),
                Read("data/corpus/corpus.txt", 3700),
                Test("analysis/src/band.rs"),
                Read("analysis/src/reasons.rs", 1),
            ],
            notes: &["Reading the method first.", "Now the code that implements it.", "Checking where the level is shown."],
            answer: "With three runs the band is the full range of the three medians' order statistics and its stated level is 75 %, so it is wide by construction; the report marks it low-n. More runs narrow it; nothing is wrong in band.rs.",
        },
        Session {
            task: "Add a way to make the reference engine's jitter reproducible from the command line, document it, and check that the schedule stays plain arithmetic.",
            target_tokens: 26_000,
            actions: vec![
                List("sim/src"),
                Read("sim/src/profile.rs", 1),
                Read("sim/src/schedule.rs", 1),
                Search("jitter"),
                Read("harness/src/main.rs", 200),
                Read("ARCHITECTURE.md", 1),
                Search("seed"),
                Read("data/corpus/corpus.txt", 4300),
                Read("sim/src/profile.rs", 100),
                Edit("sim/src/profile.rs", "pub seed: u64", "    /// The same seed gives the same rates, request after request."),
                Test("sim/src/schedule.rs"),
                Read("docs/reliability.md", 1),
                Search("precise_timer"),
                Read("format/src/metrics.rs", 1),
                Read("data/corpus/corpus.txt", 5200),
                Test("sim/src/schedule.rs"),
                Read("harness/src/tokens.rs", 1),
            ],
            notes: &["Looking at the sim's profile.", "Checking the command line.", "Reading the schedule."],
            answer: "`--seed` already seeds the per-request jitter (request index XOR seed), so a run with the same seed and request order gets the same rates; I documented it on the profile field. The schedule takes the jittered rates as inputs and stays arithmetic.",
        },
        Session {
            task: "A plan with `order = \"interleaved\"` resumed after a kill starts again at the wrong repetition. Reproduce it from the tests, find the cause in the plan runner, and fix it without changing the raw format.",
            target_tokens: 31_000,
            actions: vec![
                List("harness/src/plan"),
                Read("docs/plans.md", 1),
                Read("harness/src/plan/run.rs", 1),
                Search("interleaved"),
                Read("harness/src/plan/file.rs", 1),
                Read("cli/tests/it/plans.rs", 1),
                Search("resume"),
                Read("data/corpus/corpus.txt", 5800),
                Read("harness/src/plan/run.rs", 300),
                Read("docs/raw-format.md", 300),
                Edit("harness/src/plan/run.rs", "fn ", "// A resumed plan counts what is on disk per (cell, step), whatever the order."),
                Test("cli/tests/it/plans.rs"),
                Read("harness/src/runner.rs", 1),
                Search("fn resume"),
                Read("data/corpus/corpus.txt", 6700),
                Test("cli/tests/it/plans.rs"),
                Read("docs/plans.md", 500),
                Read("format/src/format.rs", 180),
            ],
            notes: &["Reading the plan docs.", "Looking at the runner's schedule.", "Checking the resume tests."],
            answer: "Resuming counted the runs on disk per cell but not per step, so an interleaved plan's next repetition was off by the steps already done in it. Counting per (cell, step) fixes it; the kill-and-resume test now passes for both orders, and the raw format is unchanged.",
        },
    ]
}

const SYSTEM_PROMPT: &str = "You are a coding agent working in a Rust repository on the user's machine. \
You can read files, search them, list folders, run commands and edit files, only through the tools you are given. \
Work in small steps: look before you change anything, change as little as the task needs, and run the tests that cover what you changed. \
Say what you are about to do in one short sentence before each tool call. \
Never invent a file's contents: read it. Never claim a test passed unless you ran it and saw it pass. \
When you are done, answer the user in a few sentences: what you found, what you changed and how you checked it.\n\n\
Rules of this repository:\n\
- Comments say why, not what. Errors carry context. Names are long and plain.\n\
- Only the harness crate opens sockets, spawns processes or writes passes; analysis does no I/O beyond reading the passes it is given; a report is a pure function of a pass folder and the templates.\n\
- The runs CSV columns never change; new fields go to runs.jsonl and docs/raw-format.md.\n\
- Tests drive the real binary against the reference engine and assert figures worked out from its schedule.\n\n\
The project's notes follow.\n\n";

/// Files the generator may quote: this repository's own sources and docs, and the corpus.
fn read_repo_file(root: &Path, path: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(root.join(path)).with_context(|| format!("reading {path} for an agent trace"))
}

/// A small seeded generator (SplitMix64): the same seed gives the same sizes on every machine.
struct SplitMix(u64);

impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn tools() -> Value {
    let function = |name: &str, description: &str, parameters: Value| {
        json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
    };
    json!([
        function("read_file", "Read a text file of the repository, whole or from a line on. Lines are numbered from 1; the result gives each line with its number.", json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file's path from the repository root."},
                "start_line": {"type": "integer", "description": "The first line to read (1 when absent)."},
                "end_line": {"type": "integer", "description": "The last line to read (the file's last when absent)."}
            },
            "required": ["path"]
        })),
        function("search", "Search the repository's text files for a literal string. Returns each matching line as path:line: text, at most 40.", json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The literal text to find (case-sensitive)."},
                "path": {"type": "string", "description": "A folder to search under (the whole repository when absent)."}
            },
            "required": ["pattern"]
        })),
        function("list_files", "List the files under a folder of the repository, one path a line.", json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The folder, from the repository root."}},
            "required": ["path"]
        })),
        function("run_command", "Run a shell command in the repository root and return its output (stdout and stderr together) and exit status. Use it to build and test.", json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "timeout_s": {"type": "integer", "description": "Seconds before the command is stopped (600 when absent)."}
            },
            "required": ["command"]
        })),
        function("edit_file", "Replace an exact, unique piece of text in a file with new text. Fails when the old text is missing or not unique.", json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file's path from the repository root."},
                "old_text": {"type": "string", "description": "The text to replace, exactly as in the file."},
                "new_text": {"type": "string", "description": "The text to put in its place."}
            },
            "required": ["path", "old_text", "new_text"]
        })),
    ])
}

/// The files a session's searches look through (every file its script reads or edits), in a
/// fixed order.
fn session_files(session: &Session) -> Vec<&'static str> {
    let mut files: Vec<&'static str> = session
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Read(path, _) | Action::Test(path) | Action::Edit(path, _, _) => Some(*path),
            _ => None,
        })
        .collect();
    files.sort_unstable();
    files.dedup();
    files
}

fn list(root: &Path, dir: &str) -> anyhow::Result<String> {
    let mut paths = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).with_context(|| format!("listing {}", folder.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(relative) = path.strip_prefix(root) {
                paths.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    paths.sort();
    Ok(paths.join("\n"))
}

fn search(root: &Path, files: &[&str], pattern: &str) -> anyhow::Result<String> {
    let mut hits = Vec::new();
    for path in files {
        for (i, line) in read_repo_file(root, path)?.lines().enumerate() {
            if line.contains(pattern) && hits.len() < 40 {
                hits.push(format!("{path}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    Ok(if hits.is_empty() { "no matches".to_owned() } else { hits.join("\n") })
}

/// What `cargo test` prints for the tests of `path` (their names read from it), all passing.
fn test_output(root: &Path, path: &str) -> anyhow::Result<(String, String)> {
    let text = read_repo_file(root, path)?;
    let mut names = Vec::new();
    let mut after_test_attribute = false;
    for line in text.lines() {
        let line = line.trim();
        if line == "#[test]" {
            after_test_attribute = true;
        } else if after_test_attribute {
            if let Some(rest) = line.strip_prefix("fn ") {
                names.push(rest.split('(').next().unwrap_or(rest).to_owned());
            }
            after_test_attribute = line.starts_with("#[");
        }
    }
    let stem = Path::new(path).file_stem().and_then(|s| s.to_str()).unwrap_or("tests");
    let (package, filter) = match path.split('/').next() {
        Some(package @ ("harness" | "analysis" | "report")) => (package, stem),
        _ => ("harness", stem),
    };
    let command = format!("cargo test -p {package} {filter}");
    let mut output = format!("   Compiling {package} v0.1.0\n    Finished `test` profile [unoptimized + debuginfo] target(s)\n     Running unittests\n\nrunning {} tests\n", names.len());
    for name in &names {
        output.push_str(&format!("test {stem}::tests::{name} ... ok\n"));
    }
    output.push_str(&format!("\ntest result: ok. {} passed; 0 failed; 0 ignored; 0 measured\n\nexit status 0", names.len()));
    Ok((command, output))
}

/// Numbered lines `[start, …)` of `text` until `budget` tokens are reached (at least one line),
/// and the last line's number.
fn cut_lines(text: &str, start: usize, budget: u64) -> (String, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let start = start.clamp(1, lines.len().max(1));
    let mut out = String::new();
    let mut end = start;
    for (i, line) in lines.iter().enumerate().skip(start - 1) {
        let numbered = format!("{:>5}\t{line}\n", i + 1);
        if !out.is_empty() && count_reference_tokens(&out) + count_reference_tokens(&numbered) > budget {
            break;
        }
        out.push_str(&numbered);
        end = i + 1;
    }
    (out, end)
}

fn build_trace(root: &Path, number: usize, session: &Session, notes_md: &str) -> anyhow::Result<Trace> {
    let mut rng = SplitMix(0xA6E7 + number as u64);
    let id = format!("session-{number:02}");
    let system = format!("{SYSTEM_PROMPT}{notes_md}");
    let mut messages = vec![json!({"role": "system", "content": system}), json!({"role": "user", "content": session.task})];
    let files = session_files(session);

    // Reads share what the target leaves after everything else, by seeded weights: varied
    // sizes, from a few hundred tokens to several thousand.
    let n_reads = session.actions.iter().filter(|a| matches!(a, Action::Read(..))).count().max(1);
    let weights: Vec<f64> = (0..n_reads).map(|_| 0.25 + 1.5 * rng.next_f64()).collect();
    let mut reads_done = 0;

    for (round, action) in session.actions.iter().enumerate() {
        let call_id = format!("call_{number:02}_{round:02}");
        let (name, arguments, result) = match action {
            Action::List(dir) => ("list_files", json!({"path": dir}), list(root, dir)?),
            Action::Search(pattern) => ("search", json!({"pattern": pattern}), search(root, &files, pattern)?),
            Action::Test(path) => {
                let (command, output) = test_output(root, path)?;
                ("run_command", json!({"command": command}), output)
            }
            Action::Edit(path, needle, line) => {
                let text = read_repo_file(root, path)?;
                let old = text.lines().find(|l| l.contains(needle)).with_context(|| format!("no `{needle}` in {path}"))?;
                let arguments = json!({"path": path, "old_text": old, "new_text": format!("{line}\n{old}")});
                ("edit_file", arguments, format!("Edited {path}: 1 replacement."))
            }
            Action::Read(path, start) => {
                // What is left to reach the target, shared among the reads still to come.
                let so_far = conversation_tokens(&messages);
                let left = session.target_tokens.saturating_sub(so_far + 60 * (session.actions.len() - round) as u64);
                let share = weights[reads_done] / weights[reads_done..].iter().sum::<f64>();
                let budget = ((left as f64 * share) as u64).max(150);
                reads_done += 1;
                let (text, end) = cut_lines(&read_repo_file(root, path)?, *start, budget);
                ("read_file", json!({"path": path, "start_line": start, "end_line": end}), text)
            }
        };
        let note = session.notes[round % session.notes.len()];
        messages.push(json!({
            "role": "assistant",
            "content": note,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]
        }));
        messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": result}));
    }
    messages.push(json!({"role": "assistant", "content": session.answer}));
    let trace = Trace { id, task: session.task.to_owned(), tools: tools(), messages };
    trace.check().with_context(|| format!("the generated trace {}", trace.id))?;
    Ok(trace)
}

fn conversation_tokens(messages: &[Value]) -> u64 {
    count_reference_tokens(&Prompt::Conversation { messages: messages.to_vec(), tools: None }.text_for_counting())
}

pub fn run(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    anyhow::ensure!(args.is_empty(), "agent-traces takes no arguments");
    let out = root.join("data/agent");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    // The project's notes in every system prompt, as coding agents include theirs: the start of
    // ARCHITECTURE.md, up to its code map.
    let architecture = read_repo_file(root, "ARCHITECTURE.md")?;
    let notes_md = architecture.split("## Code map").next().unwrap_or(&architecture).trim_end().to_owned() + "\n";
    for (i, session) in sessions().iter().enumerate() {
        let trace = build_trace(root, i + 1, session, &notes_md)?;
        let last_turn = trace.n_turns() - 1;
        let tokens = conversation_tokens(&trace.turn_messages(last_turn, "").context("the last turn")?);
        let path = out.join(format!("{}.json", trace.id));
        let text = serde_json::to_string_pretty(&trace)? + "\n";
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        println!("{}: {} turns, {tokens} tokens in the last turn, {} bytes", trace.id, trace.n_turns(), text.len());
    }
    Ok(())
}
