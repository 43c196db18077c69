//! Clearing an engine's persistent KV cache: the one place benchpass deletes files it did not
//! write, so the one place that must never delete the wrong ones.
//!
//! A folder is cleared only if, checked immediately before the clear: it is not a symbolic
//! link; resolved through every link, it is not the root or a folder right under it (macOS's
//! `/private` and its data volume `/System/Volumes/Data` count as the root), not the root of a
//! disk or mount point (its device differs from its parent folder's: `/Volumes/<disk>`, the
//! data volume, `/dev/shm`), not the home folder or above it, not the working folder or above
//! it, not the plan's folder or above it, not a pass or output folder, above one or inside
//! one, not a weights path or engine executable the plan names or above one (or a link on the
//! way to one), not inside a weights folder; and nothing inside it is a benchpass pass, another
//! disk, or more than [`MAX_DEPTH`] folders deep.
//!
//! On Unix the folder is then opened once without following a link, checked to be the very
//! folder that was judged, and emptied through that handle: every entry is found, opened and
//! removed relative to the folder that holds it (`openat`, `unlinkat`), so a folder swapped for
//! a link halfway through leaves the link's target whole, and a link inside is removed as a
//! link, never entered. What is reported is what was removed, counted one removal at a time.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::file::{find_executable, resolve, PlanFile};

/// Folders nested deeper than this inside a cache folder stop the clear before anything is
/// deleted: each level holds a folder handle open, and no engine's cache is nearly this deep.
pub const MAX_DEPTH: usize = 64;

/// Folders that are another name for the root. macOS keeps /tmp, /var and /etc under
/// /private, and the data volume, where /Users and /Applications really are, at
/// /System/Volumes/Data (reached through firmlinks that no path resolution shows).
const ROOT_ALIASES: &[&str] = &["/private", "/System/Volumes/Data"];

/// Folders that a cache clear must never reach, resolved through links.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    guards: Vec<Guard>,
}

