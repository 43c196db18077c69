//! The reference engine's language model for the quality workload: next-token distributions
//! from a seeded function of the context, so that a test knows every logprob an engine should
//! send and can work out the true KL between two models (docs/quality.md).
//!
//! The vocabulary is the corpus's most frequent words, each with a leading space (one reference
//! token each, `tokens::reference_tokens`). The logit of word `v` after a context is a standard
//! normal deviate drawn from a hash of (seed, the prompt, the last [`ORDER`] generated tokens,
//! v), times [`LOGIT_SCALE`]; a perturbed model adds `S` times another deviate drawn the same
//! way from its own seed. Greedy decoding takes the argmax (the lower index on a tie). Nothing
//! here has a clock or a random generator with state: the same call gives the same numbers.

use std::sync::OnceLock;

/// How many words the vocabulary holds.
pub const VOCAB_SIZE: usize = 300;
/// How many generated tokens the next distribution depends on (with the prompt).
pub const ORDER: usize = 3;
/// The logits' standard deviation: with 300 words, the argmax word then has a probability of
/// about 0.3–0.6, so the top alternatives carry most of the rest, as a real model's do.
pub const LOGIT_SCALE: f64 = 3.0;
/// The seed of the unperturbed model.
pub const BASE_SEED: u64 = 0x5EED_1065_0A11_CE00;
/// The seed of the perturbation's noise (a model perturbed by S = 0 is the base model).
pub const PERTURB_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// The vocabulary: the [`VOCAB_SIZE`] most frequent lowercase words of the corpus (ties in
/// alphabetical order), each with a leading space.
pub fn vocab() -> &'static [String] {
    static VOCAB: OnceLock<Vec<String>> = OnceLock::new();
    VOCAB.get_or_init(|| {
        let mut counts = std::collections::HashMap::<String, u64>::new();
        for word in harness::corpus::CORPUS.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| !w.is_empty()) {
            *counts.entry(word.to_ascii_lowercase()).or_default() += 1;
        }
        let mut words: Vec<(String, u64)> = counts.into_iter().collect();
        words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        words.into_iter().take(VOCAB_SIZE).map(|(w, _)| format!(" {w}")).collect()
    })
}

/// A model: the base distributions, shifted by `perturb` times seeded noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub perturb: f64,
}

/// One generated position: the chosen token (by vocabulary index), its logprob, and the top-K
/// alternatives in descending order of logprob (the chosen token first under greedy decoding).
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub token: usize,
    pub logprob: f64,
    pub top: Vec<(usize, f64)>,
}

impl Model {
    /// The unperturbed model.
    pub const BASE: Model = Model { perturb: 0.0 };

    pub fn perturbed(scale: f64) -> Model {
        Model { perturb: scale }
    }

    /// The logits after `context` (the last [`ORDER`] generated tokens count) of `prompt`.
    pub fn logits(&self, prompt: &str, context: &[usize]) -> Vec<f64> {
        let state = context_hash(prompt, context);
        (0..VOCAB_SIZE)
            .map(|v| {
                let base = LOGIT_SCALE * normal(mix(BASE_SEED ^ state, v as u64));
                if self.perturb == 0.0 {
                    base
                } else {
                    base + self.perturb * normal(mix(PERTURB_SEED ^ state, v as u64))
                }
            })
            .collect()
    }

    /// The full next-token distribution as natural-log probabilities (log-softmax of the
    /// logits, computed from the largest so that nothing overflows).
    pub fn logprobs(&self, prompt: &str, context: &[usize]) -> Vec<f64> {
        let logits = self.logits(prompt, context);
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log_sum = max + logits.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
        logits.iter().map(|l| l - log_sum).collect()
    }

    /// The greedy choice after `context` and the top `k` tokens with their logprobs.
    pub fn position(&self, prompt: &str, context: &[usize], k: usize) -> Position {
        let logprobs = self.logprobs(prompt, context);
        let top = top_k(&logprobs, k.max(1));
        let (token, logprob) = top[0];
        Position { token, logprob, top: top.into_iter().take(k).collect() }
    }

    /// `n` tokens of greedy decoding of `prompt`, each with its top `k`.
    pub fn generate(&self, prompt: &str, n: usize, k: usize) -> Vec<Position> {
        let mut context = Vec::with_capacity(n);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let position = self.position(prompt, &context, k);
            context.push(position.token);
            out.push(position);
        }
        out
    }
}

