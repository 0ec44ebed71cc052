//! A dispatched worktree made ready to work, and taken down: the `[worktree]` table of
//! orchestra.toml. Copies and links go in before the agent starts; the setup and teardown
//! commands run as children with a deadline, each in a process group of its own that is
//! killed whole when the deadline passes.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use crate::git::{GitError, Repo};
use crate::manifest::{ManifestError, WorktreeTable};
use crate::process::{Output, ProcessError, Run};
use crate::state::Session;

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(transparent)]
    Manifest(Box<ManifestError>),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl From<WorktreeError> for crate::error::Error {
    fn from(e: WorktreeError) -> crate::error::Error {
        use crate::error::Error;
        match e {
            WorktreeError::Manifest(m) => Error::Manifest(m),
            WorktreeError::Git(g) => g.into(),
            WorktreeError::Io { context, source } => Error::Io { context, source },
        }
    }
}

impl From<ManifestError> for WorktreeError {
    fn from(e: ManifestError) -> WorktreeError {
        WorktreeError::Manifest(Box::new(e))
    }
}

/// The `[worktree]` table of the repo whose main worktree is `main`, and the file it is
/// in; `None` when the repo has no orchestra.toml.
pub fn table(main: &Path) -> Result<Option<(PathBuf, WorktreeTable)>, ManifestError> {
    let path = crate::manifest::default_path(main);
    if !path.exists() {
        return Ok(None);
    }
    let manifest = crate::manifest::load(&path)?;
    Ok(Some((path, manifest.worktree)))
}

/// The environment setup and teardown run with (on top of orchestra's own): the session,
/// its port, its worktree and the repo's main worktree.
pub fn command_env(session: &Session) -> Vec<(String, String)> {
    let mut env = vec![
        ("ORCHESTRA_SESSION".to_string(), session.id.clone()),
        ("ORCHESTRA_WORKTREE".to_string(), session.worktree.clone()),
        ("ORCHESTRA_REPO".to_string(), session.repo.clone()),
    ];
    if let Some(port) = session.port {
        env.push(("ORCHESTRA_PORT".to_string(), port.to_string()));
    }
    env
}

/// Refuses (before anything is made) a `copy` or `symlink` path of the main worktree that
/// leads out of it through a link on its way (`data -> /elsewhere`, then `data/x`).
pub fn check_sources(
    main: &Path,
    manifest: &Path,
    table: &WorktreeTable,
) -> Result<(), WorktreeError> {
    let root = main.canonicalize().unwrap_or_else(|_| main.to_path_buf());
    for (key, rel) in entries(table) {
        let Some(parent) = Path::new(rel).parent() else {
            continue;
        };
        let Ok(real) = main.join(parent).canonicalize() else {
            // Not there (yet): nothing to copy or link, said at dispatch.
            continue;
        };
        if !real.starts_with(&root) {
            return Err(crate::manifest::error_in(
                manifest,
                "[worktree]",
                &format!("{rel:?}"),
                format!(
                    "worktree.{key} {rel:?} escapes the repo: its folder is {}",
                    real.display()
                ),
            )
            .into());
        }
    }
    Ok(())
}

fn entries(table: &WorktreeTable) -> impl Iterator<Item = (&'static str, &str)> {
    let copies = table.copy.iter().map(|p| ("copy", p.as_str()));
    let links = table.symlink.iter().map(|p| ("symlink", p.as_str()));
    copies.chain(links)
}

