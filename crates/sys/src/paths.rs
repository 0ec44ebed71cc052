//! Where orchestra keeps its files, and how it writes them: everything under
//! `$ORCHESTRA_HOME` is the user's alone (folders 0700, files 0600) whatever the umask,
//! because it holds prompts, briefings and screens that may quote secrets.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// No home folder to be had: orchestra will not guess one in a folder other users share.
#[derive(Debug, thiserror::Error)]
#[error("HOME is not set: set HOME or ORCHESTRA_HOME (orchestra does not guess a shared folder such as /tmp)")]
pub struct NoHome;

/// `$ORCHESTRA_HOME`, else `${XDG_STATE_HOME:-~/.local/state}/orchestra`.
pub fn orchestra_home() -> Result<PathBuf, NoHome> {
    if let Some(home) = non_empty_env("ORCHESTRA_HOME") {
        return Ok(PathBuf::from(home));
    }
    if let Some(state) = non_empty_env("XDG_STATE_HOME") {
        return Ok(Path::new(&state).join("orchestra"));
    }
    Ok(user_home()?.join(".local/state/orchestra"))
}

/// `$HOME`; unset or empty is an error, never a guess.
pub fn user_home() -> Result<PathBuf, NoHome> {
    non_empty_env("HOME").map(PathBuf::from).ok_or(NoHome)
}

/// The folder holding one session's own files (hook settings, logs).
pub fn session_dir(home: &Path, session_id: &str) -> PathBuf {
    home.join("sessions").join(session_id)
}

pub fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// What orchestra (and a person: `agents.toml`, `prompts/`) puts in its home: what
/// [`secure_home`] tightens, and nothing else (the home may be a folder of the person's).
const HOME_ENTRIES: &[&str] = &[
    "state.db",
    "state.db-wal",
    "state.db-shm",
    "state.db-journal",
    "sessions",
    "cache",
    "logs",
    "briefings",
    "spool",
    "inbox",
    "merges",
    "locks",
    "runs",
    "collect",
    "dependencies",
    "allowed",
    "agent-versions.json",
    "disagreements",
    "prompts",
    "agents.toml",
    "prices.toml",
];

/// Makes an existing home that others may read (left by an older orchestra, or made by
/// hand) private: the home 0700, and orchestra's own entries in it 0700/0600, links not
/// followed. Quiet (a hook or a status job has nowhere to say it) and cheap after the
/// first time: one `stat` while the home is private. A missing home is left to the
/// first write, which makes it private.
pub fn secure_home(home: &Path) {
    let Ok(meta) = std::fs::metadata(home) else {
        return;
    };
    if !meta.is_dir() || meta.permissions().mode() & 0o077 == 0 {
        return;
    }
    for name in HOME_ENTRIES {
        tighten_tree(&home.join(name));
    }
    // The home last: a run stopped half-way is finished by the next one.
    let _ = std::fs::set_permissions(home, Permissions::from_mode(0o700));
}

/// Takes group and other bits off `path` and, for a folder, everything under it. Best
/// effort: what cannot be changed (another owner's file) stays as it is.
fn tighten_tree(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() {
        return;
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        let _ = std::fs::set_permissions(path, Permissions::from_mode(mode & !0o077));
    }
    if meta.is_dir() {
        if let Ok(entries) = std::fs::read_dir(path) {
            for entry in entries.flatten() {
                tighten_tree(&entry.path());
            }
        }
    }
}

/// Makes folder `path` and its missing parents, each 0700 whatever the umask. An existing
/// folder is left as it is.
pub fn private_dir(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        private_dir(parent)?;
    }
    match new_private_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.is_dir() => Ok(()),
        result => result,
    }
}

/// Makes folder `path`, 0700 whatever the umask; an error if it exists already (its
/// parent must exist).
pub fn new_private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().mode(0o700).create(path)?;
    // The umask may have taken bits away; give the owner all of them back.
    std::fs::set_permissions(path, Permissions::from_mode(0o700))
}

/// Opens `path` with `options`, a new file 0600 whatever the umask and an existing one
/// brought to 0600, its folder made with [`private_dir`]. Every file orchestra writes
/// under its home is opened here.
pub fn open_private(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        private_dir(dir)?;
    }
    let file = options.mode(0o600).open(path)?;
    let mode = file.metadata()?.permissions().mode() & 0o7777;
    if mode != 0o600 {
        // Best effort: a file of another owner keeps its mode and is still written.
        let _ = file.set_permissions(Permissions::from_mode(0o600));
    }
    Ok(file)
}

