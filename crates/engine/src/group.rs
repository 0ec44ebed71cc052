//! Groups: one task given to several agents (`dispatch --agents/--count`), each an ordinary
//! session, recorded together; the repo's check run in each candidate's worktree; and the
//! candidates compared side by side before one is merged.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::agent::AgentKind;
use crate::context::Context;
use crate::error::Error;
use crate::git::{Repo, Side};
use crate::report::Report;
use crate::session::create::{self, Plan, Undo};
use crate::state::{CheckResult, Group, Session, Status, Store};

/// At most this many candidates in one fan-out, unless `ORCHESTRA_FANOUT_MAX` says
/// otherwise: each is an agent, a worktree and a window running at once, and each costs.
pub const DEFAULT_BOUND: usize = 8;

/// What `orchestra check` keeps of a check's output: its last lines.
const TAIL_LINES: usize = 40;
const TAIL_BYTES: usize = 4096;

/// One candidate of a fan-out: its label and agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub label: String,
    pub command: Vec<String>,
    pub kind: AgentKind,
}

/// The bound on a fan-out's size: `ORCHESTRA_FANOUT_MAX`, else [`DEFAULT_BOUND`].
pub fn bound() -> Result<usize, Error> {
    match crate::paths::non_empty_env("ORCHESTRA_FANOUT_MAX") {
        None => Ok(DEFAULT_BOUND),
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                Error::BadInput(format!(
                    "ORCHESTRA_FANOUT_MAX={text:?}: write a whole number of sessions, 1 or more"
                ))
            }),
    }
}

/// The candidates of `dispatch LABEL --agents … --count N`: each agent (a kind's name or
/// a full command; comma-separated, repeatable; else `default` alone) `count` times.
/// Labelled `LABEL-<kind>` when every candidate is of another kind, else `LABEL-1…N`.
/// `resolve` turns an agent's words into its argv, refusing one it cannot find; `kind`
/// is `--kind`, else the program's.
pub fn candidates(
    label: &str,
    agents: &[String],
    count: Option<usize>,
    default: Vec<String>,
    kind: Option<AgentKind>,
    resolve: impl Fn(&str) -> Result<Vec<String>, Error>,
) -> Result<Vec<Candidate>, Error> {
    let mut commands = Vec::new();
    for item in agents.iter().flat_map(|a| a.split(',')) {
        let item = item.trim();
        if item.is_empty() {
            return Err(Error::BadInput(
                "--agents: an empty agent between commas: name a kind (claude, codex, gemini…) or a command".into(),
            ));
        }
        let argv = resolve(item).map_err(|e| Error::BadInput(format!("--agents {item:?}: {e}")))?;
        commands.push(argv);
    }
    if commands.is_empty() {
        commands.push(default);
    }
    let count = count.unwrap_or(1);
    if count == 0 {
        return Err(Error::BadInput(
            "--count 0: a fan-out needs 1 or more".into(),
        ));
    }
    let total = commands.len().saturating_mul(count);
    let bound = bound()?;
    if total > bound {
        return Err(Error::BadInput(format!(
            "{total} sessions asked for, more than the bound of {bound}: each runs an agent, a worktree and a window at once and costs its own tokens (ORCHESTRA_FANOUT_MAX raises the bound)"
        )));
    }
    let mut made: Vec<(Vec<String>, AgentKind)> = Vec::new();
    for argv in commands {
        let kind = kind.unwrap_or_else(|| AgentKind::from_program(&argv[0]));
        for _ in 0..count {
            made.push((argv.clone(), kind));
        }
    }
    let mut kinds: Vec<AgentKind> = made.iter().map(|(_, k)| *k).collect();
    kinds.sort_by_key(|k| k.as_str());
    kinds.dedup();
    let by_kind = count == 1 && kinds.len() == made.len() && made.len() > 1;
    let out: Vec<Candidate> = made
        .into_iter()
        .enumerate()
        .map(|(i, (command, kind))| Candidate {
            label: if by_kind {
                format!("{label}-{}", kind.as_str())
            } else {
                format!("{label}-{}", i + 1)
            },
            command,
            kind,
        })
        .collect();
    for c in &out {
        crate::label::validate(&c.label).map_err(|e| {
            Error::BadInput(format!(
                "the candidate label {:?}: {e} (pick a shorter group label)",
                c.label
            ))
        })?;
    }
    Ok(out)
}

