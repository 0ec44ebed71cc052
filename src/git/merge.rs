//! Review and merge: what a branch adds over its target, an in-memory conflict check
//! (no working tree touched), and a merge written objects first, ref last.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Sort};
use serde::Serialize;

use super::{run_git, GitError, Repo};

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

impl Repo {
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
                summary: c.summary().unwrap_or_default().to_string(),
                author: c.author().name().unwrap_or_default().to_string(),
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

    /// The log, diffstat and full diff of `branch` over `base`, as git prints them
    /// (coloured when `color`).
    pub fn review_text(&self, base: &str, branch: &str, color: bool) -> Result<String, GitError> {
        let range = format!("{base}..{branch}");
        let color = if color {
            "--color=always"
        } else {
            "--color=never"
        };
        let mut text = run_git(
            &self.main_worktree,
            &[
                "log",
                color,
                "--format=%C(yellow)%h%Creset %s %C(dim)(%an, %ar)%Creset",
                &range,
            ],
        )?;
        text.push('\n');
        text.push_str(&run_git(
            &self.main_worktree,
            &["diff", color, "--stat", &range],
        )?);
        text.push('\n');
        text.push_str(&run_git(&self.main_worktree, &["diff", color, &range])?);
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
        run_git(
            path,
            &["read-tree", "-m", "-u", &old.to_string(), &new.to_string()],
        )
        .map(|_| ())
    }

    /// What is uncommitted in the worktree at `path`: `status --short` and the coloured
    /// diff of tracked files against HEAD.
    pub fn uncommitted_text(path: &Path, color: bool) -> Result<String, GitError> {
        let mut text = run_git(path, &["status", "--short"])?;
        text.push('\n');
        let color = if color {
            "--color=always"
        } else {
            "--color=never"
        };
        text.push_str(&run_git(path, &["diff", color, "HEAD"])?);
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

/// The paths an in-memory merge left in conflict, sorted, each once.
pub(super) fn conflict_paths(index: &git2::Index) -> Result<Vec<String>, GitError> {
    if !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<String> = index
        .conflicts()?
        .filter_map(|c| c.ok())
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}
