//! `benchpass report PASS --format post`: one compact table to paste, like `llama-bench -o md`,
//! under the headline and over its footnotes, in plain Markdown (no HTML).

use crate::fixture_pass;
use crate::plain_markdown::assert_plain;

#[test]
fn the_post_is_the_headline_one_table_and_its_footnotes_in_plain_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    // fixtures/diff/b.csv: decode 94/95/96, 100/101/102, 65/66/67 tok/s and ollama's 44/45/46
    // from runs that stopped at 180 of 256 tokens; TTFT 59/60/61 ms for llama.cpp; 30-token
    // prompts; four engines on four builds, so every figure carries the engine+build note.
    let pass = fixture_pass("b.csv", "fx-b", &tmp);
    let steps = analysis::cells::summarize(&pass).unwrap();
    let post = report::post::render(&pass, &steps);
    assert_plain("the post", &post);
    let lines: Vec<&str> = post.lines().collect();
    assert!(lines[0].starts_with("**qwen**: mlx-lm 101.0 tok/s, 6 % ahead of llama.cpp (95.0 tok/s)"), "{post}");
    assert_eq!(lines[2], "| engine | version | model | test | decode tok/s | TTFT ms | prompt tok |");
    assert!(lines.contains(&"| llama.cpp | b5100 | qwen | tg256 | 95.0 ±2.0%¹ | 60.0 ±2.0% | 30 |"), "{post}");
    // The burst: a star before the number, as in the report's table.
    assert!(post.lines().any(|l| l.starts_with("| ollama | 0.5 | qwen | tg256 | 45.0 ±2.2%\\*¹ |")), "{post}");
    assert_eq!(post.lines().filter(|l| l.starts_with("| ")).count(), 5, "the header and 4 rows: {post}");
    assert!(post.contains("\n¹ `engine+build`: the weights differ"), "{post}");
    assert!(post.contains("\n\\* `short-stop`: "), "{post}");
    assert!(post.trim_end().ends_with(&format!("benchpass {} · machine m1 · pass fx-b", pass.info.benchpass.version)), "{post}");
}
