//! Work inside a worktree's submodules. A submodule initialised in a linked worktree
//! keeps its repository under that worktree's admin folder (`.git/worktrees/<name>/
//! modules/`), which goes with the worktree: its uncommitted edits and the commits no
//! remote has would go too. Found here (a kill refuses them), and kept (a WIP commit in
//! the submodule, its commits fetched onto a branch of a repository that stays) before
//! a removal.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository};

use super::{commit_all, free_archive_name_in, run_git_dir, uncommitted_paths, GitError, Oid};

/// What a submodule of a worktree holds that removing the worktree would lose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmoduleWork {
    /// Its folder, relative to the worktree (a nested one as `outer/inner`).
    pub path: String,
    pub uncommitted: Vec<String>,
    /// Commits no remote-tracking ref of it reaches (when its repository goes with the
    /// worktree), or that only its detached HEAD reaches (when it stays).
    pub commits: usize,
}

impl std::fmt::Display for SubmoduleWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.uncommitted.is_empty() {
            parts.push(format!(
                "uncommitted: {}",
                crate::paths::short_list(&self.uncommitted)
            ));
        }
        if self.commits > 0 {
            parts.push(format!(
                "{} commit(s) only the worktree holds",
                self.commits
            ));
        }
        write!(f, "{} ({})", self.path, parts.join("; "))
    }
}

/// What [`super::Repo::keep_submodule_work`] did for one submodule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptSubmodule {
    pub path: String,
    /// The WIP commit made of its uncommitted edits, and how many paths it holds.
    pub wip: Option<(Oid, usize)>,
    /// The branches made, each with how many commits only it holds there.
    pub branches: Vec<(String, usize)>,
    /// The repository holding them: the submodule's own where it stays, else the main
    /// worktree's copy of it (`.git/modules/<name>`), else the superproject itself.
    pub repository: PathBuf,
}

/// An initialised submodule of a worktree.
struct Found {
    /// Relative to the top worktree.
    path: String,
    workdir: PathBuf,
    repo: Repository,
    /// Its git dir, canonical.
    git_dir: PathBuf,
    /// Whether its git dir is one of the repository's own copies (`.git/modules/`),
    /// which the removal does not delete.
    stays: bool,
}

/// Where a submodule's repository may be: in what a worktree's removal deletes (the
/// worktree and its admin folder), or in the repository's own copies of its submodules
/// (`.git/modules/`), which stay.
struct Places {
    doomed: Vec<PathBuf>,
    kept: PathBuf,
}

impl Places {
    fn of(worktree: &Path) -> Result<Places, GitError> {
        let repo = Repository::open(worktree)?;
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let admin = canonical(repo.path());
        // A linked worktree's git dir is `<common>/worktrees/<name>/`.
        let common = match admin.parent().and_then(Path::parent) {
            Some(common) if repo.is_worktree() => common.to_path_buf(),
            _ => admin.clone(),
        };
        Ok(Places {
            doomed: vec![canonical(worktree), admin],
            kept: common.join("modules"),
        })
    }

    /// Whether a repository at `git_dir` stays after the removal; `None` when it is
    /// neither there nor in a place that goes: another repository's, not ours to touch.
    fn stays(&self, git_dir: &Path) -> Option<bool> {
        if self.doomed.iter().any(|f| git_dir.starts_with(f)) {
            Some(false)
        } else if git_dir.starts_with(&self.kept) {
            Some(true)
        } else {
            None
        }
    }
}

/// The submodules of the worktree at `worktree` that are initialised (their folder opens
/// as a repository), nested ones after their parent. Gitlinks are read from the index
/// and from HEAD's tree, not `.gitmodules`: a submodule the index dropped still has its
/// repository there, and a malformed `.gitmodules` must not hide one. A submodule folder
/// that is a link, or leads out of the worktree, is not the worktree's (a link goes
/// without what it points at); one whose `.git` names a repository outside this one is
/// refused ([`GitError::ForeignSubmodule`]), never committed into.
fn initialised(worktree: &Path) -> Result<Vec<Found>, GitError> {
    let places = Places::of(worktree)?;
    let top = worktree
        .canonicalize()
        .unwrap_or_else(|_| worktree.to_path_buf());
    let mut found = Vec::new();
    collect(worktree, "", &top, &places, &mut found)?;
    Ok(found)
}