#[derive(Debug, Clone)]
struct Guard {
    real: PathBuf,
    what: String,
    /// Refused with every folder inside it too (a pass folder, a weights folder), not only
    /// with every folder above it.
    whole: bool,
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
        self.guards.push(Guard { real: resolved(dir), what: what.to_owned(), whole: false });
        self
    }

    /// Refuses `dir`, every folder above it and every folder inside it.
    pub fn with_whole(mut self, dir: &Path, what: &str) -> Protected {
        self.guards.push(Guard { real: resolved(dir), what: what.to_owned(), whole: true });
        self
    }

    /// Refuses every folder that holds `path` where it really is, or holds a link on the way
    /// to it (clearing that folder would delete the link, and `path` would name nothing).
    fn with_path(mut self, path: &Path, what: &str, whole: bool) -> Protected {
        let absolute = absolute(path);
        for on_the_way in absolute.ancestors() {
            let is_link = fs::symlink_metadata(on_the_way).is_ok_and(|m| m.file_type().is_symlink());
            if let (true, Some(parent), Some(name)) = (is_link, on_the_way.parent(), on_the_way.file_name()) {
                let link = resolved(parent).join(name);
                let what = format!("a link on the way to {what} ({})", path.display());
                self.guards.push(Guard { real: link, what, whole: false });
            }
        }
        self.guards.push(Guard { real: resolved(&absolute), what: what.to_owned(), whole });
        self
    }

    /// The plan's weights (every model's, each with what is inside it when it is a folder) and
    /// its engines' executables: `executable`, else the first word of `start`, found as the run
    /// finds it. `base` is the plan's folder.
    pub fn with_plan(mut self, plan: &PlanFile, base: &Path) -> Protected {
        for model in &plan.models {
            if let Some(weights) = &model.weights {
                let what = format!("the weights of model `{}`", model.name.get_ref());
                self = self.with_path(&resolve(base, weights.get_ref()), &what, true);
            }
        }
        for engine in &plan.engines {
            // No model is known here: a program named through `{model}` or `{weights}` (none
            // is) is found, if at all, under another name, and only protects more.
            let fill = super::lifecycle::Placeholders { port: engine.port, model: String::new(), weights: None };
            let program = engine.executable.as_ref().map(|e| e.get_ref().clone()).or_else(|| {
                let start = engine.start.as_ref()?.get_ref().first()?;
                Some(fill.fill(start))
            });
            if let Some(exe) = program.as_deref().and_then(find_executable) {
                let what = format!("the executable of engine `{}`", engine.name.get_ref());
                self = self.with_path(&exe, &what, false);
            }
        }
        self
    }

    /// Why clearing `dir` would be a disaster, if it would, judged by its path and by the
    /// folder that is there now (not by what is inside it: see [`Protected::check`]). A folder
    /// that does not exist yet is judged by where it would be.
    pub fn refusal(&self, dir: &Path) -> Option<String> {
        self.judge(dir).err()
    }

    /// [`Protected::refusal`], then what is inside the folder: a pass, another disk, a tree
    /// deeper than [`MAX_DEPTH`]. What `plan check` says of a cache folder.
    pub fn check(&self, dir: &Path) -> Option<String> {
        let real = match self.judge(dir) {
            Ok(real) => real,
            Err(why) => return Some(why),
        };
        // A folder that cannot be read is said when the clear meets it, not here.
        let os::Opened::Folder(folder) = os::open(&real).ok()? else { return None };
        let root_dev = folder.id().ok().flatten().map(|id| id.dev);
        match walk(&folder, &real, root_dev, 0, false, &mut Cleared::default()) {
            Err(Stop::Refused(why)) => Some(why),
            _ => None,
        }
    }

    /// The folder `dir` resolved through every link, or why it must not be cleared.
    fn judge(&self, dir: &Path) -> Result<PathBuf, String> {
        if dir.as_os_str().is_empty() {
            return Err("an empty path names no cache folder".to_owned());
        }
        if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err("it is a symbolic link (benchpass clears only a real folder, never what a link points to)".to_owned());
        }
        let real = resolved(dir);
        let plain = unaliased(&real);
        if plain.components().filter(|c| matches!(c, Component::Normal(_))).count() < 2 {
            return Err("it is the root or a folder right under it".to_owned());
        }
        for guard in &self.guards {
            let guarded = unaliased(&guard.real);
            if guarded.starts_with(&plain) {
                let how = if guarded == plain { "it is" } else { "it holds" };
                return Err(format!("{how} {} ({})", guard.what, guard.real.display()));
            }
        }
        for guard in self.guards.iter().filter(|g| g.whole) {
            if plain.starts_with(unaliased(&guard.real)) {
                return Err(format!("it is inside {} ({})", guard.what, guard.real.display()));
            }
        }
        if let Some(id) = id_of(&real) {
            let parent_dev = real.parent().and_then(id_of).map(|p| p.dev);
            if let Some(why) = self.folder_refusal(id, parent_dev) {
                return Err(why);
            }
        }
        Ok(real)
    }

    /// Why the folder with this identity must not be cleared, whatever path reaches it: it is
    /// the root of a disk, or it is a guarded folder or one above it under another name (a
    /// bind mount, a macOS firmlink such as /System/Volumes/Data/Users for /Users).
    fn folder_refusal(&self, id: Id, parent_dev: Option<u64>) -> Option<String> {
        if parent_dev.is_some_and(|dev| dev != id.dev) {
            return Some(
                "it is the root of a disk or mount point (its device differs from its parent folder's): benchpass clears a folder, never a whole volume"
                    .to_owned(),
            );
        }
        for guard in &self.guards {
            for (up, above) in guard.real.ancestors().enumerate() {
                if id_of(above) == Some(id) {
                    let how = if up == 0 { "it is" } else { "it holds" };
                    return Some(format!("{how} {} ({})", guard.what, guard.real.display()));
                }
            }
        }
        None
    }
}

/// What a clear deleted, counted one removal at a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Files (and anything else that is neither a folder nor a link: sockets, pipes).
    pub files: u64,
    /// Symbolic links, removed as links: their targets are not touched.
    pub links: u64,
    pub folders: u64,
    /// Bytes in the files removed.
    pub bytes: u64,
}

