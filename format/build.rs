//! Records the git commit benchpass is built from, so every pass names the code that made it.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|out| out.status.success() && !out.stdout.is_empty());
    let value = if commit.is_empty() { String::new() } else if dirty { format!("{commit}-dirty") } else { commit };
    println!("cargo:rustc-env=BENCHPASS_GIT_COMMIT={value}");
    for path in ["../.git/HEAD", "../.git/index"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
