//! `benchpass demo`: the installed binary runs the demo without the repository. Its pass and
//! report land where it says, the pass reads back whole, and the report opens with its figure.

use crate::support::*;

#[test]
fn the_installed_binary_runs_the_demo_into_its_out_folder() {
    let tmp = temp_dir();
    let out = tmp.path().join("demo");
    let output = benchpass(&["demo", "--out", out.to_str().unwrap(), "--progress", "quiet"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains(&format!("pass:   {}", out.join("pass").display())), "{stdout}");
    assert!(stdout.contains(&format!("report: {}", out.join("report/report.html").display())), "{stdout}");

    let pass = harness::pass::read_pass(&out.join("pass")).unwrap();
    assert!(pass.info.pass_id.starts_with("demo-"), "{}", pass.info.pass_id);
    // The protocol in short: 1 warmup + 3 sustained, 3 + 2 + 1 prompt-matrix runs, then one
    // session of the first shipped trace.
    let of = |w: harness::pass::Workload| pass.runs.iter().filter(|r| r.workload == w).count();
    assert_eq!(of(harness::pass::Workload::Sustained), 4);
    assert_eq!(of(harness::pass::Workload::PromptMatrix), 6);
    assert_eq!(of(harness::pass::Workload::Agent), harness::workloads::agent::traces().unwrap()[0].n_turns());
    assert!(pass.runs.iter().all(|r| !r.is_error()), "every run succeeded");

    // One engine, so the headline is its sustained figure; the repeated sustained prompt was
    // served from the sim's prefix cache after the warmup, and the step says so.
    let md = std::fs::read_to_string(out.join("report/report.md")).unwrap();
    let headline = md.lines().find(|l| l.starts_with("- **")).unwrap_or_else(|| panic!("no headline: {md}"));
    assert!(headline.contains("benchpass-sim ") && headline.contains(" tok/s"), "{headline}");
    assert!(md.contains("`prefix-cached`"), "{md}");
    assert!(out.join("report/report.html").exists() && out.join("report/leaderboard.csv").exists());

    // The same pass as a post: headline, one table, footnotes, on stdout; nothing written.
    let pass_dir = out.join("pass");
    let post = benchpass(&["report", pass_dir.to_str().unwrap(), "--format", "post"]);
    assert!(post.status.success(), "{}", String::from_utf8_lossy(&post.stderr));
    let post = String::from_utf8_lossy(&post.stdout);
    assert!(post.starts_with(&headline[2..]) && post.contains("\n| engine | version | model | test | decode tok/s | TTFT ms | prompt tok |\n"), "{post}");
    assert!(post.contains("| tg128 |") && post.contains("| pp8192+tg128 |"), "{post}");
    let refused = benchpass(&["report", pass_dir.to_str().unwrap(), "--format", "post", "--out", "x"]);
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("prints to stdout"));
}
