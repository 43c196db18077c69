//! Quality beside speed: every cell's greedy output and next-token distributions against a
//! reference cell's, prompt by prompt and position by position (docs/quality.md).
//!
//! The runs are the `quality` workload's: each carries, per generated token, its text, logprob
//! and the server's top-K alternatives (`EventRecord::logprobs`). Runs are paired by
//! `prompt_id`; the definitions below are docs/metrics.md's, and each function says which.

use std::collections::BTreeMap;
use std::fmt;

use benchpass_format::{CellInfo, Pass, RunRecord, TokenLogprob, Workload};

/// Every q in the KL is floored here, so that a token the candidate gives no probability to
/// costs a large but finite amount.
pub const Q_FLOOR: f64 = 1e-10;

/// What a row may not be read at face value for. The codes are stable (the CSV carries them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum QualityFlag {
    /// A compared run, on either side, generated text without logprobs (or without top
    /// alternatives): its prompt counts in `exact_match` by its text alone, and gives no
    /// common prefix and no KL.
    NoLogprobs,
    /// The token texts show the two engines cut the same text into different tokens: token
    /// positions do not line up, and a KL over token texts compares unlike things.
    TokenizerDiffers,
    /// At temperature 0, repeated runs of one prompt differed, on this cell or on the reference:
    /// which run is compared changes the figures.
    Nondeterministic,
    /// The engines differ and so do the weights (or a side's weights are unhashed): the
    /// difference is engine and build together, not the engine alone.
    EngineBuild,
}

impl QualityFlag {
    pub fn as_str(self) -> &'static str {
        match self {
            QualityFlag::NoLogprobs => "no-logprobs",
            QualityFlag::TokenizerDiffers => "tokenizer-differs",
            QualityFlag::Nondeterministic => "nondeterministic",
            QualityFlag::EngineBuild => "engine+build",
        }
    }

    /// The sentence a report prints under its table.
    pub fn sentence(self) -> &'static str {
        match self {
            QualityFlag::NoLogprobs => "the server returned no logprobs (or no top alternatives) for some runs: those prompts count in exact match by their text only, with no common prefix or KL",
            QualityFlag::TokenizerDiffers => "the two engines tokenize the same text differently: positions do not line up and the KL compares tokens by their text",
            QualityFlag::Nondeterministic => "at temperature 0, repeated runs of one prompt generated different tokens, on this cell or on the reference",
            QualityFlag::EngineBuild => "the engines and the weights both differ (or the weights were not hashed): the difference is engine and build together",
        }
    }
}

impl fmt::Display for QualityFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cell against the reference: the CSV's row, figures as numbers (None where nothing was
/// there to compute them from).
#[derive(Debug, Clone, PartialEq)]
pub struct QualityRow {
    pub pass_id: String,
    pub cell: String,
    pub engine: String,
    pub engine_version: String,
    pub model: String,
    pub build_sha256: Option<String>,
    pub lane: String,
    pub ref_pass_id: String,
    pub ref_cell: String,
    pub ref_engine: String,
    pub ref_model: String,
    pub ref_build_sha256: Option<String>,
    /// This row is the reference cell itself.
    pub is_reference: bool,
    /// Prompts compared: a measured, successful run on both sides, with the same prompt text.
    pub prompts: usize,
    /// Prompts the reference ran that this cell has no comparable run of (failed, missing, or
    /// a different text under the same id).
    pub prompts_missing: usize,
    pub exact_match: Option<f64>,
    pub common_prefix_median: Option<f64>,
    pub common_prefix_mean: Option<f64>,
    /// Compared positions with a KL.
    pub positions: usize,
    pub kl_mean: Option<f64>,
    pub kl_p90: Option<f64>,
    pub kl_max: Option<f64>,
    pub self_agreement: Option<f64>,
    /// How many prompts the cell ran more than once (what `self_agreement` is over).
    pub repeated_prompts: usize,
    pub flags: Vec<QualityFlag>,
}

impl QualityRow {
    /// The flags `;`-joined, as the CSV writes them.
    pub fn flags_joined(&self) -> String {
        self.flags.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(";")
    }
}

/// Why a comparison could not be made at all (bad input, not a statistical caveat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QualityError {
    NoSuchCell { pass_id: String, cell: String, cells: Vec<String> },
    /// `--reference PASS` without a cell, and the pass has several cells with quality runs.
    WhichCell { pass_id: String, cells: Vec<String> },
    NoQualityRuns { pass_id: String, cell: Option<String> },
}

