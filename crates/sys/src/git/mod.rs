//! The ONLY module that uses git2 (and the git CLI, for the one job it does faster: checking
//! out a new worktree). Worktrees, branches, dirty checks, WIP commits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::{ProcessError, Run};

mod merge;
mod radar;
mod remote;
mod submodule;

use git2::{BranchType, Repository, StatusOptions};

pub use merge::{CommitInfo, FileChange, Landed, Merged, Review};
pub use radar::{Changed, Checked, Scratch, Side, WorktreeRead};
pub use remote::PUSH_DEADLINE;
pub use submodule::{submodule_work, KeptSubmodule, SubmoduleWork};

pub use git2::Oid;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{0} is not inside a git repository")]
    NotARepo(PathBuf),
    #[error("{0} is a bare repository: orchestra needs a main worktree to branch from")]
    Bare(PathBuf),
    #[error("the repository has no commit yet: commit something first")]
    NoCommits,
    #[error("unknown revision {0:?}")]
    BadRevision(String),
    #[error("branch {0} already exists")]
    BranchExists(String),
    #[error("git was not found on PATH")]
    CliMissing,
    /// A worktree's submodule whose `.git` names a repository outside this one.
    #[error("submodule {path} has its repository at {}, outside this repository: nothing was committed or removed (point it back with `git submodule absorbgitdirs`, or take the worktree apart by hand)", git_dir.display())]
    ForeignSubmodule { path: String, git_dir: PathBuf },
    #[error("git {command}: {message}")]
    Cli { command: String, message: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Git2(#[from] git2::Error),
    /// git did not finish by its deadline, or printed without end: it was killed.
    #[error(transparent)]
    Process(ProcessError),
}

/// The start of the reflog message of a branch made for a session; the session id follows.
const MADE_FOR: &str = "orchestra: made for session ";

/// What a folder at a session's worktree path is instead of its worktree
/// ([`Repo::not_worktree_of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stranger {
    #[error("is not a git worktree")]
    NotAWorktree,
    #[error("belongs to another repository (its git dir is {})", .0.display())]
    OtherRepository(PathBuf),
    #[error("is not where this repository records its worktree {0}")]
    Unregistered(String),
    #[error("has {0} checked out")]
    OtherBranch(String),
}

/// What [`Repo::fast_forward`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FastForward {
    Moved {
        from: Oid,
    },
    AlreadyThere,
    /// Not moved: this many commits are the branch's own.
    OwnCommits(usize),
    /// Not moved: these paths have uncommitted changes.
    Uncommitted(Vec<String>),
}

pub struct Repo {
    repo: Repository,
    main_worktree: PathBuf,
}

impl Repo {
    /// The repository containing `dir`, seen from its main worktree (a linked worktree
    /// resolves to the repository it belongs to).
    pub fn discover(dir: &Path) -> Result<Repo, GitError> {
        let found = Repository::discover(dir).map_err(|_| GitError::NotARepo(dir.to_path_buf()))?;
        if found.is_bare() {
            return Err(GitError::Bare(dir.to_path_buf()));
        }
        let repo = if found.is_worktree() {
            // A linked worktree's git dir is `<common>/worktrees/<name>/`.
            let common = found
                .path()
                .parent()
                .and_then(Path::parent)
                .ok_or_else(|| GitError::NotARepo(dir.to_path_buf()))?
                .to_path_buf();
            Repository::open(&common)?
        } else {
            found
        };
        let workdir = repo
            .workdir()
            .ok_or_else(|| GitError::Bare(dir.to_path_buf()))?;
        let main_worktree = workdir
            .canonicalize()
            .unwrap_or_else(|_| workdir.to_path_buf());
        Ok(Repo {
            repo,
            main_worktree,
        })
    }

    pub fn main_worktree(&self) -> &Path {
        &self.main_worktree
    }

    /// The repository's own git folder (the common one every worktree shares).
    pub fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// The git folder git keeps for this repository's linked worktree at `path`
    /// (`<git dir>/worktrees/<name>/`), found from the repository's own list of them,
    /// never from the worktree's `.git` file: a sandboxed agent can rewrite that file to
    /// lead to a git folder of its own making, whose config would run its commands here.
    pub fn worktree_admin(&self, path: &Path) -> Option<PathBuf> {
        let want = path.canonicalize().ok()?;
        let names = self.repo.worktrees().ok()?;
        names.iter().flatten().find_map(|name| {
            let wt = self.repo.find_worktree(name).ok()?;
            let at = wt.path().canonicalize().ok()?;
            (at == want).then(|| self.repo.path().join("worktrees").join(name))
        })
    }

