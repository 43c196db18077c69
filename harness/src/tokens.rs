//! Token counting rules that benchpass owns: the reference engine's tokenizer and the
//! estimate used when a server reports no counts.
//!
//! The reference tokenizer is deliberately simple so that tests can work figures out by hand:
//! a token is an optional single leading space followed by a run of alphanumeric characters,
//! or any other single character. English prose comes out at roughly 4–5 bytes per token,
//! close to real BPE vocabularies.

/// Splits `text` into the reference engine's tokens (as byte ranges of `text`).
pub fn reference_tokens(text: &str) -> Vec<&str> {
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let starts_word = c.is_alphanumeric()
            || (c == ' ' && chars.peek().is_some_and(|&(_, next)| next.is_alphanumeric()));
        let mut end = start + c.len_utf8();
        if starts_word {
            while let Some(&(i, next)) = chars.peek() {
                if !next.is_alphanumeric() {
                    break;
                }
                end = i + next.len_utf8();
                chars.next();
            }
        }
        tokens.push(&text[start..end]);
    }
    tokens
}

/// The number of reference tokens in `text`.
pub fn count_reference_tokens(text: &str) -> u64 {
    reference_tokens(text).len() as u64
}

/// A rough token count for servers that report none and have no tokenizer endpoint:
/// one token per four characters, rounded up (the rule of thumb OpenAI documents for English).
/// Runs counted this way carry `token_count_source = estimate` and are marked in reports.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_take_their_leading_space_and_punctuation_stands_alone() {
        assert_eq!(
            reference_tokens("Alice was, very tired.\n"),
            vec!["Alice", " was", ",", " very", " tired", ".", "\n"]
        );
    }

    #[test]
    fn a_space_before_punctuation_is_its_own_token() {
        assert_eq!(reference_tokens("a  b"), vec!["a", " ", " b"]);
        assert_eq!(reference_tokens("a ,"), vec!["a", " ", ","]);
    }

    #[test]
    fn concatenated_words_retokenize_to_the_same_count() {
        // The reference engine emits " word" tokens; counting their concatenation must give
        // back exactly the number emitted, or the tokenizer source would be wrong.
        let emitted = [" the", " Queen", " said", " nothing"];
        assert_eq!(count_reference_tokens(&emitted.concat()), 4);
    }

    #[test]
    fn estimate_rounds_up_quarter_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("éééé"), 1);
    }
}
