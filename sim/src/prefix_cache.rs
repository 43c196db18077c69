//! The reference engine's prefix cache (`benchpass sim --prefix-cache`): it keeps the prompts
//! it served, as token sequences, and a new prompt's cached tokens are its longest common
//! prefix with any of them. Prefill is charged only for the rest, so a test works out each
//! turn's TTFT by hand: base latency + (prompt − cached) tokens / prefill rate.
//!
//! A prompt is kept from the moment it arrives (a request that shares a prefix with one still
//! in prefill is served from it, as if the cache filled instantly: the arithmetic stays plain).
//! Capacity is counted in prompts, not memory; the oldest goes first.

use std::sync::Mutex;

use harness::tokens::reference_tokens;

/// Prompts kept at most; an agent session's turns extend one another, so each replaces the
/// one before it and this is far more than a pass's sessions need side by side.
const CAPACITY: usize = 256;

#[derive(Default)]
pub struct PrefixCache {
    /// Token sequences (hashed tokens), oldest first.
    prompts: Mutex<Vec<Vec<u64>>>,
}

impl PrefixCache {
    /// How many of `text`'s reference tokens a served prompt already holds; `text` is kept.
    pub fn serve(&self, text: &str) -> u64 {
        let tokens: Vec<u64> = reference_tokens(text).into_iter().map(token_hash).collect();
        let mut prompts = self.prompts.lock().unwrap_or_else(|e| e.into_inner());
        let cached = prompts.iter().map(|p| common_prefix(p, &tokens)).max().unwrap_or(0);
        // A kept prompt that is a prefix of this one can never match more than this one does.
        prompts.retain(|p| common_prefix(p, &tokens) < p.len());
        if prompts.len() >= CAPACITY {
            prompts.remove(0);
        }
        prompts.push(tokens);
        cached as u64
    }

    /// Forgets every prompt, as SGLang's `/flush_cache` and vLLM's `/reset_prefix_cache` do.
    pub fn flush(&self) {
        self.prompts.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

fn common_prefix(a: &[u64], b: &[u64]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// FNV-1a over the token's bytes: 64 bits, so two different tokens never collide in practice.
fn token_hash(token: &str) -> u64 {
    token.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_tokens_are_the_longest_common_prefix_with_any_earlier_prompt() {
        let cache = PrefixCache::default();
        assert_eq!(cache.serve("The cat sat on the mat."), 0, "a cold cache holds nothing");
        // "The cat sat" is 3 tokens in common.
        assert_eq!(cache.serve("The cat sat still."), 3);
        assert_eq!(cache.serve("A dog ran."), 0);
        // The whole first prompt (7 tokens: The, cat, sat, on, the, mat, .) then more.
        assert_eq!(cache.serve("The cat sat on the mat. Then it slept."), 7);
        assert_eq!(cache.serve("The cat sat on the mat. Then it slept."), 11, "a repeat is served whole");
    }

    #[test]
    fn a_prompt_extended_by_the_next_is_dropped_without_changing_any_answer() {
        let cache = PrefixCache::default();
        cache.serve("one two");
        cache.serve("one two three");
        assert_eq!(cache.prompts.lock().unwrap().len(), 1);
        assert_eq!(cache.serve("one two four"), 2);
    }
}