    /// git run in the worktree at `path` (the main one or a linked one of this
    /// repository), its git folder named from the repository ([`Repo::worktree_admin`]),
    /// with git's ways of running a command of the folder's choosing turned off
    /// ([`HARDENED`]): what a session's agent wrote in its worktree runs nothing here.
    fn worktree_git(&self, path: &Path) -> Result<Run, GitError> {
        let run = Run::new("git", GIT_DEADLINE).args(HARDENED);
        if path.canonicalize().ok().as_deref() == Some(self.main_worktree.as_path()) {
            return Ok(run.arg("-C").arg(&self.main_worktree));
        }
        let admin = self
            .worktree_admin(path)
            .ok_or_else(|| GitError::NotARepo(path.to_path_buf()))?;
        let mut git_dir = std::ffi::OsString::from("--git-dir=");
        git_dir.push(&admin);
        let mut work_tree = std::ffi::OsString::from("--work-tree=");
        work_tree.push(path);
        Ok(run
            .arg("-C")
            .arg(path)
            .arg(git_dir)
            .arg(work_tree)
            // What the worktree's own `commondir` says is not asked either.
            .env("GIT_COMMON_DIR", self.repo.path()))
    }

    /// The key sessions are recorded under: the main worktree's canonical path.
    pub fn id(&self) -> String {
        self.main_worktree.to_string_lossy().into_owned()
    }

    /// The folder name of the main worktree.
    pub fn name(&self) -> String {
        self.main_worktree
            .file_name()
            .map_or_else(|| "repo".into(), |n| n.to_string_lossy().into_owned())
    }

    /// The commit `rev` names, or the main worktree's HEAD commit.
    pub fn resolve_commit(&self, rev: Option<&str>) -> Result<Oid, GitError> {
        match rev {
            Some(rev) => self
                .repo
                .revparse_single(rev)
                .and_then(|o| o.peel_to_commit())
                .map(|c| c.id())
                .map_err(|_| GitError::BadRevision(rev.to_string())),
            None => self
                .repo
                .head()
                .and_then(|h| h.peel_to_commit())
                .map(|c| c.id())
                .map_err(|_| GitError::NoCommits),
        }
    }

    /// The branch checked out in the main worktree, if any (detached HEAD: none).
    pub fn current_branch(&self) -> Option<String> {
        let head = self.repo.head().ok()?;
        head.is_branch()
            .then(|| head.shorthand().map(str::to_string))
            .flatten()
    }

    pub fn branch_exists(&self, name: &str) -> bool {
        self.repo.find_branch(name, BranchType::Local).is_ok()
    }

    /// Creates `branch` at `base` for session `session_id` and checks it out in a new
    /// worktree at `path`. On failure nothing of it remains. The branch's first reflog
    /// entry names the session ([`Repo::branch_made_for`]): what `doctor` goes by when a
    /// dispatch died before recording it.
    pub fn add_worktree(
        &self,
        path: &Path,
        branch: &str,
        base: Oid,
        session_id: &str,
    ) -> Result<(), GitError> {
        self.repo.find_commit(base)?;
        // The check, the branch and its worktree under one lock: of two processes making
        // the same branch, the second is told it exists (libgit2 alone lets both "create"
        // it, and the loser's undo would then delete the winner's branch).
        let _lock = self.worktree_lock()?;
        if self.branch_exists(branch) {
            return Err(GitError::BranchExists(branch.to_string()));
        }
        self.repo.reference(
            &format!("refs/heads/{branch}"),
            base,
            false,
            &format!("{MADE_FOR}{session_id}"),
        )?;
        crate::fault::point("dispatch");
        // The git CLI checks out a large tree about 1.6x faster than libgit2 (bench/).
        let added = run_git(
            &self.main_worktree,
            &[
                "worktree",
                "add",
                "--quiet",
                &path.to_string_lossy(),
                branch,
            ],
        );
        if let Err(e) = added {
            let _ = self.delete_branch_unlocked(branch);
            return Err(e);
        }
        Ok(())
    }

    /// Removes the worktree at `path` (its files included) and its administrative entry.
    pub fn remove_worktree(&self, path: &Path) -> Result<(), GitError> {
        if path.exists() {
            self.git_cli(&["worktree", "remove", "--force", &path.to_string_lossy()])?;
        }
        self.prune_worktrees()
    }

