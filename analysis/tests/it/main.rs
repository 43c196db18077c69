//! Analysis against fixtures whose figures were worked out by hand, and the noise band's
//! coverage measured on the reference engine.

mod agent_cells;
mod coverage;
mod energy;
mod fixtures;
mod hand_worked;
mod key_fixtures;
mod more_fixtures;
mod permutation;
mod prefix_cached;
mod recompute;
mod schedule;
mod serving;
mod soak;
mod swapped;
mod thermal_level;