/// Copies and links the table's paths from the main worktree `main` into the fresh
/// worktree `worktree`. Returns notes for what was skipped (missing in the main worktree,
/// or there already). A path git would track or show as a change, or whose folder in the
/// checkout is a link, is refused with its place in `manifest`: the caller undoes the
/// worktree.
pub fn place(
    main: &Path,
    worktree: &Path,
    manifest: &Path,
    table: &WorktreeTable,
) -> Result<Vec<String>, WorktreeError> {
    let mut notes = Vec::new();
    for (key, rel_text) in entries(table) {
        let rel = clean(rel_text);
        let source = main.join(&rel);
        let refuse = |why: String| -> WorktreeError {
            crate::manifest::error_in(
                manifest,
                "[worktree]",
                &format!("{rel_text:?}"),
                format!("worktree.{key} {rel_text:?} {why}"),
            )
            .into()
        };
        let link = key == "symlink";
        let Ok(meta) = std::fs::metadata(&source) else {
            notes.push(format!(
                "worktree.{key}: {rel_text} is not in the main worktree: skipped"
            ));
            continue;
        };
        if let Some(why) = Repo::placement_problem(worktree, &rel, !link && meta.is_dir())? {
            return Err(refuse(why));
        }
        let how = if link { Put::Link } else { Put::Copy };
        match put(worktree, &rel, &source, how)? {
            Placed::Done => {}
            Placed::ThroughLink(at) => {
                return Err(refuse(format!(
                    "escapes the worktree: {} is a link in the checkout",
                    at.display()
                )))
            }
            Placed::There => notes.push(format!(
                "worktree.{key}: {rel_text} is in the worktree already (.worktreeinclude?): left as it is"
            )),
        }
    }
    Ok(notes)
}

/// Copies into the fresh worktree `worktree` the gitignored files of the main worktree
/// that its `.worktreeinclude` lists (e.g. `.env`), each placed by [`put`]. Returns notes
/// for what was not copied: what the checkout tracks or has there already, what its
/// branch does not ignore (a copy would become the session's change, its WIP commit),
/// and what a link in the checkout would lead out of the worktree.
pub fn copy_includes(repo: &Repo, worktree: &Path) -> Result<Vec<String>, WorktreeError> {
    let mut notes = Vec::new();
    for rel in repo.worktree_includes()? {
        let shown = rel.display();
        if let Some(why) = Repo::placement_problem(worktree, &rel, false)? {
            notes.push(format!(".worktreeinclude: {shown} {why}: not copied"));
            continue;
        }
        match put(worktree, &rel, &repo.main_worktree().join(&rel), Put::CopyContent)? {
            Placed::Done => {}
            Placed::ThroughLink(at) => notes.push(format!(
                ".worktreeinclude: {shown} not copied: {} is a link in the checkout, which would lead out of the worktree",
                at.display()
            )),
            Placed::There => notes.push(format!(
                ".worktreeinclude: {shown} is in the worktree already: left as it is"
            )),
        }
    }
    Ok(notes)
}

/// How [`put`] places a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Put {
    /// A file or folder copied whole; a link stays a link.
    Copy,
    /// A file's content, read through a link in the main worktree (`.env -> ~/secrets`).
    CopyContent,
    Link,
}

/// What [`put`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placed {
    Done,
    /// Something is at the path already (a link included, which a copy would write
    /// through): left as it is.
    There,
    /// This folder on the way is a link (a tracked one): nothing was written.
    ThroughLink(PathBuf),
}

/// THE one way a file or folder of the main worktree goes into a new worktree: `source`
/// copied (or linked) to `rel` inside `worktree`, writing nothing outside it. Every
/// folder on the way must be a real folder of the worktree (made here when missing,
/// one at a time, never through a link), and nothing may be at the path itself: the
/// copy is created exclusively (`O_EXCL` does not follow a link there), a link with
/// `symlink`, which never replaces.
fn put(worktree: &Path, rel: &Path, source: &Path, how: Put) -> Result<Placed, WorktreeError> {
    let io = |what: &str, at: &Path| {
        let context = format!("{what} {}", at.display());
        move |source| WorktreeError::Io { context, source }
    };
    let mut at = worktree.to_path_buf();
    for part in rel.parent().into_iter().flat_map(Path::components) {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Ok(Placed::ThroughLink(at)),
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Ok(Placed::There),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&at).map_err(io("creating", &at))?;
            }
            Err(e) => return Err(io("reading", &at)(e)),
        }
    }
    let target = worktree.join(rel);
    let placed = match how {
        Put::Link => std::os::unix::fs::symlink(source, &target),
        Put::Copy => copy_tree(source, &target),
        Put::CopyContent => copy_file(source, &target),
    };
    match placed {
        Ok(()) => Ok(Placed::Done),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Placed::There),
        Err(e) => Err(io(
            if how == Put::Link {
                "linking"
            } else {
                "copying to"
            },
            &target,
        )(e)),
    }
}

