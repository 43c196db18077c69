//! Clearing an engine's persistent KV cache: the one place benchpass deletes files it did not
//! write, so the one place that must never delete the wrong ones.
//!
//! A folder is cleared only if, checked immediately before the clear: it is not a symbolic
//! link; resolved through every link, it is not the root or a folder right under it, not the
//! home folder or above it, not the working folder or above it, not the plan's folder or
//! above it, not a pass or output folder, above one or inside one; and nothing inside it is a
//! benchpass pass. Deleting walks the resolved folder without following links: a link inside
//! is removed as a link, never entered.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Folders that a cache clear must never reach, resolved through links.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// Refused with every folder above them.
    above: Vec<(PathBuf, String)>,
    /// Refused with every folder above them and every folder inside them.
    whole: Vec<(PathBuf, String)>,
}

impl Protected {
    /// The home folder and the working folder, each with every folder above it.
    pub fn machine() -> Protected {
        let mut protected = Protected::default();
        for var in ["HOME", "USERPROFILE"] {
            if let Some(home) = std::env::var_os(var).filter(|h| !h.is_empty()) {
                protected = protected.with_above(Path::new(&home), "your home folder");
            }
        }
        if let Ok(cwd) = std::env::current_dir() {
            protected = protected.with_above(&cwd, "the working folder");
        }
        protected
    }

    /// Refuses `dir` and every folder above it (clearing those would delete `dir` itself).
    pub fn with_above(mut self, dir: &Path, what: &str) -> Protected {
        self.above.push((resolved(dir), what.to_owned()));
        self
    }

    /// Refuses `dir`, every folder above it and every folder inside it.
    pub fn with_whole(mut self, dir: &Path, what: &str) -> Protected {
        self.whole.push((resolved(dir), what.to_owned()));
        self
    }

    /// Why clearing `dir` would be a disaster, if it would. A folder that does not exist yet
    /// is judged by where it would be.
    pub fn refusal(&self, dir: &Path) -> Option<String> {
        if dir.as_os_str().is_empty() {
            return Some("an empty path names no cache folder".to_owned());
        }
        if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some("it is a symbolic link (benchpass clears only a real folder, never what a link points to)".to_owned());
        }
        let real = resolved(dir);
        // macOS keeps /tmp, /var and /etc under /private: those count as right under the root.
        let depth_of = |p: &Path| p.strip_prefix("/private").unwrap_or(p).components().filter(|c| matches!(c, Component::Normal(_))).count();
        if depth_of(&real) < 2 {
            return Some("it is the root or a folder right under it".to_owned());
        }
        for (path, what) in self.above.iter().chain(&self.whole) {
            if path.starts_with(&real) {
                let how = if *path == real { "it is" } else { "it holds" };
                return Some(format!("{how} {what} ({})", path.display()));
            }
        }
        for (path, what) in &self.whole {
            if real.starts_with(path) {
                return Some(format!("it is inside {what} ({})", path.display()));
            }
        }
        None
    }
}

/// What a clear deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Files, links and folders removed, at any depth.
    pub entries: u64,
    /// Bytes in the files removed.
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ClearError {
    #[error("refusing to clear the KV-cache folder {}: {why}", dir.display())]
    Refused { dir: PathBuf, why: String },
    #[error("clearing the KV-cache folder {}: {cause}", path.display())]
    Io { path: PathBuf, cause: io::Error },
}