fn collect(
    dir: &Path,
    prefix: &str,
    top: &Path,
    places: &Places,
    found: &mut Vec<Found>,
) -> Result<(), GitError> {
    let repo = Repository::open(dir)?;
    let mut links: Vec<String> = Vec::new();
    for entry in repo.index()?.iter() {
        if entry.mode == 0o160000 {
            links.push(String::from_utf8_lossy(&entry.path).into_owned());
        }
    }
    if let Ok(tree) = repo.head().and_then(|h| h.peel_to_tree()) {
        tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            if entry.kind() == Some(git2::ObjectType::Commit) {
                if let Some(name) = entry.name() {
                    links.push(format!("{root}{name}"));
                }
            }
            git2::TreeWalkResult::Ok
        })?;
    }
    links.sort();
    links.dedup();
    let here = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for link in links {
        let workdir = dir.join(&link);
        if !std::fs::symlink_metadata(&workdir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let at = workdir.canonicalize().unwrap_or_else(|_| workdir.clone());
        if !at.starts_with(top) || at == here {
            continue;
        }
        // No search upwards: an uninitialised submodule is an empty folder, which must
        // not be read as the superproject.
        let Ok(sub) = Repository::open(&workdir) else {
            continue;
        };
        let same_folder = sub
            .workdir()
            .map(|w| w.canonicalize().unwrap_or_else(|_| w.to_path_buf()))
            .is_some_and(|w| w == at);
        if !same_folder {
            continue;
        }
        let git_dir = sub
            .path()
            .canonicalize()
            .unwrap_or_else(|_| sub.path().to_path_buf());
        let path = format!("{prefix}{link}");
        let Some(stays) = places.stays(&git_dir) else {
            return Err(GitError::ForeignSubmodule { path, git_dir });
        };
        found.push(Found {
            path: path.clone(),
            workdir: workdir.clone(),
            stays,
            git_dir,
            repo: sub,
        });
        collect(&workdir, &format!("{path}/"), top, places, found)?;
    }
    Ok(())
}

/// A commit of a submodule to keep: `HEAD` or a local branch, and the commits only it
/// reaches (past what is safe and what an earlier tip keeps).
struct Tip {
    source_ref: String,
    branch: Option<String>,
    commit: Oid,
    commits: usize,
}

/// The tips of `found` whose commits would be lost: what no remote-tracking ref reaches
/// (nor, when its repository stays, a local branch, which stays with it).
fn unkept_tips(found: &Found) -> Result<Vec<Tip>, GitError> {
    let repo = &found.repo;
    let mut safe: Vec<Oid> = Vec::new();
    for reference in repo.references()? {
        let reference = reference?;
        let keeps = reference.is_remote() || (found.stays && reference.is_branch());
        if keeps {
            if let Ok(commit) = reference.peel_to_commit() {
                safe.push(commit.id());
            }
        }
    }
    let mut candidates: Vec<(String, Option<String>, Oid)> = Vec::new();
    if let Ok(head) = repo.head() {
        if let Ok(commit) = head.peel_to_commit() {
            let branch = (!repo.head_detached()?)
                .then(|| head.shorthand().map(str::to_string))
                .flatten();
            candidates.push(("HEAD".into(), branch, commit.id()));
        }
    }
    if !found.stays {
        for branch in repo.branches(Some(BranchType::Local))? {
            let (branch, _) = branch?;
            let (Some(name), Some(commit)) = (branch.name()?, branch.get().target()) else {
                continue;
            };
            candidates.push((format!("refs/heads/{name}"), Some(name.to_string()), commit));
        }
    }
    let mut tips: Vec<Tip> = Vec::new();
    for (source_ref, branch, commit) in candidates {
        let mut walk = repo.revwalk()?;
        walk.push(commit)?;
        for oid in safe.iter().chain(tips.iter().map(|t| &t.commit)) {
            walk.hide(*oid)?;
        }
        let commits = walk.count();
        if commits > 0 {
            tips.push(Tip {
                source_ref,
                branch,
                commit,
                commits,
            });
        }
    }
    Ok(tips)
}

