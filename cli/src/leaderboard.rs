//! A leaderboard over any number of passes, a slice at a time: each pass's rows come from its
//! `leaderboard.cache` where that still matches the raw files here
//! (`benchpass_format::leaderboard_cache`), and otherwise from its raw runs, which then rewrite
//! the cache (where the folder may be written). Memory holds one slice of passes, never all:
//! the CSV is streamed.

pub mod parquet;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use analysis::leaderboard::{csv_of, ROWS_VERSION};
use anyhow::Context as _;
use harness::pass::leaderboard_cache::{self, Cached, Parts, Stamp};
use harness::pass::store::read_passes_keeping;

/// How many passes are read at once: enough to keep every core busy on raw runs, few enough
/// that their runs fit in a small part of memory.
const SLICE: usize = 512;

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Work every pass's rows out from its raw runs, and say which caches disagreed.
    pub verify: bool,
}

/// What a leaderboard read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub passes: usize,
    /// Rows taken from a matching cache.
    pub from_cache: usize,
    /// Rows worked out from the raw runs.
    pub from_runs: usize,
    /// Caches rewritten.
    pub caches_written: usize,
    /// Passes whose cache matched the stamp but not the rows worked out again (`--verify`).
    pub disagreed: Vec<PathBuf>,
}

/// One pass's rows, as the leaderboard CSV holds them and typed (`leaderboard.cache` says
/// both), each where the reader asked for it ([`Parts`]).
pub struct PassRows<'a> {
    pub dir: &'a Path,
    /// Empty where the typed rows alone were asked for and came from the cache.
    pub rows: &'a [u8],
    /// `analysis::leaderboard::typed`'s bytes; empty where the rows could not be typed, or
    /// where the CSV rows alone were asked for and came from the cache.
    pub typed: &'a [u8],
}

