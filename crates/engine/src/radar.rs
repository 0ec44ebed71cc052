//! The conflict radar: every live session of a repo against its target branch and against
//! every other live session, by merging their trees in memory (uncommitted work included),
//! so a collision is seen while the agents work, not when a person asks to merge.
//!
//! A pass merges only the pairs whose sides moved: results are recorded by the pair of
//! sides merged (commits, and the trees of uncommitted work). It runs in a detached
//! process the status line starts (one at a time, by a lock), never on the status line's
//! own path; what it found reaches the status line through `cache/radar.json`, the
//! windows through `@orchestra_conflicts`, and a person through one notification per
//! pair that appears.

pub mod run;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::git::{GitError, Repo, Scratch, Side, WorktreeRead};
use crate::notify::Fallback;
use crate::state::{Conflict, MergeKey, Session, StateError, Status, Store};
use crate::tmux::{Server, Tmux};

/// How often the status line starts a pass unless `@orchestra-radar-interval` says.
pub const DEFAULT_EVERY_SECS: i64 = 10;
/// The window option holding a window's badge (`⚠2`).
pub const BADGE_OPTION: &str = crate::tmux::options::WINDOW_CONFLICTS;
const DEFAULT_SYMBOL: &str = "⚠";
const DEFAULT_STYLE: &str = "fg=red,bold";
/// The options a pass reads from each tmux server, in its one listing call.
const OPTIONS: &[&str] = &[
    crate::tmux::options::NOTIFY_CMD,
    crate::tmux::options::SYMBOL_CONFLICT,
    crate::tmux::options::STYLE_CONFLICT,
];

#[derive(Debug, thiserror::Error)]
pub enum RadarError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    State(#[from] StateError),
}

impl From<RadarError> for crate::error::Error {
    fn from(e: RadarError) -> crate::error::Error {
        match e {
            RadarError::Git(e) => e.into(),
            RadarError::State(e) => e.into(),
        }
    }
}

/// Whether the radar watches `s`: a live session on this machine with a branch of its own.
pub fn watched(s: &Session) -> bool {
    s.host.is_none() && !s.is_manifest() && s.status != Status::Merged
}

/// The branch a session's work goes into: the one it started from, else the branch of
/// the main worktree (`current`).
fn target_of(s: &Session, current: Option<&str>) -> Option<String> {
    s.base_branch
        .clone()
        .or_else(|| current.map(str::to_string))
}

/// What one pass over a repo did.
#[derive(Debug, Default, Serialize)]
pub struct Scan {
    pub repo: String,
    /// Sessions looked at.
    pub sessions: usize,
    /// Worktrees read in full (every file's status looked at); the others counted as
    /// their last read found them.
    pub read: usize,
    /// Pairs looked at: every two sessions, and each session with its target.
    pub pairs: usize,
    /// Of those, how many were decided now; the others were known from the record.
    pub checked: usize,
    /// Of those, how many took a merge in memory (the rest changed no path in common).
    pub merged: usize,
    /// The pairs that conflict.
    pub conflicts: Vec<Conflict>,
    /// Those that began to conflict with this pass.
    #[serde(skip)]
    pub new: Vec<Conflict>,
}

/// A worktree that printed nothing in its window is still read in full at least this
/// often: a change made without output there (a person's editor) is seen within it.
const FULL_READ_EVERY_MS: i64 = 60_000;

/// What the last full read of a session's worktree found.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LastRead {
    commit: String,
    tree: String,
    /// The paths that differed from the commit: enough to make the same tree again.
    changed: Vec<String>,
    read_ms: i64,
    /// The target commit this commit was last found not landed in: asked again only when
    /// either moves (the answer is theirs alone), so a pass with nothing moved merges
    /// nothing to ask it.
    #[serde(default)]
    not_landed_in: Option<String>,
}

/// How a pass reads the worktrees, and what it remembers of the reads before.
pub struct Reader {
    /// Every worktree in full: what a person asked for is current.
    full: bool,
    memo: BTreeMap<String, LastRead>,
    /// session id → (its window's last output in s, when that was seen in ms).
    activity: HashMap<String, (i64, i64)>,
    now_ms: i64,
}

