//! The raw pass on disk: its format, the append-only store, CSV import and export, and the
//! importers of other tools' results (llama-bench, vllm bench serve).

pub mod bounded;
pub mod csv;
pub mod format;
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
    damage_notes, read_pass, read_passes, write_imported, Damage, DamagedLine, Pass, PassError, PassWriter, TornTail, PASS_FILE, RUNS_FILE,
};

#[cfg(test)]
mod hostile_round_trip;
