//! `cargo xtask check-targets [--target T]...`: type-check the whole workspace (libraries,
//! binaries, tests, benches) for macOS on Apple silicon and for Windows, from Linux, so that
//! code behind `cfg(target_os = "macos")` or `cfg(windows)` is at least compiled by CI.
//!
//! rustup's toolchain has no standard library for those targets and its servers may be out of
//! reach, so this uses Debian's `rustc-web` with the matching `rust-web-src` (one source
//! package: the std source fits the compiler) and builds std for the target with
//! `-Zbuild-std`. The packages are fetched with `apt-get download` and unpacked with `dpkg -x`
//! into the per-user cache (`cross/rust-<version>/`), not installed. Build scripts that compile
//! C for the target (blake3, ring, psm) get a stand-in compiler that writes an empty object of
//! the target's format with `llvm-mc`: `check` never links. Everything lands in
//! `target/check-targets/`, apart from the main build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

const TARGETS: &[&str] = &["aarch64-apple-darwin", "x86_64-pc-windows-msvc"];

pub fn run(args: &[&str]) -> anyhow::Result<()> {
    const USAGE: &str = "usage: cargo xtask check-targets [--target TRIPLE]...";
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        anyhow::ensure!(*arg == "--target", USAGE);
        targets.push(*args.next().context(USAGE)?);
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }

    let cache = harness::installs::cache_root().context("no cache folder: set BENCHPASS_CACHE_DIR")?.join("cross");
    ensure_llvm()?;
    let toolchain = toolchain(&cache)?;
    let rustc = toolchain.join("usr/bin/rustc");
    let libs = rustc_libs(&toolchain)?;
    let ld_path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) => std::env::join_paths(std::iter::once(libs).chain(std::env::split_paths(&old)))?,
        None => libs.into_os_string(),
    };
    let root = crate::workspace_root();
    let target_dir = root.join("target/check-targets");

    let mut failed = Vec::new();
    for target in &targets {
        let cc = stand_in_cc(&cache, target)?;
        let var = target.replace('-', "_");
        step(&format!("cargo check --workspace --all-targets --target {target}"));
        let started = std::time::Instant::now();
        let status = Command::new(env!("CARGO"))
            .args(["check", "--workspace", "--all-targets", "--locked", "--keep-going", "--target", target])
            .args(["-Zbuild-std=std,panic_abort"])
            // std is built (codegen and all) from source for the target, and the proc macros
            // and build scripts for this machine: the workspace's opt-level 1 for dependencies
            // and its debug info only slow that down here.
            .args(["--config", "profile.dev.package.\"*\".opt-level=0", "--config", "profile.dev.debug=false"])
            .env("RUSTC", &rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("LD_LIBRARY_PATH", &ld_path)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env(format!("CC_{var}"), &cc)
            .env(format!("CXX_{var}"), &cc)
            .env(format!("AR_{var}"), "llvm-ar")
            .current_dir(&root)
            .status()
            .context("could not start cargo")?;
        let took = started.elapsed().as_secs();
        if status.success() {
            step(&format!("{target}: ok ({took} s)"));
        } else {
            step(&format!("{target}: FAILED ({took} s)"));
            failed.push(*target);
        }
    }
    anyhow::ensure!(failed.is_empty(), "the workspace does not type-check for {}", failed.join(", "));
    Ok(())
}

fn step(what: &str) {
    eprintln!("check-targets: {what}");
}

fn sh(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command.status().with_context(|| format!("{what}: could not start {:?}", command.get_program()))?;
    anyhow::ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}