impl Cleared {
    /// Files, links and folders removed, at any depth.
    pub fn entries(&self) -> u64 {
        self.files + self.links + self.folders
    }
}

impl fmt::Display for Cleared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} entries, {} bytes ({} files, {} links, {} folders)", self.entries(), self.bytes, self.files, self.links, self.folders)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClearError {
    /// Nothing was deleted.
    #[error("refusing to clear the KV-cache folder {}: {why}", dir.display())]
    Refused { dir: PathBuf, why: String },
    #[error("clearing the KV-cache folder {}: {cause}{}", path.display(), deleted_before(deleted))]
    Io { path: PathBuf, cause: io::Error, deleted: Cleared },
}

fn deleted_before(deleted: &Cleared) -> String {
    match deleted.entries() {
        0 => String::new(),
        _ => format!(" ({deleted} deleted before it stopped)"),
    }
}

/// Deletes everything inside `dir` (not `dir` itself), after checking it against `protected`
/// right now: a plan checked hours ago says nothing about a link planted since. A missing
/// folder holds nothing to clear.
pub fn clear(dir: &Path, protected: &Protected) -> Result<Cleared, ClearError> {
    let refused = |why: String| ClearError::Refused { dir: dir.to_owned(), why };
    let real = protected.judge(dir).map_err(refused)?;
    let io_at = |path: &Path| {
        let path = path.to_owned();
        move |cause| ClearError::Io { path, cause, deleted: Cleared::default() }
    };
    let folder = match os::open(&real).map_err(io_at(&real))? {
        os::Opened::Folder(folder) => folder,
        os::Opened::Missing => return Ok(Cleared::default()),
        os::Opened::Link => return Err(refused("it became a symbolic link while benchpass was checking it".to_owned())),
        os::Opened::NotFolder => return Err(refused("it is not a folder".to_owned())),
    };
    let id = folder.id().map_err(io_at(&real))?;
    if let Some(id) = id {
        // From here on only the handle is used. It must be the folder judged above, still at
        // the path judged, with no link on the way (a link put in place of a folder above it
        // would have led the open elsewhere).
        let still_there = real.canonicalize().is_ok_and(|now| now == real) && id_of(&real) == Some(id);
        if !still_there {
            return Err(refused("it was moved or replaced while benchpass was checking it".to_owned()));
        }
        let parent_dev = real.parent().and_then(id_of).map(|p| p.dev);
        if let Some(why) = protected.folder_refusal(id, parent_dev) {
            return Err(refused(why));
        }
    }
    let root_dev = id.map(|id| id.dev);
    // Walk first, delete after: a pass, a disk or a tree too deep found anywhere inside stops
    // the clear before a single file has gone.
    walk(&folder, &real, root_dev, 0, false, &mut Cleared::default()).map_err(|stop| match stop {
        Stop::Refused(why) => refused(why),
        Stop::Io(path, cause) => ClearError::Io { path, cause, deleted: Cleared::default() },
    })?;
    let mut deleted = Cleared::default();
    match walk(&folder, &real, root_dev, 0, true, &mut deleted) {
        Ok(()) => Ok(deleted),
        // Only what changed after the walk above gets here (a pass written meanwhile).
        Err(Stop::Refused(why)) => Err(ClearError::Io { path: real, cause: io::Error::other(format!("stopped: {why}")), deleted }),
        Err(Stop::Io(path, cause)) => Err(ClearError::Io { path, cause, deleted }),
    }
}

enum Stop {
    /// Why the folder must not be cleared, found inside it.
    Refused(String),
    Io(PathBuf, io::Error),
}

/// What an entry is, not following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Link,
    Folder,
}