fn reads_path(home: &Path) -> PathBuf {
    home.join("cache").join("radar-reads.json")
}

impl Reader {
    /// Reads every worktree in full (commands a person runs).
    pub fn full(home: &Path) -> Reader {
        Reader {
            full: true,
            memo: Reader::load(home),
            activity: HashMap::new(),
            now_ms: crate::state::now_micros() / 1000,
        }
    }

    fn load(home: &Path) -> BTreeMap<String, LastRead> {
        std::fs::read(reads_path(home))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Reads in full only the worktrees that may have changed since their last read: its
    /// branch moved, its window showed output since (as the status line's cache saw it),
    /// or the read is older than a minute. The background pass's way: a worktree costs a
    /// status of every file, a session that did nothing costs none.
    pub fn hinted(home: &Path) -> Reader {
        Reader {
            full: false,
            memo: Reader::load(home),
            activity: crate::health::window_activity(home),
            now_ms: crate::state::now_micros() / 1000,
        }
    }

    /// Remembers the reads for the next pass.
    pub fn save(&self, home: &Path) {
        if let Ok(json) = serde_json::to_vec(&self.memo) {
            let _ = crate::paths::replace_private(&reads_path(home), json);
        }
    }

    /// The side of `s` without a full read, when nothing says its worktree changed.
    fn remembered(&self, s: &Session, tip: crate::git::Oid) -> Option<(Side, Vec<String>)> {
        if self.full {
            return None;
        }
        let last = self.memo.get(&s.id)?;
        if last.commit != tip.to_string() || self.now_ms - last.read_ms >= FULL_READ_EVERY_MS {
            return None;
        }
        let (active_s, seen_ms) = self.activity.get(&s.id)?;
        // Seen before the read: what came after is unknown. Output in the second of the
        // read or later: it may have changed.
        if *seen_ms < last.read_ms || active_s * 1000 + 1000 >= last.read_ms {
            return None;
        }
        let tree = last.tree.parse().ok()?;
        Some((
            Side {
                commit: tip,
                tree,
                dirty: false,
            },
            last.changed.clone(),
        ))
    }

    fn remember(&mut self, s: &Session, read: &WorktreeRead) {
        match &read.changed {
            Some(changed) => {
                let commit = read.side.commit.to_string();
                // The landed answer is the commits' alone: a new read of the same commit
                // keeps it.
                let not_landed_in = self
                    .memo
                    .get(&s.id)
                    .filter(|last| last.commit == commit)
                    .and_then(|last| last.not_landed_in.clone());
                self.memo.insert(
                    s.id.clone(),
                    LastRead {
                        commit,
                        tree: read.side.tree.to_string(),
                        changed: changed.clone(),
                        read_ms: self.now_ms,
                        not_landed_in,
                    },
                );
            }
            None => {
                self.memo.remove(&s.id);
            }
        }
    }

    /// Whether `work` (committed work only) was found not landed in `target` as they are.
    fn known_not_landed(&self, s: &Session, work: &Side, target: &Side) -> bool {
        let target = target.commit.to_string();
        !work.dirty
            && self.memo.get(&s.id).is_some_and(|last| {
                last.commit == work.commit.to_string()
                    && last.not_landed_in.as_deref() == Some(target.as_str())
            })
    }

    fn not_landed(&mut self, s: &Session, work: &Side, target: &Side) {
        if work.dirty {
            return;
        }
        if let Some(last) = self.memo.get_mut(&s.id) {
            if last.commit == work.commit.to_string() {
                last.not_landed_in = Some(target.commit.to_string());
            }
        }
    }

    /// A remembered tree made again came out as `side`: the worktree changed without a
    /// sign. What the next pass counts on; not a full read (its time stays).
    fn correct(&mut self, s: &Session, side: &Side) {
        if let Some(last) = self.memo.get_mut(&s.id) {
            last.tree = side.tree.to_string();
        }
    }
}

/// A session's work in a pass: its side, and — when the side is remembered rather than
/// read — the paths to make its tree again from, should a merge need it.
struct Work<'a> {
    session: &'a Session,
    side: Side,
    rebuild: Option<Vec<String>>,
}

