//! Syncing `runs.jsonl` to disk on a thread of its own.
//!
//! The task that appends a finished run also polls the streams of the runs still in flight.
//! An fsync on a busy disk takes tens of milliseconds, and every token that arrived meanwhile
//! was timestamped that much late: with 4 concurrent streams and another process writing to
//! the disk, decode rates came out 7–26 % low. A line is written at once (a crash of benchpass
//! loses nothing written), and this thread makes it durable moments later (a crash of the
//! machine loses at most the runs of the last few milliseconds).

use std::fs::File;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

pub struct Syncer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Syncs asked for, and syncs done (each covers every request made before it started).
    wanted: u64,
    synced: u64,
    /// The first sync that failed and has not been reported yet.
    failure: Option<io::Error>,
    closing: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Syncer {
    /// Syncs `file` (a handle on the file being appended to) whenever asked, until dropped.
    pub fn start(file: File) -> io::Result<Syncer> {
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), changed: Condvar::new() });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("runs-sync".into()).spawn(move || sync_when_asked(&file, &worker))?;
        Ok(Syncer { shared, thread: Some(thread) })
    }

    /// Asks for everything written so far to reach the disk; returns at once.
    pub fn request(&self) {
        self.shared.lock().wanted += 1;
        self.shared.changed.notify_all();
    }

    /// The error of a sync that failed since it was last asked, if any.
    pub fn take_failure(&self) -> Option<io::Error> {
        self.shared.lock().failure.take()
    }

    /// Waits until everything asked for so far is on disk.
    pub fn wait(&self) -> io::Result<()> {
        let mut state = self.shared.lock();
        while state.synced < state.wanted {
            state = self.shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.failure.take().map_or(Ok(()), Err)
    }
}

impl Drop for Syncer {
    /// Finishes the syncs asked for, then stops the thread.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn sync_when_asked(file: &File, shared: &Shared) {
    let mut state = shared.lock();
    loop {
        while state.synced == state.wanted && !state.closing {
            state = shared.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.synced == state.wanted {
            return;
        }
        let covers = state.wanted;
        drop(state);
        let result = file.sync_data();
        state = shared.lock();
        if let Err(e) = result {
            state.failure.get_or_insert(e);
        }
        state.synced = covers;
        shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn what_was_asked_for_is_synced_by_wait_and_by_drop() {
        let dir = std::env::temp_dir().join(format!("benchpass-syncer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("runs.jsonl");
        let mut file = File::create(&path).unwrap();
        let syncer = Syncer::start(file.try_clone().unwrap()).unwrap();
        for line in 0..100 {
            writeln!(file, "{line}").unwrap();
            syncer.request();
        }
        syncer.wait().unwrap();
        {
            let state = syncer.shared.lock();
            assert_eq!(state.synced, state.wanted);
        }
        writeln!(file, "last").unwrap();
        syncer.request();
        drop(syncer);
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("99\nlast\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