/// Refuses a group label that names a live session or group of `repo` (bad input).
pub fn check_free(store: &Store, repo: &Repo, label: &str) -> Result<(), Error> {
    let repo_id = repo.id();
    if let Some(existing) = store.session_by_label(&repo_id, label)? {
        return Err(Error::BadInput(format!(
            "group label {label:?} is already the label of session {} ({}): pick another",
            existing.id, existing.status
        )));
    }
    if let Some(group) = store.group(&repo_id, label)? {
        if live(store, &group)? {
            return Err(Error::BadInput(format!(
                "group {label:?} already exists in this repo ({} member(s)): pick another label",
                group.members.len()
            )));
        }
    }
    Ok(())
}

/// Refuses `label` when it names a live group of `repo` (bad input).
pub fn check_free_group(store: &Store, repo: &Repo, label: &str) -> Result<(), Error> {
    if let Some(group) = store.group(&repo.id(), label)? {
        if live(store, &group)? {
            return Err(Error::BadInput(format!(
                "group {label:?} already exists in this repo ({} member(s)) without the session {label}: fork another session or remove the group",
                group.members.len()
            )));
        }
    }
    Ok(())
}

/// Whether `group` still stands: its maker has not finished, or a member is not merged.
fn live(store: &Store, group: &Group) -> Result<bool, Error> {
    if !group.complete {
        return Ok(true);
    }
    for id in &group.members {
        if let Some(s) = store.session_by_id(id)? {
            if s.status != Status::Merged {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The groups as the status line reads them (label, member ids), kept in a file so that a
/// status tick opens no database for them.
fn cache_path(home: &Path) -> std::path::PathBuf {
    home.join("cache").join("groups.json")
}

/// Rewrites the groups' file from the record: what a change of a group calls.
pub fn save_cache(home: &Path, store: &Store) -> Result<(), Error> {
    let groups: Vec<(String, Vec<String>)> = store
        .groups(None)?
        .into_iter()
        .filter(|g| g.complete && !g.members.is_empty())
        .map(|g| (g.label, g.members))
        .collect();
    let dir = home.join("cache");
    crate::paths::private_dir(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let json = serde_json::to_vec(&groups).unwrap_or_default();
    crate::paths::replace_private(&cache_path(home), json)
        .map_err(Error::io("writing the groups' cache"))?;
    Ok(())
}

/// The groups' file: (label, member ids); nothing when there is none.
pub fn load_cache(home: &Path) -> Vec<(String, Vec<String>)> {
    std::fs::read(cache_path(home))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// What a fan-out made so far: taken back whole, newest member first.
#[derive(Default)]
pub struct GroupUndo {
    members: Vec<Undo>,
}

impl GroupUndo {
    pub fn push(&mut self, undo: Undo) {
        self.members.push(undo);
    }

    /// Undoes every member, newest first; returns what could not be undone.
    pub fn run(self, repo: &Repo, tmux: &crate::tmux::Tmux, store: &Store) -> Vec<String> {
        let mut problems = Vec::new();
        for undo in self.members.into_iter().rev() {
            problems.extend(undo.run(repo, tmux, store));
        }
        problems
    }
}

/// Makes the planned members of group `label` one by one (each a dispatch), recording the
/// group first and each member as it is made. A failure part-way undoes every member made
/// and the group, and returns the error. The caller holds the work lock.
pub fn fan_out(
    ctx: &Context,
    store: &mut Store,
    repo: &Repo,
    label: &str,
    plans: &[Plan<'_>],
    out: &mut dyn Report,
) -> Result<Vec<Session>, Error> {
    let repo_id = repo.id();
    let planned: Vec<String> = plans.iter().map(|p| p.label().to_string()).collect();
    store.create_group(&repo_id, label, &planned)?;
    crate::fault::point("dispatch");
    let tmux = ctx.tmux();
    let mut undo = GroupUndo::default();
    let mut made = Vec::new();
    let result = (|| -> Result<(), Error> {
        for plan in plans {
            let (session, member) = create::dispatch_undoable(ctx, store, repo, plan, out)?;
            undo.push(member);
            store.add_group_member(&repo_id, label, &session.id)?;
            made.push(session);
            crate::fault::point("dispatch");
        }
        store.complete_group(&repo_id, label)?;
        Ok(())
    })();
    match result {
        Ok(()) => {
            if let Err(e) = save_cache(&ctx.home, store) {
                out.note(format!("the status line will not show group {label}: {e}"));
            }
            Ok(made)
        }
        Err(e) => {
            for problem in undo.run(repo, &tmux, store) {
                out.note(format!("while undoing: {problem}"));
            }
            let _ = store.delete_group(&repo_id, label);
            Err(e)
        }
    }
}

/// doctor --fix's part: a group its maker never completed (killed part-way; doctor holds
/// the work lock, so no maker is still at it) is undone whole: each member it made, and
/// a planned label's session made after the group that never got its member row. Returns
/// what could not be undone.
pub fn undo_incomplete(home: &Path, store: &Store, repo: &Repo, group: &Group) -> Vec<String> {
    let mut sessions: Vec<Session> = group
        .members
        .iter()
        .filter_map(|id| store.session_by_id(id).ok().flatten())
        .collect();
    for label in &group.planned {
        if let Ok(Some(s)) = store.session_by_label(&group.repo, label) {
            if s.created_at >= group.created_at && !sessions.iter().any(|m| m.id == s.id) {
                sessions.push(s);
            }
        }
    }
    let mut problems = Vec::new();
    // A planned label killed before its row: its branch and worktree, made after the
    // group, hold nothing but what the maker put there (a fork's copy of its source's
    // work, still in the source's worktree), so they go rather than be archived.
    for label in &group.planned {
        if sessions.iter().any(|s| &s.label == label) {
            continue;
        }
        let branch = format!("session/{label}");
        let Some((id, at)) = repo.branch_made(&branch) else {
            continue;
        };
        if at < group.created_at || matches!(store.session_by_id(&id), Ok(Some(_))) {
            continue;
        }
        if let Ok(Some(path)) = repo.worktree_of_branch(&branch) {
            if let Err(e) = repo.remove_worktree(&path) {
                problems.push(format!("removing worktree {}: {e}", path.display()));
                continue;
            }
        }
        if let Err(e) = repo.delete_branch(&branch) {
            problems.push(format!("deleting branch {branch}: {e}"));
        }
    }
    for s in sessions.iter().rev() {
        let undo = Undo::of_session(home, s);
        match crate::session::session_tmux(s) {
            Ok(tmux) => problems.extend(undo.run(repo, &tmux, store)),
            Err(e) => problems.push(format!("{}: {e}", s.label)),
        }
    }
    if let Err(e) = store.delete_group(&group.repo, &group.label) {
        problems.push(format!("removing group {}: {e}", group.label));
    }
    if let Err(e) = save_cache(home, store) {
        problems.push(e.to_string());
    }
    problems
}

/// The members of group `label` (live or merged), or the one session `label` names as a
/// group of one; bad input when neither exists.
pub fn members(
    store: &Store,
    repo: &Repo,
    label: &str,
) -> Result<(Option<Group>, Vec<Session>), Error> {
    let repo_id = repo.id();
    if let Some(group) = store.group(&repo_id, label)? {
        let sessions = group
            .members
            .iter()
            .filter_map(|id| store.session_by_id(id).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        return Ok((Some(group), sessions));
    }
    match store.session_by_label(&repo_id, label)? {
        Some(s) => Ok((None, vec![s])),
        None => Err(Error::BadInput(format!(
            "no group or session {label:?} in this repo (`orchestra list` shows them)"
        ))),
    }
}

/// Refuses (bad input) `members` when one runs on a remote host: its worktree is on that
/// host, so `doing` (a check, a comparison) has nothing here to read. Only a session named
/// alone can be remote: a fan-out and a fork make local sessions.
pub fn refuse_remote(members: &[Session], doing: &str) -> Result<(), Error> {
    match members.iter().find(|s| s.host.is_some()) {
        Some(s) => Err(Error::BadInput(format!(
            "{} runs on host {}: {doing} a local session's worktree only",
            s.label,
            s.host.as_deref().unwrap_or_default()
        ))),
        None => Ok(()),
    }
}

/// Runs the repo's `[worktree] check` in `session`'s worktree as a bounded job (its own
/// process group, killed whole at `check_timeout`, output kept) and records the result on
/// the session. Refused when the repo has no check or it is not allowed yet.
pub fn check(
    home: &Path,
    store: &Store,
    repo: &Repo,
    session: &Session,
) -> Result<CheckResult, Error> {
    let main = repo.main_worktree();
    let table = crate::worktree::table(main)?;
    let Some((argv, timeout)) = table
        .as_ref()
        .and_then(|(_, t)| t.check_argv().map(|a| (a, t.check_timeout())))
    else {
        return Err(Error::BadInput(
            "this repo has no check: set `[worktree] check = \"cargo test\"` in orchestra.toml (then `orchestra allow`)".into(),
        ));
    };
    crate::trust::require_commands_allowed(home, main)?;
    let worktree = Path::new(&session.worktree);
    if !worktree.is_dir() {
        return Err(Error::Refused(format!(
            "the worktree of {} ({}) is gone",
            session.label, session.worktree
        )));
    }
    // A sandboxed session's check runs in its box, as its setup does: the repo's command
    // is the repo's words, and the box is what keeps them to the worktree.
    let (argv, env) = crate::session::sandbox::job_command(home, session, argv)?;
    let started = Instant::now();
    let (ended, output) = crate::worktree::run_captured(&crate::worktree::Job {
        argv: &argv,
        cwd: worktree,
        env: &env,
        timeout,
    });
    let result = CheckResult {
        passed: ended.ok(),
        ended: ended.to_string(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        tail: tail(&output),
        at: crate::state::now(),
    };
    store.set_check(&session.id, &result)?;
    store.record_event(
        session,
        "check",
        "",
        if result.passed { "passed" } else { "failed" },
        &result.ended,
    )?;
    Ok(result)
}

/// The last [`TAIL_LINES`] lines of `output`, at most [`TAIL_BYTES`] bytes.
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let mut text = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if text.len() > TAIL_BYTES {
        let mut cut = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = text[cut..].to_string();
    }
    text
}

/// One candidate as `compare` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub label: String,
    pub agent: String,
    pub status: String,
    pub state: String,
    pub branch: String,
    pub commits: usize,
    pub files: usize,
    pub insertions: usize,
    pub deletions: usize,
    /// Its last `orchestra check`, else null.
    pub check: Option<CheckResult>,
    /// US dollars so far; null where unknown (an agent without usage logs, no price).
    pub cost_usd: Option<f64>,
    /// Seconds since it was dispatched (until its merge for a merged one).
    pub wall_secs: i64,
    /// The paths that conflict with its target branch if merged now.
    pub conflicts_target: Vec<String>,
    /// The other candidates it conflicts with, and where.
    pub conflicts_with: Vec<PairConflict>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairConflict {
    pub label: String,
    pub paths: Vec<String>,
}

/// The candidates side by side: what each changed (uncommitted work included), its check,
/// cost and time, and the conflicts with the target and with each other, merged in memory
/// as the radar merges (no index, ref or object of the repo written).
pub fn compare(
    store: &Store,
    repo: &Repo,
    sessions: &[Session],
    costs: &HashMap<String, Option<f64>>,
) -> Result<Vec<Row>, Error> {
    let scratch = repo.scratch()?;
    let checks = store.check_results(Some(&repo.id()))?;
    let now = crate::state::now();
    let mut sides: Vec<Option<(Side, Side)>> = Vec::new();
    let mut rows = Vec::new();
    // Every live candidate's worktree read at once: each read looks at every file, and
    // the walks of several worktrees share the cores.
    let live: Vec<(&str, &Path)> = sessions
        .iter()
        .filter(|s| s.status != Status::Merged)
        .map(|s| (s.branch.as_str(), Path::new(&s.worktree)))
        .collect();
    let mut reads = scratch.read_worktrees(&live).into_iter();
    for s in sessions {
        let target = crate::session::target_branch(repo, s, None).ok();
        let work = if s.status == Status::Merged {
            None
        } else {
            reads.next().and_then(Result::ok).map(|read| read.side)
        };
        let target_side = target.as_deref().and_then(|t| scratch.branch_side(t).ok());
        let (changed, conflicts_target) = match (work, target_side) {
            (Some(work), Some(t)) => {
                let changed = scratch.changed(t.commit, &work)?;
                let paths = scratch.check(&t, &work)?.paths;
                sides.push(Some((work, t)));
                (changed, paths)
            }
            _ => {
                sides.push(None);
                (crate::git::Changed::default(), Vec::new())
            }
        };
        let end = if s.status == Status::Merged {
            s.updated_at
        } else {
            now
        };
        rows.push(Row {
            id: s.id.clone(),
            label: s.label.clone(),
            agent: s.agent_kind.as_str().to_string(),
            status: s.status.to_string(),
            state: s.state.to_string(),
            branch: s.branch.clone(),
            commits: changed.commits,
            files: changed.files.len(),
            insertions: changed.insertions,
            deletions: changed.deletions,
            check: checks.get(&s.id).cloned(),
            cost_usd: costs.get(&s.id).copied().flatten(),
            wall_secs: (end - s.created_at).max(0),
            conflicts_target,
            conflicts_with: Vec::new(),
        });
    }
    for i in 0..rows.len() {
        for j in (i + 1)..rows.len() {
            let (Some((a, _)), Some((b, _))) = (&sides[i], &sides[j]) else {
                continue;
            };
            let paths = scratch.check(a, b)?.paths;
            if paths.is_empty() {
                continue;
            }
            let (la, lb) = (rows[i].label.clone(), rows[j].label.clone());
            rows[i].conflicts_with.push(PairConflict {
                label: lb,
                paths: paths.clone(),
            });
            rows[j]
                .conflicts_with
                .push(PairConflict { label: la, paths });
        }
    }
    Ok(rows)
}

/// What `a` changes that `b` does not (a patch from b's work to a's, over a's paths),
/// uncommitted work included.
pub fn difference(repo: &Repo, a: &Session, b: &Session) -> Result<String, Error> {
    let scratch = repo.scratch()?;
    let target = crate::session::target_branch(repo, a, None)?;
    let target = scratch.branch_side(&target)?;
    let mut reads = scratch
        .read_worktrees(&[
            (a.branch.as_str(), Path::new(&a.worktree)),
            (b.branch.as_str(), Path::new(&b.worktree)),
        ])
        .into_iter();
    let (Some(a_read), Some(b_read)) = (reads.next(), reads.next()) else {
        unreachable!("read_worktrees answers once per worktree");
    };
    let (a_side, b_side) = (a_read?.side, b_read?.side);
    Ok(scratch.patch_between(target.commit, &a_side, &b_side)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(words: &str) -> Result<Vec<String>, Error> {
        match words {
            "nope" => Err(Error::BadInput("agent program \"nope\" not found".into())),
            other => Ok(shell_words::split(other).unwrap()),
        }
    }

    #[test]
    fn kinds_name_their_candidates_and_counts_number_them() {
        let by_kind = candidates(
            "api",
            &["claude,codex".into(), "gemini".into()],
            None,
            vec!["claude".into()],
            None,
            found,
        )
        .unwrap();
        let labels: Vec<&str> = by_kind.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["api-claude", "api-codex", "api-gemini"]);
        let counted = candidates("api", &[], Some(3), vec!["claude".into()], None, found).unwrap();
        let labels: Vec<&str> = counted.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["api-1", "api-2", "api-3"]);
        let twice = candidates(
            "api",
            &["claude --model a,claude --model b".into()],
            None,
            vec![],
            None,
            found,
        )
        .unwrap();
        assert_eq!(twice[1].label, "api-2");
        assert_eq!(twice[1].command, ["claude", "--model", "b"]);
    }

    #[test]
    fn an_unknown_agent_an_empty_one_and_too_many_are_refused() {
        let refused = |agents: &[&str], count| {
            let agents: Vec<String> = agents.iter().map(ToString::to_string).collect();
            candidates("api", &agents, count, vec!["claude".into()], None, found)
                .unwrap_err()
                .to_string()
        };
        assert!(refused(&["claude,nope"], None).contains("--agents \"nope\""));
        assert!(refused(&["claude,,codex"], None).contains("empty agent"));
        let over = refused(&[], Some(DEFAULT_BOUND + 1));
        assert!(over.contains("more than the bound of 8"), "{over}");
        assert!(refused(&[], Some(0)).contains("--count 0"));
    }

    #[test]
    fn a_tail_keeps_the_end() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let kept = tail(&long);
        assert!(
            kept.starts_with("line 60") && kept.ends_with("line 99"),
            "{kept}"
        );
        assert!(tail(&"é".repeat(5000)).len() <= TAIL_BYTES);
    }
}