/// The content of the file `from` (read through links) as a new file `to`: created
/// exclusively, so a link already at `to` is never written through.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut reader = std::fs::File::open(from)?;
    let mode = reader.metadata()?.permissions();
    let mut writer = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    std::io::copy(&mut reader, &mut writer)?;
    writer.set_permissions(mode)
}

/// `a/./b/` as `a/b`.
fn clean(rel: &str) -> PathBuf {
    Path::new(rel)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect()
}

/// A file or a folder copied whole to `to`, which must not exist (a link there is not
/// followed); links inside stay links.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        return std::os::unix::fs::symlink(std::fs::read_link(from)?, to);
    }
    if !meta.is_dir() {
        return copy_file(from, to);
    }
    std::fs::create_dir(to)?;
    std::fs::set_permissions(to, meta.permissions())?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}

/// A command to run with a deadline.
pub struct Job<'a> {
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
    pub timeout: Duration,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signalled(i32),
    /// The deadline passed: its process group was killed.
    TimedOut(Duration),
    NotStarted(String),
}

impl Ended {
    pub fn ok(&self) -> bool {
        *self == Ended::Exited(0)
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Exited(code) => write!(f, "exit status {code}"),
            Ended::Signalled(libc::SIGINT) => write!(f, "interrupted (Ctrl-C)"),
            Ended::Signalled(libc::SIGHUP) => write!(f, "hung up (its window closed)"),
            Ended::Signalled(signal) => write!(f, "killed by signal {signal}"),
            Ended::TimedOut(limit) => write!(
                f,
                "still running after {}: stopped with its process group",
                crate::duration::spell(*limit)
            ),
            Ended::NotStarted(why) => write!(f, "could not start: {why}"),
        }
    }
}

/// Runs `job` on this process's terminal, visibly: its output goes where ours goes, and
/// when we are the terminal's foreground job it becomes that job while it runs (so a
/// Ctrl-C stops it, a program that asks can read the answer, and a closed window hangs
/// it up), then hands the terminal back.
pub fn run_in_terminal(job: &Job<'_>) -> Ended {
    ended(
        job,
        runner(job)
            .stdin_inherit()
            .inherit_output()
            .foreground()
            .finish(),
    )
    .0
}

/// How much of a captured job's output is kept: its end, where the error usually is.
pub const OUTPUT_KEPT: usize = 64 * 1024;

/// Runs `job` with no terminal (stdin empty), its stdout and stderr captured together:
/// how it ended, and the last [`OUTPUT_KEPT`] bytes it printed.
pub fn run_captured(job: &Job<'_>) -> (Ended, String) {
    ended(
        job,
        runner(job).merge_output().keep_tail(OUTPUT_KEPT).finish(),
    )
}

/// How long a job's process group has between SIGTERM and SIGKILL at its deadline.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// A job runs in a process group of its own, killed whole at its deadline: SIGTERM, then
/// SIGKILL after [`TERM_GRACE`].
fn runner(job: &Job<'_>) -> Run {
    Run::new(&job.argv[0], job.timeout)
        .args(&job.argv[1..])
        .cwd(job.cwd)
        .envs(job.env)
        .own_group()
        .term_grace(TERM_GRACE)
}