fn output(command: &mut Command) -> anyhow::Result<String> {
    let out = command.output().with_context(|| format!("could not start {:?}", command.get_program()))?;
    anyhow::ensure!(out.status.success(), "{command:?} failed ({})", out.status);
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `llvm-mc` (the stand-in compiler's assembler) and `llvm-ar`, from Debian's `llvm`.
fn ensure_llvm() -> anyhow::Result<()> {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if have("llvm-mc") && have("llvm-ar") {
        return Ok(());
    }
    step("apt-get install llvm (llvm-mc, llvm-ar)");
    sh(Command::new("apt-get").args(["update", "-qq"]), "apt-get update")?;
    sh(Command::new("apt-get").args(["install", "-y", "-qq", "llvm"]).env("DEBIAN_FRONTEND", "noninteractive"), "apt-get install llvm")
}

/// The unpacked Debian toolchain (`usr/bin/rustc`, the host std, `usr/lib/rustlib/src/rust`),
/// fetched once per version.
fn toolchain(cache: &Path) -> anyhow::Result<PathBuf> {
    if let Some(dir) = cached_toolchain(cache)? {
        return Ok(dir);
    }
    step("apt-get update");
    sh(Command::new("apt-get").args(["update", "-qq"]), "apt-get update")?;
    // bookworm's own rustc-web is 1.85, older than what Cargo.lock needs; the security suite
    // carries the current one, and Debian images list it among their sources.
    anyhow::ensure!(
        output(Command::new("apt-cache").args(["policy", "rustc-web"]))?.contains("-security"),
        "apt offers no rustc-web from bookworm-security: add Debian's security suite (bookworm-security main) to apt's sources"
    );
    let version = candidate("rustc-web")?;
    // "1.96.0+dfsg1-1~deb12u2" → "1.96": the name of the package with librustc_driver.
    let minor: String = version.split('.').take(2).collect::<Vec<_>>().join(".");
    let std_lib = format!("libstd-rust-web-{minor}");
    let depends = output(Command::new("apt-cache").args(["show", "--no-all-versions", &format!("{std_lib}={version}")]))?;
    let llvm = depends
        .lines()
        .filter_map(|l| l.strip_prefix("Depends:"))
        .flat_map(|d| d.split(','))
        .map(|d| d.split_whitespace().next().unwrap_or(""))
        .find(|d| d.starts_with("libllvm"))
        .with_context(|| format!("{std_lib} names no libllvm"))?
        .to_owned();

    let dir = cache.join(format!("rust-{}", version.split('+').next().unwrap_or(&version)));
    let scratch = cache.join("download");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let packages = [
        format!("rustc-web={version}"),
        format!("{std_lib}={version}"),
        format!("libstd-rust-web-dev={version}"),
        format!("rust-web-src={version}"),
        llvm,
    ];
    step(&format!("apt-get download {}", packages.join(" ")));
    sh(Command::new("apt-get").arg("download").args(&packages).current_dir(&scratch), "apt-get download")?;
    let unpacked = scratch.join("root");
    for deb in std::fs::read_dir(&scratch)? {
        let deb = deb?.path();
        if deb.extension().is_some_and(|e| e == "deb") {
            sh(Command::new("dpkg").arg("-x").arg(&deb).arg(&unpacked), "dpkg -x")?;
        }
    }
    // Only library/ of the compiler's source is needed (about 70 MB of its 430).
    for src in std::fs::read_dir(unpacked.join("usr/src"))? {
        let src = src?.path();
        for unused in ["src", "compiler"] {
            let _ = std::fs::remove_dir_all(src.join(unused));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&unpacked, &dir)?;
    std::fs::remove_dir_all(&scratch)?;
    anyhow::ensure!(cached_toolchain(cache)?.is_some(), "the unpacked rustc in {} does not run", dir.display());
    Ok(dir)
}

/// The newest unpacked toolchain whose rustc runs, if any.
fn cached_toolchain(cache: &Path) -> anyhow::Result<Option<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(cache) else { return Ok(None) };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rust-")))
        .collect();
    dirs.sort();
    for dir in dirs.into_iter().rev() {
        let Ok(libs) = rustc_libs(&dir) else { continue };
        let version = Command::new(dir.join("usr/bin/rustc")).arg("--version").env("LD_LIBRARY_PATH", libs).output();
        if let Ok(out) = version {
            if out.status.success() && dir.join("usr/lib/rustlib/src/rust/library/std").is_dir() {
                step(&format!("{} ({})", String::from_utf8_lossy(&out.stdout).trim(), dir.display()));
                return Ok(Some(dir));
            }
        }
    }
    Ok(None)
}

/// The folder with librustc_driver and libLLVM (`usr/lib/<multiarch>/`).
fn rustc_libs(toolchain: &Path) -> anyhow::Result<PathBuf> {
    for dir in std::fs::read_dir(toolchain.join("usr/lib"))? {
        let dir = dir?.path();
        let has_driver = std::fs::read_dir(&dir)
            .map(|files| files.filter_map(Result::ok).any(|f| f.file_name().to_string_lossy().starts_with("librustc_driver")))
            .unwrap_or(false);
        if has_driver {
            return Ok(dir);
        }
    }
    anyhow::bail!("no librustc_driver under {}", toolchain.join("usr/lib").display())
}

/// apt's candidate version of a package.
fn candidate(package: &str) -> anyhow::Result<String> {
    let policy = output(Command::new("apt-cache").args(["policy", package]))?;
    policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate:"))
        .map(|v| v.trim().to_owned())
        .filter(|v| v != "(none)")
        .with_context(|| format!("apt knows no {package} (Debian bookworm's sources are needed)"))
}

/// A C compiler for `target` that only pretends: `cargo check` never links, so every object
/// a build script asks for is an empty one of the target's format. It answers cc's family
/// probe like clang (so it gets `-o FILE`); `-Fo` is understood in case it is asked like cl.
fn stand_in_cc(cache: &Path, target: &str) -> anyhow::Result<PathBuf> {
    let bin = cache.join("bin");
    std::fs::create_dir_all(&bin)?;
    let path = bin.join(format!("cc-{target}"));
    let script = format!(
        r#"#!/bin/sh
# `cargo xtask check-targets`: a stand-in C compiler for {target}; writes empty objects.
out=
while [ $# -gt 0 ]; do
  case $1 in
    -E) printf '"clang"\n'; exit 0 ;;
    '-?'|'/?') exit 1 ;;
    -o|-Fo|/Fo) out=$2; shift ;;
    -Fo*|/Fo*) out=${{1#???}} ;;
  esac
  shift
done
[ -n "$out" ] || exit 0
exec llvm-mc -triple {target} -filetype=obj -o "$out" </dev/null
"#
    );
    if std::fs::read_to_string(&path).ok().as_deref() != Some(&script) {
        std::fs::write(&path, &script)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(path)
}
