//! The conflict radar's git side: a session's work as one tree (its branch, plus what is
//! uncommitted in its worktree, as `git stash create -u` would make it) and in-memory
//! merges of two such trees. Whatever this writes (blobs and trees of uncommitted work, a
//! merge commit to look ahead with) goes to an object store in memory: the repository's
//! objects, index files and refs are left as they are.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use git2::{Index, IndexEntry, IndexTime, Oid, Repository, StatusOptions};

use super::merge::conflict_paths;
use super::{GitError, Repo};

/// An untracked file larger than this is left out of a worktree's tree: build output a
/// .gitignore forgot, not work two agents could collide on line by line.
const UNTRACKED_MAX_BYTES: u64 = 1 << 20;
/// At most this many untracked files of a worktree are read, for the same reason.
const UNTRACKED_MAX_FILES: usize = 1000;

/// One side of a merge the radar checks: a commit, and the tree that stands for it (the
/// commit's own, or its worktree's with the uncommitted changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    pub commit: Oid,
    pub tree: Oid,
    /// Whether `tree` holds uncommitted work (it is not the commit's tree).
    pub dirty: bool,
}

impl Side {
    /// What a merge of this side is cached by: the commit (which fixes the merge base) and,
    /// when it has uncommitted work, the tree of that work.
    pub fn key(&self) -> String {
        if self.dirty {
            format!("{}:{}", self.commit, self.tree)
        } else {
            self.commit.to_string()
        }
    }
}

/// A second handle on a repository whose new objects stay in memory.
pub struct Scratch {
    repo: Repository,
}

impl Repo {
    /// A handle for the radar's merges: every object it writes lives in memory only.
    pub fn scratch(&self) -> Result<Scratch, GitError> {
        let repo = Repository::open(self.repo.path())?;
        // Writes go to the backend of the highest priority (libgit2's own are 1 and 2).
        repo.odb()?.add_new_mempack_backend(1000)?;
        Ok(Scratch { repo })
    }
}

impl Scratch {
    fn tip(&self, branch: &str) -> Result<Oid, GitError> {
        let b = self
            .repo
            .find_branch(branch, git2::BranchType::Local)
            .map_err(|_| GitError::BadRevision(branch.to_string()))?;
        b.get()
            .target()
            .ok_or_else(|| GitError::BadRevision(branch.to_string()))
    }

    /// The committed work of `branch`.
    pub fn branch_side(&self, branch: &str) -> Result<Side, GitError> {
        let commit = self.tip(branch)?;
        Ok(Side {
            commit,
            tree: self.repo.find_commit(commit)?.tree_id(),
            dirty: false,
        })
    }

    /// The work of `branch` as it stands in the worktree at `worktree`: its tip, with
    /// whatever is uncommitted there (tracked changes, staged or not, and the untracked
    /// files git does not ignore). A worktree that is gone, or is not on `branch` (a
    /// detached HEAD mid-rebase), adds nothing: its changes are not the branch's.
    pub fn worktree_side(&self, branch: &str, worktree: &Path) -> Result<Side, GitError> {
        let side = self.branch_side(branch)?;
        let Ok(wt) = Repository::open(worktree) else {
            return Ok(side);
        };
        let on_branch = wt
            .find_reference("HEAD")
            .ok()
            .and_then(|h| h.symbolic_target().map(str::to_string))
            .is_some_and(|t| t.strip_prefix("refs/heads/") == Some(branch));
        if !on_branch {
            return Ok(side);
        }
        let tree = self.uncommitted_tree(&wt, worktree, side.tree)?;
        Ok(Side {
            tree,
            dirty: tree != side.tree,
            ..side
        })
    }