/// Deletes everything inside `dir` (not `dir` itself), after checking it against `protected`
/// right now: a plan checked hours ago says nothing about a link planted since. A missing
/// folder holds nothing to clear.
pub fn clear(dir: &Path, protected: &Protected) -> Result<Cleared, ClearError> {
    if let Some(why) = protected.refusal(dir) {
        return Err(ClearError::Refused { dir: dir.to_owned(), why });
    }
    let real = match dir.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Cleared::default()),
        Err(cause) => return Err(ClearError::Io { path: dir.to_owned(), cause }),
    };
    let io_at = |path: &Path| {
        let path = path.to_owned();
        move |cause| ClearError::Io { path, cause }
    };
    if !fs::symlink_metadata(&real).map_err(io_at(&real))?.is_dir() {
        return Err(ClearError::Refused { dir: dir.to_owned(), why: "it is not a folder".to_owned() });
    }
    // Walk first, delete after: a pass found anywhere inside stops the clear before a single
    // file has gone.
    let mut found = Cleared::default();
    survey(&real, &mut found).map_err(|e| match e {
        Survey::Pass(at) => ClearError::Refused {
            dir: dir.to_owned(),
            why: format!("it holds a benchpass pass ({})", at.display()),
        },
        Survey::Io(path, cause) => ClearError::Io { path, cause },
    })?;
    for entry in fs::read_dir(&real).map_err(io_at(&real))? {
        let entry = entry.map_err(io_at(&real))?;
        let path = entry.path();
        // The entry's own type: a link is removed as a link, not followed.
        let is_dir = entry.file_type().map_err(io_at(&path))?.is_dir();
        // remove_dir_all does not follow links inside the tree either.
        let removed = if is_dir { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        removed.map_err(io_at(&path))?;
    }
    Ok(found)
}

/// The first benchpass pass found inside `dir` (or `dir` itself), without following links.
pub fn pass_inside(dir: &Path) -> Option<PathBuf> {
    match survey(dir, &mut Cleared::default()) {
        Err(Survey::Pass(at)) => Some(at),
        _ => None,
    }
}

enum Survey {
    Pass(PathBuf),
    Io(PathBuf, io::Error),
}

/// Counts what is inside `dir` without following links; stops at the first benchpass pass.
fn survey(dir: &Path, found: &mut Cleared) -> Result<(), Survey> {
    let io_at = |path: &Path| {
        let path = path.to_owned();
        move |cause| Survey::Io(path, cause)
    };
    if dir.join(crate::pass::PASS_FILE).exists() && dir.join(crate::pass::RUNS_FILE).exists() {
        return Err(Survey::Pass(dir.to_owned()));
    }
    for entry in fs::read_dir(dir).map_err(io_at(dir))? {
        let entry = entry.map_err(io_at(dir))?;
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(io_at(&path))?;
        found.entries += 1;
        if meta.is_dir() {
            survey(&path, found)?;
        } else if meta.is_file() {
            found.bytes += meta.len();
        }
    }
    Ok(())
}

/// `path` with every link resolved. Where the path does not exist (yet), its longest existing
/// ancestor is resolved and the rest is added with `.` and `..` taken lexically.
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                push_lexically(&mut out, Path::new(part));
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            // `..` at the end, or the root itself, unresolvable: take the whole path lexically.
            _ => {
                let mut out = PathBuf::new();
                push_lexically(&mut out, &absolute);
                return out;
            }
        }
    }
}

