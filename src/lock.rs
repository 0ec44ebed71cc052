//! Exclusive file locks between orchestra processes (e.g. two merges into one target).

use std::fs::File;
use std::path::Path;

/// Blocks until this process holds the lock file at `path` (created if missing). The lock
/// lasts as long as the returned file is open, and ends with the process however it ends.
pub fn exclusive(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = File::create(path)?;
    file.lock()?;
    Ok(file)
}