impl fmt::Display for QualityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QualityError::NoSuchCell { pass_id, cell, cells } => {
                write!(f, "pass {pass_id} has no cell `{cell}` (its cells: {})", cells.join(", "))
            }
            QualityError::WhichCell { pass_id, cells } => write!(
                f,
                "pass {pass_id} has quality runs in several cells ({}): name the reference as PASS:CELL",
                cells.join(", ")
            ),
            QualityError::NoQualityRuns { pass_id, cell: Some(cell) } => {
                write!(f, "cell `{cell}` of pass {pass_id} has no measured quality runs (run it with --workload quality)")
            }
            QualityError::NoQualityRuns { pass_id, cell: None } => {
                write!(f, "pass {pass_id} has no measured quality runs (run it with --workload quality)")
            }
        }
    }
}

impl std::error::Error for QualityError {}

/// The reference cell of `pass`: `cell` when given, else the one cell with measured quality
/// runs.
pub fn reference_cell<'a>(pass: &'a Pass, cell: Option<&str>) -> Result<&'a CellInfo, QualityError> {
    let pass_id = || pass.info.pass_id.clone();
    match cell {
        Some(id) => {
            let info = pass.cell(id).ok_or_else(|| QualityError::NoSuchCell {
                pass_id: pass_id(),
                cell: id.to_owned(),
                cells: pass.info.cells.iter().map(|c| c.id.clone()).collect(),
            })?;
            if quality_runs(pass, id).next().is_none() {
                return Err(QualityError::NoQualityRuns { pass_id: pass_id(), cell: Some(id.to_owned()) });
            }
            Ok(info)
        }
        None => {
            let with_runs: Vec<&CellInfo> = pass.info.cells.iter().filter(|c| quality_runs(pass, &c.id).next().is_some()).collect();
            match with_runs[..] {
                [one] => Ok(one),
                [] => Err(QualityError::NoQualityRuns { pass_id: pass_id(), cell: None }),
                _ => Err(QualityError::WhichCell { pass_id: pass_id(), cells: with_runs.iter().map(|c| c.id.clone()).collect() }),
            }
        }
    }
}

/// The measured quality runs of a cell, successful or not, in file order.
fn quality_runs<'a>(pass: &'a Pass, cell: &'a str) -> impl Iterator<Item = &'a RunRecord> + 'a {
    crate::runs::counted(pass).filter(move |r| r.cell == cell && r.workload == Workload::Quality && !r.warmup && r.prompt_id.is_some())
}

/// Every cell with measured quality runs in `passes`, each against the reference cell
/// `reference` of `ref_pass`, in pass then cell order.
pub fn compare(ref_pass: &Pass, reference: &CellInfo, passes: &[Pass]) -> Vec<QualityRow> {
    let ref_runs = CellRuns::of(ref_pass, &reference.id);
    let mut rows = Vec::new();
    for pass in passes {
        for cell in &pass.info.cells {
            let runs = CellRuns::of(pass, &cell.id);
            if runs.by_prompt.is_empty() {
                continue;
            }
            rows.push(row(pass, cell, &runs, ref_pass, reference, &ref_runs));
        }
    }
    rows
}

/// One cell's successful measured quality runs, by prompt id, in file order.
struct CellRuns<'a> {
    by_prompt: BTreeMap<&'a str, Vec<&'a RunRecord>>,
}

impl<'a> CellRuns<'a> {
    fn of(pass: &'a Pass, cell: &'a str) -> CellRuns<'a> {
        let mut by_prompt: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
        for run in quality_runs(pass, cell).filter(|r| r.error.is_none()) {
            by_prompt.entry(run.prompt_id.as_deref().unwrap_or_default()).or_default().push(run);
        }
        CellRuns { by_prompt }
    }

    /// The run a prompt is compared by: its first (lowest repetition, then file order).
    fn first(&self, prompt: &str) -> Option<&'a RunRecord> {
        self.by_prompt.get(prompt)?.iter().min_by_key(|r| r.rep).copied()
    }

    /// `self_agreement`: of the prompts run more than once, the fraction whose runs all
    /// generated the same sequence; with how many prompts that is over.
    fn self_agreement(&self) -> (Option<f64>, usize) {
        let repeated: Vec<&Vec<&RunRecord>> = self.by_prompt.values().filter(|runs| runs.len() >= 2).collect();
        if repeated.is_empty() {
            return (None, 0);
        }
        let agreeing = repeated.iter().filter(|runs| runs.iter().all(|r| generated(r) == generated(runs[0]))).count();
        (Some(agreeing as f64 / repeated.len() as f64), repeated.len())
    }
}

