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