/// Hands each pass's rows to `sink`, in the order of `dirs`, after saying what of its runs
/// could not be read. A pass id seen twice is an error (a row is keyed on it).
pub fn for_each_pass(
    dirs: &[PathBuf],
    options: Options,
    mut sink: impl FnMut(PassRows<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<Tally> {
    for_each_pass_prepared(dirs, options, Parts::Rows, || (), |_, _| (), |pass, ()| sink(pass))
}

/// As [`for_each_pass`], with `prepare` run over each pass's rows on every core before `sink`
/// takes the pass and what `prepare` made of it, in the order of `dirs`: the work on a pass
/// that needs nothing of the passes before it (parsing its rows) is not left to the one
/// thread that runs `sink`. Each worker has a `state` of its own, kept from pass to pass.
///
/// A slice of passes is read and prepared on a thread of its own while `sink` takes the slice
/// before it: no core waits for the other's part. Two slices are in memory at most, the one
/// `sink` takes and the one being read. Of a cache, only the `parts` asked for are read
/// (`--verify` compares, and so reads, both).
pub fn for_each_pass_prepared<S, T: Send>(
    dirs: &[PathBuf],
    options: Options,
    parts: Parts,
    state: impl Fn() -> S + Sync,
    prepare: impl Fn(&mut S, PassRows<'_>) -> T + Sync,
    mut sink: impl FnMut(PassRows<'_>, T) -> anyhow::Result<()>,
) -> anyhow::Result<Tally> {
    for dir in dirs {
        if let Some(message) = harness::pass::listing::not_a_pass(dir) {
            anyhow::bail!(message);
        }
    }
    let (state, prepare) = (&state, &prepare);
    let mut seen = HashSet::new();
    std::thread::scope(|scope| {
        // A rendezvous: the reader hands a slice over only when `sink` has taken the one before.
        let (slices, read) = std::sync::mpsc::sync_channel(0);
        let reader = std::thread::Builder::new()
            .name("leaderboard reader".to_owned())
            .spawn_scoped(scope, move || {
                let mut tally = Tally::default();
                for slice in dirs.chunks(SLICE) {
                    let passes = read_slice(slice, options, parts, state, prepare, &mut tally);
                    let failed = passes.is_err();
                    // The caller has stopped (an error of its own) or this read failed.
                    if slices.send(passes).is_err() || failed {
                        break;
                    }
                }
                tally
            })
            .context("starting the leaderboard's reading thread")?;
        for slice in dirs.chunks(SLICE) {
            // Nothing more only where the reader panicked: its join below says so.
            let Ok(passes) = read.recv() else { break };
            for (dir, (cached, prepared)) in slice.iter().zip(passes?) {
                crate::warn_notes(dir, &cached.damage);
                anyhow::ensure!(
                    seen.insert(cached.pass_id.clone()),
                    "{}: pass id `{}` appears twice; a leaderboard row is keyed on it",
                    dir.display(),
                    cached.pass_id
                );
                sink(PassRows { dir, rows: &cached.rows, typed: &cached.typed }, prepared)?;
            }
        }
        drop(read);
        let mut tally = reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        tally.passes = dirs.len();
        tally.from_cache = tally.passes - tally.from_runs;
        Ok(tally)
    })
}

/// The passes of `slice`, each with its rows and what `prepare` made of them: from its cache
/// where that matches, and otherwise from its raw runs (rewriting its cache), counted in
/// `tally`.
fn read_slice<S, T: Send>(
    slice: &[PathBuf],
    options: Options,
    parts: Parts,
    state: &(impl Fn() -> S + Sync),
    prepare: &(impl Fn(&mut S, PassRows<'_>) -> T + Sync),
    tally: &mut Tally,
) -> anyhow::Result<Vec<(Cached, T)>> {
    // What --verify compares is the whole cache.
    let parts = if options.verify { Parts::Both } else { parts };
    // A cache is prepared where it is read, on the same worker.
    let read = in_parallel(slice, state, |state, dir| {
        let cached = leaderboard_cache::read(dir, ROWS_VERSION, parts).ok()?;
        let prepared = prepare(state, PassRows { dir, rows: &cached.rows, typed: &cached.typed });
        Some((cached, prepared))
    });
    let (mut found, mut prepared): (Vec<Option<Cached>>, Vec<Option<T>>) =
        read.into_iter().map(|r| r.map_or((None, None), |(c, p)| (Some(c), Some(p)))).unzip();
    let from_runs: Vec<usize> = (0..slice.len())
        .filter(|&i| options.verify || found[i].is_none())
        .collect();
    let worked_out = work_out(slice, &from_runs)?;
    for (i, made) in from_runs.iter().zip(worked_out) {
        let dir = &slice[*i];
        tally.from_runs += 1;
        let disagrees = found[*i].as_ref().is_some_and(|c| *c != made.cached);
        if disagrees {
            tally.disagreed.push(dir.clone());
        }
        if found[*i].is_none() || disagrees {
            // A folder that may not be written still reads: the rows are here either way.
            if let Some(stamp) = &made.stamp {
                let c = &made.cached;
                if leaderboard_cache::write(dir, stamp, ROWS_VERSION, c).unwrap_or(false) {
                    tally.caches_written += 1;
                }
            }
            // What was prepared from the cache is not of these rows.
            prepared[*i] = None;
        }
        found[*i] = Some(made.cached);
    }
    let unprepared: Vec<usize> = (0..slice.len()).filter(|&i| prepared[i].is_none()).collect();
    let late = in_parallel(&unprepared, state, |state, &i| {
        let cached = found[i].as_ref().expect("every pass is cached or worked out");
        prepare(state, PassRows { dir: &slice[i], rows: &cached.rows, typed: &cached.typed })
    });
    for (i, p) in unprepared.into_iter().zip(late) {
        prepared[i] = Some(p);
    }
    Ok(found
        .into_iter()
        .zip(prepared)
        .map(|(cached, prepared)| {
            (
                cached.expect("every pass is cached or worked out"),
                prepared.expect("every pass is prepared"),
            )
        })
        .collect())
}

/// Rows worked out from raw runs, and the stamp of the files they came from.
struct Made {
    cached: Cached,
    /// `None` where the files could not be stamped (no cache is written then).
    stamp: Option<Stamp>,
}

/// The rows of `slice[i]` for each `i` of `which`, from their raw runs.
fn work_out(slice: &[PathBuf], which: &[usize]) -> anyhow::Result<Vec<Made>> {
    if which.is_empty() {
        return Ok(Vec::new());
    }
    let dirs: Vec<PathBuf> = which.iter().map(|&i| slice[i].clone()).collect();
    // Stamped before reading: a write after the stamp is a new stamp, and no cache is written.
    let stamps: Vec<Option<Stamp>> = dirs.iter().map(|d| Stamp::of(d).ok()).collect();
    let passes = read_passes_keeping(&dirs, analysis::runs::events_the_figures_read)?;
    // Ids are checked in order by the caller; two alike in one slice must not mix their runs
    // before that (the figures are grouped by pass id), so they are worked out apart.
    let ids: HashSet<&str> = passes.iter().map(|p| p.info.pass_id.as_str()).collect();
    let steps = if ids.len() == passes.len() {
        analysis::cells::summarize_many(&passes)?
    } else {
        passes
            .iter()
            .map(analysis::cells::summarize)
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok(passes
        .iter()
        .zip(steps)
        .zip(stamps)
        .map(|((pass, steps), stamp)| {
            let rows = analysis::leaderboard::rows(&steps);
            Made {
                cached: Cached {
                    pass_id: pass.info.pass_id.clone(),
                    damage: harness::pass::damage_notes(&pass.damage, pass.torn_tail.as_ref()),
                    typed: analysis::leaderboard::typed::encoded(&rows),
                    rows: csv_of(rows),
                },
                stamp,
            }
        })
        .collect())
}

/// The rows of the pass in `dir` worked out from its raw runs, their text as recorded (the CSV
/// guards it against spreadsheets when it writes it).
fn raw_rows(dir: &Path) -> anyhow::Result<Vec<analysis::leaderboard::Row>> {
    let passes = read_passes_keeping(&[dir.to_owned()], analysis::runs::events_the_figures_read)?;
    let pass = passes.first().context("one pass read")?;
    Ok(analysis::leaderboard::rows(&analysis::cells::summarize(pass)?))
}

/// `f` over `items` on every core, in order; each worker thread has a `state` of its own.
fn in_parallel<T: Sync, S, R: Send>(
    items: &[T],
    state: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    if items.is_empty() {
        return Vec::new();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut state = state();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(&mut state, item);
                    results.lock().expect("no worker panics holding the lock")[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("workers have ended")
        .into_iter()
        .map(|r| r.expect("every item was done"))
        .collect()
}

/// The leaderboard CSV of `dirs` written to `out` as it is read: the header, then each pass's
/// rows.
pub fn write_csv(
    dirs: &[PathBuf],
    options: Options,
    out: &mut impl Write,
) -> anyhow::Result<Tally> {
    out.write_all(&analysis::leaderboard::csv_header())
        .context("writing the leaderboard")?;
    for_each_pass(dirs, options, |pass| {
        out.write_all(pass.rows).context("writing the leaderboard")
    })
}

/// Every row of `dirs`, parsed (for the Markdown and JSON forms, which rank or key them).
pub fn rows(
    dirs: &[PathBuf],
    options: Options,
) -> anyhow::Result<(Vec<analysis::leaderboard::Row>, Tally)> {
    let mut all = Vec::new();
    let tally = for_each_pass(dirs, options, |pass| {
        let rows = analysis::leaderboard::parse_csv_rows(pass.rows).with_context(|| {
            format!(
                "{}: rows that are not the leaderboard's",
                pass.dir.display()
            )
        })?;
        all.extend(rows);
        Ok(())
    })?;
    Ok((all, tally))
}

/// Writes the `leaderboard.cache` of the pass in `dir` from its raw runs: what `benchpass run`
/// does when a pass ends, so that the first leaderboard over it reads no run. `Ok(false)`: the
/// raw files changed while it was worked out, and nothing was written.
pub fn write_cache(dir: &Path) -> anyhow::Result<bool> {
    let dirs = [dir.to_owned()];
    let made = work_out(&dirs, &[0])?.pop().expect("one pass worked out");
    let Some(stamp) = &made.stamp else {
        return Ok(false);
    };
    leaderboard_cache::write(dir, stamp, ROWS_VERSION, &made.cached)
        .with_context(|| format!("writing {}", dir.join(leaderboard_cache::CACHE_FILE).display()))
}