/// What a run generated, as compared for identity: its token texts where it carries logprobs,
/// else its whole text as one piece.
#[derive(Debug, PartialEq)]
enum Generated<'a> {
    Tokens(Vec<&'a str>),
    Text(String),
}

fn generated(run: &RunRecord) -> Generated<'_> {
    let tokens = tokens_of(run);
    if tokens.is_empty() {
        Generated::Text(text_of(run))
    } else {
        Generated::Tokens(tokens.iter().map(|t| t.token.as_str()).collect())
    }
}

/// The run's generated tokens with their logprobs, in order, over all its events.
pub fn tokens_of(run: &RunRecord) -> Vec<&TokenLogprob> {
    run.events.iter().flat_map(|e| &e.logprobs).collect()
}

fn text_of(run: &RunRecord) -> String {
    run.events.iter().map(|e| format!("{}{}{}", e.reasoning, e.text, e.tool_args)).collect()
}

/// What one prompt's pair of runs gives.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptComparison {
    pub identical: bool,
    /// None where a side has no logprobs.
    pub common_prefix: Option<usize>,
    /// The KL at each compared position, in order.
    pub kl: Vec<f64>,
    pub no_logprobs: bool,
    pub tokenizer_differs: bool,
}

/// One prompt: the reference's tokens against the candidate's. `common_prefix` is the number of
/// tokens before the first differing one; the compared positions are every position up to and
/// including the first divergence (both engines saw the same context there), so positions
/// `0 ..= common_prefix`, less any past the end of either sequence.
pub fn compare_tokens(reference: &[&TokenLogprob], candidate: &[&TokenLogprob]) -> PromptComparison {
    let common_prefix = reference.iter().zip(candidate).take_while(|(r, c)| r.token == c.token).count();
    let identical = common_prefix == reference.len() && common_prefix == reference.len().max(candidate.len());
    let last = common_prefix.min(reference.len().saturating_sub(1)).min(candidate.len().saturating_sub(1));
    let n_compared = if reference.is_empty() || candidate.is_empty() { 0 } else { last + 1 };
    let mut no_logprobs = false;
    let mut kl_values = Vec::new();
    for i in 0..n_compared {
        match kl(reference[i], candidate[i]) {
            Some(value) => kl_values.push(value),
            None => no_logprobs = true,
        }
    }
    let tokenizer_differs = !identical && common_prefix < reference.len().min(candidate.len()) && {
        // The same text cut differently: at the first differing tokens, the texts that follow
        // agree past the shorter of the two tokens (" hel" + "lo" against " hello").
        let rest = |tokens: &[&TokenLogprob]| tokens[common_prefix..].iter().map(|t| t.token.as_str()).collect::<String>();
        let (r, c) = (rest(reference), rest(candidate));
        let shared = r.chars().zip(c.chars()).take_while(|(a, b)| a == b).count();
        let shorter = reference[common_prefix].token.chars().count().min(candidate[common_prefix].token.chars().count());
        shared > shorter
    };
    PromptComparison { identical, common_prefix: Some(common_prefix), kl: kl_values, no_logprobs, tokenizer_differs }
}

/// The KL at one compared position (docs/metrics.md, "Quality"), from the two servers' top-K
/// lists. With R the reference's top-K tokens, p_t = exp(reference logprob of t), C the
/// candidate's top-K tokens, q_t = exp(candidate logprob of t) for t in R ∩ C,
/// r_c = max(0, 1 − Σ_{u∈C} exp(candidate logprob of u)), m = |R \ C|; for t in R \ C,
/// q_t = r_c / (m + 1); p_rest = max(0, 1 − Σ_{t∈R} p_t); q_rest = r_c / (m + 1);
/// KL = Σ_{t∈R} p_t·ln(p_t/q_t) + p_rest·ln(p_rest/q_rest), 0·ln 0 = 0, every q floored at
/// [`Q_FLOOR`]. Tokens are compared by their text; a text listed twice in one top-K (two ids
/// that print the same) is one token with both probabilities. None where either side has no
/// top alternatives.
pub fn kl(reference: &TokenLogprob, candidate: &TokenLogprob) -> Option<f64> {
    let r = merged_top(reference)?;
    let c = merged_top(candidate)?;
    let r_c = (1.0 - c.iter().map(|(_, q)| q).sum::<f64>()).max(0.0);
    let m = r.iter().filter(|(t, _)| !c.iter().any(|(u, _)| u == t)).count();
    let q_spread = r_c / (m as f64 + 1.0);
    let mut kl = 0.0;
    for (t, p) in &r {
        let q = c.iter().find(|(u, _)| u == t).map_or(q_spread, |(_, q)| *q);
        kl += term(*p, q);
    }
    let p_rest = (1.0 - r.iter().map(|(_, p)| p).sum::<f64>()).max(0.0);
    kl += term(p_rest, q_spread);
    Some(kl)
}

