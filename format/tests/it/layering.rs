//! What reads passes links no runtime and no network: checked on the dependency trees cargo
//! resolves from Cargo.lock (`cargo tree -e normal`), so that a dependency added anywhere below
//! `benchpass-format`, `analysis` or `report`, or a feature turned on in one of them, is caught
//! here and not in a report's build time or in what a report reader must trust.

use std::path::Path;
use std::process::Command;

/// Packages that mean an async runtime, an HTTP or TLS stack, a command-line parser or a
/// terminal, or the crates that drive engines and serve the reference engine. A package is one
/// of them when a part of its name between `-` and `_` is the word (`hyper-util`,
/// `tokio-rustls`, `clap_builder`; not `simdutf8`).
const FORBIDDEN: &[&str] = &["tokio", "hyper", "reqwest", "axum", "rustls", "clap", "indicatif", "harness", "sim"];

/// One line of `cargo tree --prefix depth`: a package's name and its depth (0 is the root).
struct Node {
    depth: usize,
    name: String,
}

/// `cargo tree -e normal -p package` from Cargo.lock, without the network; `None` (after
/// saying so) where there is no cargo to ask.
fn normal_tree(package: &str) -> Option<Vec<Node>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let args = ["tree", "--offline", "--locked", "-e", "normal", "--prefix", "depth", "-p", package];
    let out = match Command::new(&cargo).args(args).current_dir(&workspace).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("SKIPPED: the dependency tree of {package} is not checked: no `cargo` on PATH ({e})");
            return None;
        }
        Err(e) => panic!("running {} {}: {e}", cargo.to_string_lossy(), args.join(" ")),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo {} failed:\n{stderr}", args.join(" "));
    let text = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let nodes: Vec<Node> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let digits = line.chars().take_while(char::is_ascii_digit).count();
            let depth = line[..digits].parse().unwrap_or_else(|_| panic!("a cargo tree line without its depth: {line}"));
            let name = line[digits..].split_whitespace().next().expect("a package name").to_owned();
            Node { depth, name }
        })
        .collect();
    assert!(nodes.first().is_some_and(|root| root.depth == 0 && root.name == package), "the tree of {package} starts with it:\n{text}");
    Some(nodes)
}

/// Each forbidden package in `nodes`, as `name (needed by parent)`, except what `allowed`
/// lets through (a name and its parent's name).
fn forbidden_in(nodes: &[Node], allowed: impl Fn(&str, &str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for (i, node) in nodes.iter().enumerate().skip(1) {
        if !node.name.split(['-', '_']).any(|part| FORBIDDEN.contains(&part)) {
            continue;
        }
        let parent = nodes[..i].iter().rev().find(|n| n.depth + 1 == node.depth).map_or("?", |n| n.name.as_str());
        if !allowed(&node.name, parent) {
            found.push(format!("{} (needed by {parent})", node.name));
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The format crate reads and writes files and nothing else: none of its dependencies, at any
/// depth, is a runtime, a network stack, a command-line parser or a workspace crate that drives
/// engines (so no network-related crate is built, with or without its default features).
#[test]
fn the_format_crate_links_no_runtime_network_or_command_line() {
    let Some(nodes) = normal_tree("benchpass-format") else { return };
    let found = forbidden_in(&nodes, |_, _| false);
    assert!(found.is_empty(), "benchpass-format must not depend on these:\n{}", found.join("\n"));
}

/// `analysis` and `report` read passes through the format crate, not the harness: no HTTP or
/// TLS stack, no command-line parser, no terminal, no harness and no sim. The one exception is
/// polars's own tokio (its lazy engine's thread pool, polars-io and polars-plan depend on it
/// whatever features are chosen), allowed only where a polars crate is the one that needs it.
#[test]
fn analysis_and_report_link_no_network_command_line_or_harness() {
    for package in ["analysis", "report"] {
        let Some(nodes) = normal_tree(package) else { return };
        let found = forbidden_in(&nodes, |name, parent| name == "tokio" && parent.starts_with("polars"));
        assert!(found.is_empty(), "{package} must not depend on these:\n{}", found.join("\n"));
    }
}
