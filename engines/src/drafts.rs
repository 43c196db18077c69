//! The shapes in which engines report speculative-decoding draft counts inside a stream: what
//! the client looks for in every final chunk, whichever engine sent it (a `--url` run names no
//! engine, and a preset's name is not proof of what answers).

/// Draft counts sent as two fields of one object in the final streamed chunk (and in the
/// non-streamed body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinalChunkStats {
    /// The chunk's top-level key holding the object.
    pub object: &'static str,
    /// The object's field counting drafted tokens.
    pub drafted: &'static str,
    /// The object's field counting accepted drafts.
    pub accepted: &'static str,
}

/// MTPLX's `mtplx_stats` (its preset cites the source under `draft_counters`).
pub const MTPLX_STATS: FinalChunkStats = FinalChunkStats { object: "mtplx_stats", drafted: "drafted_tokens", accepted: "accepted_drafts" };

/// Every final-chunk shape known, in the order the client tries them: the first whose object is
/// in a chunk gives its counts. Exactly the shapes the presets name, in preset order (a test in
/// `presets` holds the two together).
pub const FINAL_CHUNK_STATS: &[FinalChunkStats] = &[MTPLX_STATS];