/// p·ln(p/q) with 0·ln 0 = 0 and q floored.
fn term(p: f64, q: f64) -> f64 {
    if p <= 0.0 {
        0.0
    } else {
        p * (p / q.max(Q_FLOOR)).ln()
    }
}

/// A token's top-K as (text, probability), a text listed twice merged into one entry; None when
/// the server gave no alternatives.
fn merged_top(token: &TokenLogprob) -> Option<Vec<(&str, f64)>> {
    if token.top.is_empty() {
        return None;
    }
    let mut merged: Vec<(&str, f64)> = Vec::with_capacity(token.top.len());
    for alt in &token.top {
        let p = alt.logprob.exp();
        match merged.iter_mut().find(|(t, _)| *t == alt.token) {
            Some((_, sum)) => *sum += p,
            None => merged.push((&alt.token, p)),
        }
    }
    Some(merged)
}

/// The 90th percentile by nearest rank: the ⌈0.9·n⌉-th smallest value.
pub fn p90(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (sorted.len() * 9).div_ceil(10);
    sorted.get(rank.checked_sub(1)?).copied()
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn row(pass: &Pass, cell: &CellInfo, runs: &CellRuns<'_>, ref_pass: &Pass, reference: &CellInfo, ref_runs: &CellRuns<'_>) -> QualityRow {
    let mut flags = Vec::new();
    let mut n_prompts = 0;
    let mut n_missing = 0;
    let mut n_identical = 0;
    let mut prefixes = Vec::new();
    let mut kls = Vec::new();
    for prompt in ref_runs.by_prompt.keys() {
        let (Some(r), Some(c)) = (ref_runs.first(prompt), runs.first(prompt)) else {
            n_missing += 1;
            continue;
        };
        // The same id over a changed text is a different prompt: not comparable.
        if let (Some(a), Some(b)) = (&r.prompt_sha256, &c.prompt_sha256) {
            if a != b {
                n_missing += 1;
                continue;
            }
        }
        n_prompts += 1;
        let (rt, ct) = (tokens_of(r), tokens_of(c));
        let generated_any = |run: &RunRecord, tokens: &[&TokenLogprob]| tokens.is_empty() && !text_of(run).is_empty();
        if generated_any(r, &rt) || generated_any(c, &ct) || (rt.is_empty() != ct.is_empty()) {
            flags.push(QualityFlag::NoLogprobs);
            n_identical += usize::from(text_of(r) == text_of(c));
            continue;
        }
        let comparison = compare_tokens(&rt, &ct);
        n_identical += usize::from(comparison.identical);
        prefixes.extend(comparison.common_prefix.map(|p| p as f64));
        kls.extend(&comparison.kl);
        if comparison.no_logprobs {
            flags.push(QualityFlag::NoLogprobs);
        }
        if comparison.tokenizer_differs {
            flags.push(QualityFlag::TokenizerDiffers);
        }
    }
    let (self_agreement, repeated_prompts) = runs.self_agreement();
    let (ref_agreement, _) = ref_runs.self_agreement();
    if self_agreement.is_some_and(|a| a < 1.0) || ref_agreement.is_some_and(|a| a < 1.0) {
        flags.push(QualityFlag::Nondeterministic);
    }
    let builds_differ = match (&cell.build.sha256, &reference.build.sha256) {
        (Some(a), Some(b)) => a != b,
        _ => true,
    };
    if cell.engine.name != reference.engine.name && builds_differ {
        flags.push(QualityFlag::EngineBuild);
    }
    flags.sort();
    flags.dedup();
    QualityRow {
        pass_id: pass.info.pass_id.clone(),
        cell: cell.id.clone(),
        engine: cell.engine.name.clone(),
        engine_version: cell.engine.version.clone(),
        model: cell.model.clone(),
        build_sha256: cell.build.sha256.clone(),
        lane: cell.lane.clone(),
        ref_pass_id: ref_pass.info.pass_id.clone(),
        ref_cell: reference.id.clone(),
        ref_engine: reference.engine.name.clone(),
        ref_model: reference.model.clone(),
        ref_build_sha256: reference.build.sha256.clone(),
        is_reference: pass.info.pass_id == ref_pass.info.pass_id && cell.id == reference.id,
        prompts: n_prompts,
        prompts_missing: n_missing,
        exact_match: (n_prompts > 0).then(|| n_identical as f64 / n_prompts as f64),
        common_prefix_median: crate::summary::median(&prefixes),
        common_prefix_mean: mean(&prefixes),
        positions: kls.len(),
        kl_mean: mean(&kls),
        kl_p90: p90(&kls),
        kl_max: kls.iter().copied().reduce(f64::max),
        self_agreement,
        repeated_prompts,
        flags,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchpass_format::{EventRecord, TopLogprob};

    fn top(pairs: &[(&str, f64)]) -> Vec<TopLogprob> {
        pairs.iter().map(|&(t, p)| TopLogprob { token: t.into(), logprob: p.ln(), bytes: None }).collect()
    }

    /// A generated token `text` whose top-K is `pairs` of (token, probability).
    fn tok(text: &str, pairs: &[(&str, f64)]) -> TokenLogprob {
        let logprob = pairs.iter().find(|(t, _)| *t == text).map_or(-5.0, |(_, p)| p.ln());
        TokenLogprob { token: text.into(), bytes: None, logprob, top: top(pairs) }
    }

    #[test]
    fn kl_with_a_reference_token_missing_from_the_candidates_top_k_worked_by_hand() {
        // R = {a 0.5, b 0.3}, C = {a 0.4, c 0.4}: b is not in C.
        // r_c = 1 − 0.8 = 0.2, m = 1, so q_b = q_rest = 0.2 / 2 = 0.1; p_rest = 1 − 0.8 = 0.2.
        // KL = 0.5 ln(0.5/0.4) + 0.3 ln(0.3/0.1) + 0.2 ln(0.2/0.1)
        //    = 0.5 ln 1.25 + 0.3 ln 3 + 0.2 ln 2 = 0.111571776 + 0.329583687 + 0.138629436
        //    = 0.579784898.
        let r = tok("a", &[("a", 0.5), ("b", 0.3)]);
        let c = tok("a", &[("a", 0.4), ("c", 0.4)]);
        let value = kl(&r, &c).unwrap();
        assert!((value - 0.579_784_898).abs() < 1e-9, "{value}");
        assert!((value - (0.5 * 1.25f64.ln() + 0.3 * 3f64.ln() + 0.2 * 2f64.ln())).abs() < 1e-15);
    }

    #[test]
    fn kl_is_zero_for_identical_lists_and_floored_where_the_candidate_leaves_nothing() {
        let same = tok("a", &[("a", 0.6), ("b", 0.3)]);
        // p_rest = 0.1 and q_rest = r_c / (0 + 1) = 0.1: every term is p ln 1.
        assert!(kl(&same, &same).unwrap().abs() < 1e-15);
        // C = {a 0.7, c 0.3} holds all the mass: r_c = 0, so q_b = 0, floored at 1e-10; p_rest = 0.
        // KL = 0.6 ln(0.6/0.7) + 0.4 ln(0.4/1e-10) = −0.092490408 + 0.4 · 22.109560203
        //    = 8.751333673.
        let r = tok("a", &[("a", 0.6), ("b", 0.4)]);
        let c = tok("a", &[("a", 0.7), ("c", 0.3)]);
        let value = kl(&r, &c).unwrap();
        assert!((value - 8.751_333_673).abs() < 1e-8, "{value}");
        // No alternatives on a side: no KL.
        assert_eq!(kl(&TokenLogprob { top: vec![], ..r.clone() }, &c), None);
    }

    #[test]
    fn a_text_listed_twice_in_a_top_k_is_one_token() {
        // The candidate lists "a" twice (0.25 + 0.25): as one "a" of 0.5, it matches R exactly.
        let r = tok("a", &[("a", 0.5), ("b", 0.3)]);
        let c = tok("a", &[("a", 0.25), ("a", 0.25), ("b", 0.3)]);
        assert!(kl(&r, &c).unwrap().abs() < 1e-15);
    }

    #[test]
    fn compared_positions_run_up_to_and_including_the_first_divergence() {
        let t = |s: &str| tok(s, &[(s, 0.9)]);
        let (x, y, z, w) = (t(" x"), t(" y"), t(" z"), t(" w"));
        let cmp = compare_tokens(&[&x, &y, &z, &x], &[&x, &y, &w, &x]);
        assert_eq!((cmp.identical, cmp.common_prefix, cmp.kl.len()), (false, Some(2), 3));
        // Identical: every position, no divergence.
        let cmp = compare_tokens(&[&x, &y], &[&x, &y]);
        assert_eq!((cmp.identical, cmp.common_prefix, cmp.kl.len()), (true, Some(2), 2));
        // One stops early (EOS): the positions both have, and not identical.
        let cmp = compare_tokens(&[&x, &y, &z], &[&x, &y]);
        assert_eq!((cmp.identical, cmp.common_prefix, cmp.kl.len()), (false, Some(2), 2));
        let cmp = compare_tokens(&[&x], &[&x, &y]);
        assert_eq!((cmp.identical, cmp.common_prefix, cmp.kl.len()), (false, Some(1), 1));
    }

    #[test]
    fn the_same_text_cut_into_other_tokens_is_a_tokenizer_difference_and_another_word_is_not() {
        let t = |s: &str| tok(s, &[(s, 0.9)]);
        let (hel, lo, hello, world, the, then, cat, i) = (t(" hel"), t("lo"), t(" hello"), t(" world"), t(" the"), t(" then"), t(" cat"), t(" I"));
        assert!(compare_tokens(&[&hel, &lo, &world], &[&hello, &world]).tokenizer_differs);
        assert!(!compare_tokens(&[&the, &cat], &[&then, &i]).tokenizer_differs, "\" the\" is a prefix of \" then\", but the text goes on differently");
        assert!(!compare_tokens(&[&the, &cat], &[&the, &cat]).tokenizer_differs);
    }

    #[test]
    fn the_nearest_rank_p90() {
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(p90(&ten), Some(9.0));
        let twenty: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(p90(&twenty), Some(18.0));
        assert_eq!(p90(&[0.5]), Some(0.5));
        assert_eq!(p90(&[]), None);
    }

    // ----- Whole passes, built in memory.

    fn cell(id: &str, engine: &str, build: Option<&str>) -> CellInfo {
        let engine = benchpass_format::EngineInfo { name: engine.into(), version: "1".into(), ..Default::default() };
        CellInfo { build: benchpass_format::BuildInfo { sha256: build.map(Into::into), files: vec![] }, ..CellInfo::new(id, engine, "m") }
    }

    fn run(cell: &str, prompt: &str, rep: u32, tokens: Vec<TokenLogprob>) -> RunRecord {
        let mut run = RunRecord::unmeasured(cell, Workload::Quality, 0, rep, false, 128);
        run.error = None;
        run.prompt_id = Some(prompt.into());
        run.prompt_sha256 = Some(format!("sha-of-{prompt}"));
        run.events = tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| EventRecord { t_ns: i as u64, bytes: 10, text: t.token.clone(), logprobs: vec![t], ..Default::default() })
            .collect();
        run
    }

    fn pass(id: &str, cells: Vec<CellInfo>, runs: Vec<RunRecord>) -> Pass {
        Pass { dir: id.into(), ..Pass::in_memory(benchpass_format::PassInfo::synthetic(id, "m", cells), runs) }
    }

    #[test]
    fn a_cell_against_the_reference_worked_by_hand() {
        let same = |s: &str| tok(s, &[(s, 0.6), (" b", 0.3)]);
        // Prompt p1: reference x y z, candidate x y w. Positions 0 and 1 have identical lists
        // (KL 0); position 2 is the first divergence: the reference's list {z 0.5, b 0.3}
        // against the candidate's {z 0.4, c 0.4}, the hand-worked 0.579784898 above.
        // Prompt p2: identical u v s, every list identical (KL 0).
        let r_p1 = vec![same(" x"), same(" y"), tok(" z", &[(" z", 0.5), (" b", 0.3)])];
        let c_p1 = vec![same(" x"), same(" y"), tok(" w", &[(" z", 0.4), (" c", 0.4)])];
        let p2 = vec![same(" u"), same(" v"), same(" s")];
        let reference = pass(
            "ref",
            vec![cell("r", "llama.cpp", Some("f16"))],
            vec![
                run("r", "p1", 0, r_p1.clone()),
                run("r", "p2", 0, p2.clone()),
                // p2 again, the same: the reference agrees with itself.
                run("r", "p2", 1, p2.clone()),
            ],
        );
        let mut failed = run("c", "p3", 0, vec![]);
        failed.error = Some(benchpass_format::RunError { class: "http".into(), message: "500".into() });
        let candidate = pass(
            "cand",
            vec![cell("c", "mlx-lm", Some("q8"))],
            vec![
                run("c", "p1", 0, c_p1),
                run("c", "p2", 0, p2.clone()),
                // p2 again, but different from position 1 on: the candidate disagrees with itself.
                run("c", "p2", 1, vec![same(" u"), same(" q")]),
                failed,
            ],
        );
        let ref_cell = reference_cell(&reference, None).unwrap();
        let rows = compare(&reference, ref_cell, &[candidate]);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!((row.prompts, row.prompts_missing), (2, 0));
        // p1 differs, p2 is identical (its first run, rep 0, is the one compared).
        assert_eq!(row.exact_match, Some(0.5));
        // Common prefixes 2 (p1) and 3 (p2).
        assert_eq!((row.common_prefix_median, row.common_prefix_mean), (Some(2.5), Some(2.5)));
        // p1: positions 0, 1, 2; p2: positions 0, 1, 2 (no divergence).
        assert_eq!(row.positions, 6);
        let k = 0.5 * 1.25f64.ln() + 0.3 * 3f64.ln() + 0.2 * 2f64.ln();
        assert!((row.kl_mean.unwrap() - k / 6.0).abs() < 1e-12);
        // n = 6: the nearest rank is ⌈5.4⌉ = 6, the largest.
        assert!((row.kl_p90.unwrap() - k).abs() < 1e-12);
        assert!((row.kl_max.unwrap() - k).abs() < 1e-12);
        // One repeated prompt (p2), whose two runs differ.
        assert_eq!((row.self_agreement, row.repeated_prompts), (Some(0.0), 1));
        assert_eq!(row.flags, vec![QualityFlag::Nondeterministic, QualityFlag::EngineBuild]);
        assert_eq!(row.flags_joined(), "nondeterministic;engine+build");
        assert!(!row.is_reference);

        // The reference against itself: everything identical, KL 0, and it agrees with itself.
        let rows = compare(&reference, ref_cell, std::slice::from_ref(&reference));
        let own = &rows[0];
        assert!(own.is_reference);
        assert_eq!((own.exact_match, own.positions, own.kl_max, own.self_agreement), (Some(1.0), 6, Some(0.0), Some(1.0)));
        assert!(own.flags.is_empty());
    }

    #[test]
    fn runs_without_logprobs_count_by_text_and_a_changed_prompt_text_is_not_compared() {
        let same = |s: &str| tok(s, &[(s, 0.6)]);
        let reference = pass("ref", vec![cell("r", "e", Some("b"))], vec![run("r", "p1", 0, vec![same(" x")]), run("r", "p2", 0, vec![same(" y")])]);
        let mut bare = run("c", "p1", 0, vec![same(" x")]);
        bare.events[0].logprobs.clear();
        let mut changed = run("c", "p2", 0, vec![same(" y")]);
        changed.prompt_sha256 = Some("another text".into());
        let candidate = pass("cand", vec![cell("c", "e", Some("b"))], vec![bare, changed]);
        let rows = compare(&reference, reference_cell(&reference, Some("r")).unwrap(), &[candidate]);
        let row = &rows[0];
        // p1 compared by its text (" x" on both sides), p2 left out.
        assert_eq!((row.prompts, row.prompts_missing, row.exact_match), (1, 1, Some(1.0)));
        assert_eq!((row.positions, row.kl_mean, row.common_prefix_median), (0, None, None));
        assert_eq!(row.flags, vec![QualityFlag::NoLogprobs]);
    }

    #[test]
    fn the_reference_cell_is_named_or_the_only_one_with_quality_runs() {
        let two = pass("p", vec![cell("a", "e", None), cell("b", "e", None)], vec![run("a", "x", 0, vec![]), run("b", "x", 0, vec![])]);
        assert!(matches!(reference_cell(&two, None), Err(QualityError::WhichCell { .. })));
        assert_eq!(reference_cell(&two, Some("b")).unwrap().id, "b");
        let err = reference_cell(&two, Some("c")).unwrap_err();
        assert_eq!(err.to_string(), "pass p has no cell `c` (its cells: a, b)");
        let none = pass("q", vec![cell("a", "e", None)], vec![]);
        assert!(matches!(reference_cell(&none, None), Err(QualityError::NoQualityRuns { .. })));
    }

    // ----- Against the sim's model: the truth is its own distributions.

    use sim::logprobs::{top_k, vocab, Model, Position};

    /// A sim run as the server would record it: each position's token and top-K by text.
    fn sim_run(cell: &str, prompt_id: &str, positions: &[Position]) -> RunRecord {
        let words = vocab();
        let tokens = positions
            .iter()
            .map(|p| TokenLogprob {
                token: words[p.token].clone(),
                bytes: None,
                logprob: p.logprob,
                top: p.top.iter().map(|&(t, lp)| TopLogprob { token: words[t].clone(), logprob: lp, bytes: None }).collect(),
            })
            .collect();
        run(cell, prompt_id, 0, tokens)
    }

    /// The definition again, by vocabulary index, straight from the two full distributions.
    fn kl_by_definition(p: &[f64], q: &[f64], k: usize) -> (f64, usize) {
        let r: Vec<usize> = top_k(p, k).into_iter().map(|(t, _)| t).collect();
        let c: Vec<usize> = top_k(q, k).into_iter().map(|(t, _)| t).collect();
        let r_c = (1.0 - c.iter().map(|&u| q[u].exp()).sum::<f64>()).max(0.0);
        let missing = r.iter().filter(|t| !c.contains(t)).count();
        let spread = r_c / (missing as f64 + 1.0);
        let mut value = 0.0;
        for &t in &r {
            let qt = if c.contains(&t) { q[t].exp() } else { spread };
            value += p[t].exp() * (p[t].exp() / qt.max(1e-10)).ln();
        }
        let p_rest = (1.0 - r.iter().map(|&t| p[t].exp()).sum::<f64>()).max(0.0);
        if p_rest > 0.0 {
            value += p_rest * (p_rest / spread.max(1e-10)).ln();
        }
        (value, missing)
    }

    #[test]
    fn the_sims_models_give_kl_zero_when_identical_and_the_true_definition_when_perturbed() {
        const K: usize = 5;
        const N: usize = 32;
        let prompts = ["Continue: the rabbit", "Write a function", "What is 2 + 2?"];
        let base = Model::BASE;
        let perturbed = Model::perturbed(1.0);
        let runs_of = |cell: &str, model: Model| -> Vec<RunRecord> { prompts.iter().map(|p| sim_run(cell, p, &model.generate(p, N, K))).collect() };
        let reference = pass("ref", vec![cell("base", "sim", Some("b"))], runs_of("base", base));
        let same = pass("same", vec![cell("base2", "sim", Some("b"))], runs_of("base2", base));
        let other = pass("perturbed", vec![cell("s1", "sim", Some("b"))], runs_of("s1", perturbed));
        let ref_cell = reference_cell(&reference, None).unwrap();
        let rows = compare(&reference, ref_cell, &[same, other]);

        let identical = &rows[0];
        assert_eq!((identical.exact_match, identical.kl_max, identical.positions), (Some(1.0), Some(0.0), prompts.len() * N));

        // The expected figures, from the models' own distributions along the reference's path.
        let mut expected = Vec::new();
        let mut any_missing = false;
        let mut n_identical = 0;
        for prompt in prompts {
            let ref_path = base.generate(prompt, N, K);
            let cand_path = perturbed.generate(prompt, N, K);
            let divergence = ref_path.iter().zip(&cand_path).position(|(a, b)| a.token != b.token);
            n_identical += usize::from(divergence.is_none());
            let last = divergence.unwrap_or(N - 1);
            let context: Vec<usize> = ref_path.iter().map(|p| p.token).collect();
            for i in 0..=last {
                let (value, missing) = kl_by_definition(&base.logprobs(prompt, &context[..i]), &perturbed.logprobs(prompt, &context[..i]), K);
                any_missing |= missing > 0;
                expected.push(value);
            }
        }
        assert!(any_missing, "the case must have a reference top-K token missing from the candidate's top-K");
        let row = &rows[1];
        assert_eq!(row.positions, expected.len());
        assert_eq!(row.exact_match, Some(n_identical as f64 / prompts.len() as f64));
        assert!(row.exact_match < Some(1.0), "a perturbation of 1.0 changes some greedy path");
        let mean = expected.iter().sum::<f64>() / expected.len() as f64;
        assert!((row.kl_mean.unwrap() - mean).abs() < 1e-9, "{:?} vs {mean}", row.kl_mean);
        assert!((row.kl_max.unwrap() - expected.iter().copied().fold(0.0, f64::max)).abs() < 1e-9);
        assert!(row.kl_mean.unwrap() > 0.0);
    }
}
