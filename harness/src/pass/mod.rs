//! The raw pass on disk: its format, the append-only store, and CSV import and export.

pub mod csv;
pub mod format;
pub mod llama_bench;
pub mod store;

pub use format::*;
pub use store::{read_pass, read_passes, Pass, PassError, PassWriter, TornTail, PASS_FILE, RUNS_FILE};