    /// Drops administrative entries of worktrees whose folders are gone.
    pub fn prune_worktrees(&self) -> Result<(), GitError> {
        self.git_cli(&["worktree", "prune"]).map(|_| ())
    }

    /// Linked worktrees: (name, path, whether its folder still exists).
    pub fn linked_worktrees(&self) -> Result<Vec<(String, PathBuf, bool)>, GitError> {
        let names = self.repo.worktrees()?;
        let mut out = Vec::new();
        for name in names.iter().flatten() {
            // Listed, then removed by another process (a kill, a merge) before we look.
            let wt = match self.repo.find_worktree(name) {
                Ok(wt) => wt,
                Err(e) if e.code() == git2::ErrorCode::NotFound => continue,
                Err(e) => return Err(e.into()),
            };
            let path = wt.path().to_path_buf();
            let exists = path.exists();
            out.push((name.to_string(), path, exists));
        }
        Ok(out)
    }

    /// The session a branch was made for by [`Repo::add_worktree`], read from the oldest
    /// entry of its reflog (renames keep it); `None` for a branch orchestra did not make,
    /// or whose reflog is gone.
    pub fn branch_made_for(&self, branch: &str) -> Option<String> {
        self.branch_made(branch).map(|(id, _)| id)
    }

    /// [`Repo::branch_made_for`], with when (seconds since the epoch, git's own record of
    /// the moment): a branch made before the record began predates the record.
    pub fn branch_made(&self, branch: &str) -> Option<(String, i64)> {
        let reflog = self.repo.reflog(&format!("refs/heads/{branch}")).ok()?;
        let oldest = reflog.get(reflog.len().checked_sub(1)?)?;
        let id = oldest
            .message()?
            .strip_prefix(MADE_FOR)
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty())?;
        let at = oldest.committer().when().seconds();
        Some((id, at))
    }

    /// The `session/` branch made for session `id`, if one is.
    pub fn branch_made_for_session(&self, id: &str) -> Result<Option<(String, i64)>, GitError> {
        Ok(self
            .branches_with_prefix("session/")?
            .into_iter()
            .find_map(|b| {
                let (made_for, at) = self.branch_made(&b)?;
                (made_for == id).then_some((b, at))
            }))
    }

    /// Where `a` and `b` last met: the commit a session branch `a` started from on `b`.
    pub fn merge_base_of(&self, a: &str, b: &str) -> Result<Oid, GitError> {
        Ok(self
            .repo
            .merge_base(self.branch_tip(a)?, self.branch_tip(b)?)?)
    }

    /// How many commits of `branch` no other local branch has: the work only it keeps.
    pub fn commits_only_on(&self, branch: &str) -> Result<usize, GitError> {
        let tip = self.branch_tip(branch)?;
        let mut walk = self.repo.revwalk()?;
        walk.push(tip)?;
        for other in self.repo.branches(Some(BranchType::Local))? {
            let (other, _) = other?;
            if other.name()? == Some(branch) {
                continue;
            }
            if let Some(oid) = other.get().target() {
                walk.hide(oid)?;
            }
        }
        Ok(walk.count())
    }

    /// A branch name `archive/<stem>-<time>` (with `-2`, `-3`… if taken) that is free now.
    pub fn free_archive_name(&self, stem: &str) -> String {
        free_archive_name_in(&self.repo, stem)
    }

    /// Before the worktree at `path` goes: when its HEAD is detached (an agent mid-rebase,
    /// a `git checkout <sha>`), the commits it reaches that no branch does would become
    /// unreachable. They are kept on a new branch `archive/<label>-detached-<time>`.
    /// Returns that branch and how many commits only it holds; `None` when there was
    /// nothing to keep.
    pub fn keep_detached_work(
        &self,
        path: &Path,
        label: &str,
    ) -> Result<Option<(String, usize)>, GitError> {
        let worktree = Repository::open(path)?;
        if !worktree.head_detached()? {
            return Ok(None);
        }
        let head = worktree.head()?.peel_to_commit()?.id();
        self.keep_unreachable(
            head,
            &format!("{label}-detached"),
            &format!("orchestra: the detached HEAD of {}", path.display()),
        )
    }

    /// Keeps `commit` on a new branch `archive/<stem>-<time>` when no local branch reaches
    /// it (its commits would otherwise be lost to garbage collection). Returns that branch
    /// and how many commits only it holds; `None` when a branch reaches it already.
    pub fn keep_unreachable(
        &self,
        commit: Oid,
        stem: &str,
        why: &str,
    ) -> Result<Option<(String, usize)>, GitError> {
        let mut walk = self.repo.revwalk()?;
        walk.push(commit)?;
        for branch in self.repo.branches(Some(BranchType::Local))? {
            if let Some(oid) = branch?.0.get().target() {
                walk.hide(oid)?;
            }
        }
        let only_here = walk.count();
        if only_here == 0 {
            return Ok(None);
        }
        let name = self.free_archive_name(stem);
        self.repo
            .reference(&format!("refs/heads/{name}"), commit, false, why)?;
        Ok(Some((name, only_here)))
    }

    /// Why the folder at `path` is not this repository's registered linked worktree of
    /// `branch` (a worktree removed by hand and something else put in its place: another
    /// repository, a plain folder, another worktree or branch of this one); `None` when
    /// it is. A detached HEAD passes (an agent mid-rebase): its commits are kept.
    pub fn not_worktree_of(&self, path: &Path, branch: &str) -> Result<Option<Stranger>, GitError> {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        // No search upwards: a plain folder inside some repository is not that repository.
        let Ok(found) = Repository::open(path) else {
            return Ok(Some(Stranger::NotAWorktree));
        };
        let admin = canonical(found.path());
        // A linked worktree's git dir is `<common>/worktrees/<name>/`.
        let worktrees = canonical(self.repo.path()).join("worktrees");
        if !found.is_worktree() || admin.parent() != Some(worktrees.as_path()) {
            return Ok(Some(Stranger::OtherRepository(admin)));
        }
        let name = admin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let registered = match self.repo.find_worktree(&name) {
            Ok(wt) => canonical(wt.path()) == canonical(path),
            Err(_) => false,
        };
        if !registered {
            return Ok(Some(Stranger::Unregistered(name)));
        }
        match Repo::checked_out_branch(path)? {
            Some(other) if other != branch => Ok(Some(Stranger::OtherBranch(other))),
            _ => Ok(None),
        }
    }

    /// The commit checked out in the worktree at `path`.
    pub fn worktree_head(path: &Path) -> Result<Oid, GitError> {
        Ok(Repository::open(path)?.head()?.peel_to_commit()?.id())
    }

    /// Why `rel` (a path relative to the worktree root) cannot be placed into the fresh
    /// worktree at `worktree` by a copy or a link: `None` when it can. Placed files must be
    /// neither tracked (the checkout has them already) nor shown as changes: only a path
    /// git ignores stays out of the session's diff, its WIP commits and `git add -A`.
    /// `as_dir`: whether it will be a folder (a link is a file to git, whatever it points at).
    pub fn placement_problem(
        worktree: &Path,
        rel: &Path,
        as_dir: bool,
    ) -> Result<Option<String>, GitError> {
        let repo = Repository::open(worktree)?;
        let head = repo.head()?.peel_to_tree()?;
        if head.get_path(rel).is_ok() {
            return Ok(Some(
                "is tracked in git (the worktree has it checked out already)".into(),
            ));
        }
        // Asked before anything is placed there: libgit2 reads a missing path as a file,
        // and a trailing slash as a folder.
        let mut asked = rel.to_string_lossy().into_owned();
        if as_dir {
            asked.push('/');
        }
        if !repo.is_path_ignored(Path::new(&asked))? {
            let hint = if as_dir {
                ""
            } else {
                " (a symlink is a file to git: a pattern with a trailing slash does not match it)"
            };
            return Ok(Some(format!(
                "is not ignored by git, so it would show as the session's own change: add it to .gitignore{hint}"
            )));
        }
        Ok(None)
    }

    /// Moves the branch checked out at `worktree` forward to `to`, files and all, only as a
    /// fast-forward of a clean worktree: a branch with commits of its own is never moved.
    pub fn fast_forward(&self, worktree: &Path, to: Oid) -> Result<FastForward, GitError> {
        let from = Repo::worktree_head(worktree)?;
        if from == to {
            return Ok(FastForward::AlreadyThere);
        }
        let mut walk = self.repo.revwalk()?;
        walk.push(from)?;
        walk.hide(to)?;
        let own = walk.count();
        if own > 0 {
            return Ok(FastForward::OwnCommits(own));
        }
        let dirty = uncommitted_paths(worktree)?;
        if !dirty.is_empty() {
            return Ok(FastForward::Uncommitted(dirty));
        }
        git_output(
            self.worktree_git(worktree)?,
            &["merge", "--ff-only", "--quiet", &to.to_string()],
        )?;
        Ok(FastForward::Moved { from })
    }

    /// The branch checked out in the worktree at `path`; `None` when its HEAD is detached.
    pub fn checked_out_branch(path: &Path) -> Result<Option<String>, GitError> {
        let worktree = Repository::open(path)?;
        let head = worktree.find_reference("HEAD")?;
        Ok(head
            .symbolic_target()
            .and_then(|t| t.strip_prefix("refs/heads/"))
            .map(str::to_string))
    }

    pub fn delete_branch(&self, name: &str) -> Result<(), GitError> {
        // libgit2 1.8 takes a worktree it cannot read at this moment (one another process
        // is adding or removing) for one with the branch checked out, and refuses.
        let _lock = self.worktree_lock()?;
        self.delete_branch_unlocked(name)
    }

    fn delete_branch_unlocked(&self, name: &str) -> Result<(), GitError> {
        self.repo.find_branch(name, BranchType::Local)?.delete()?;
        Ok(())
    }

    pub fn rename_branch(&self, from: &str, to: &str) -> Result<(), GitError> {
        if self.branch_exists(to) {
            return Err(GitError::BranchExists(to.to_string()));
        }
        // A rename updates the worktrees' HEADs: the same reading of them as a delete.
        let _lock = self.worktree_lock()?;
        self.repo
            .find_branch(from, BranchType::Local)?
            .rename(to, false)?;
        Ok(())
    }

    pub fn branch_tip(&self, branch: &str) -> Result<Oid, GitError> {
        let b = self.repo.find_branch(branch, BranchType::Local)?;
        b.get()
            .target()
            .ok_or_else(|| git2::Error::from_str("branch has no target").into())
    }

    /// Local branches whose names start with `prefix`.
    pub fn branches_with_prefix(&self, prefix: &str) -> Result<Vec<String>, GitError> {
        let mut out = Vec::new();
        for branch in self.repo.branches(Some(BranchType::Local))? {
            let (branch, _) = branch?;
            if let Some(name) = branch.name()? {
                if name.starts_with(prefix) {
                    out.push(name.to_string());
                }
            }
        }
        Ok(out)
    }

    /// The gitignored files of the main worktree that match a pattern of its
    /// `.worktreeinclude` (gitignore syntax), e.g. `.env`, relative to it: what a new
    /// worktree gets a copy of (`worktree::copy_includes`).
    pub fn worktree_includes(&self) -> Result<Vec<PathBuf>, GitError> {
        let include = self.main_worktree.join(".worktreeinclude");
        if !include.is_file() {
            return Ok(Vec::new());
        }
        let listed = self.git_cli(&[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            &format!("--exclude-from={}", include.to_string_lossy()),
        ])?;
        let mut included = Vec::new();
        for rel in listed.split('\0').filter(|p| !p.is_empty()) {
            let rel = Path::new(rel);
            // Only what git ignores: tracked files are checked out already, and untracked
            // but unignored ones are someone's work in progress, not configuration.
            if self.repo.is_path_ignored(rel)? {
                included.push(rel.to_path_buf());
            }
        }
        Ok(included)
    }

    fn git_cli(&self, args: &[&str]) -> Result<String, GitError> {
        let _lock = match args.first() {
            Some(&"worktree") => Some(self.worktree_lock()?),
            _ => None,
        };
        run_git(&self.main_worktree, args)
    }

    /// Held while git's worktree commands run: each reads every worktree's admin folder,
    /// and one half made by a concurrent `worktree add` fails it ("failed to read
    /// .../commondir") or is pruned away. One at a time per repository.
    fn worktree_lock(&self) -> Result<std::fs::File, GitError> {
        crate::lock::exclusive(&self.repo.path().join("orchestra-worktrees.lock")).map_err(
            |source| GitError::Io {
                context: "locking the repository's worktrees".into(),
                source,
            },
        )
    }
}

