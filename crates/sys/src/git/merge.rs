//! Review and merge: what a branch adds over its target, an in-memory conflict check
//! (no working tree touched), and a merge written objects first, ref last.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Sort};
use serde::Serialize;

use super::{git_output, git_text, GitError, Repo, GIT_DEADLINE};
use crate::process::Run;

#[derive(Debug, Clone, Serialize)]
pub struct CommitInfo {
    pub id: String,
    pub summary: String,
    pub author: String,
    pub time: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileChange {
    pub path: String,
    pub status: String,
    pub insertions: usize,
    pub deletions: usize,
}

/// What `branch` would bring into `target`.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    pub branch: String,
    pub target: String,
    pub merge_base: String,
    /// Commits of the branch not in the target, newest first.
    pub commits: Vec<CommitInfo>,
    pub files: Vec<FileChange>,
    pub insertions: usize,
    pub deletions: usize,
    /// Paths that would conflict; empty when it merges cleanly.
    pub conflicts: Vec<String>,
    pub merges_cleanly: bool,
}

/// A merge written: the target moved from `old` to `new`.
#[derive(Debug, Clone, Copy)]
pub struct Merged {
    pub old: Oid,
    pub new: Oid,
}

/// How a branch's work was found in its target ([`Repo::landed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landed {
    /// Its tip is in the target's history: a merge, a fast-forward, or no commit of its own.
    Ancestor,
    /// None of its commits is in the target, but each one's change is, as a commit of its
    /// own (the same patch id): cherry-picked or rebased onto it.
    Rebased,
    /// Its change is in the target, not commit by commit: a squash merge.
    Squashed,
    /// Its pull request (this number) was merged on the forge, its tip the one the forge
    /// merged: merged, squashed or rebased there, whatever the local target holds yet.
    PullRequest(u64),
}

impl Landed {
    /// How it was recognised, as `kill` and `list` say it: "squashed into main".
    pub fn describe(self, target: &str) -> String {
        match self {
            Landed::Ancestor => format!("merged into {target}"),
            Landed::Rebased => format!("rebased onto {target}"),
            Landed::Squashed => format!("squashed into {target}"),
            Landed::PullRequest(n) => format!("merged in #{n}"),
        }
    }
}

/// The most commits of a target's history since its merge base with a branch that are
/// read for patch ids: enough to tell a rebase merge from a squash merge, bounded for a
/// target far ahead (past it, a landed branch is called squashed; it is landed either way).
const PATCH_ID_WALK: usize = 1000;

/// THE rule for work merged without its commits (a squash or rebase merge): merging
/// `branch` into `target` in memory (every merge base considered, as `merge` does) has
/// no conflict and gives the target's own tree, and the branch changed something since
/// its merge base. Then every hunk the branch changed is already in the target, so
/// deleting the branch loses no work. It is safe by construction: one more commit after
/// the squash, a squash of only part of the branch, or a squash later reverted on the
/// target (the merge would bring the change back) each makes the merge change the
/// target, so the branch is not landed; a target that changed the same lines again
/// afterwards conflicts, and is not landed either (kept, never guessed). A branch whose
/// commits undo each other changed nothing: not landed, kept as before. `repo` is a
/// [`super::Scratch`]'s: the tree written to compare stays in memory.
pub(super) fn merge_changes_nothing(
    repo: &Repository,
    target: Oid,
    branch: Oid,
) -> Result<bool, GitError> {
    let base = repo.merge_base(target, branch)?;
    let branch_commit = repo.find_commit(branch)?;
    if repo.find_commit(base)?.tree_id() == branch_commit.tree_id() {
        return Ok(false);
    }
    let target_commit = repo.find_commit(target)?;
    let mut index = repo.merge_commits(&target_commit, &branch_commit, None)?;
    if index.has_conflicts() {
        return Ok(false);
    }
    Ok(index.write_tree_to(repo)? == target_commit.tree_id())
}

impl Repo {
    /// Whether the work of `branch` is in `into`, and how that was recognised: its tip in
    /// the history of `into` ([`Landed::Ancestor`]), else its change there without its
    /// commits ([`merge_changes_nothing`], as the radar finds it: a squash or rebase
    /// merge, told apart by patch ids). `None`: the branch has work `into` lacks. Committed work only: a worktree's
    /// uncommitted changes are the caller's to look at.
    pub fn landed(&self, branch: &str, into: &str) -> Result<Option<Landed>, GitError> {
        let tip = self.branch_tip(branch)?;
        let target = self.branch_tip(into)?;
        if tip == target || self.repo.graph_descendant_of(target, tip)? {
            return Ok(Some(Landed::Ancestor));
        }
        // The merge's tree is written to compare it: into memory, not the repository.
        let scratch = self.scratch()?;
        let (target_side, work) = (scratch.commit_side(target)?, scratch.commit_side(tip)?);
        if !scratch.landed_without_commits(&target_side, &work)? {
            return Ok(None);
        }
        Ok(Some(if self.each_patch_in(tip, target)? {
            Landed::Rebased
        } else {
            Landed::Squashed
        }))
    }

