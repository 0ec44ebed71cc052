//! The conflict radar's git side: a session's work as one tree (its branch, plus what is
//! uncommitted in its worktree, as `git stash create -u` would make it) and in-memory
//! merges of two such trees. Whatever this writes (blobs and trees of uncommitted work, a
//! merge commit to look ahead with) goes to an object store in memory: the repository's
//! objects, index files and refs are left as they are.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::rc::Rc;

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

/// A worktree as one full read found it.
#[derive(Debug, Clone)]
pub struct WorktreeRead {
    pub side: Side,
    /// The paths whose content differs from the commit (removed ones included): what
    /// [`Scratch::rebuild`] reads again to make the same tree without a full read.
    /// `None` when a path is not UTF-8 (then only a full read will do).
    pub changed: Option<Vec<String>>,
}

/// What checking a pair found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The paths that conflict; empty when the pair merges cleanly.
    pub paths: Vec<String>,
    /// Whether it took a merge: sides that changed no path in common since their merge
    /// base merge cleanly without one.
    pub merged: bool,
}

/// The paths a tree changed since a base, shared by the pairs of a pass.
type Changes = Rc<BTreeSet<String>>;

/// A second handle on a repository whose new objects stay in memory.
pub struct Scratch {
    pub(super) repo: Repository,
    /// (base tree, side tree) → the paths the side changed since the base.
    changes: RefCell<HashMap<(Oid, Oid), Changes>>,
}

impl Repo {
    /// A handle for the radar's merges: every object it writes lives in memory only.
    pub fn scratch(&self) -> Result<Scratch, GitError> {
        let repo = Repository::open(self.repo.path())?;
        // Writes go to the backend of the highest priority (libgit2's own are 1 and 2).
        repo.odb()?.add_new_mempack_backend(1000)?;
        Ok(Scratch {
            repo,
            changes: RefCell::default(),
        })
    }
}

impl Scratch {
    /// The commit `branch` points at.
    pub fn tip(&self, branch: &str) -> Result<Oid, GitError> {
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
        self.commit_side(self.tip(branch)?)
    }

    /// Commit `commit` as a side, without uncommitted work.
    pub fn commit_side(&self, commit: Oid) -> Result<Side, GitError> {
        Ok(Side {
            commit,
            tree: self.repo.find_commit(commit)?.tree_id(),
            dirty: false,
        })
    }

    /// The work of `branch` as it stands in the worktree at `worktree`.
    pub fn worktree_side(&self, branch: &str, worktree: &Path) -> Result<Side, GitError> {
        Ok(self.read_worktree(branch, worktree)?.side)
    }

    /// A full read of the worktree at `worktree`: the tip of `branch`, with whatever is
    /// uncommitted there (tracked changes, staged or not, and the untracked files git does
    /// not ignore) — every file's status is looked at. A worktree that is gone, or is not
    /// on `branch` (a detached HEAD mid-rebase), adds nothing: its changes are not the
    /// branch's. Read-only for the worktree: its index file is neither refreshed nor
    /// written.
    pub fn read_worktree(&self, branch: &str, worktree: &Path) -> Result<WorktreeRead, GitError> {
        let side = self.branch_side(branch)?;
        let paths = uncommitted_paths(branch, worktree)?;
        self.read_from(side, worktree, paths)
    }