/// Goes through everything inside `folder` (shown as `at`), depth first, never following a
/// link and never leaving the disk `root_dev`; with `delete`, removes each entry once what is
/// inside it is gone, and counts into `done` what was removed, else what would be. Stops at a
/// pass, at another disk and past [`MAX_DEPTH`].
fn walk(folder: &os::Folder, at: &Path, root_dev: Option<u64>, depth: usize, delete: bool, done: &mut Cleared) -> Result<(), Stop> {
    let io_at = |path: &Path| {
        let path = path.to_owned();
        move |cause| Stop::Io(path, cause)
    };
    if folder.has(crate::pass::PASS_FILE) && folder.has(crate::pass::RUNS_FILE) {
        return Err(Stop::Refused(format!("it holds a benchpass pass ({})", at.display())));
    }
    if depth >= MAX_DEPTH {
        return Err(Stop::Refused(format!("it holds folders nested more than {MAX_DEPTH} deep ({}): clear it by hand", at.display())));
    }
    // The names are read first and removed after: a folder's listing is not read while it
    // changes under it.
    for name in folder.list().map_err(io_at(at))? {
        let path = at.join(&name);
        match folder.enter(&name).map_err(io_at(&path))? {
            Some(inner) => {
                let dev = inner.id().map_err(io_at(&path))?.map(|id| id.dev);
                if dev != root_dev {
                    return Err(Stop::Refused(format!(
                        "it holds another disk or mount point ({}): benchpass does not clear across disks",
                        path.display()
                    )));
                }
                walk(&inner, &path, root_dev, depth + 1, delete, done)?;
                drop(inner);
                if delete {
                    folder.remove(&name, true).map_err(io_at(&path))?;
                }
                done.folders += 1;
            }
            None => {
                let (kind, bytes) = folder.entry(&name).map_err(io_at(&path))?;
                if kind == Kind::Folder {
                    // It was not a folder when it was opened a moment ago.
                    return Err(Stop::Io(path, io::Error::other("it changed while it was being cleared")));
                }
                if delete {
                    folder.remove(&name, false).map_err(io_at(&path))?;
                }
                match kind {
                    Kind::Link => done.links += 1,
                    _ => {
                        done.files += 1;
                        done.bytes += bytes;
                    }
                }
            }
        }
        #[cfg(all(test, unix))]
        if delete {
            tests::between_removals();
        }
    }
    Ok(())
}

/// A folder's identity: the device it is on and its inode there.
#[cfg_attr(not(unix), allow(dead_code))] // never made on Windows, where std gives no file ids
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Id {
    dev: u64,
    ino: u64,
}

fn id_of(path: &Path) -> Option<Id> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        fs::symlink_metadata(path).ok().map(|m| Id { dev: m.dev(), ino: m.ino() })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Folders opened without following a link, and what is inside them found, opened and removed
/// relative to the folder handle that holds it.
#[cfg(unix)]
mod os {
    use std::ffi::{OsStr, OsString};
    use std::fs::File;
    use std::io;
    use std::os::unix::ffi::OsStringExt as _;
    use std::os::unix::fs::MetadataExt as _;
    use std::path::Path;

    use rustix::fs::{openat, statat, unlinkat, AtFlags, Dir, FileType, Mode, OFlags, CWD};
    use rustix::io::Errno;

    use super::{Id, Kind};

    const FOLDER: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

    pub enum Opened {
        Folder(Folder),
        Missing,
        Link,
        NotFolder,
    }

    pub struct Folder(File);

    /// `path` opened as a folder, unless its last part is a link (or not a folder at all).
    pub fn open(path: &Path) -> io::Result<Opened> {
        match openat(CWD, path, FOLDER, Mode::empty()) {
            Ok(fd) => Ok(Opened::Folder(Folder(File::from(fd)))),
            Err(Errno::NOENT) => Ok(Opened::Missing),
            Err(e) if is_link(e) => Ok(Opened::Link),
            Err(Errno::NOTDIR) => Ok(Opened::NotFolder),
            Err(e) => Err(e.into()),
        }
    }

    /// What O_NOFOLLOW says of a link: ELOOP (Linux, macOS), EMLINK (FreeBSD).
    fn is_link(e: Errno) -> bool {
        e == Errno::LOOP || e == Errno::MLINK
    }

    impl Folder {
        pub fn id(&self) -> io::Result<Option<Id>> {
            let meta = self.0.metadata()?;
            Ok(Some(Id { dev: meta.dev(), ino: meta.ino() }))
        }

