//! The prose corpus that prompts are cut from and that the reference engine "generates".
//!
//! It is real public-domain prose (see `data/corpus/README.md`), embedded in the binary so that
//! a pass never depends on the working directory. Filler text would flatter speculative
//! decoding; prose does not.

use std::sync::OnceLock;

pub const CORPUS: &str = include_str!("../../data/corpus/corpus.txt");

/// The instruction that precedes a cut excerpt in prompt-size workloads.
pub const CONTINUE_INSTRUCTION: &str = "Continue the following text in the same style.\n\n";

/// The short prose prompt of the sustained workload: the same for every run and engine.
pub const SUSTAINED_PROMPT: &str = "Write a long, detailed story about a traveller crossing a \
    country on foot in the last years of the nineteenth century. Describe the places, the \
    people and the weather in plain prose, one scene after another.";

fn paragraphs() -> &'static [&'static str] {
    static PARAGRAPHS: OnceLock<Vec<&'static str>> = OnceLock::new();
    PARAGRAPHS.get_or_init(|| {
        CORPUS.split("\n\n").map(str::trim).filter(|p| p.len() > 80).collect()
    })
}

fn words() -> &'static [&'static str] {
    static WORDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        CORPUS
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect()
    })
}

/// An endless walk through the corpus's words from a position chosen by `seed`.
pub struct Words {
    at: usize,
}

pub fn words_from(seed: u64) -> Words {
    Words { at: (seed % words().len() as u64) as usize }
}

impl Words {
    pub fn next_word(&mut self) -> &'static str {
        let all = words();
        let word = all[self.at % all.len()];
        self.at = (self.at + 1) % all.len();
        word
    }
}

/// Corpus text at least `min_chars` long for excerpt `index` of a prompt target. Each (target,
/// index) starts at its own paragraph, so that a prompt shares no prefix with the one before it
/// and an engine's prompt cache cannot serve it.
pub fn excerpt(target: u64, index: u32, min_chars: usize) -> String {
    let paragraphs = paragraphs();
    // Stride 97 (prime, and prime to the paragraph count) visits every paragraph before any
    // start repeats; the target shifts the sequence so that targets do not share starts either.
    let start = (index as usize * 97 + target as usize * 31) % paragraphs.len();
    let mut text = String::new();
    for paragraph in paragraphs.iter().cycle().skip(start) {
        if text.len() >= min_chars {
            break;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(paragraph);
    }
    text
}

/// The first `n_chars` characters of `text` (never splitting a character).
pub fn cut_at(text: &str, n_chars: usize) -> &str {
    let end = text.char_indices().nth(n_chars).map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// The prompt for a prompt-size workload: the instruction, then `excerpt` cut to `n_chars`.
pub fn prompt_of(excerpt: &str, n_chars: usize) -> String {
    format!("{CONTINUE_INSTRUCTION}{}", cut_at(excerpt, n_chars))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_real_prose_of_useful_size() {
        assert!(CORPUS.len() > 100_000, "the corpus must cover 16K-token prompts");
        assert!(paragraphs().len() > 100);
    }

    #[test]
    fn excerpts_start_at_different_places() {
        let starts: std::collections::HashSet<String> = (0..50)
            .flat_map(|index| [128, 2048].map(|target| cut_at(&excerpt(target, index, 100), 100).to_owned()))
            .collect();
        assert_eq!(starts.len(), 100, "no two (target, index) pairs share a start");
        assert_ne!(paragraphs().len() % 97, 0, "the stride must be prime to the paragraph count");
    }

    #[test]
    fn excerpts_wrap_around_to_reach_any_length() {
        assert!(excerpt(0, 6, CORPUS.len() * 2).len() >= CORPUS.len() * 2);
    }

    #[test]
    fn words_are_alphanumeric_and_wrap() {
        let mut w = words_from(u64::MAX);
        for _ in 0..words().len() + 5 {
            assert!(w.next_word().chars().all(char::is_alphanumeric));
        }
    }
}
