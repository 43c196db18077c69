//! What benchpass knows of each inference engine, as data: its preset (health path, how it
//! tells its version, where it keeps a KV cache across restarts, its metrics endpoint, the
//! request fields a fair benchmark sets, how it is held past EOS, where it reports draft counts,
//! its prefix-cache flush), each value with the source it was read from or marked assumed
//! (`presets`); the shapes of draft counts a stream may carry (`drafts`); and the `logit_bias`
//! that keeps a model off its EOS ids (`eos`). The client, the executor and the pass format
//! read it; it must import none of them (nor any other workspace crate), and it does no I/O —
//! no file, no process, no socket, no environment: whatever has to be looked up on the machine
//! (the program that tells an engine's version, a model's EOS ids in its weights folder) is
//! the harness's, given these values. Its dependencies stay serde-level, so that a crate as low
//! as the pass format can name its types.

pub mod drafts;
pub mod eos;
pub mod presets;