        pub fn list(&self) -> io::Result<Vec<OsString>> {
            let mut names = Vec::new();
            for entry in Dir::read_from(&self.0)? {
                let name = entry?.file_name().to_bytes().to_vec();
                if name != b"." && name != b".." {
                    names.push(OsString::from_vec(name));
                }
            }
            Ok(names)
        }

        /// The entry opened as a folder; `None` when it is anything else, a link included.
        pub fn enter(&self, name: &OsStr) -> io::Result<Option<Folder>> {
            match openat(&self.0, name, FOLDER, Mode::empty()) {
                Ok(fd) => Ok(Some(Folder(File::from(fd)))),
                Err(e) if is_link(e) || e == Errno::NOTDIR => Ok(None),
                Err(e) => Err(e.into()),
            }
        }

        /// What the entry itself is, and its size.
        pub fn entry(&self, name: &OsStr) -> io::Result<(Kind, u64)> {
            let stat = statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW)?;
            let kind = match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => Kind::Folder,
                FileType::Symlink => Kind::Link,
                _ => Kind::File,
            };
            Ok((kind, u64::try_from(stat.st_size).unwrap_or(0)))
        }

        /// Removes the entry itself: a link as a link, a folder only once it is empty.
        pub fn remove(&self, name: &OsStr, folder: bool) -> io::Result<()> {
            let flags = if folder { AtFlags::REMOVEDIR } else { AtFlags::empty() };
            Ok(unlinkat(&self.0, name, flags)?)
        }

        /// Whether an entry of that name is there, whatever it is.
        pub fn has(&self, name: &str) -> bool {
            statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
        }
    }
}

/// Windows: std has no `openat`/`unlinkat` and the workspace forbids the unsafe code that
/// `NtCreateFile` relative to a handle would take, so the folder is emptied by path: each
/// entry is looked at (`symlink_metadata`, which takes every name-surrogate reparse point,
/// junctions and mounted folders included, for a link) right before it is entered or removed.
/// A folder swapped for a link between two entries is not caught there as it is on Unix; the
/// checks before the clear still refuse one swapped before it.
#[cfg(not(unix))]
mod os {
    use std::ffi::{OsStr, OsString};
    use std::fs;
    use std::io;
    use std::path::{Path, PathBuf};

    use super::{Id, Kind};

    pub enum Opened {
        Folder(Folder),
        Missing,
        Link,
        NotFolder,
    }

    pub struct Folder(PathBuf);

    pub fn open(path: &Path) -> io::Result<Opened> {
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => Ok(Opened::Link),
            Ok(meta) if meta.is_dir() => Ok(Opened::Folder(Folder(path.to_owned()))),
            Ok(_) => Ok(Opened::NotFolder),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Opened::Missing),
            Err(e) => Err(e),
        }
    }

    impl Folder {
        pub fn id(&self) -> io::Result<Option<Id>> {
            Ok(None)
        }

        pub fn list(&self) -> io::Result<Vec<OsString>> {
            fs::read_dir(&self.0)?.map(|entry| entry.map(|e| e.file_name())).collect()
        }

        pub fn enter(&self, name: &OsStr) -> io::Result<Option<Folder>> {
            let path = self.0.join(name);
            let meta = fs::symlink_metadata(&path)?;
            Ok((meta.is_dir() && !meta.file_type().is_symlink()).then_some(Folder(path)))
        }

        pub fn entry(&self, name: &OsStr) -> io::Result<(Kind, u64)> {
            let meta = fs::symlink_metadata(self.0.join(name))?;
            let kind = match meta.file_type() {
                t if t.is_symlink() => Kind::Link,
                t if t.is_dir() => Kind::Folder,
                _ => Kind::File,
            };
            Ok((kind, meta.len()))
        }

        pub fn remove(&self, name: &OsStr, folder: bool) -> io::Result<()> {
            let path = self.0.join(name);
            if folder {
                return fs::remove_dir(&path);
            }
            // A link to a folder is removed as a folder is (RemoveDirectory removes the link).
            fs::remove_file(&path).or_else(|e| match fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => fs::remove_dir(&path),
                _ => Err(e),
            })
        }

        pub fn has(&self, name: &str) -> bool {
            fs::symlink_metadata(self.0.join(name)).is_ok()
        }
    }
}

