//! `benchpass leaderboard … --out lb.md`: a ranking per figure and way of measuring, not the
//! long CSV as a table. Worked from fixtures/diff/a.csv and b.csv (sustained, one machine):
//! decode 50/100/60/40 tok/s in A (llama.cpp, mlx-lm, vllm, ollama), 95/101/66/45 in B, B's
//! ollama from runs that stopped at 180 of 256 tokens; TTFT 120 ms everywhere but B's
//! llama.cpp, 60 ms.

use crate::support::*;

#[test]
fn the_markdown_leaderboard_ranks_rows_measured_alike_best_first() {
    let tmp = temp_dir();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/diff");
    for csv in ["a.csv", "b.csv"] {
        assert!(import_csv(&root.join(csv), tmp.path()).status.success());
    }
    let out = tmp.path().join("lb.md");
    let a = tmp.path().join("fx-a");
    let b = tmp.path().join("fx-b");
    let run = benchpass(&["leaderboard", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let md = std::fs::read_to_string(&out).unwrap();
    let section = |title: &str| md.split(&format!("## {title}")).nth(1).unwrap_or_else(|| panic!("no {title}: {md}")).split("\n## ").next().unwrap().to_owned();
    let places = |section: &str| -> Vec<(String, String, String)> {
        section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
                (cells[0].to_owned(), cells[1].to_owned(), cells[7].to_owned())
            })
            .collect()
    };
    let decode = section("decode\\_tps (tok/s) · sustained · qwen");
    assert!(decode.contains("machine m1") && decode.contains("max_tokens 256"), "the key under the title: {decode}");
    let expected: Vec<(String, String, String)> = [
        ("1", "mlx-lm", "fx-b"),
        ("2", "mlx-lm", "fx-a"),
        ("3", "llama.cpp", "fx-b"),
        ("4", "vllm", "fx-b"),
        ("5", "vllm", "fx-a"),
        ("6", "llama.cpp", "fx-a"),
        ("7", "ollama", "fx-a"),
        // A burst is listed, never ranked.
        ("–", "ollama", "fx-b"),
    ]
    .iter()
    .map(|(p, e, pass)| ((*p).to_owned(), (*e).to_owned(), (*pass).to_owned()))
    .collect();
    assert_eq!(places(&decode), expected);
    // Lower is better in ms, and equal figures share a place.
    let ttft = places(&section("ttft\\_ms (ms) · sustained · qwen"));
    assert_eq!(ttft[0], ("1".to_owned(), "llama.cpp".to_owned(), "fx-b".to_owned()));
    // Every other at 120 ms shares place 2; ollama's 199/200/201 (A) and 198/200/202 (B),
    // both 200 ms: a latency is ranked whatever the decode runs did, so B's ollama is placed too.
    assert_eq!(ttft.len(), 8, "{ttft:?}");
    assert!(ttft[1..6].iter().all(|(place, _, _)| place == "2"), "{ttft:?}");
    assert!(ttft[6..].iter().all(|(place, engine, _)| place == "7" && engine == "ollama"), "{ttft:?}");
    assert!(!md.contains("prompt\\_tokens"), "a prompt's size is not ranked");
}