/// The work in the submodules of the worktree at `worktree` that its removal would lose:
/// uncommitted edits, and commits that exist only in a repository the removal deletes.
pub fn submodule_work(worktree: &Path) -> Result<Vec<SubmoduleWork>, GitError> {
    let mut work = Vec::new();
    for found in initialised(worktree)? {
        let uncommitted = uncommitted_paths(&found.workdir)?;
        let commits = unkept_tips(&found)?.iter().map(|t| t.commits).sum();
        if !uncommitted.is_empty() || commits > 0 {
            work.push(SubmoduleWork {
                path: found.path,
                uncommitted,
                commits,
            });
        }
    }
    Ok(work)
}

impl super::Repo {
    /// Before the worktree at `worktree` goes: in each of its submodules, uncommitted
    /// edits become a WIP commit (`wip_message`), and every commit that would be lost is
    /// kept on a new branch `archive/<label>-<time>` (`archive/<label>-<branch>-<time>`
    /// for a local branch past HEAD) — in the submodule's own repository when that stays,
    /// else fetched into the main worktree's copy of it (`.git/modules/<name>`, where
    /// `git submodule update` there finds them), else into the superproject as
    /// `archive/<label>-submodule-<path>-<time>`. Returns what it kept, where.
    pub fn keep_submodule_work(
        &self,
        worktree: &Path,
        label: &str,
        wip_message: &str,
    ) -> Result<Vec<KeptSubmodule>, GitError> {
        let admin = Repository::open(worktree)?.path().to_path_buf();
        let admin = admin.canonicalize().unwrap_or(admin);
        let mut kept = Vec::new();
        for found in initialised(worktree)? {
            let dirty = uncommitted_paths(&found.workdir)?;
            let wip = if dirty.is_empty() {
                None
            } else {
                Some((commit_all(&found.workdir, wip_message)?, dirty.len()))
            };
            let tips = unkept_tips(&found)?;
            if tips.is_empty() && wip.is_none() {
                continue;
            }
            let (repository, stem) = self.submodule_keeper(&found, &admin, label);
            let keeper = Repository::open(&repository)?;
            let mut branches = Vec::new();
            for tip in tips {
                let stem = match &tip.branch {
                    Some(b) if tip.source_ref != "HEAD" => format!("{stem}-{}", ref_word(b)),
                    _ => stem.clone(),
                };
                let name = free_archive_name_in(&keeper, &stem);
                if found.stays {
                    found.repo.reference(
                        &format!("refs/heads/{name}"),
                        tip.commit,
                        false,
                        &format!("orchestra: kept from the worktree of {label}"),
                    )?;
                } else {
                    let source = found.git_dir.to_string_lossy().into_owned();
                    run_git_dir(
                        &repository,
                        &[
                            "-c",
                            "protocol.file.allow=always",
                            "fetch",
                            "--quiet",
                            "--no-tags",
                            "--no-write-fetch-head",
                            &source,
                            &format!("+{}:refs/heads/{name}", tip.source_ref),
                        ],
                    )?;
                }
                branches.push((name, tip.commits));
            }
            kept.push(KeptSubmodule {
                path: found.path,
                wip,
                branches,
                repository,
            });
        }
        Ok(kept)
    }

    /// Where a submodule's commits go, and the stem of their branch names.
    fn submodule_keeper(&self, found: &Found, admin: &Path, label: &str) -> (PathBuf, String) {
        if found.stays {
            return (found.git_dir.clone(), label.to_string());
        }
        // `.git/worktrees/<w>/modules/a/modules/b` is `.git/modules/a/modules/b` in the
        // main worktree.
        if let Ok(rel) = found.git_dir.strip_prefix(admin) {
            let main_copy = self.repo.path().join(rel);
            if rel.starts_with("modules") && Repository::open(&main_copy).is_ok() {
                return (main_copy, label.to_string());
            }
        }
        (
            self.repo.path().to_path_buf(),
            format!("{label}-submodule-{}", ref_word(&found.path)),
        )
    }
}

/// `text` as one word of a branch name: letters, digits, `.`, `_` and `-` kept, the rest
/// (slashes included) `-`.
fn ref_word(text: &str) -> String {
    let word: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    word.trim_matches('-').to_string()
}