/// The other side of a pair: a session (by its place in the list) or the target branch.
enum Other {
    Session(usize),
    Target(String, Side),
}

fn merge_key(a: &Side, b: &Side) -> MergeKey {
    let (a, b) = (a.key(), b.key());
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Makes the tree of a remembered side, if this pass has not got it: by reading again
/// the paths its last read found changed (a full read if that fails). A tree that comes
/// out different means the worktree changed without a sign: it is remembered as found.
fn ensure_tree(
    scratch: &Scratch,
    reader: &mut Reader,
    work: &mut Work<'_>,
) -> Result<(), RadarError> {
    let Some(changed) = work.rebuild.take() else {
        return Ok(());
    };
    if scratch.has_tree(work.side.tree) {
        return Ok(());
    }
    let worktree = Path::new(&work.session.worktree);
    work.side = match scratch.rebuild(work.side.commit, worktree, &changed) {
        Ok(side) => {
            if side != work.side {
                reader.correct(work.session, &side);
            }
            side
        }
        Err(_) => {
            let read = scratch.read_worktree(&work.session.branch, worktree)?;
            reader.remember(work.session, &read);
            read.side
        }
    };
    Ok(())
}

/// One pass over `repo`: the watched sessions among `sessions` (their worktrees read as
/// `reader` says), each pair checked in memory unless the record knows its result, the
/// record brought up to date. Returns what was found; the pairs new since the last pass
/// are in [`Scan::new`].
pub fn scan(
    store: &Store,
    repo: &Repo,
    sessions: &[Session],
    reader: &mut Reader,
) -> Result<Scan, RadarError> {
    let repo_id = repo.id();
    let scratch = repo.scratch()?;
    let mut works: Vec<Work<'_>> = Vec::new();
    let mut read = 0;
    // Merged on the forge with this very tip (`pr --background` read it): nothing left to
    // merge here, whatever the local target holds yet.
    let merged_upstream: HashMap<String, String> = store
        .pull_requests(Some(&repo_id))?
        .into_iter()
        .filter(|(_, p)| p.merged())
        .filter_map(|(id, p)| Some((id, p.head_sha?)))
        .collect();
    for s in sessions.iter().filter(|s| watched(s) && s.repo == repo_id) {
        // A branch renamed or deleted by hand has nothing left to merge.
        let Ok(tip) = scratch.tip(&s.branch) else {
            continue;
        };
        if merged_upstream.get(&s.id) == Some(&tip.to_string()) {
            continue;
        }
        if let Some((side, changed)) = reader.remembered(s, tip) {
            let committed = scratch.commit_side(tip)?;
            works.push(Work {
                session: s,
                side: Side {
                    dirty: side.tree != committed.tree,
                    ..side
                },
                rebuild: Some(changed),
            });
            continue;
        }
        let found = scratch.read_worktree(&s.branch, Path::new(&s.worktree))?;
        read += 1;
        reader.remember(s, &found);
        works.push(Work {
            session: s,
            side: found.side,
            rebuild: None,
        });
    }
    let current = repo.current_branch();
    let mut targets: HashMap<String, Option<Side>> = HashMap::new();
    // Work squashed or rebased into its target already is the target's: like a merged
    // session's, it is dropped (its worktree clean, or it is watched as before).
    let mut kept = Vec::with_capacity(works.len());
    for work in works {
        let tip = target_of(work.session, current.as_deref()).and_then(|target| {
            *targets
                .entry(target.clone())
                .or_insert_with(|| scratch.branch_side(&target).ok())
        });
        if let Some(tip) = tip {
            if !reader.known_not_landed(work.session, &work.side, &tip) {
                if scratch.landed_without_commits(&tip, &work.side)? {
                    continue;
                }
                reader.not_landed(work.session, &work.side, &tip);
            }
        }
        kept.push(work);
    }
    let mut works = kept;
    let mut pairs: Vec<(usize, Other)> = Vec::new();
    for i in 0..works.len() {
        for j in i + 1..works.len() {
            pairs.push((i, Other::Session(j)));
        }
        let Some(target) = target_of(works[i].session, current.as_deref()) else {
            continue;
        };
        let tip = *targets
            .entry(target.clone())
            .or_insert_with(|| scratch.branch_side(&target).ok());
        if let Some(tip) = tip {
            pairs.push((i, Other::Target(target, tip)));
        }
    }

    let known = store.merge_results(&repo_id)?;
    let mut found: HashMap<MergeKey, Vec<String>> = HashMap::new();
    let mut fresh = Vec::new();
    let mut merged = 0;
    let now = crate::state::now();
    let mut conflicts = Vec::new();
    for (i, other) in &pairs {
        let sides = |works: &[Work<'_>]| match other {
            Other::Session(j) => (works[*i].side, works[*j].side),
            Other::Target(_, tip) => (works[*i].side, *tip),
        };
        let (mut a, mut b) = sides(&works);
        let mut key = merge_key(&a, &b);
        if !known.contains_key(&key) && !found.contains_key(&key) {
            ensure_tree(&scratch, reader, &mut works[*i])?;
            if let Other::Session(j) = other {
                ensure_tree(&scratch, reader, &mut works[*j])?;
            }
            (a, b) = sides(&works);
            key = merge_key(&a, &b);
        }
        let paths = match known.get(&key).or_else(|| found.get(&key)) {
            Some(paths) => paths.clone(),
            None => {
                let checked = scratch.check(&a, &b)?;
                merged += usize::from(checked.merged);
                fresh.push((key.clone(), checked.paths.clone()));
                checked.paths
            }
        };
        found.insert(key, paths.clone());
        if paths.is_empty() {
            continue;
        }
        let (other, target) = match other {
            Other::Session(j) => (works[*j].session.id.clone(), false),
            Other::Target(name, _) => (name.clone(), true),
        };
        conflicts.push(Conflict {
            repo: repo_id.clone(),
            session: works[*i].session.id.clone(),
            other,
            target,
            paths,
            uncommitted: a.dirty || b.dirty,
            since: now,
        });
    }
    let stale: Vec<MergeKey> = known
        .into_keys()
        .filter(|k| !found.contains_key(k))
        .collect();
    store.save_merge_results(&repo_id, &fresh, &stale)?;
    let new = store.replace_conflicts(&repo_id, &conflicts)?;
    Ok(Scan {
        repo: repo_id,
        sessions: works.len(),
        read,
        pairs: pairs.len(),
        checked: fresh.len(),
        merged,
        conflicts,
        new,
    })
}

/// A pass over every repo with a watched session; the record of repos without one is
/// dropped. A repo that cannot be read is reported and the others still scanned.
pub fn scan_all(
    store: &Store,
    reader: &mut Reader,
) -> Result<(Vec<Scan>, Vec<String>), RadarError> {
    let sessions = store.sessions(None, false)?;
    let repos: BTreeSet<String> = sessions
        .iter()
        .filter(|s| watched(s))
        .map(|s| s.repo.clone())
        .collect();
    let mut scans = Vec::new();
    let mut problems = Vec::new();
    for repo_id in &repos {
        let result = Repo::discover(Path::new(repo_id))
            .map_err(RadarError::from)
            .and_then(|repo| scan(store, &repo, &sessions, reader));
        match result {
            Ok(scan) => scans.push(scan),
            Err(e) => problems.push(format!("{repo_id}: {e}")),
        }
    }
    store.forget_radar_except(&repos.into_iter().collect::<Vec<_>>())?;
    reader
        .memo
        .retain(|id, _| sessions.iter().any(|s| &s.id == id && watched(s)));
    Ok((scans, problems))
}

/// What the status line shows of the radar, written by each pass.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct StatusFile {
    /// When the last pass ended (ms since the epoch).
    pub computed_ms: i64,
    /// Conflicting pairs, every repo.
    pub pairs: usize,
    pub symbol: String,
    pub style: String,
}

