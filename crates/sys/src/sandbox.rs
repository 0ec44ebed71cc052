//! bubblewrap: the argv that runs a command in a box (a read-only view of the system,
//! what the caller names hidden, readable or writable, namespaces of its own), and the
//! probe that says whether `bwrap` runs here at all. What a session's box needs is the
//! engine's to say; this module only says how.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use orchestra_model::sandbox::Network;

/// The program.
pub const BWRAP: &str = "bwrap";

/// Folders every box sees empty, whatever the caller adds: where people keep homes,
/// per-user runtime folders (agents, keyrings, the session bus) and scratch files.
pub const ALWAYS_HIDDEN: &[&str] = &[
    "/home", "/root", "/tmp", "/var/tmp", "/run", "/mnt", "/media", "/srv",
];

/// One mount of a box, at the path's own place inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// An empty, private folder over it (a tmpfs): nothing of what is there is seen.
    Hide(PathBuf),
    /// Seen, read-only.
    Read(PathBuf),
    /// Seen and writable: what is written there is written outside.
    Write(PathBuf),
    /// The folder `from` seen writable at `at` (a copy shown where the original lies).
    WriteAt { from: PathBuf, at: PathBuf },
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Mount::Hide(p) | Mount::Read(p) | Mount::Write(p) | Mount::WriteAt { at: p, .. } => p,
        }
    }
}

/// What a box is made of.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Besides [`ALWAYS_HIDDEN`]. Applied shallowest path first, so a folder hidden and
    /// one inside it then bound shows only that one.
    pub mounts: Vec<Mount>,
    pub network: Network,
    /// `Some`: the environment inside is exactly this (`--clearenv`, then each set); the
    /// values are on bwrap's command line, so nothing secret goes here. `None`: bwrap's
    /// own environment passes through, for a starter that cleared it itself.
    pub env: Option<Vec<(String, String)>>,
    /// The working folder inside.
    pub cwd: PathBuf,
}

/// The argv that runs `command` in the box `spec` describes: bwrap's, then `command`.
/// Paths are taken as given where they do not exist (bwrap then refuses them), their
/// real paths where they do (a link bound would be followed by the kernel anyway).
pub fn argv(spec: &Spec, command: &[String]) -> Vec<String> {
    let mut words: Vec<String> = vec![BWRAP.into(), "--ro-bind".into(), "/".into(), "/".into()];
    words.extend(["--dev", "/dev", "--proc", "/proc"].map(String::from));
    let mut mounts: Vec<Mount> = ALWAYS_HIDDEN
        .iter()
        .map(|p| Mount::Hide(PathBuf::from(p)))
        .chain(spec.mounts.iter().cloned())
        .map(|m| match m {
            Mount::Hide(p) => Mount::Hide(real(&p)),
            Mount::Read(p) => Mount::Read(real(&p)),
            Mount::Write(p) => Mount::Write(real(&p)),
            Mount::WriteAt { from, at } => Mount::WriteAt {
                from: real(&from),
                at: real(&at),
            },
        })
        // A folder that is not there has nothing to hide; a file is not hidden by a tmpfs.
        .filter(|m| !matches!(m, Mount::Hide(p) if !p.is_dir()))
        .collect();
    // Stable: at one depth, the caller's order.
    mounts.sort_by_key(|m| m.path().components().count());
    mounts.dedup();
    for m in &mounts {
        let path = m.path().to_string_lossy().into_owned();
        match m {
            Mount::Hide(_) => words.extend(["--tmpfs".to_string(), path]),
            Mount::Read(_) => words.extend(["--ro-bind".to_string(), path.clone(), path]),
            Mount::Write(_) => words.extend(["--bind".to_string(), path.clone(), path]),
            Mount::WriteAt { from, .. } => {
                words.extend([
                    "--bind".to_string(),
                    from.to_string_lossy().into_owned(),
                    path,
                ]);
            }
        }
    }
    words.push("--unshare-all".into());
    if spec.network == Network::On {
        words.push("--share-net".into());
    }
    // Killing bwrap (or the window) ends everything inside: the box's first process
    // dies with it, and the rest with the box's process namespace.
    words.push("--die-with-parent".into());
    if let Some(env) = &spec.env {
        words.push("--clearenv".into());
        for (k, v) in env {
            words.extend(["--setenv".to_string(), k.clone(), v.clone()]);
        }
    }
    words.extend([
        "--chdir".to_string(),
        spec.cwd.to_string_lossy().into_owned(),
    ]);
    words.push("--".into());
    words.extend(command.iter().cloned());
    words
}

fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Why no box can be made here.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SandboxError {
    #[error("bubblewrap (bwrap) is not installed: install it (apt install bubblewrap, dnf install bubblewrap) or dispatch without --sandbox")]
    Missing,
    #[error("bubblewrap (bwrap) cannot make a sandbox here ({0}): user namespaces may be off (sysctl kernel.unprivileged_userns_clone) or this system not Linux")]
    CannotRun(String),
}

/// Whether `bwrap` runs a box here (a read-only root, every namespace of its own): asked
/// once per process.
pub fn probe() -> Result<(), SandboxError> {
    static PROBED: OnceLock<Result<(), SandboxError>> = OnceLock::new();
    PROBED.get_or_init(probe_now).clone()
}

fn probe_now() -> Result<(), SandboxError> {
    if !cfg!(target_os = "linux") {
        return Err(SandboxError::CannotRun("bubblewrap needs Linux".into()));
    }
    if crate::paths::find_program(BWRAP).is_none() {
        return Err(SandboxError::Missing);
    }
    let output = crate::process::Run::new(BWRAP, Duration::from_secs(10))
        .args(["--ro-bind", "/", "/", "--unshare-all", "true"])
        .cap(8 * 1024)
        .output()
        .map_err(|e| SandboxError::CannotRun(e.to_string()))?;
    if output.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let line = said.lines().next().unwrap_or("it failed").trim();
    Err(SandboxError::CannotRun(orchestra_model::inert::cut(
        line, 120,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mounts: Vec<Mount>, network: Network) -> Spec {
        Spec {
            mounts,
            network,
            env: Some(vec![("TERM".into(), "xterm".into())]),
            cwd: PathBuf::from("/nowhere/w"),
        }
    }

    #[test]
    fn a_box_hides_homes_then_binds_what_it_was_given_deepest_last() {
        let words = argv(
            &spec(
                vec![
                    Mount::Write(PathBuf::from("/nowhere/w/x/y")),
                    Mount::Read(PathBuf::from("/nowhere/bin/tool")),
                    Mount::WriteAt {
                        from: PathBuf::from("/nowhere/copy"),
                        at: PathBuf::from("/nowhere/person/.tool"),
                    },
                ],
                Network::Off,
            ),
            &["agent".into(), "--go".into()],
        );
        let text = words.join(" ");
        assert!(
            text.starts_with("bwrap --ro-bind / / --dev /dev --proc /proc"),
            "{text}"
        );
        assert!(text.contains("--tmpfs /tmp"), "{text}");
        assert!(text.contains("--tmpfs /root"), "{text}");
        let read = text.find("--ro-bind /nowhere/bin/tool").unwrap();
        let write = text.find("--bind /nowhere/w/x/y /nowhere/w/x/y").unwrap();
        assert!(read < write, "the deeper path last: {text}");
        assert!(
            text.contains("--bind /nowhere/copy /nowhere/person/.tool"),
            "{text}"
        );
        assert!(text.contains("--unshare-all --die-with-parent"), "{text}");
        assert!(!text.contains("--share-net"), "{text}");
        assert!(text.contains("--clearenv --setenv TERM xterm"), "{text}");
        assert!(text.ends_with("--chdir /nowhere/w -- agent --go"), "{text}");
    }

    #[test]
    fn a_file_read_only_inside_a_writable_folder_inside_a_read_only_one_is_bound_last() {
        // A repository's git folder: read-only, its branch's folder writable, another
        // session's ref in it read-only again, whatever order the caller named them in.
        let words = argv(
            &spec(
                vec![
                    Mount::Read(PathBuf::from("/nowhere/r/.git/refs/heads/s/other")),
                    Mount::Write(PathBuf::from("/nowhere/r/.git/refs/heads/s")),
                    Mount::Read(PathBuf::from("/nowhere/r/.git")),
                ],
                Network::Off,
            ),
            &["agent".into()],
        );
        let text = words.join(" ");
        let git = text
            .find("--ro-bind /nowhere/r/.git /nowhere/r/.git")
            .unwrap();
        let heads = text
            .find("--bind /nowhere/r/.git/refs/heads/s /nowhere/r/.git/refs/heads/s")
            .unwrap();
        let other = text
            .find("--ro-bind /nowhere/r/.git/refs/heads/s/other /nowhere/r/.git/refs/heads/s/other")
            .unwrap();
        assert!(git < heads && heads < other, "{text}");
    }

    #[test]
    fn the_network_on_is_the_hosts_and_a_cleared_environment_is_only_when_asked() {
        let mut s = spec(Vec::new(), Network::On);
        s.env = None;
        let words = argv(&s, &["a".into()]);
        assert!(words.contains(&"--share-net".to_string()));
        assert!(!words.contains(&"--clearenv".to_string()));
    }
}
