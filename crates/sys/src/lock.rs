//! Exclusive file locks between orchestra processes (e.g. two merges into one target).

use std::fs::{File, OpenOptions};
use std::path::Path;

/// Blocks until this process holds the lock file at `path` (created, private, if missing).
/// The lock lasts as long as the returned file is open, and ends with the process however
/// it ends.
pub fn exclusive(path: &Path) -> std::io::Result<File> {
    let file = crate::paths::open_private(path, OpenOptions::new().write(true).create(true))?;
    file.lock()?;
    Ok(file)
}

/// This process's hold of the lock file at `path` if no other process holds it now;
/// `Ok(None)` when one does.
pub fn try_exclusive(path: &Path) -> std::io::Result<Option<File>> {
    let file = crate::paths::open_private(path, OpenOptions::new().write(true).create(true))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Whether another process holds the lock file at `path` now. Never creates it: a
/// missing file is a free lock.
pub fn is_held(path: &Path) -> bool {
    match File::open(path) {
        // Free now: the lock is released at once, its real taker takes it for real.
        Ok(file) => file.try_lock().is_err(),
        Err(_) => false,
    }
}

/// The lock every command that makes or takes apart sessions (their worktrees, branches,
/// windows and rows) holds shared while it runs. `doctor --fix` holds it exclusively, so
/// what it finds half-made is the remnant of a process that died, never the work of one
/// still running. A process killed part-way releases it with its other files.
pub fn work_shared(home: &Path) -> std::io::Result<File> {
    let file = open(&work_lock_path(home))?;
    file.lock_shared()?;
    Ok(file)
}

/// The exclusive side of [`work_shared`]; `Ok(None)` when it is held elsewhere and `wait`
/// is false.
pub fn work_exclusive(home: &Path, wait: bool) -> std::io::Result<Option<File>> {
    let file = open(&work_lock_path(home))?;
    if wait {
        file.lock()?;
        return Ok(Some(file));
    }
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Held by the orchestra that closes a session's window itself (merge, kill), from before
/// the window goes until the record says what became of the session: a refresh or a pane
/// hook that finds the window gone meanwhile knows it is no agent that exited. In the
/// session's own folder, which goes with the session; released however the process ends.
pub fn closing(home: &Path, id: &str) -> std::io::Result<File> {
    exclusive_in_place(&closing_path(home, id))
}

/// Whether an orchestra is closing session `id`'s window now ([`closing`]).
pub fn is_closing(home: &Path, id: &str) -> bool {
    is_held(&closing_path(home, id))
}

fn closing_path(home: &Path, id: &str) -> std::path::PathBuf {
    crate::paths::session_dir(home, id).join("closing.lock")
}

/// [`exclusive`], its folder made first if missing.
fn exclusive_in_place(path: &Path) -> std::io::Result<File> {
    let file = open(path)?;
    file.lock()?;
    Ok(file)
}

fn work_lock_path(home: &Path) -> std::path::PathBuf {
    home.join("locks").join("work.lock")
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        crate::paths::private_dir(dir)?;
    }
    crate::paths::open_private(
        path,
        OpenOptions::new().create(true).truncate(false).write(true),
    )
}