fn ended(job: &Job<'_>, run: Result<Output, ProcessError>) -> (Ended, String) {
    use std::os::unix::process::ExitStatusExt;
    let output = match run {
        Ok(output) => output,
        Err(ProcessError::Spawn { source, .. }) => {
            return (
                Ended::NotStarted(format!("{}: {source}", job.argv[0])),
                String::new(),
            )
        }
        Err(e) => return (Ended::NotStarted(e.to_string()), String::new()),
    };
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let ended = match output.status {
        None => Ended::TimedOut(job.timeout),
        Some(status) => match (status.code(), status.signal()) {
            (Some(code), _) => Ended::Exited(code),
            (None, Some(signal)) => Ended::Signalled(signal),
            (None, None) => Ended::Exited(-1),
        },
    };
    (ended, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn nothing_is_placed_through_a_link_at_the_path_or_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let (wt, outside) = (dir.path().join("wt"), dir.path().join("outside"));
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let source = dir.path().join("secret");
        std::fs::write(&source, "SECRET\n").unwrap();
        // A link at the path, dangling: a plain copy would create its target.
        std::os::unix::fs::symlink(outside.join("made"), wt.join(".env")).unwrap();
        // A linked folder on the way.
        std::os::unix::fs::symlink(&outside, wt.join("config")).unwrap();
        for how in [Put::Copy, Put::CopyContent, Put::Link] {
            assert_eq!(
                put(&wt, Path::new(".env"), &source, how).unwrap(),
                Placed::There
            );
            assert_eq!(
                put(&wt, Path::new("config/deep/.env"), &source, how).unwrap(),
                Placed::ThroughLink(wt.join("config"))
            );
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        // A fresh path: its folders made, the file copied.
        assert_eq!(
            put(&wt, Path::new("a/b/.env"), &source, Put::CopyContent).unwrap(),
            Placed::Done
        );
        assert_eq!(
            std::fs::read_to_string(wt.join("a/b/.env")).unwrap(),
            "SECRET\n"
        );
    }

    fn job<'a>(argv: &'a [String], timeout: Duration) -> Job<'a> {
        Job {
            argv,
            cwd: Path::new("/"),
            env: &[],
            timeout,
        }
    }

    fn words(line: &str) -> Vec<String> {
        shell_words::split(line).unwrap()
    }

    #[test]
    fn a_captured_job_keeps_the_end_of_its_output_and_its_status() {
        let argv = words("sh -c 'echo to-out; echo to-err >&2; exit 3'");
        let (ended, output) = run_captured(&job(&argv, Duration::from_secs(10)));
        assert_eq!(ended, Ended::Exited(3));
        assert!(
            output.contains("to-out") && output.contains("to-err"),
            "{output}"
        );
        // Megabytes: only the end is kept.
        let argv = words("sh -c 'yes 0123456789 | head -c 3000000; echo THE-END'");
        let (ended, output) = run_captured(&job(&argv, Duration::from_secs(20)));
        assert!(ended.ok(), "{ended}");
        assert!(output.len() <= OUTPUT_KEPT, "{}", output.len());
        assert!(output.ends_with("THE-END\n"));
        let argv = words("no-such-program-here");
        let (ended, _) = run_captured(&job(&argv, Duration::from_secs(5)));
        assert!(matches!(ended, Ended::NotStarted(_)), "{ended:?}");
    }

    #[test]
    fn a_job_past_its_deadline_is_killed_with_its_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("grandchild.pid");
        // The grandchild ignores SIGTERM: only the SIGKILL to the group ends it.
        let argv = vec![
            "sh".to_string(),
            "-c".into(),
            "sh -c 'trap \"\" TERM; echo $$ > \"$1\"; while :; do sleep 1; done' g \"$1\" & wait"
                .into(),
            "s".into(),
            pid_file.to_string_lossy().into_owned(),
        ];
        let started = Instant::now();
        let (ended, _) = run_captured(&job(&argv, Duration::from_secs(1)));
        assert_eq!(ended, Ended::TimedOut(Duration::from_secs(1)));
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            !Path::new(&format!("/proc/{}", pid.trim())).exists()
                || std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
                    .is_ok_and(|s| s.contains(") Z "))
        });
        assert!(gone, "the grandchild {pid} outlived its group's deadline");
    }
}
