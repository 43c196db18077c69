//! Windows and any other OS: no memory sampling and no process identity yet; engines are still
//! stopped as a tree (`taskkill /T`, in `mod.rs`). Type-checked, not tested.

use super::{MemoryMeasure, TreeMemory};

pub const MEMORY_MEASURE: Option<MemoryMeasure> = None;

pub fn tree_memory(_pid: u32) -> Option<TreeMemory> {
    None
}

pub fn start_time(_pid: u32) -> Option<u64> {
    None
}

pub fn listeners_of_port(_port: u16) -> Vec<(u32, String)> {
    Vec::new()
}

pub fn process_cpu_seconds() -> Option<f64> {
    None
}