/// A branch name `archive/<stem>-<time>` (with `-2`, `-3`… if taken) free in `repo`.
fn free_archive_name_in(repo: &Repository, stem: &str) -> String {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let mut name = format!("archive/{stem}-{stamp}");
    let mut n = 2;
    while repo.find_branch(&name, BranchType::Local).is_ok() {
        name = format!("archive/{stem}-{stamp}-{n}");
        n += 1;
    }
    name
}

/// The slowest git call orchestra makes is a `worktree add` checking out a whole tree
/// (minutes on a very large repository). One still running after this is not slow but
/// stuck (a lock another process holds, a filesystem that stopped answering).
pub const GIT_DEADLINE: Duration = Duration::from_secs(10 * 60);

/// What every git run in a worktree is given (`-c` passes on to the gits it starts, a
/// submodule's too): no file system monitor, no hooks, no submodule recursion — each a
/// command the repository's config (or a worktree's own) could name.
const HARDENED: &[&str] = &[
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "submodule.recurse=false",
    "--no-pager",
];

fn run_git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
    git_output(Run::new("git", GIT_DEADLINE).arg("-C").arg(dir), args)
}

/// git on the repository whose git dir is `git_dir`, named outright: a submodule's copy
/// under `.git/modules/` is a git dir with no worktree of its own around it, which
/// discovery (and `safe.bareRepository=explicit`) would not take.
fn run_git_dir(git_dir: &Path, args: &[&str]) -> Result<String, GitError> {
    let mut flag = std::ffi::OsString::from("--git-dir=");
    flag.push(git_dir);
    git_output(Run::new("git", GIT_DEADLINE).arg(flag), args)
}