    /// The tree of the files in `worktree`: `head_tree` with every path git status lists
    /// replaced by what is on disk (or removed, when it is gone). Read-only for the
    /// worktree: its index file is neither refreshed nor written.
    fn uncommitted_tree(
        &self,
        wt: &Repository,
        worktree: &Path,
        head_tree: Oid,
    ) -> Result<Oid, GitError> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = wt.statuses(Some(&mut opts))?;
        if statuses.is_empty() {
            return Ok(head_tree);
        }
        let mut index = Index::new()?;
        index.read_tree(&self.repo.find_tree(head_tree)?)?;
        let mut untracked = 0;
        let mut seen = HashSet::new();
        for entry in statuses.iter() {
            let rel = entry.path_bytes();
            if !seen.insert(rel.to_vec()) {
                continue;
            }
            let path = worktree.join(std::ffi::OsStr::from_bytes(rel));
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                index.remove_path(Path::new(std::ffi::OsStr::from_bytes(rel)))?;
                continue;
            };
            if meta.is_dir() {
                continue;
            }
            if entry.status().contains(git2::Status::WT_NEW) {
                untracked += 1;
                if untracked > UNTRACKED_MAX_FILES || meta.len() > UNTRACKED_MAX_BYTES {
                    continue;
                }
            }
            let (mode, content) = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| io(&path, e))?;
                (0o120000, target.as_os_str().as_bytes().to_vec())
            } else {
                let executable = meta.permissions().mode() & 0o111 != 0;
                let mode = if executable { 0o100755 } else { 0o100644 };
                (mode, std::fs::read(&path).map_err(|e| io(&path, e))?)
            };
            let id = self.repo.blob(&content)?;
            index.add(&IndexEntry {
                ctime: IndexTime::new(0, 0),
                mtime: IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode,
                uid: 0,
                gid: 0,
                file_size: content.len().min(u32::MAX as usize) as u32,
                id,
                flags: rel.len().min(0xfff) as u16,
                flags_extended: 0,
                path: rel.to_vec(),
            })?;
        }
        Ok(index.write_tree_to(&self.repo)?)
    }

    /// The paths that conflict when the two sides are merged, found in memory. Two
    /// committed sides merge as `merge` checks them (their merge bases included); a side
    /// with uncommitted work merges its tree over the commits' merge base.
    pub fn conflicts(&self, a: &Side, b: &Side) -> Result<Vec<String>, GitError> {
        if a.key() == b.key() {
            return Ok(Vec::new());
        }
        let index = if !a.dirty && !b.dirty {
            self.repo.merge_commits(
                &self.repo.find_commit(a.commit)?,
                &self.repo.find_commit(b.commit)?,
                None,
            )?
        } else {
            let base = match self.repo.merge_base(a.commit, b.commit) {
                Ok(base) => self.repo.find_commit(base)?.tree()?,
                // Unrelated histories: every file is added on both sides.
                Err(e) if e.code() == git2::ErrorCode::NotFound => {
                    let empty = self.repo.treebuilder(None)?.write()?;
                    self.repo.find_tree(empty)?
                }
                Err(e) => return Err(e.into()),
            };
            self.repo.merge_trees(
                &base,
                &self.repo.find_tree(a.tree)?,
                &self.repo.find_tree(b.tree)?,
                None,
            )?
        };
        conflict_paths(&index)
    }

    /// What `target` becomes once `work` is merged into it (a merge commit, in memory),
    /// so that what others will conflict with afterwards can be checked before it is.
    pub fn merged(&self, target: &Side, work: &Side) -> Result<Side, GitError> {
        let ours = self.repo.find_commit(target.commit)?;
        let theirs = self.repo.find_commit(work.commit)?;
        let mut index = if work.dirty {
            let base = self.repo.merge_base(target.commit, work.commit)?;
            self.repo.merge_trees(
                &self.repo.find_commit(base)?.tree()?,
                &ours.tree()?,
                &self.repo.find_tree(work.tree)?,
                None,
            )?
        } else {
            self.repo.merge_commits(&ours, &theirs, None)?
        };
        if index.has_conflicts() {
            return Err(GitError::Git2(git2::Error::from_str(
                "the merge has conflicts",
            )));
        }
        let tree = index.write_tree_to(&self.repo)?;
        let signature = git2::Signature::now("orchestra", "orchestra@localhost")?;
        let commit = self.repo.commit(
            None,
            &signature,
            &signature,
            "orchestra: a merge looked at ahead",
            &self.repo.find_tree(tree)?,
            &[&ours, &theirs],
        )?;
        Ok(Side {
            commit,
            tree,
            dirty: false,
        })
    }
}

fn io(path: &Path, source: std::io::Error) -> GitError {
    GitError::Io {
        context: format!("reading {}", path.display()),
        source,
    }
}
