//! Review and merge: what a branch adds over its target, an in-memory conflict check
//! (no working tree touched), and a merge written objects first, ref last.

use std::path::{Path, PathBuf};

use git2::{Oid, Repository, Sort};
use serde::Serialize;

use super::{git_text, run_git, GitError, Repo};

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
        let dir = &self.main_worktree;
        let (log, log_cut) = git_text(
            dir,
            &["log", "--color=never", "--format=%h %s (%an, %ar)", &range],
            cap,
        )?;
        let (stat, stat_cut) = git_text(dir, &["diff", "--color=never", "--stat", &range], cap)?;
        let (diff, diff_cut) = git_text(dir, &["diff", "--color=never", &range], cap)?;
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
        run_git(
            path,
            &["read-tree", "-m", "-u", &old.to_string(), &new.to_string()],
        )
        .map(|_| ())
    }

    /// What is uncommitted in the worktree at `path`: `status --short` and the diff of
    /// tracked files against HEAD, shown and bounded as [`Repo::review_text`] shows.
    pub fn uncommitted_text(path: &Path, color: bool) -> Result<String, GitError> {
        let cap = REVIEW_CAP;
        let (status, status_cut) = git_text(path, &["status", "--short"], cap)?;
        let mut text = crate::inert::lines(&status);
        text.push_str(&cut_note(status_cut, cap, "git status --short"));
        text.push('\n');
        let (diff, diff_cut) = git_text(path, &["diff", "--color=never", "HEAD"], cap)?;
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