/// Writes `contents` to `path` (created or truncated) through [`open_private`].
pub fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let mut file = open_private(
        path,
        OpenOptions::new().write(true).create(true).truncate(true),
    )?;
    file.write_all(contents.as_ref())
}

/// Writes `contents` to `path` whole or not at all: a private temp file beside it, renamed
/// over it, so a reader never sees half a file.
pub fn replace_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = write_private(&tmp, contents).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A log grows to about this before it is rotated.
pub const LOG_MAX_BYTES: u64 = 1024 * 1024;

/// Opens the log at `path` for appending through [`open_private`]. A log past
/// [`LOG_MAX_BYTES`] is first renamed `<name>.1` (replacing the one before), so a log
/// and its one predecessor together stay near twice that.
pub fn open_log(path: &Path) -> std::io::Result<File> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > LOG_MAX_BYTES) {
        let mut rotated = path.as_os_str().to_owned();
        rotated.push(".1");
        let _ = std::fs::rename(path, rotated);
    }
    open_private(path, OpenOptions::new().create(true).append(true))
}

/// The program `name` resolves to: a path containing `/` as given, else the first
/// executable of that name on `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// "size:mtime-nanos" of the file at `path`, or `None` when it does not exist: changes
/// whenever the file is rewritten.
pub fn file_stamp(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(format!("{}:{mtime}", meta.len()))
}

/// `$ORCHESTRA_HOME/briefings`: the text of each briefing, `<session id>-<label>-<time>.txt`.
pub fn briefings_dir(home: &Path) -> PathBuf {
    home.join("briefings")
}

/// Sandboxed session `id`'s drop folder: what its hooks and `orchestra done` inside its
/// box leave for the record (the engine's `inbox`).
pub fn inbox_dir(home: &Path, id: &str) -> PathBuf {
    home.join("inbox").join(id)
}

/// What the home keeps of session `id` alone, removed with it (a kill, a merge, `down`,
/// doctor): its folder, its drop folder and its briefings.
pub fn remove_session_files(home: &Path, id: &str) {
    let _ = std::fs::remove_dir_all(session_dir(home, id));
    let _ = std::fs::remove_dir_all(inbox_dir(home, id));
    let prefix = format!("{id}-");
    if let Ok(entries) = std::fs::read_dir(briefings_dir(home)) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Removes the files in `dir` last modified before `cutoff` (seconds since the epoch).
pub fn remove_older(dir: &Path, cutoff: i64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_file() && modified_secs(&path).is_some_and(|at| at < cutoff) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The files in `dir` whose extension is `extension`, sorted by name (names that start
/// with a time sort oldest first); none when `dir` cannot be read.
pub fn files_ending(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

/// When `path` was last modified, in seconds since the epoch; `None` when it is not there.
pub fn modified_secs(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_secs()).ok()
}

/// "a, b, c, d, e and 3 more": a list of paths short enough for one message line.
pub fn short_list(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .map(|p| crate::inert::line(p))
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

/// A short stable hash of `text` (FNV-1a, 64 bits, hex): the same across runs and
/// releases, unlike std's hasher. For file names, not for security.
pub fn stable_hash(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn folders_and_files_are_made_private_and_loose_files_tightened() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a/b/c.json");
        write_private(&file, "x").unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&root.path().join("a/b")), 0o700);
        assert_eq!(mode(&file), 0o600);
        std::fs::set_permissions(&file, Permissions::from_mode(0o644)).unwrap();
        replace_private(&file, "y").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "y");
        let loose = root.path().join("loose");
        std::fs::write(&loose, "z").unwrap();
        std::fs::set_permissions(&loose, Permissions::from_mode(0o666)).unwrap();
        open_private(&loose, OpenOptions::new().append(true)).unwrap();
        assert_eq!(mode(&loose), 0o600);
    }

    #[test]
    fn a_log_is_rotated_past_its_limit_keeping_one() {
        let root = tempfile::tempdir().unwrap();
        let log = root.path().join("logs/x.log");
        open_log(&log).unwrap().write_all(b"first\n").unwrap();
        open_log(&log).unwrap().write_all(b"second\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "first\nsecond\n");
        let big = vec![b'x'; LOG_MAX_BYTES as usize + 1];
        std::fs::write(&log, &big).unwrap();
        open_log(&log).unwrap().write_all(b"third\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "third\n");
        assert_eq!(
            std::fs::read(root.path().join("logs/x.log.1")).unwrap(),
            big
        );
    }
}
