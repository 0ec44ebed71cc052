//! Where orchestra keeps its files.

use std::path::{Path, PathBuf};

/// `$ORCHESTRA_HOME`, else `${XDG_STATE_HOME:-~/.local/state}/orchestra`.
pub fn orchestra_home() -> PathBuf {
    if let Some(home) = non_empty_env("ORCHESTRA_HOME") {
        return PathBuf::from(home);
    }
    if let Some(state) = non_empty_env("XDG_STATE_HOME") {
        return Path::new(&state).join("orchestra");
    }
    let home = non_empty_env("HOME").unwrap_or_else(|| "/tmp".into());
    Path::new(&home).join(".local/state/orchestra")
}

/// The folder holding one session's own files (hook settings, logs).
pub fn session_dir(home: &Path, session_id: &str) -> PathBuf {
    home.join("sessions").join(session_id)
}

pub fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The program `name` resolves to: a path containing `/` as given, else the first
/// executable of that name on `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
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
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Some(format!("{}:{mtime}", meta.len()))
}

/// A short stable hash of `text` (FNV-1a, 64 bits, hex): the same across runs and
/// releases, unlike std's hasher. For file names, not for security.
pub fn stable_hash(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    format!("{hash:016x}")
}
