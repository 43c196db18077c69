//! Engine counters from a Prometheus `/metrics` endpoint, scraped before and after a run: the
//! run keeps the counters that moved (llama.cpp's tokens predicted, speculative drafts proposed
//! and accepted, …), so that the engine's own count of what it did sits beside benchpass's.

use std::collections::BTreeMap;
use std::time::Duration;

/// The samples of a Prometheus text exposition: `name{labels} value`, comments skipped.
pub fn parse(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            // The value follows the last space outside the labels; a timestamp may follow it.
            let (name, rest) = match l.find('}') {
                Some(end) => (&l[..=end], &l[end + 1..]),
                None => l.split_once(' ')?,
            };
            let value = rest.split_whitespace().next()?.parse::<f64>().ok()?;
            Some((name.trim().to_owned(), value))
        })
        .collect()
}

/// Counters (`…_total`) that moved between two scrapes, with how much.
pub fn counter_deltas(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter(|(name, _)| name.split('{').next().is_some_and(|n| n.ends_with("_total")))
        .filter_map(|(name, value)| {
            let delta = value - before.get(name).copied().unwrap_or(0.0);
            (delta != 0.0).then(|| (name.clone(), delta))
        })
        .collect()
}

/// One scrape; `None` when the endpoint does not answer (it is optional everywhere), or
/// answers more than [`crate::http_body::METRICS_BYTES`] (a cut exposition would lose counters
/// and give false deltas). A pooled connection the server has already closed fails once, so a
/// failure is tried again once.
pub async fn scrape(http: &reqwest::Client, url: &str) -> Option<BTreeMap<String, f64>> {
    use crate::http_body::{read_limited, METRICS_BYTES};
    for _ in 0..2 {
        let Ok(response) = http.get(url).timeout(Duration::from_secs(5)).send().await else { continue };
        if !response.status().is_success() {
            return None;
        }
        match read_limited(response, METRICS_BYTES).await {
            Ok(body) if body.cut => return None,
            Ok(body) => return Some(parse(&body.text())),
            Err(_) => continue,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_with_and_without_labels_parse_and_only_moved_counters_are_kept() {
        let before = parse("# HELP x\nllamacpp:tokens_predicted_total 5\nllamacpp:n_tokens_max 33\nreq_total{code=\"200\"} 1 1700000000\n");
        let after = parse("llamacpp:tokens_predicted_total 69\nllamacpp:n_tokens_max 97\nreq_total{code=\"200\"} 2\nnew_total 3\n");
        assert_eq!(before["req_total{code=\"200\"}"], 1.0);
        let deltas = counter_deltas(&before, &after);
        // 69 − 5 = 64 tokens predicted; the gauge n_tokens_max is not a counter.
        assert_eq!(
            deltas.into_iter().collect::<Vec<_>>(),
            vec![
                ("llamacpp:tokens_predicted_total".to_owned(), 64.0),
                ("new_total".to_owned(), 3.0),
                ("req_total{code=\"200\"}".to_owned(), 1.0)
            ]
        );
    }
}