fn push_lexically(out: &mut PathBuf, path: &Path) {
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        (tmp, root)
    }

    fn fill(dir: &Path) {
        fs::create_dir_all(dir.join("sub/deeper")).unwrap();
        fs::write(dir.join("a.bin"), [0u8; 100]).unwrap();
        fs::write(dir.join("sub/b.bin"), [0u8; 20]).unwrap();
        fs::write(dir.join("sub/deeper/c.bin"), [0u8; 3]).unwrap();
    }

    #[test]
    fn clears_what_is_inside_and_says_how_much() {
        let (_tmp, root) = tree();
        let cache = root.join("cache");
        fill(&cache);
        let cleared = clear(&cache, &Protected::default()).unwrap();
        // a.bin, sub, sub/b.bin, sub/deeper, sub/deeper/c.bin; 100 + 20 + 3 bytes.
        assert_eq!(cleared, Cleared { entries: 5, bytes: 123 });
        assert!(cache.is_dir(), "the folder itself stays");
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
        assert_eq!(clear(&root.join("missing"), &Protected::default()).unwrap(), Cleared::default());
    }

    #[test]
    fn a_home_reached_through_a_link_is_refused_as_home() {
        let (_tmp, root) = tree();
        let real_home = root.join("real-home");
        fill(&real_home);
        let linked_home = root.join("home-link");
        symlink(&real_home, &linked_home).unwrap();
        // HOME as written is the link; the cache path `~/` resolves to the real folder.
        let protected = Protected::default().with_above(&linked_home, "your home folder");
        for dir in [linked_home.join(""), real_home.clone(), root.clone()] {
            let why = protected.refusal(&dir).unwrap_or_else(|| panic!("{} must be refused", dir.display()));
            assert!(why.contains("home folder"), "{why}");
        }
        assert!(matches!(clear(&real_home, &protected), Err(ClearError::Refused { .. })));
        assert!(real_home.join("a.bin").exists());
        assert!(protected.refusal(&real_home.join("sub")).is_none(), "a folder inside home is allowed");
    }

    #[test]
    fn a_folder_holding_passes_is_refused_even_when_nobody_said_so() {
        let (_tmp, root) = tree();
        let data = root.join("data");
        let pass = data.join("passes/p1");
        fs::create_dir_all(&pass).unwrap();
        fs::write(pass.join("pass.json"), "{}").unwrap();
        fs::write(pass.join("runs.jsonl"), "").unwrap();
        fs::write(data.join("other.txt"), "x").unwrap();
        let err = clear(&data, &Protected::default()).unwrap_err();
        assert!(err.to_string().contains("holds a benchpass pass"), "{err}");
        assert!(pass.join("runs.jsonl").exists() && data.join("other.txt").exists(), "nothing deleted");
    }

    #[test]
    fn pass_and_output_folders_are_refused_with_what_is_above_and_inside_them() {
        let (_tmp, root) = tree();
        let out = root.join("out/pass");
        fs::create_dir_all(out.join("logs")).unwrap();
        let protected = Protected::default().with_whole(&out, "this pass's folder");
        for dir in [root.join("out"), out.clone(), out.join("logs"), out.join("not-yet")] {
            assert!(protected.refusal(&dir).is_some(), "{}", dir.display());
        }
        assert!(protected.refusal(&root.join("cache")).is_none());
        // `..` is taken after links: out/pass/logs/../.. is out.
        assert!(protected.refusal(&out.join("logs/../..")).is_some());
    }

    #[test]
    fn a_cache_folder_that_is_a_link_is_refused_and_its_target_untouched() {
        let (_tmp, root) = tree();
        let precious = root.join("precious");
        fill(&precious);
        let cache = root.join("cache");
        symlink(&precious, &cache).unwrap();
        let err = clear(&cache, &Protected::default()).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(precious.join("a.bin").exists());
    }

    #[test]
    fn links_inside_the_cache_are_removed_not_followed() {
        let (_tmp, root) = tree();
        let precious = root.join("precious");
        fill(&precious);
        let cache = root.join("cache");
        fs::create_dir_all(&cache).unwrap();
        symlink(&precious, cache.join("dir-link")).unwrap();
        symlink(precious.join("a.bin"), cache.join("file-link")).unwrap();
        let cleared = clear(&cache, &Protected::default()).unwrap();
        assert_eq!(cleared, Cleared { entries: 2, bytes: 0 }, "two links, no bytes of their targets");
        assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
        assert!(precious.join("a.bin").exists() && precious.join("sub/deeper/c.bin").exists());
    }

    #[test]
    fn the_root_and_folders_right_under_it_are_refused() {
        for dir in ["/", "/tmp", "/home", "/tmp/..", "/private/tmp"] {
            assert!(Protected::default().refusal(Path::new(dir)).is_some(), "{dir}");
        }
        assert!(Protected::default().refusal(Path::new("")).is_some());
    }
}