    /// Full reads of several worktrees (`(branch, worktree)` each), as
    /// [`Scratch::read_worktree`] makes them, in the order given. The status walks, which
    /// look at every file and are most of a read's cost, run on threads (one per core at
    /// most); the trees are made here after, in this scratch's object store.
    pub fn read_worktrees(&self, items: &[(&str, &Path)]) -> Vec<Result<WorktreeRead, GitError>> {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .clamp(1, items.len().max(1));
        let chunk = items.len().div_ceil(threads).max(1);
        let walked: Vec<Result<Vec<Vec<u8>>, GitError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = items
                .chunks(chunk)
                .map(|part| {
                    let walk = scope.spawn(move || {
                        part.iter()
                            .map(|(branch, worktree)| uncommitted_paths(branch, worktree))
                            .collect::<Vec<_>>()
                    });
                    (part.len(), walk)
                })
                .collect();
            // One answer per worktree, a walk that panicked included.
            handles
                .into_iter()
                .flat_map(|(n, walk)| {
                    walk.join().unwrap_or_else(|_| {
                        (0..n)
                            .map(|_| {
                                Err(GitError::Git2(git2::Error::from_str(
                                    "a worktree's status walk panicked",
                                )))
                            })
                            .collect()
                    })
                })
                .collect()
        });
        items
            .iter()
            .zip(walked)
            .map(|((branch, worktree), paths)| {
                let side = self.branch_side(branch)?;
                self.read_from(side, worktree, paths?)
            })
            .collect()
    }

    /// The read of `worktree` at `side` whose status walk found `paths`.
    fn read_from(
        &self,
        side: Side,
        worktree: &Path,
        paths: Vec<Vec<u8>>,
    ) -> Result<WorktreeRead, GitError> {
        if paths.is_empty() {
            return Ok(WorktreeRead {
                side,
                changed: Some(Vec::new()),
            });
        }
        let tree = self.overlay(side.tree, worktree, &paths)?;
        let changed = paths
            .into_iter()
            .map(|p| String::from_utf8(p).ok())
            .collect();
        Ok(WorktreeRead {
            side: Side {
                tree,
                dirty: tree != side.tree,
                ..side
            },
            changed,
        })
    }

    /// The tree a full read found at `commit` with `changed` paths, made again by reading
    /// only those paths: the same tree while nothing else in the worktree changed.
    pub fn rebuild(
        &self,
        commit: Oid,
        worktree: &Path,
        changed: &[String],
    ) -> Result<Side, GitError> {
        let side = self.commit_side(commit)?;
        let paths: Vec<Vec<u8>> = changed.iter().map(|p| p.as_bytes().to_vec()).collect();
        let tree = self.overlay(side.tree, worktree, &paths)?;
        Ok(Side {
            tree,
            dirty: tree != side.tree,
            ..side
        })
    }

    /// Whether the object store (in memory included) has `tree`.
    pub fn has_tree(&self, tree: Oid) -> bool {
        self.repo.find_tree(tree).is_ok()
    }

    /// `head_tree` with each of `paths` (relative to `worktree`) replaced by what is on
    /// disk there, or removed when it is gone.
    fn overlay(&self, head_tree: Oid, worktree: &Path, paths: &[Vec<u8>]) -> Result<Oid, GitError> {
        if paths.is_empty() {
            return Ok(head_tree);
        }
        let mut index = Index::new()?;
        index.read_tree(&self.repo.find_tree(head_tree)?)?;
        for rel in paths {
            let path = worktree.join(OsStr::from_bytes(rel));
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                index.remove_path(Path::new(OsStr::from_bytes(rel)))?;
                continue;
            };
            if meta.is_dir() {
                continue;
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
                path: rel.clone(),
            })?;
        }
        Ok(index.write_tree_to(&self.repo)?)
    }

    /// Whether the two sides conflict when merged, and where; found in memory. Sides that
    /// changed no path in common (nor a path inside a folder the other changed into a
    /// file) since their merge base merge cleanly, and are not merged. Otherwise two
    /// committed sides merge as `merge` checks them (every merge base considered); a side
    /// with uncommitted work merges its tree over the commits' merge base.
    pub fn check(&self, a: &Side, b: &Side) -> Result<Checked, GitError> {
        let clean = Checked {
            paths: Vec::new(),
            merged: false,
        };
        if a.key() == b.key() {
            return Ok(clean);
        }
        let bases = match self.repo.merge_bases(a.commit, b.commit) {
            Ok(bases) => bases.iter().copied().collect::<Vec<_>>(),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let base_tree = match bases.first() {
            Some(base) => self.repo.find_commit(*base)?.tree()?,
            // Unrelated histories: every file is added on both sides.
            None => {
                let empty = self.repo.treebuilder(None)?.write()?;
                self.repo.find_tree(empty)?
            }
        };
        // With several merge bases the merge looks at more than this one: merge anyway.
        if bases.len() <= 1 {
            let ours = self.changes(&base_tree, a.tree)?;
            let theirs = self.changes(&base_tree, b.tree)?;
            if !overlap(&ours, &theirs) {
                return Ok(clean);
            }
        }
        let index = if !a.dirty && !b.dirty {
            self.repo.merge_commits(
                &self.repo.find_commit(a.commit)?,
                &self.repo.find_commit(b.commit)?,
                None,
            )?
        } else {
            self.repo.merge_trees(
                &base_tree,
                &self.repo.find_tree(a.tree)?,
                &self.repo.find_tree(b.tree)?,
                None,
            )?
        };
        Ok(Checked {
            paths: conflict_paths(&index)?,
            merged: true,
        })
    }

    /// The paths `tree` changed since `base` (both names of a rename), remembered for the
    /// other pairs of this pass.
    fn changes(&self, base: &git2::Tree<'_>, tree: Oid) -> Result<Changes, GitError> {
        let key = (base.id(), tree);
        if let Some(paths) = self.changes.borrow().get(&key) {
            return Ok(paths.clone());
        }
        let diff =
            self.repo
                .diff_tree_to_tree(Some(base), Some(&self.repo.find_tree(tree)?), None)?;
        let mut paths = BTreeSet::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path_bytes() {
                    paths.insert(String::from_utf8_lossy(path).into_owned());
                }
            }
        }
        let paths = Rc::new(paths);
        self.changes.borrow_mut().insert(key, paths.clone());
        Ok(paths)
    }

    /// Whether the committed `work` is in `target` without its commits being there (a
    /// squash or rebase merge: [`super::merge::merge_changes_nothing`], the rule `kill`
    /// settles a branch by), so there is nothing left to collide with. Work with
    /// uncommitted changes, or whose tip is in the target's history, is not (the radar
    /// watches those as before). Sides that changed no path in common are told apart
    /// without a merge: the work's change is then not in the target.
    pub fn landed_without_commits(&self, target: &Side, work: &Side) -> Result<bool, GitError> {
        if work.dirty
            || work.commit == target.commit
            || self.repo.graph_descendant_of(target.commit, work.commit)?
        {
            return Ok(false);
        }
        let base = match self.repo.merge_base(target.commit, work.commit) {
            Ok(base) => base,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        let base_tree = self.repo.find_commit(base)?.tree()?;
        let theirs = self.changes(&base_tree, work.tree)?;
        if theirs.is_empty() || !overlap(&*self.changes(&base_tree, target.tree)?, &theirs) {
            return Ok(false);
        }
        super::merge::merge_changes_nothing(&self.repo, target.commit, work.commit)
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

/// What one side changes over a base commit, counted: a compare's row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    /// Commits on the side's commit that the base has not.
    pub commits: usize,
    /// The paths changed (uncommitted work included when the side has it).
    pub files: Vec<String>,
    pub insertions: usize,
    pub deletions: usize,
}

impl Scratch {
    /// What `side` changes over its merge base with `target`: its commits the target has
    /// not, and the files and lines of its tree against the base's.
    pub fn changed(&self, target: Oid, side: &Side) -> Result<Changed, GitError> {
        let base = self.repo.merge_base(target, side.commit)?;
        let mut walk = self.repo.revwalk()?;
        walk.push(side.commit)?;
        walk.hide(target)?;
        let commits = walk.count();
        let base_tree = self.repo.find_commit(base)?.tree()?;
        let diff = self.repo.diff_tree_to_tree(
            Some(&base_tree),
            Some(&self.repo.find_tree(side.tree)?),
            None,
        )?;
        let stats = diff.stats()?;
        let files = diff
            .deltas()
            .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        Ok(Changed {
            commits,
            files,
            insertions: stats.insertions(),
            deletions: stats.deletions(),
        })
    }

    /// What `a` changes that `b` does not: the patch from `b`'s tree to `a`'s, over the
    /// paths `a` changed since its merge base with `target` (what both changed alike is
    /// not in it; where they differ, b's lines are the `-` side).
    pub fn patch_between(&self, target: Oid, a: &Side, b: &Side) -> Result<String, GitError> {
        let base = self.repo.merge_base(target, a.commit)?;
        let base_tree = self.repo.find_commit(base)?.tree()?;
        let ours = self.changes(&base_tree, a.tree)?;
        if ours.is_empty() {
            return Ok(String::new());
        }
        let mut options = git2::DiffOptions::new();
        for path in ours.iter() {
            options.pathspec(path);
        }
        options.disable_pathspec_match(true);
        let diff = self.repo.diff_tree_to_tree(
            Some(&self.repo.find_tree(b.tree)?),
            Some(&self.repo.find_tree(a.tree)?),
            Some(&mut options),
        )?;
        let mut text = Vec::new();
        diff.print(git2::DiffFormat::Patch, |_, _, line| {
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin() as u8);
            }
            text.extend_from_slice(line.content());
            true
        })?;
        Ok(String::from_utf8_lossy(&text).into_owned())
    }
}