impl StatusFile {
    /// `⚠2` in its style; nothing without conflicts.
    pub fn segment(&self) -> String {
        if self.pairs == 0 {
            return String::new();
        }
        format!("#[{}]{}{}#[default]", self.style, self.symbol, self.pairs)
    }
}

fn status_path(home: &Path) -> PathBuf {
    home.join("cache").join("radar.json")
}

/// The lock a pass holds while it runs (one at a time).
pub fn lock_path(home: &Path) -> PathBuf {
    home.join("cache").join("radar.lock")
}

pub fn load_status(home: &Path) -> Option<StatusFile> {
    let bytes = std::fs::read(status_path(home)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn save_status(home: &Path, status: &StatusFile) {
    if let Ok(json) = serde_json::to_vec(status) {
        // A status file that cannot be written is only a stale segment.
        let _ = crate::paths::replace_private(&status_path(home), json);
    }
}

/// Dates the status file now without changing what it says: after a pass that failed,
/// the next one is due an interval later, not on the next tick.
pub fn touch_status(home: &Path) {
    let mut status = load_status(home).unwrap_or_default();
    status.computed_ms = crate::state::now_micros() / 1000;
    save_status(home, &status);
}

fn shown_path(home: &Path) -> PathBuf {
    home.join("cache").join("radar-shown.json")
}

/// Shows what the record says now: each watched session's window badge (`⚠N`, N the
/// pairs it is in; written only where it changed, only on windows still the session's),
/// one notification per pair in `new`, and the status line's file. A tmux server that
/// is not running is skipped: its windows are gone. When no badge is due to change and
/// nothing is new (what the last pass showed is remembered), no tmux is asked at all.
pub fn show(home: &Path, store: &Store, new: &[Conflict]) -> Result<(), RadarError> {
    let sessions = store.sessions(None, false)?;
    let conflicts = store.conflicts(None)?;
    let mut count: HashMap<&str, usize> = HashMap::new();
    for c in &conflicts {
        *count.entry(c.session.as_str()).or_default() += 1;
        if !c.target {
            *count.entry(c.other.as_str()).or_default() += 1;
        }
    }
    let by_id: HashMap<&str, &Session> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    // Where each badge goes: the session's server and window, and its count.
    let badges: BTreeMap<&str, String> = sessions
        .iter()
        .filter(|s| watched(s))
        .filter_map(|s| {
            let n = count.get(s.id.as_str())?;
            let socket = s.tmux_socket.as_deref().unwrap_or_default();
            let window = s.window.as_deref().unwrap_or_default();
            Some((s.id.as_str(), format!("{socket}\t{window}\t{n}")))
        })
        .collect();
    let shown: BTreeMap<String, String> = std::fs::read(shown_path(home))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let unchanged = new.is_empty()
        && badges.len() == shown.len()
        && badges.iter().all(|(id, b)| shown.get(*id) == Some(b));
    let last = load_status(home).unwrap_or_default();
    let options = if unchanged {
        BTreeMap::new()
    } else {
        let (options, complete) = show_badges(&sessions, &count);
        // A server that failed is asked again by the next pass.
        if complete {
            if let Ok(json) = serde_json::to_vec(&badges) {
                let _ = crate::paths::replace_private(&shown_path(home), json);
            }
        }
        options
    };
    for c in new {
        let Some(s) = by_id.get(c.session.as_str()) else {
            continue;
        };
        let command = options
            .get(&s.tmux_socket.as_deref())
            .and_then(|v| v.first())
            .filter(|c| !c.is_empty())
            .cloned();
        crate::tell::conflict(
            c,
            &by_id,
            &Fallback {
                command,
                tmux_socket: s.tmux_socket.clone(),
            },
        );
    }
    let first = options.values().next();
    let option = |i: usize, last: &str, default: &str| {
        first
            .and_then(|v| v.get(i))
            .filter(|v| !v.is_empty())
            .map(String::as_str)
            .or(Some(last).filter(|v| !v.is_empty()))
            .unwrap_or(default)
            .to_string()
    };
    let status = StatusFile {
        computed_ms: crate::state::now_micros() / 1000,
        pairs: conflicts.len(),
        symbol: option(1, &last.symbol, DEFAULT_SYMBOL),
        style: option(2, &last.style, DEFAULT_STYLE),
    };
    save_status(home, &status);
    Ok(())
}

/// Writes the badges that differ on each server of the watched sessions (one listing call
/// each, one more where a badge changes). Returns each server's [`OPTIONS`], and whether
/// every server answered. A badge is only shown: a server that fails costs it, not the
/// pass.
fn show_badges<'a>(
    sessions: &'a [Session],
    count: &HashMap<&str, usize>,
) -> (BTreeMap<Option<&'a str>, Vec<String>>, bool) {
    let by_id: HashMap<&str, &Session> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let servers: BTreeSet<Option<&str>> = sessions
        .iter()
        .filter(|s| watched(s))
        .map(|s| s.tmux_socket.as_deref())
        .collect();
    let mut options = BTreeMap::new();
    let mut complete = true;
    for socket in servers {
        let tmux = Tmux::new(&Server::at(socket));
        let (windows, values) = match tmux.windows_with_option(BADGE_OPTION, OPTIONS) {
            Ok(Some(seen)) => (seen.windows, seen.values),
            // No server: its windows are gone.
            Ok(None) => continue,
            Err(_) => {
                complete = false;
                continue;
            }
        };
        let symbol = values
            .get(1)
            .filter(|v| !v.is_empty())
            .map_or(DEFAULT_SYMBOL, String::as_str);
        let sets: Vec<(crate::tmux::WindowId, String, String)> = windows
            .into_iter()
            .filter_map(|(window, id, shown)| {
                let wanted = match count.get(id.as_str()) {
                    Some(n) if by_id.get(id.as_str()).is_some_and(|s| watched(s)) => {
                        format!("{symbol}{n}")
                    }
                    _ => String::new(),
                };
                (wanted != shown).then_some((window, id, wanted))
            })
            .collect();
        if !sets.is_empty() && tmux.set_window_option_if_ours(BADGE_OPTION, &sets).is_err() {
            complete = false;
        }
        options.insert(socket, values);
    }
    (options, complete)
}

/// What `session` (merged into `target` now) would leave behind: the other watched
/// sessions of the repo going into `target` that will conflict with it afterwards, with
/// the paths. Merged in memory, as the radar does, uncommitted work included.
pub fn after_merge(
    repo: &Repo,
    sessions: &[Session],
    session: &Session,
    target: &str,
) -> Result<Vec<(Session, Vec<String>)>, RadarError> {
    let scratch = repo.scratch()?;
    let work = scratch.worktree_side(&session.branch, Path::new(&session.worktree))?;
    let merged = scratch.merged(&scratch.branch_side(target)?, &work)?;
    let current = repo.current_branch();
    let mut out = Vec::new();
    for other in sessions.iter().filter(|s| {
        watched(s)
            && s.id != session.id
            && s.repo == session.repo
            && target_of(s, current.as_deref()).as_deref() == Some(target)
    }) {
        let Ok(side) = scratch.worktree_side(&other.branch, Path::new(&other.worktree)) else {
            continue;
        };
        let paths = scratch.check(&merged, &side)?.paths;
        if !paths.is_empty() {
            out.push((other.clone(), paths));
        }
    }
    Ok(out)
}

/// The note `brief --conflicts` sends `session`'s agent: the files and who else changes
/// them. `None` when the record has no conflict of the session.
pub fn briefing(session: &Session, conflicts: &[Conflict], sessions: &[Session]) -> Option<String> {
    let by_id: HashMap<&str, &Session> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut parts = Vec::new();
    for c in conflicts.iter().filter(|c| c.involves(&session.id)) {
        let paths = crate::paths::short_list(&c.paths);
        let with = if c.target {
            format!("{}, the branch your work merges into,", c.other)
        } else {
            let other = if c.session == session.id {
                c.other.as_str()
            } else {
                c.session.as_str()
            };
            match by_id.get(other) {
                Some(s) => format!("session {} (branch {})", s.label, s.branch),
                None => continue,
            }
        };
        let uncommitted = if c.uncommitted {
            " (uncommitted changes count)"
        } else {
            ""
        };
        parts.push(format!(
            "{with} changes the same lines in {paths}{uncommitted}"
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "orchestra conflict radar: your work and other work in progress would conflict if merged: {}. Please coordinate before going further: keep clear of those lines, or agree with the other session who changes them.",
        parts.join("; ")
    ))
}
