//! Workloads that bring their own prompts rather than cutting them from the corpus to a size:
//! replayed agent sessions and the quality prompts. Each turns a step into the runner's jobs.

pub mod agent;
pub mod quality;

use sha2::{Digest, Sha256};

use crate::pass::Workload;

/// The SHA-256 of the shipped texts `workload` draws its prompts from, each text preceded by
/// its length so that no two lists hash alike: the sustained prompt; the corpus and the
/// instruction that prompts cut from it begin with; the agent traces; the quality prompts.
/// Recorded with every pass (`request.prompt_sets`): a diff names a prompt set that differs.
pub fn prompt_set(workload: Workload) -> String {
    let texts: Vec<&str> = match workload {
        Workload::Sustained | Workload::Soak => vec![crate::corpus::SUSTAINED_PROMPT],
        Workload::PromptMatrix | Workload::PpTg => vec![crate::corpus::CONTINUE_INSTRUCTION, crate::corpus::CORPUS],
        Workload::Agent => agent::SHIPPED.to_vec(),
        Workload::Quality => vec![quality::SHIPPED],
    };
    let mut hasher = Sha256::new();
    for text in texts {
        hasher.update((text.len() as u64).to_le_bytes());
        hasher.update(text.as_bytes());
    }
    crate::provenance::hex(&hasher.finalize())
}