/// `path` made absolute against the working folder, nothing resolved.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    }
}

/// `real` with a folder that is another name for the root ([`ROOT_ALIASES`]) taken off.
fn unaliased(real: &Path) -> PathBuf {
    let mut out = real.to_owned();
    // Again and again: /System/Volumes/Data/private/tmp is /tmp.
    while let Some(rest) = ROOT_ALIASES.iter().find_map(|alias| out.strip_prefix(alias).ok()) {
        out = Path::new("/").join(rest);
    }
    out
}

/// `path` with every link resolved. Where the path does not exist (yet), its longest existing
/// ancestor is resolved and the rest is added with `.` and `..` taken lexically.
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = absolute(path);
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
    use std::cell::RefCell;
    use std::os::unix::fs::symlink;

    thread_local! {
        /// Run once, right after the next removal of a clear on this thread.
        static BETWEEN_REMOVALS: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
    }

    pub(super) fn between_removals() {
        if let Some(hook) = BETWEEN_REMOVALS.with(|h| h.borrow_mut().take()) {
            hook();
        }
    }

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
        assert_eq!(cleared, Cleared { files: 3, links: 0, folders: 2, bytes: 123 });
        assert_eq!(cleared.entries(), 5);
        assert_eq!(cleared.to_string(), "5 entries, 123 bytes (3 files, 0 links, 2 folders)");
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
        assert_eq!(cleared, Cleared { links: 2, ..Cleared::default() }, "two links, no bytes of their targets");
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

    #[test]
    fn a_cache_folder_swapped_for_a_link_halfway_leaves_the_links_target_whole() {
        let (_tmp, root) = tree();
        let cache = root.join("cache");
        let victim = root.join("victim");
        for dir in [&cache, &victim] {
            fs::create_dir_all(dir).unwrap();
            for i in 0..60 {
                fs::write(dir.join(format!("f{i:02}.bin")), [7u8; 10]).unwrap();
            }
        }
        // Right after the first file goes, the cache folder is moved away and a link to the
        // victim put in its place: every later removal by path would land in the victim.
        let moved = root.join("cache-moved");
        let (from, to, target) = (cache.clone(), moved.clone(), victim.clone());
        BETWEEN_REMOVALS.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                fs::rename(&from, &to).unwrap();
                symlink(&target, &from).unwrap();
            }))
        });
        let cleared = clear(&cache, &Protected::default()).unwrap();
        assert!(BETWEEN_REMOVALS.with(|h| h.borrow().is_none()), "the swap happened");
        assert_eq!(fs::read_dir(&victim).unwrap().count(), 60, "the link's target is whole");
        assert_eq!(fs::read(victim.join("f59.bin")).unwrap(), [7u8; 10]);
        // What was said is what went: the 60 files of the folder that was opened.
        assert_eq!(cleared, Cleared { files: 60, links: 0, folders: 0, bytes: 600 });
        assert_eq!(fs::read_dir(&moved).unwrap().count(), 0);
        assert!(fs::symlink_metadata(&cache).unwrap().file_type().is_symlink(), "the link itself is left too");
    }

    #[test]
    fn a_folder_holding_weights_or_a_link_on_the_way_to_them_is_refused() {
        let (_tmp, root) = tree();
        let weights = root.join("models/qwen/model.gguf");
        fs::create_dir_all(weights.parent().unwrap()).unwrap();
        fs::write(&weights, "GGUF").unwrap();
        let protected = Protected::default().with_path(&weights, "the weights of model `m`", true);
        for dir in [root.join("models"), root.join("models/qwen")] {
            let why = protected.refusal(&dir).unwrap_or_else(|| panic!("{} must be refused", dir.display()));
            assert!(why.starts_with("it holds the weights of model `m`"), "{why}");
        }
        assert!(matches!(clear(&root.join("models"), &protected), Err(ClearError::Refused { .. })));
        assert!(weights.exists());
        assert!(protected.refusal(&root.join("models/other")).is_none(), "a folder beside the weights is allowed");

        // Weights given as a link whose target is in the cache folder: the target is guarded.
        let link = root.join("w.gguf");
        symlink(&weights, &link).unwrap();
        let through_link = Protected::default().with_path(&link, "the weights of model `m`", true);
        assert!(through_link.refusal(&root.join("models/qwen")).is_some());
        // A folder of weights reached through a link inside the cache folder: clearing it
        // would remove the link and the plan's path would name nothing.
        let store = root.join("store/qwen");
        fs::create_dir_all(&store).unwrap();
        fs::write(store.join("model.safetensors"), "x").unwrap();
        fs::create_dir_all(root.join("cache")).unwrap();
        symlink(&store, root.join("cache/qwen")).unwrap();
        let linked = Protected::default().with_path(&root.join("cache/qwen/model.safetensors"), "the weights of model `m`", true);
        let why = linked.refusal(&root.join("cache")).unwrap();
        assert!(why.contains("a link on the way to the weights of model `m`"), "{why}");
        // And a cache folder inside a folder of weights would delete some of them.
        let inside = Protected::default().with_path(&store, "the weights of model `m`", true);
        let why = inside.refusal(&store.join("kv")).unwrap();
        assert!(why.starts_with("it is inside the weights of model `m`"), "{why}");
    }

    #[test]
    fn the_plans_weights_and_engine_executables_are_guarded() {
        let (_tmp, root) = tree();
        let exe = root.join("engines/bin/server");
        fs::create_dir_all(exe.parent().unwrap()).unwrap();
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        fs::create_dir_all(root.join("models")).unwrap();
        fs::write(root.join("models/m.gguf"), "GGUF").unwrap();
        let text = format!(
            "[[engines]]\nname = \"e\"\nstart = [{:?}, \"--port\", \"{{port}}\"]\nport = 8080\n\n             [[engines]]\nname = \"f\"\nurl = \"http://127.0.0.1:1\"\nexecutable = {:?}\n\n             [[models]]\nname = \"m\"\nweights = \"models/m.gguf\"\n",
            exe.display().to_string(),
            root.join("engines/bin").display().to_string() + "/server"
        );
        let plan: PlanFile = toml::from_str(&text).unwrap();
        let protected = Protected::default().with_plan(&plan, &root);
        let why = protected.refusal(&root.join("engines")).unwrap();
        assert!(why.starts_with("it holds the executable of engine `e`"), "{why}");
        let why = protected.refusal(&root.join("models")).unwrap();
        assert!(why.starts_with("it holds the weights of model `m`"), "{why}");
        assert!(protected.refusal(&root.join("cache")).is_none());
    }

    /// A mount point two levels down that this machine has, if any: /dev/shm and /dev/pts are
    /// one in most Linux systems and containers.
    fn a_mount_point() -> Option<PathBuf> {
        ["/dev/shm", "/dev/pts", "/dev/mqueue", "/run/lock", "/sys/fs/cgroup"].iter().find_map(|p| {
            let real = Path::new(p).canonicalize().ok()?;
            let (dev, parent) = (id_of(&real)?.dev, id_of(real.parent()?)?.dev);
            (dev != parent && real.components().count() == 3).then_some(real)
        })
    }

    #[test]
    fn a_mount_point_is_refused_as_a_whole_volume() {
        let Some(mount) = a_mount_point() else {
            eprintln!("skipped: no mount point two folders below the root on this machine");
            return;
        };
        let why = Protected::default().refusal(&mount).unwrap_or_else(|| panic!("{} must be refused", mount.display()));
        assert!(why.contains("the root of a disk or mount point"), "{why}");
        // Reached only once the refusal is in place: the clear refuses it before anything goes.
        assert!(matches!(clear(&mount, &Protected::default()), Err(ClearError::Refused { .. })));
    }

    /// Every mount point of this machine's that is two or more folders below the root, so that
    /// the depth rule alone would let it through: found by its device differing from its
    /// parent's, as the clear's rule finds it.
    fn deep_mount_points() -> Vec<PathBuf> {
        ["/dev/shm", "/dev/pts", "/dev/mqueue", "/sys/fs/cgroup", "/proc/sys/fs/binfmt_misc", "/run/lock", "/run/user"]
            .iter()
            .filter_map(|p| {
                let real = Path::new(p).canonicalize().ok()?;
                let (dev, parent) = (id_of(&real)?.dev, id_of(real.parent()?)?.dev);
                (dev != parent && real.components().count() >= 3).then_some(real)
            })
            .collect()
    }

    /// macOS's `/Volumes/<disk>` and the data volume pass the depth rule; a mount point is
    /// refused by its device, however the path reaches it: as named, through `..`, through a
    /// link to it named with a trailing slash (which `lstat` follows), and by `plan check`.
    #[test]
    fn a_mount_point_is_refused_however_the_path_reaches_it() {
        let mounts = deep_mount_points();
        if mounts.is_empty() {
            eprintln!("skipped: no mount point two folders below the root on this machine");
            return;
        }
        let (_tmp, root) = tree();
        for mount in mounts {
            let name = mount.file_name().unwrap().to_owned();
            let link = root.join(format!("link-to-{}", name.to_string_lossy()));
            symlink(&mount, &link).unwrap();
            let ways = [mount.clone(), mount.join("..").join(&name), PathBuf::from(format!("{}/", link.display()))];
            for dir in ways {
                let why = Protected::default().refusal(&dir).unwrap_or_else(|| panic!("{} must be refused", dir.display()));
                let by = if dir.starts_with(&root) { "symbolic link" } else { "the root of a disk or mount point" };
                assert!(why.contains(by) || why.contains("the root of a disk or mount point"), "{}: {why}", dir.display());
                assert!(Protected::default().check(&dir).is_some_and(|w| w == why), "{}", dir.display());
                // Reached only once the refusal is in place: nothing is deleted.
                assert!(matches!(clear(&dir, &Protected::default()), Err(ClearError::Refused { .. })), "{}", dir.display());
            }
        }
    }

    #[test]
    fn another_disk_inside_the_cache_folder_stops_the_walk() {
        let (_tmp, root) = tree();
        let cache = root.join("cache");
        fill(&cache);
        let os::Opened::Folder(folder) = os::open(&cache).unwrap() else { panic!("a folder") };
        let dev = id_of(&cache).unwrap().dev;
        // The walk's disk rule, on a tree whose every folder is on another disk than asked.
        let err = walk(&folder, &cache, Some(dev.wrapping_add(1)), 0, false, &mut Cleared::default());
        assert!(matches!(err, Err(Stop::Refused(why)) if why.contains("another disk or mount point")));
        assert!(matches!(walk(&folder, &cache, Some(dev), 0, false, &mut Cleared::default()), Ok(())));
    }

    #[test]
    fn a_tree_deeper_than_the_bound_is_refused_before_anything_goes() {
        let (_tmp, root) = tree();
        let cache = root.join("cache");
        fill(&cache);
        let mut deep = cache.clone();
        for _ in 0..MAX_DEPTH {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap();
        let err = clear(&cache, &Protected::default()).unwrap_err();
        assert!(err.to_string().contains(&format!("nested more than {MAX_DEPTH} deep")), "{err}");
        assert!(cache.join("a.bin").exists() && deep.exists(), "nothing deleted");
        assert!(Protected::default().check(&cache).is_some_and(|why| why.contains("nested")));
    }

    #[test]
    fn macos_data_volume_paths_count_as_the_root_and_the_home_they_alias() {
        for dir in ["/System/Volumes/Data", "/System/Volumes/Data/Users", "/System/Volumes/Data/private/tmp"] {
            let why = Protected::default().refusal(Path::new(dir)).unwrap_or_else(|| panic!("{dir} must be refused"));
            assert!(why.contains("root or a folder right under it"), "{dir}: {why}");
        }
        let home = Protected::default().with_above(Path::new("/Users/alice"), "your home folder");
        let why = home.refusal(Path::new("/System/Volumes/Data/Users/alice")).unwrap();
        assert!(why.starts_with("it is your home folder"), "{why}");
    }
}
