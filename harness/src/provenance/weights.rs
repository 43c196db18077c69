//! SHA-256 of weight files: streamed (models are tens of gigabytes), spread over all cores
//! across files, and cached by path, size and modification time so that an unchanged model is
//! not read again.
//!
//! The folded build hash is the SHA-256 of the `sha256sum`-style listing of every file,
//! sorted by relative path in byte order: `"<hex sha256>  <relative path>\n"` per file. Anyone
//! can recompute it from inside the weights folder (docs/raw-format.md explains each part):
//! `find -L . ! -path '*/.*' -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 sha256sum -- | sha256sum`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use benchpass_format::hex;

use crate::pass::{BuildInfo, WeightFile};

/// Called with the number of bytes just read; the total is known up front.
pub trait HashProgress: Sync {
    fn start(&self, total_bytes: u64, n_files: usize);
    fn advance(&self, bytes: u64);
    fn finish(&self);
}

impl HashProgress for () {
    fn start(&self, _: u64, _: usize) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Hashes of files seen before, keyed by absolute path and valid while size and mtime match.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct HashCache {
    #[serde(skip)]
    path: Option<PathBuf>,
    entries: BTreeMap<String, CacheEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct CacheEntry {
    bytes: u64,
    mtime_ns: u128,
    sha256: String,
}

impl HashCache {
    /// Loads the cache at `path`; a missing or unreadable cache is an empty one (it is only a cache).
    pub fn load(path: &Path) -> HashCache {
        let mut cache: HashCache = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        cache.path = Some(path.to_owned());
        cache
    }

    /// `$BENCHPASS_CACHE_DIR`, else `$XDG_CACHE_HOME/benchpass`, else `~/.cache/benchpass`
    /// (on Windows `~` is `%USERPROFILE%`).
    pub fn default_path() -> Option<PathBuf> {
        let dir = std::env::var_os("BENCHPASS_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("benchpass")))
            .or_else(|| crate::platform::home_dir().map(|d| d.join(".cache").join("benchpass")))?;
        Some(dir.join("weight-hashes.json"))
    }

    pub fn save(&self) -> anyhow::Result<()> {
        let Some(path) = &self.path else { return Ok(()) };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }

    fn lookup(&self, key: &str, bytes: u64, mtime_ns: u128) -> Option<String> {
        self.entries
            .get(key)
            .filter(|e| e.bytes == bytes && e.mtime_ns == mtime_ns)
            .map(|e| e.sha256.clone())
    }
}

struct Candidate {
    absolute: PathBuf,
    relative: String,
    bytes: u64,
    mtime_ns: u128,
}

/// Hashes a weight file, or every file under a weights folder (hidden entries skipped).
pub fn hash_weights(path: &Path, cache: &mut HashCache, progress: &dyn HashProgress) -> anyhow::Result<BuildInfo> {
    let root = path.canonicalize().with_context(|| format!("weights {}: cannot open", path.display()))?;
    let mut candidates = Vec::new();
    if root.is_file() {
        // The name the user gave, not a link's target (Hugging Face blobs are named by hash).
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        candidates.push(candidate(&root, name)?);
    } else {
        collect(&root, &root, &mut candidates)?;
        anyhow::ensure!(!candidates.is_empty(), "weights {}: the folder holds no files", path.display());
    }
    candidates.sort_by(|a, b| a.relative.cmp(&b.relative));

    let mut hashes: Vec<Option<String>> = candidates
        .iter()
        .map(|c| cache.lookup(&c.absolute.to_string_lossy(), c.bytes, c.mtime_ns))
        .collect();
    let todo: Vec<usize> = (0..candidates.len()).filter(|&i| hashes[i].is_none()).collect();
    progress.start(todo.iter().map(|&i| candidates[i].bytes).sum(), todo.len());

    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(todo.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = todo.get(k) else { break };
                let result = hash_file(&candidates[i].absolute, &|n| progress.advance(n));
                results.lock().expect("no hashing thread panics holding the lock").push((i, result));
            });
        }
    });
    progress.finish();
    for (i, result) in results.into_inner().expect("hashing threads have ended") {
        let sha = result?;
        let c = &candidates[i];
        cache.entries.insert(
            c.absolute.to_string_lossy().into_owned(),
            CacheEntry { bytes: c.bytes, mtime_ns: c.mtime_ns, sha256: sha.clone() },
        );
        hashes[i] = Some(sha);
    }

    let files: Vec<WeightFile> = candidates
        .iter()
        .zip(hashes)
        .map(|(c, sha)| WeightFile { path: c.relative.clone(), bytes: c.bytes, sha256: sha.expect("every file hashed") })
        .collect();
    Ok(BuildInfo { sha256: Some(fold(&files)), files })
}

/// The build hash: SHA-256 of the sorted `sha256sum` listing.
pub fn fold(files: &[WeightFile]) -> String {
    let mut hasher = Sha256::new();
    for file in files {
        hasher.update(format!("{}  {}\n", file.sha256, file.path));
    }
    hex(&hasher.finalize())
}

fn candidate(path: &Path, relative: String) -> anyhow::Result<Candidate> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let mtime_ns = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    Ok(Candidate { absolute: path.to_owned(), relative, bytes: meta.len(), mtime_ns })
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<Candidate>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading folder {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading folder {}", dir.display()))?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        // Follow links: model folders (Hugging Face caches) are mostly links to blobs.
        let meta = std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            collect(root, &path, out)?;
        } else if meta.is_file() {
            let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            out.push(candidate(&path, relative)?);
        }
    }
    Ok(())
}

/// Streams one file through SHA-256 in 1 MiB reads, reporting bytes as they are read.
pub fn hash_file(path: &Path, on_read: &dyn Fn(u64)) -> anyhow::Result<String> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        on_read(n as u64);
    }
    Ok(hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc_is_the_fips_vector() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("abc");
        std::fs::write(&file, "abc").unwrap();
        assert_eq!(
            hash_file(&file, &|_| {}).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn folded_hash_is_sha256_of_the_sha256sum_listing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.gguf"), "abc").unwrap();
        std::fs::write(dir.path().join("sub/a.json"), "").unwrap();
        std::fs::write(dir.path().join(".DS_Store"), "ignored").unwrap();
        let build = hash_weights(dir.path(), &mut HashCache::default(), &()).unwrap();
        let paths: Vec<_> = build.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["b.gguf", "sub/a.json"]);
        // sha256("") is the well-known e3b0c442...; the listing is two sha256sum lines.
        let listing = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b.gguf\n\
                       e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  sub/a.json\n";
        assert_eq!(build.sha256.unwrap(), hex(&Sha256::digest(listing)));
    }

    #[test]
    fn an_unchanged_file_is_served_from_the_cache_and_a_changed_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.bin");
        std::fs::write(&file, "abc").unwrap();
        let cache_path = dir.path().join("cache.json");
        let mut cache = HashCache::load(&cache_path);
        hash_weights(&file, &mut cache, &()).unwrap();
        cache.save().unwrap();

        // Plant a wrong hash under the same key: if the cache is consulted, it comes back.
        let mut cache = HashCache::load(&cache_path);
        let key = file.canonicalize().unwrap().to_string_lossy().into_owned();
        cache.entries.get_mut(&key).unwrap().sha256 = "cached".to_owned();
        assert_eq!(hash_weights(&file, &mut cache, &()).unwrap().files[0].sha256, "cached");

        // A different size invalidates the entry.
        std::fs::write(&file, "abcd").unwrap();
        let sha = hash_weights(&file, &mut cache, &()).unwrap().files[0].sha256.clone();
        assert_eq!(sha, "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589");
    }
}
