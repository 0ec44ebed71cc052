//! What a run leaves under `$ORCHESTRA_HOME`: its folder of reports in `runs/`, and the
//! stamp `--if-due` reads in `cache/`.

use std::path::{Path, PathBuf};

use super::{Failure, Kind, SyncError};

fn stamp(home: &Path, kind: Kind) -> PathBuf {
    home.join("cache").join(format!("last-{}", kind.command()))
}

/// Seconds since the last run of `kind` started; None when there was none. No daemon
/// keeps the interval: cron or a tmux hook may call `--if-due` often.
pub fn last_run_age(home: &Path, kind: Kind) -> Option<i64> {
    std::fs::metadata(stamp(home, kind))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .map(|d| d.as_secs() as i64)
}

/// Makes this run's folder and marks the run as started (for `--if-due`).
pub fn start_run(home: &Path, kind: Kind) -> Result<PathBuf, SyncError> {
    let run_dir = make_run_dir(&home.join("runs"))?;
    let stamp = stamp(home, kind);
    crate::paths::write_private(&stamp, b"").map_err(|source| SyncError::Io {
        context: format!("writing {}", stamp.display()),
        source,
    })?;
    Ok(run_dir)
}

/// `runs/<YYYYmmdd-HHMMSS>`, made now; a second run within the same second gets `-2`.
fn make_run_dir(runs: &Path) -> Result<PathBuf, SyncError> {
    let failed = |dir: &Path| {
        let context = format!("creating {}", dir.display());
        move |source| SyncError::Io { context, source }
    };
    crate::paths::private_dir(runs).map_err(failed(runs))?;
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
    let mut n = 1;
    loop {
        let dir = match n {
            1 => runs.join(&stamp),
            _ => runs.join(format!("{stamp}-{n}")),
        };
        match crate::paths::new_private_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(failed(&dir)(e)),
        }
    }
}

pub(super) fn write_text(path: &Path, text: &str) -> std::io::Result<()> {
    let mut text = text.trim_end().to_string();
    text.push('\n');
    crate::paths::write_private(path, text)
}

/// Keeps what a failed agent said next to the reports; the progress line shows only its
/// last line.
pub(super) fn save_failure(run_dir: &Path, stem: &str, failure: &Failure) -> Option<PathBuf> {
    if failure.detail.trim().is_empty() {
        return None;
    }
    let path = run_dir.join(format!("{stem}.failed.txt"));
    let text = format!("{}\n\n{}", failure.reason, failure.detail);
    write_text(&path, &text).ok().map(|()| path)
}