fn git_output(run: Run, args: &[&str]) -> Result<String, GitError> {
    let output = run.args(args).output().map_err(git_process_error)?;
    if output.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(cli_error(args, &output.stderr))
    }
}

fn git_process_error(e: ProcessError) -> GitError {
    match e {
        e if e.not_found() => GitError::CliMissing,
        ProcessError::Spawn { source, .. } => GitError::Io {
            context: "running git".into(),
            source,
        },
        e => GitError::Process(e),
    }
}

fn cli_error(args: &[&str], stderr: &[u8]) -> GitError {
    GitError::Cli {
        command: args.iter().take(2).copied().collect::<Vec<_>>().join(" "),
        message: String::from_utf8_lossy(stderr).trim().to_string(),
    }
}

/// What git printed for a person to read, at most `cap` bytes of it (cut at a line's
/// end): `true` when it printed more. git stopped at the cap (its pipe closed) is not a
/// failure; it failing before is.
fn git_text(run: Run, args: &[&str], cap: usize) -> Result<(String, bool), GitError> {
    let output = run
        .args(args)
        .cap(cap)
        .finish()
        .map_err(git_process_error)?;
    if output.status.is_none() {
        return Err(GitError::Process(ProcessError::TimedOut {
            program: "git".into(),
            after: GIT_DEADLINE,
        }));
    }
    if !output.truncated && !output.success() {
        return Err(cli_error(args, &output.stderr));
    }
    let mut stdout = output.stdout;
    if output.truncated {
        let whole_lines = stdout
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        stdout.truncate(whole_lines);
    }
    Ok((
        String::from_utf8_lossy(&stdout).into_owned(),
        output.truncated,
    ))
}