    /// Whether every commit of `branch` not in `target` has a commit of the same patch id
    /// among the target's not in `branch` (read up to [`PATCH_ID_WALK`] of them), as
    /// `git cherry` tells. A merge commit on the branch has no patch of its own: no.
    fn each_patch_in(&self, branch: Oid, target: Oid) -> Result<bool, GitError> {
        let mut on_target = std::collections::HashSet::new();
        let mut walk = self.repo.revwalk()?;
        walk.push(target)?;
        walk.hide(branch)?;
        for oid in walk.take(PATCH_ID_WALK) {
            if let Some(id) = self.patch_id(oid?)? {
                on_target.insert(id);
            }
        }
        let mut walk = self.repo.revwalk()?;
        walk.push(branch)?;
        walk.hide(target)?;
        for oid in walk {
            match self.patch_id(oid?)? {
                Some(id) if on_target.contains(&id) => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The patch id of a commit's change over its only parent; `None` for a merge or a
    /// root commit.
    fn patch_id(&self, oid: Oid) -> Result<Option<Oid>, GitError> {
        let commit = self.repo.find_commit(oid)?;
        if commit.parent_count() != 1 {
            return Ok(None);
        }
        let diff = self.repo.diff_tree_to_tree(
            Some(&commit.parent(0)?.tree()?),
            Some(&commit.tree()?),
            None,
        )?;
        Ok(Some(diff.patchid(None)?))
    }

    /// Commits, files and line counts `branch` adds over its merge base with `target`, and
    /// whether it merges cleanly (checked in memory).
    pub fn review(&self, branch: &str, target: &str) -> Result<Review, GitError> {
        let ours = self.branch_tip(target)?;
        let theirs = self.branch_tip(branch)?;
        let base = self.repo.merge_base(ours, theirs)?;
        let mut walk = self.repo.revwalk()?;
        walk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
        walk.push(theirs)?;
        walk.hide(ours)?;
        let mut commits = Vec::new();
        for oid in walk {
            let c = self.repo.find_commit(oid?)?;
            commits.push(CommitInfo {
                id: c.id().to_string(),
                // Bytes that are not UTF-8 still name the commit: it is listed, not blank.
                summary: String::from_utf8_lossy(c.summary_bytes().unwrap_or_default())
                    .into_owned(),
                author: String::from_utf8_lossy(c.author().name_bytes()).into_owned(),
                time: c.time().seconds(),
            });
        }
        let old_tree = self.repo.find_commit(base)?.tree()?;
        let new_tree = self.repo.find_commit(theirs)?.tree()?;
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)?;
        let mut files = Vec::new();
        let (mut insertions, mut deletions) = (0, 0);
        for i in 0..diff.deltas().len() {
            let Some(delta) = diff.get_delta(i) else {
                continue;
            };
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (_, added, removed) = git2::Patch::from_diff(&diff, i)?
                .map(|p| p.line_stats())
                .transpose()?
                .unwrap_or((0, 0, 0));
            insertions += added;
            deletions += removed;
            files.push(FileChange {
                path,
                status: format!("{:?}", delta.status()).to_lowercase(),
                insertions: added,
                deletions: removed,
            });
        }
        let conflicts = self.conflicts(ours, theirs)?;
        Ok(Review {
            branch: branch.to_string(),
            target: target.to_string(),
            merge_base: base.to_string(),
            commits,
            files,
            insertions,
            deletions,
            merges_cleanly: conflicts.is_empty(),
            conflicts,
        })
    }

    /// Paths that conflict when `theirs` is merged into `ours`, found by merging the trees
    /// in memory: no index, no working tree, no ref is touched.
    pub fn conflicts(&self, ours: Oid, theirs: Oid) -> Result<Vec<String>, GitError> {
        let index = self.repo.merge_commits(
            &self.repo.find_commit(ours)?,
            &self.repo.find_commit(theirs)?,
            None,
        )?;
        conflict_paths(&index)
    }

    /// The worktree (main or linked) that has `branch` checked out, if any.
    pub fn worktree_of_branch(&self, branch: &str) -> Result<Option<PathBuf>, GitError> {
        let wanted = format!("refs/heads/{branch}");
        let mut candidates = vec![self.main_worktree.clone()];
        candidates.extend(
            self.linked_worktrees()?
                .into_iter()
                .filter(|(_, _, exists)| *exists)
                .map(|(_, path, _)| path),
        );
        for path in candidates {
            let Ok(repo) = Repository::open(&path) else {
                continue;
            };
            let head = repo.find_reference("HEAD").ok();
            if head
                .and_then(|h| h.symbolic_target().map(str::to_string))
                .as_deref()
                == Some(wanted.as_str())
            {
                return Ok(Some(path));
            }
        }
        Ok(None)
    }

    /// The log, diffstat and full diff of `branch` over `base` as a person reads them:
    /// git's text shown inert ([`crate::inert::lines`]: a subject, a name or a file's
    /// content holding an escape shows it, never sends it), coloured by us when `color`.
    /// A diff past [`REVIEW_CAP`] is cut, and the text says so and how to see the rest.
    pub fn review_text(&self, base: &str, branch: &str, color: bool) -> Result<String, GitError> {
        let range = format!("{base}..{branch}");
        let cap = REVIEW_CAP;
        let dir = || {
            Run::new("git", GIT_DEADLINE)
                .arg("-C")
                .arg(&self.main_worktree)
        };
        let (log, log_cut) = git_text(
            dir(),
            &["log", "--color=never", "--format=%h %s (%an, %ar)", &range],
            cap,
        )?;
        let (stat, stat_cut) = git_text(dir(), &["diff", "--color=never", "--stat", &range], cap)?;
        let (diff, diff_cut) = git_text(dir(), &["diff", "--color=never", &range], cap)?;
        let mut text = shown_log(&log, color);
        text.push_str(&cut_note(log_cut, cap, &format!("git log {range}")));
        text.push('\n');
        text.push_str(&crate::inert::lines(&stat));
        text.push_str(&cut_note(
            stat_cut,
            cap,
            &format!("git diff --stat {range}"),
        ));
        text.push('\n');
        text.push_str(&shown_diff(&diff, color));
        text.push_str(&cut_note(diff_cut, cap, &format!("git diff {range}")));
        Ok(text)
    }

    /// Writes the merge of `branch` into `target` as objects only: a merge commit (or,
    /// with `squash`, one commit with the target as its only parent). No ref moves until
    /// [`Repo::land`], so a process that dies in between changed nothing anyone sees.
    pub fn write_merge(
        &self,
        branch: &str,
        target: &str,
        squash: bool,
        message: &str,
    ) -> Result<Merged, GitError> {
        let old = self.branch_tip(target)?;
        let theirs = self.branch_tip(branch)?;
        let ours_commit = self.repo.find_commit(old)?;
        let theirs_commit = self.repo.find_commit(theirs)?;
        let mut index = self
            .repo
            .merge_commits(&ours_commit, &theirs_commit, None)?;
        if index.has_conflicts() {
            return Err(GitError::Git2(git2::Error::from_str(
                "the merge has conflicts",
            )));
        }
        let tree = self.repo.find_tree(index.write_tree_to(&self.repo)?)?;
        let signature = self
            .repo
            .signature()
            .or_else(|_| git2::Signature::now("orchestra", "orchestra@localhost"))?;
        let parents: Vec<&git2::Commit<'_>> = if squash {
            vec![&ours_commit]
        } else {
            vec![&ours_commit, &theirs_commit]
        };
        let new = self
            .repo
            .commit(None, &signature, &signature, message, &tree, &parents)?;
        Ok(Merged { old, new })
    }

    /// Moves `target` from `merged.old` to `merged.new`, only if it still points where it
    /// did: a concurrent writer makes this fail instead of being overwritten.
    pub fn land(&self, branch: &str, target: &str, merged: Merged) -> Result<(), GitError> {
        self.repo.reference_matching(
            &format!("refs/heads/{target}"),
            merged.new,
            true,
            merged.old,
            &format!("orchestra: merge {branch}"),
        )?;
        Ok(())
    }

    /// Brings the clean worktree at `path` from `old` to `new` (index and files), as a
    /// fast-forward would.
    pub fn update_worktree(&self, path: &Path, old: Oid, new: Oid) -> Result<(), GitError> {
        git_output(
            self.worktree_git(path)?,
            &["read-tree", "-m", "-u", &old.to_string(), &new.to_string()],
        )
        .map(|_| ())
    }

    /// What is uncommitted in the worktree at `path`: `status --short` and the diff of
    /// tracked files against HEAD, shown and bounded as [`Repo::review_text`] shows.
    /// Submodules are not looked into: a submodule's `.git` file in the worktree is the
    /// session's to write, and git would run in the git folder it names.
    pub fn uncommitted_text(&self, path: &Path, color: bool) -> Result<String, GitError> {
        let cap = REVIEW_CAP;
        let (status, status_cut) = git_text(
            self.worktree_git(path)?,
            &["status", "--short", "--ignore-submodules=all"],
            cap,
        )?;
        let mut text = crate::inert::lines(&status);
        text.push_str(&cut_note(status_cut, cap, "git status --short"));
        text.push('\n');
        let (diff, diff_cut) = git_text(
            self.worktree_git(path)?,
            &[
                "diff",
                "--color=never",
                "--no-ext-diff",
                "--no-textconv",
                "--ignore-submodules=all",
                "HEAD",
            ],
            cap,
        )?;
        text.push_str(&shown_diff(&diff, color));
        text.push_str(&cut_note(diff_cut, cap, "git diff HEAD"));
        Ok(text)
    }

    /// The tree the index of the worktree at `path` holds, to tell whether it caught up.
    pub fn index_tree(path: &Path) -> Result<Oid, GitError> {
        let repo = Repository::open(path)?;
        let mut index = repo.index()?;
        Ok(index.write_tree()?)
    }

    /// The tree of commit `oid`.
    pub fn commit_tree(&self, oid: Oid) -> Result<Oid, GitError> {
        Ok(self.repo.find_commit(oid)?.tree_id())
    }
}

/// How much of each of git's texts a review shows: far more than a person reads, far less
/// than would fill the memory or the pager.
pub(super) const REVIEW_CAP: usize = 16 * 1024 * 1024;

/// The line that ends a text cut at `cap` bytes: how much is shown, and what shows all.
fn cut_note(cut: bool, cap: usize, whole: &str) -> String {
    if !cut {
        return String::new();
    }
    let shown = if cap >= 1024 * 1024 {
        format!("{} MiB", cap / (1024 * 1024))
    } else {
        format!("{cap} bytes")
    };
    format!(
        "\n[cut: only the first {shown} are shown; `{whole}` in the repository shows the rest]\n"
    )
}

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// `git log --format='%h %s (%an, %ar)'` shown inert, each commit's id in yellow.
fn shown_log(log: &str, color: bool) -> String {
    let log = crate::inert::lines(log);
    if !color {
        return log;
    }
    let mut shown = String::with_capacity(log.len() + log.len() / 4);
    for line in log.split_inclusive('\n') {
        match line.split_once(' ') {
            Some((id, rest)) => shown.push_str(&format!("{YELLOW}{id}{RESET} {rest}")),
            None => shown.push_str(line),
        }
    }
    shown
}

/// A diff shown inert, coloured as git would: headers bold, hunks cyan, lines added
/// green and removed red. The only escapes in it are these.
pub(crate) fn shown_diff(diff: &str, color: bool) -> String {
    let diff = crate::inert::lines(diff);
    if !color {
        return diff;
    }
    let mut shown = String::with_capacity(diff.len() + diff.len() / 4);
    let mut in_header = false;
    for line in diff.split_inclusive('\n') {
        if line.starts_with("diff --git ") {
            in_header = true;
        } else if line.starts_with("@@") {
            in_header = false;
        }
        let colour = if in_header {
            BOLD
        } else if line.starts_with("@@") {
            CYAN
        } else if line.starts_with('+') {
            GREEN
        } else if line.starts_with('-') {
            RED
        } else {
            ""
        };
        if colour.is_empty() {
            shown.push_str(line);
            continue;
        }
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        shown.push_str(&format!("{colour}{body}{RESET}{end}"));
    }
    shown
}

/// The paths an in-memory merge left in conflict, sorted, each once.
pub(super) fn conflict_paths(index: &git2::Index) -> Result<Vec<String>, GitError> {
    if !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<String> = index
        .conflicts()?
        .filter_map(std::result::Result::ok)
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
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

    fn commit(dir: &Path, file: &str, text: &str, message: &str) {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", message]);
    }

    /// A repo on `main` with `a.txt` and `b.txt`, and a branch `work` off it with two
    /// commits (a.txt, then b.txt) that `main` does not have.
    fn world() -> (tempfile::TempDir, Repo, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let repo = super::super::init_repository(&main).unwrap();
        commit(&main, "a.txt", "a1\na2\na3\n", "files");
        commit(&main, "b.txt", "b1\nb2\nb3\n", "more files");
        git(&main, &["checkout", "-q", "-b", "work"]);
        commit(&main, "a.txt", "a1\nA2\na3\n", "change a");
        commit(&main, "b.txt", "b1\nb2\nB3\n", "change b");
        git(&main, &["checkout", "-q", "main"]);
        // The target moved on meanwhile, elsewhere.
        commit(&main, "c.txt", "c\n", "unrelated");
        (dir, repo, main)
    }

    fn squash(main: &Path, branch: &str) {
        git(main, &["merge", "-q", "--squash", branch]);
        git(main, &["commit", "-q", "-m", "squashed"]);
    }

    #[test]
    fn a_squash_merge_and_a_rebase_merge_are_landed_and_told_apart() {
        let (_dir, repo, main) = world();
        let objects = || {
            let out = crate::process::command("git")
                .arg("-C")
                .arg(&main)
                .args(["count-objects", "-v"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let before = objects();
        assert_eq!(repo.landed("work", "main").unwrap(), None);
        assert_eq!(objects(), before, "the merge looked at is written nowhere");
        squash(&main, "work");
        assert_eq!(repo.landed("work", "main").unwrap(), Some(Landed::Squashed));

        let (_dir, repo, main) = world();
        git(&main, &["cherry-pick", "work~1", "work"]);
        assert_eq!(repo.landed("work", "main").unwrap(), Some(Landed::Rebased));
        assert_eq!(
            Landed::Rebased.describe("main"),
            "rebased onto main".to_string()
        );
    }

    #[test]
    fn a_branch_in_the_targets_history_is_landed_as_before() {
        let (_dir, repo, main) = world();
        git(&main, &["branch", "empty", "main"]);
        assert_eq!(
            repo.landed("empty", "main").unwrap(),
            Some(Landed::Ancestor)
        );
        git(&main, &["merge", "-q", "--no-edit", "work"]);
        assert_eq!(repo.landed("work", "main").unwrap(), Some(Landed::Ancestor));
    }

    #[test]
    fn work_the_target_lacks_is_never_landed() {
        // One more commit after the squash.
        let (_dir, repo, main) = world();
        squash(&main, "work");
        git(&main, &["checkout", "-q", "work"]);
        commit(&main, "d.txt", "later\n", "after the squash");
        git(&main, &["checkout", "-q", "main"]);
        assert_eq!(repo.landed("work", "main").unwrap(), None);

        // A squash of only part of the branch.
        let (_dir, repo, main) = world();
        git(&main, &["cherry-pick", "-n", "work~1"]);
        git(&main, &["commit", "-q", "-m", "part of it"]);
        assert_eq!(repo.landed("work", "main").unwrap(), None);

        // Squashed in, then reverted on the target: merging again would bring it back.
        let (_dir, repo, main) = world();
        squash(&main, "work");
        git(&main, &["revert", "--no-edit", "HEAD"]);
        assert_eq!(repo.landed("work", "main").unwrap(), None);

        // Squashed in, then the same lines changed again on the target: it conflicts.
        let (_dir, repo, main) = world();
        squash(&main, "work");
        commit(&main, "a.txt", "a1\nAA2\na3\n", "again");
        assert_eq!(repo.landed("work", "main").unwrap(), None);

        // Commits that undo each other changed nothing to land.
        let (_dir, repo, main) = world();
        git(&main, &["checkout", "-q", "-b", "undone", "main~1"]);
        commit(&main, "a.txt", "x\n", "change");
        commit(&main, "a.txt", "a1\na2\na3\n", "undo");
        git(&main, &["checkout", "-q", "main"]);
        assert_eq!(repo.landed("undone", "main").unwrap(), None);
    }

    #[test]
    fn the_radar_drops_squashed_work_only_when_clean() {
        let (dir, repo, main) = world();
        squash(&main, "work");
        let scratch = repo.scratch().unwrap();
        let target = scratch.branch_side("main").unwrap();
        let work = scratch.branch_side("work").unwrap();
        assert!(scratch.landed_without_commits(&target, &work).unwrap());
        // Uncommitted work in its worktree is work the target lacks.
        let wt = dir.path().join("wt");
        git(
            &main,
            &["worktree", "add", "-q", wt.to_str().unwrap(), "work"],
        );
        std::fs::write(wt.join("new.txt"), "new\n").unwrap();
        let dirty = scratch.worktree_side("work", &wt).unwrap();
        assert!(dirty.dirty);
        assert!(!scratch.landed_without_commits(&target, &dirty).unwrap());
        // A branch still to merge is not dropped.
        git(&main, &["branch", "later", "work"]);
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-q", "-m", "more"]);
        let more = scratch.branch_side("work").unwrap();
        assert!(!scratch.landed_without_commits(&target, &more).unwrap());
    }
}
