//! The one definition of benchpass's files: a pass's `pass.json` and `runs.jsonl` (their
//! records and [`SCHEMA_VERSION`]) and the runs CSV, with docs/raw-format.md beside it as their
//! user-facing description; change both together. Here are their writers and readers (the
//! append-only [`store`] with its sync thread, the [`listing`] of passes on disk), what a record
//! becomes on its way to disk ([`bounded`], with the API key redacted by [`secrets`]), CSV
//! import and export ([`csv`]), the importers of other tools' results ([`llama_bench`],
//! [`vllm_bench`]), the rules every reader of runs shares ([`runs`], [`pass_id`]) and the figure
//! definitions over a run's events ([`metrics`]: first token, TTFT, decode span, decode and
//! prefill rates). It measures nothing: no async runtime, no HTTP, no command-line parser, and
//! no knowledge of processes or servers beyond the facts a pass records of them ([`machine`]).
//! The harness writes passes through it; `analysis` and `report` read them through it without
//! linking the harness.

pub mod bounded;
pub mod csv;
pub mod format;
pub mod leaderboard_cache;
pub mod listing;
pub mod llama_bench;
pub mod machine;
pub mod metrics;
pub mod pass_id;
pub mod runs;
pub mod secrets;
pub mod store;
mod syncer;
pub mod vllm_bench;

pub use format::*;
pub use store::{
    damage_notes, read_pass, read_passes, write_imported, Damage, DamagedLine, Keep, Pass, PassError, PassWriter, TornTail, PASS_FILE, RUNS_FILE,
};

#[cfg(test)]
mod hostile_round_trip;