/// Paths with uncommitted changes in the worktree at `path`: modified, staged, deleted and
/// untracked files; ignored files do not count.
pub fn uncommitted_paths(path: &Path) -> Result<Vec<String>, GitError> {
    let repo = Repository::open(path)?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter_map(|s| s.path().map(str::to_string))
        .collect())
}

/// Commits everything uncommitted in the worktree at `path` (untracked files included,
/// ignored ones not) to its checked-out branch.
pub fn commit_all(path: &Path, message: &str) -> Result<Oid, GitError> {
    let repo = Repository::open(path)?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let parent = repo.head()?.peel_to_commit()?;
    let signature = repo
        .signature()
        .or_else(|_| git2::Signature::now("orchestra", "orchestra@localhost"))?;
    Ok(repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        message,
        &tree,
        &[&parent],
    )?)
}

/// A commit holding everything uncommitted in the worktree at `path` (staged, unstaged and
/// untracked changes; ignored files not), its parent the worktree's HEAD, on no branch:
/// what a fork carries of its source's work. The worktree, its index and its refs are left
/// as they are (git adds to a copy of the index in a temporary folder). The HEAD itself
/// when nothing is uncommitted.
pub fn snapshot_commit(main: &Repo, path: &Path, message: &str) -> Result<Oid, GitError> {
    let repo = Repository::open(path)?;
    let head = repo.head()?.peel_to_commit()?;
    let scratch = std::env::temp_dir().join(format!(
        "orchestra-snapshot-{}-{}",
        std::process::id(),
        head.id()
    ));
    std::fs::create_dir_all(&scratch).map_err(|source| GitError::Io {
        context: format!("creating {}", scratch.display()),
        source,
    })?;
    let result = (|| -> Result<Oid, GitError> {
        let index = scratch.join("index");
        let real = repo.path().join("index");
        if real.exists() {
            std::fs::copy(&real, &index).map_err(|source| GitError::Io {
                context: format!("copying {}", real.display()),
                source,
            })?;
        }
        let git = |args: &[&str]| {
            git_output(main.worktree_git(path)?.env("GIT_INDEX_FILE", &index), args)
        };
        git(&["add", "--all", "--", "."])?;
        let tree = Oid::from_str(git(&["write-tree"])?.trim())?;
        if tree == head.tree_id() {
            return Ok(head.id());
        }
        let tree = repo.find_tree(tree)?;
        let signature = repo
            .signature()
            .or_else(|_| git2::Signature::now("orchestra", "orchestra@localhost"))?;
        Ok(repo.commit(None, &signature, &signature, message, &tree, &[&head])?)
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// What keeps the worktree at `path` from being taken as it stands: a merge, rebase,
/// cherry-pick or bisect under way in it.
pub fn operation_in_progress(path: &Path) -> Result<Option<String>, GitError> {
    let repo = Repository::open(path)?;
    Ok(match repo.state() {
        git2::RepositoryState::Clean => None,
        other => Some(format!("{other:?}").to_lowercase()),
    })
}

/// `git --version`'s text, e.g. "git version 2.47.3".
pub fn cli_version() -> Result<String, GitError> {
    run_git(Path::new("."), &["--version"]).map(|v| v.trim().to_string())
}

/// What an artifact locator names once found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactKind {
    File,
    Branch,
    Commit,
}

impl ArtifactKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::File => "file",
            ArtifactKind::Branch => "branch",
            ArtifactKind::Commit => "commit",
        }
    }
}