/// The `k` most likely tokens, most likely first (the lower index on a tie).
pub fn top_k(logprobs: &[f64], k: usize) -> Vec<(usize, f64)> {
    let mut indexed: Vec<(usize, f64)> = logprobs.iter().copied().enumerate().collect();
    indexed.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    indexed.truncate(k);
    indexed
}

/// The true KL(P‖Q) of two full distributions given as natural-log probabilities.
pub fn kl_full(p: &[f64], q: &[f64]) -> f64 {
    p.iter().zip(q).map(|(lp, lq)| lp.exp() * (lp - lq)).sum()
}

/// The state the next distribution depends on: the prompt and the last [`ORDER`] tokens.
fn context_hash(prompt: &str, context: &[usize]) -> u64 {
    // FNV-1a over the prompt: stable across platforms and builds (std's hasher is not).
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for b in prompt.as_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let recent = &context[context.len().saturating_sub(ORDER)..];
    // The count of tokens seen so far (capped at ORDER) keeps "no tokens yet" apart from
    // "token 0 three times".
    h = mix(h, recent.len() as u64);
    for &t in recent {
        h = mix(h, t as u64 + 1);
    }
    h
}

/// splitmix64's finaliser over `a` combined with `b`: a well-mixed 64-bit hash.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a.wrapping_add(b.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A standard normal deviate from a hash (Box–Muller on two 26-bit uniforms in (0, 1)).
fn normal(h: u64) -> f64 {
    let u1 = ((h >> 38) as f64 + 0.5) / (1u64 << 26) as f64;
    let u2 = (((h >> 12) & ((1 << 26) - 1)) as f64 + 0.5) / (1u64 << 26) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_is_three_hundred_distinct_single_reference_tokens() {
        let vocab = vocab();
        assert_eq!(vocab.len(), VOCAB_SIZE);
        assert_eq!(vocab[0], " the", "the corpus's most frequent word");
        let distinct: std::collections::HashSet<_> = vocab.iter().collect();
        assert_eq!(distinct.len(), VOCAB_SIZE);
        assert!(vocab.iter().all(|w| harness::tokens::reference_tokens(w) == [w.as_str()]));
    }

    #[test]
    fn distributions_sum_to_one_and_greedy_is_the_argmax_with_its_top_k_sorted() {
        let p = Model::BASE.logprobs("a prompt", &[4, 7]);
        assert!((p.iter().map(|l| l.exp()).sum::<f64>() - 1.0).abs() < 1e-12);
        let position = Model::BASE.position("a prompt", &[4, 7], 5);
        let argmax = (0..VOCAB_SIZE).max_by(|&a, &b| p[a].total_cmp(&p[b]).then(b.cmp(&a))).unwrap();
        assert_eq!((position.token, position.logprob), (argmax, p[argmax]));
        assert_eq!(position.top.len(), 5);
        assert_eq!(position.top[0], (argmax, p[argmax]));
        assert!(position.top.windows(2).all(|w| w[0].1 >= w[1].1));
        // The peak is a real model's: the top token well above uniform, well below certain.
        let first = position.logprob.exp();
        assert!((0.05..0.95).contains(&first), "{first}");
    }

    #[test]
    fn the_same_context_gives_the_same_numbers_and_only_the_last_tokens_matter() {
        assert_eq!(Model::BASE.logits("x", &[1, 2, 3]), Model::BASE.logits("x", &[9, 1, 2, 3]));
        assert_ne!(Model::BASE.logits("x", &[1, 2, 3]), Model::BASE.logits("y", &[1, 2, 3]));
        assert_ne!(Model::BASE.logits("x", &[]), Model::BASE.logits("x", &[0]));
        assert_eq!(Model::perturbed(0.0).generate("p", 20, 3), Model::BASE.generate("p", 20, 3));
    }

    #[test]
    fn a_perturbation_moves_the_distribution_by_a_kl_that_grows_with_its_scale() {
        let p = Model::BASE.logprobs("q", &[]);
        assert_eq!(kl_full(&p, &p), 0.0);
        let small = kl_full(&p, &Model::perturbed(0.1).logprobs("q", &[]));
        let large = kl_full(&p, &Model::perturbed(1.0).logprobs("q", &[]));
        assert!(0.0 < small && small < large, "{small} {large}");
    }
}
