//! The quality workload over HTTP against the reference engine's logprobs model: what the
//! client records and `analysis::quality` computes must equal the KL worked out from the
//! model's own full distributions (docs/metrics.md, "Quality"), to 1e-9.

use sim::logprobs::{top_k, Model};

use crate::support::*;

const K: usize = 5;
const N: usize = 12;

/// The definition, by vocabulary index, from two full next-token distributions.
fn kl_by_definition(p: &[f64], q: &[f64]) -> (f64, bool) {
    let r: Vec<usize> = top_k(p, K).into_iter().map(|(t, _)| t).collect();
    let c: Vec<usize> = top_k(q, K).into_iter().map(|(t, _)| t).collect();
    let r_c = (1.0 - c.iter().map(|&u| q[u].exp()).sum::<f64>()).max(0.0);
    let missing = r.iter().filter(|t| !c.contains(t)).count();
    let spread = r_c / (missing as f64 + 1.0);
    let mut value = 0.0;
    for &t in &r {
        let q_t = if c.contains(&t) { q[t].exp() } else { spread };
        value += p[t].exp() * (p[t].exp() / q_t.max(1e-10)).ln();
    }
    let p_rest = (1.0 - r.iter().map(|&t| p[t].exp()).sum::<f64>()).max(0.0);
    if p_rest > 0.0 {
        value += p_rest * (p_rest / spread.max(1e-10)).ln();
    }
    (value, missing > 0)
}

/// One quality pass on a sim started with `sim_args`: every shipped prompt once, K
/// alternatives, N tokens each, over the completions API (whose prompt the sim's model reads
/// as sent).
fn quality_pass(tmp: &tempfile::TempDir, name: &str, sim_args: &[&str]) -> harness::pass::Pass {
    let fast = ["--decode-tps", "100000", "--prefill-tps", "10000000", "--base-latency-ms", "0"];
    let sim = Sim::start(&[&fast[..], sim_args].concat());
    let args = ["--workload", "quality", "--top-logprobs", "5", "--runs", "1", "--max-tokens", "12", "--api", "completions", "--pass-id", name];
    run_pass(&sim, &tmp.path().join(name), &args)
}

#[test]
fn over_http_identical_models_agree_and_a_perturbed_one_gives_the_true_kl() {
    let tmp = temp_dir();
    let reference = quality_pass(&tmp, "reference", &[]);
    let same = quality_pass(&tmp, "same", &[]);
    let perturbed = quality_pass(&tmp, "perturbed", &["--perturb", "1.0"]);
    let prompts = harness::workloads::quality::prompts().unwrap();
    assert!(reference.runs.iter().all(|r| r.error.is_none() && r.top_logprobs == Some(5)));
    assert_eq!(reference.runs.len(), prompts.len());

    let ref_cell = analysis::quality::reference_cell(&reference, None).unwrap();
    let rows = analysis::quality::compare(&reference, ref_cell, &[same, perturbed]);
    let identical = &rows[0];
    assert_eq!((identical.exact_match, identical.kl_max), (Some(1.0), Some(0.0)));
    assert_eq!(identical.positions, prompts.len() * N);

    // The truth: along the reference's greedy path, up to and including the first divergence.
    let (base, noisy) = (Model::BASE, Model::perturbed(1.0));
    let (mut expected, mut any_missing, mut n_identical) = (Vec::new(), false, 0);
    for prompt in prompts {
        let ref_path = base.generate(&prompt.prompt, N, K);
        let cand_path = noisy.generate(&prompt.prompt, N, K);
        let divergence = ref_path.iter().zip(&cand_path).position(|(a, b)| a.token != b.token);
        n_identical += usize::from(divergence.is_none());
        let context: Vec<usize> = ref_path.iter().map(|p| p.token).collect();
        for i in 0..=divergence.unwrap_or(N - 1) {
            let (value, missing) = kl_by_definition(&base.logprobs(&prompt.prompt, &context[..i]), &noisy.logprobs(&prompt.prompt, &context[..i]));
            any_missing |= missing;
            expected.push(value);
        }
    }
    assert!(any_missing, "the case holds a reference top-K token missing from the candidate's top-K");
    let row = &rows[1];
    assert_eq!(row.positions, expected.len());
    assert_eq!(row.exact_match, Some(n_identical as f64 / prompts.len() as f64));
    let mean = expected.iter().sum::<f64>() / expected.len() as f64;
    assert!((row.kl_mean.unwrap() - mean).abs() < 1e-9, "{:?} vs {mean}", row.kl_mean);
    assert!((row.kl_max.unwrap() - expected.iter().copied().fold(0.0, f64::max)).abs() < 1e-9);
    assert!(row.kl_mean.unwrap() > 0.0);
}