/// The paths of `worktree` whose content differs from its HEAD commit (tracked changes,
/// staged or not, and the untracked files git does not ignore, within the bounds above),
/// sorted; none when the worktree is gone or not on `branch`. Every file's status is
/// looked at. Opens its own handle, so several worktrees can be walked at once.
fn uncommitted_paths(branch: &str, worktree: &Path) -> Result<Vec<Vec<u8>>, GitError> {
    let Ok(wt) = Repository::open(worktree) else {
        return Ok(Vec::new());
    };
    let on_branch = wt
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().map(str::to_string))
        .is_some_and(|t| t.strip_prefix("refs/heads/") == Some(branch));
    if !on_branch {
        return Ok(Vec::new());
    }
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = wt.statuses(Some(&mut opts))?;
    let mut untracked = 0;
    let mut paths: Vec<Vec<u8>> = Vec::new();
    for entry in statuses.iter() {
        if entry.status().contains(git2::Status::WT_NEW) {
            untracked += 1;
            let too_big =
                std::fs::symlink_metadata(worktree.join(OsStr::from_bytes(entry.path_bytes())))
                    .is_ok_and(|m| m.len() > UNTRACKED_MAX_BYTES);
            if untracked > UNTRACKED_MAX_FILES || too_big {
                continue;
            }
        }
        paths.push(entry.path_bytes().to_vec());
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Whether two sets of changed paths touch the same path, or one a path inside a folder
/// the other turned into a file (or the other way round): only then can a merge conflict.
fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small.iter().any(|path| {
        large.contains(path)
            // A folder of `path` is a file on the other side…
            || path
                .match_indices('/')
                .any(|(i, _)| large.contains(&path[..i]))
            // …or `path` is a folder of a file on the other side.
            || large
                .range(format!("{path}/")..)
                .next()
                .is_some_and(|p| p.starts_with(&format!("{path}/")))
    })
}

fn io(path: &Path, source: std::io::Error) -> GitError {
    GitError::Io {
        context: format!("reading {}", path.display()),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn changed_paths_overlap_on_a_path_or_across_a_folder() {
        assert!(!overlap(
            &set(&["a.rs", "src/b.rs"]),
            &set(&["c.rs", "src/d.rs"])
        ));
        assert!(overlap(&set(&["src/b.rs"]), &set(&["c.rs", "src/b.rs"])));
        // A file where the other side has a folder, either way round.
        assert!(overlap(&set(&["src"]), &set(&["src/b.rs"])));
        assert!(overlap(&set(&["x", "src/lib/b.rs"]), &set(&["src/lib"])));
        // A shared prefix of names is no folder.
        assert!(!overlap(&set(&["src"]), &set(&["src.rs", "srcs/b.rs"])));
    }
}
