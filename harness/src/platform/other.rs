//! Any OS other than Linux, macOS and Windows: no memory sampling and no process identity.

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