/// Splits a `file:`/`branch:`/`commit:` prefix off a locator.
pub fn artifact_kind(locator: &str) -> (Option<ArtifactKind>, &str) {
    for (prefix, kind) in [
        ("file:", ArtifactKind::File),
        ("branch:", ArtifactKind::Branch),
        ("commit:", ArtifactKind::Commit),
    ] {
        if let Some(rest) = locator.strip_prefix(prefix) {
            return (Some(kind), rest);
        }
    }
    (None, locator)
}

impl Repo {
    /// Whether `locator` exists for an upstream session (its worktree and branch), tried
    /// as a file (in the worktree or committed on the branch), a branch, then a commit
    /// reachable from the branch or `target` — unless a prefix forces the kind.
    pub fn find_artifact(
        &self,
        locator: &str,
        worktree: &Path,
        branch: &str,
        target: Option<&str>,
    ) -> Result<Option<ArtifactKind>, GitError> {
        let (forced, name) = artifact_kind(locator);
        let wants = |k: ArtifactKind| forced.is_none_or(|f| f == k);
        if wants(ArtifactKind::File) && self.file_artifact(name, worktree, branch) {
            return Ok(Some(ArtifactKind::File));
        }
        if wants(ArtifactKind::Branch) && self.branch_exists(name) {
            return Ok(Some(ArtifactKind::Branch));
        }
        if wants(ArtifactKind::Commit)
            && name.len() >= 4
            && name.chars().all(|c| c.is_ascii_hexdigit())
        {
            if let Ok(commit) = self
                .repo
                .revparse_single(name)
                .and_then(|o| o.peel_to_commit())
            {
                for tip_branch in std::iter::once(branch).chain(target) {
                    if let Ok(tip) = self.branch_tip(tip_branch) {
                        if tip == commit.id()
                            || self
                                .repo
                                .graph_descendant_of(tip, commit.id())
                                .unwrap_or(false)
                        {
                            return Ok(Some(ArtifactKind::Commit));
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    fn file_artifact(&self, name: &str, worktree: &Path, branch: &str) -> bool {
        let rel = Path::new(name);
        let rel = rel.strip_prefix(worktree).unwrap_or(rel);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return false;
        }
        if worktree.join(rel).exists() {
            return true;
        }
        self.branch_tip(branch)
            .ok()
            .and_then(|tip| self.repo.find_commit(tip).ok())
            .and_then(|c| c.tree().ok())
            .is_some_and(|tree| tree.get_path(rel).is_ok())
    }
}

/// Creates a new repository at `path` on branch `main` with an empty first commit, so
/// sessions have something to branch from.
pub fn init_repository(path: &Path) -> Result<Repo, GitError> {
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head("main").mkpath(true);
    let repo = Repository::init_opts(path, &opts)?;
    {
        let signature = repo
            .signature()
            .or_else(|_| git2::Signature::now("orchestra", "orchestra@localhost"))?;
        let tree = repo.find_tree(repo.index()?.write_tree()?)?;
        repo.commit(
            Some("HEAD"),
            &signature,
            &signature,
            "Start of the project",
            &tree,
            &[],
        )?;
    }
    Repo::discover(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let out = crate::process::command("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// A repo whose .gitignore has `models/` (folders only), `.env` and `cache`, plus a
    /// linked worktree on branch `session/a`.
    fn world() -> (tempfile::TempDir, Repo, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let repo = init_repository(&main).unwrap();
        std::fs::write(main.join(".gitignore"), "models/\n.env\ncache\n").unwrap();
        std::fs::write(main.join("tracked.txt"), "t\n").unwrap();
        git(&main, &["add", "."]);
        git(&main, &["commit", "-q", "-m", "files"]);
        let wt = dir.path().join("wt");
        let base = repo.resolve_commit(None).unwrap();
        repo.add_worktree(&wt, "session/a", base, "id").unwrap();
        (dir, repo, wt)
    }

    #[test]
    fn what_may_be_placed_is_what_git_ignores_as_it_will_be() {
        let (_dir, _repo, wt) = world();
        let problem =
            |rel: &str, as_dir: bool| Repo::placement_problem(&wt, Path::new(rel), as_dir).unwrap();
        assert_eq!(problem(".env", false), None);
        assert_eq!(problem("cache", true), None, "a folder `cache`");
        assert_eq!(problem("cache", false), None, "a link `cache`");
        assert_eq!(
            problem("models", true),
            None,
            "a copied folder matches models/"
        );
        let link = problem("models", false).expect("a link is a file: models/ misses it");
        assert!(
            link.contains("not ignored") && link.contains("trailing slash"),
            "{link}"
        );
        let tracked = problem("tracked.txt", false).expect("tracked");
        assert!(tracked.contains("tracked"), "{tracked}");
        assert!(problem("notes.md", false).unwrap().contains("not ignored"));
    }

    #[test]
    fn a_branch_moves_forward_only_when_it_has_nothing_of_its_own() {
        let (dir, repo, wt) = world();
        let main = dir.path().join("main");
        let old = repo.resolve_commit(None).unwrap();
        std::fs::write(main.join("upstream.txt"), "u\n").unwrap();
        git(&main, &["add", "."]);
        git(&main, &["commit", "-q", "-m", "upstream work"]);
        let new = repo.resolve_commit(None).unwrap();
        std::fs::write(wt.join("scratch.txt"), "s\n").unwrap();
        assert_eq!(
            repo.fast_forward(&wt, new).unwrap(),
            FastForward::Uncommitted(vec!["scratch.txt".into()])
        );
        std::fs::remove_file(wt.join("scratch.txt")).unwrap();
        assert_eq!(
            repo.fast_forward(&wt, new).unwrap(),
            FastForward::Moved { from: old }
        );
        assert!(wt.join("upstream.txt").is_file(), "the files came along");
        assert_eq!(repo.branch_tip("session/a").unwrap(), new);
        assert_eq!(
            repo.fast_forward(&wt, new).unwrap(),
            FastForward::AlreadyThere
        );
        std::fs::write(wt.join("mine.txt"), "m\n").unwrap();
        git(&wt, &["add", "."]);
        git(&wt, &["commit", "-q", "-m", "mine"]);
        let mine = repo.branch_tip("session/a").unwrap();
        assert_eq!(
            repo.fast_forward(&wt, new).unwrap(),
            FastForward::OwnCommits(1)
        );
        assert_eq!(
            repo.fast_forward(&wt, old).unwrap(),
            FastForward::OwnCommits(2),
            "behind its target: everything past it counts"
        );
        assert_eq!(repo.branch_tip("session/a").unwrap(), mine, "never moved");
    }
}
