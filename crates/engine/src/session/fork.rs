//! `orchestra fork`: a new session from another's current state — a branch at its HEAD
//! with its uncommitted work as one commit (its own worktree and index untouched), a
//! worktree and window as dispatch makes them, the conversation copied where the agent can
//! — and the two side by side in one group.
//!
//! The group: the source's, when it is in one; else a new one named after the source,
//! holding the source and the fork (`compare SOURCE` shows the two). While the fork is
//! being made, a pending group named after the fork stands for it: `doctor --fix` undoes
//! a fork killed part-way as it undoes a fan-out's, and the pending group gives way to the
//! real one in one transaction at the end.

use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::report::Report;
use crate::session::create::{self, Plan, Request};
use crate::session::find_session;
use crate::state::{Session, Store};

/// A fork checked: nothing is made yet.
pub struct Fork<'a> {
    pub source: Session,
    pub plan: Plan<'a>,
    /// The group the two end up in.
    pub group: String,
    /// Whether the agent starts from a copy of the source's conversation.
    pub conversation: bool,
}

/// The source `source` of a fork, refused (bad input) when it is remote, a manifest
/// session, or has a merge or another git operation under way.
pub fn source(home: &Path, store: &Store, repo: &Repo, source: &str) -> Result<Session, Error> {
    let s = find_session(store, repo, source)?;
    if s.host.is_some() {
        return Err(Error::BadInput(format!(
            "{source} runs on host {}: a fork is made from a local session's worktree only",
            s.host.as_deref().unwrap_or_default()
        )));
    }
    if s.is_manifest() {
        return Err(Error::BadInput(format!(
            "{source} comes from orchestra.toml and works in a plain folder: it has no branch to fork"
        )));
    }
    if crate::session::merge::journal_dir(home)
        .join(format!("{}.json", s.id))
        .exists()
    {
        return Err(Error::BadInput(format!(
            "{source} has a merge in progress (`orchestra doctor --fix` settles one that was cut off): fork it after"
        )));
    }
    let worktree = Path::new(&s.worktree);
    if !worktree.is_dir() {
        return Err(Error::BadInput(format!(
            "the worktree of {source} ({}) is gone: nothing to fork",
            s.worktree
        )));
    }
    if let Some(op) = crate::git::operation_in_progress(worktree)? {
        return Err(Error::BadInput(format!(
            "{source} has a git {op} in progress in its worktree: finish or abort it, then fork"
        )));
    }
    Ok(s)
}

/// The group a fork of `source` joins: its own, else one named after it (refused when
/// that name is a live group the source is not in).
pub fn group_of(store: &Store, repo: &Repo, source: &Session) -> Result<String, Error> {
    let repo_id = repo.id();
    if let Some(label) = store.session_groups(Some(&repo_id))?.remove(&source.id) {
        return Ok(label);
    }
    if store.group(&repo_id, &source.label)?.is_some() {
        crate::group::check_free_group(store, repo, &source.label)?;
    }
    Ok(source.label.clone())
}

/// Checks the fork of `source` into `request.label` (bad input: refused, nothing made).
/// `request.base` is ignored: the fork starts from the source's work.
pub fn plan<'a>(
    home: &Path,
    store: &Store,
    repo: &Repo,
    source: Session,
    request: Request<'a>,
) -> Result<Fork<'a>, Error> {
    crate::group::check_free(store, repo, request.label)?;
    let group = group_of(store, repo, &source)?;
    let kind = request.kind;
    let plan = create::plan(home, store, repo, request)?;
    let conversation = crate::agent::of(kind).can_fork()
        && kind == source.agent_kind
        && source.sandbox.is_none()
        && !plan.runs_setup()
        && source.agent_uuid.is_some();
    Ok(Fork {
        source,
        plan,
        group,
        conversation,
    })
}

/// Makes the fork: the source's work as a commit, the conversation's log copied beside
/// the new worktree's, the session dispatched there, then the two grouped. A failure
/// part-way undoes what was made. The caller holds the work lock.
pub fn make(
    ctx: &Context,
    store: &mut Store,
    repo: &Repo,
    fork: &mut Fork<'_>,
    out: &mut dyn Report,
) -> Result<Session, Error> {
    let repo_id = repo.id();
    let label = fork.plan.label().to_string();
    let source = fork.source.clone();
    let source = &source;
    let worktree = Path::new(&source.worktree);
    let head = crate::git::Repo::worktree_head(worktree)?;
    let snapshot = crate::git::snapshot_commit(
        repo,
        worktree,
        &format!(
            "orchestra fork: the uncommitted work of {} carried to {label}",
            source.label
        ),
    )?;
    if snapshot != head {
        out.note(format!(
            "{}'s uncommitted work is one commit on {} ({snapshot:.10}); {}'s worktree is as it was",
            source.label, fork.plan.branch, source.label
        ));
    }
    let from = fork
        .conversation
        .then(|| source.agent_uuid.clone())
        .flatten();
    store.create_group(&repo_id, &label, std::slice::from_ref(&label))?;
    crate::fault::point("dispatch");
    let copied = match &from {
        Some(uuid) => copy_conversation(worktree, fork.plan.worktree(), uuid),
        None => None,
    };
    // No log to copy (the conversation wrote nothing yet, or lives elsewhere): claude
    // would exit on `--resume`, so the fork starts fresh.
    if from.is_some() && copied.is_none() {
        out.note(format!(
            "{}'s conversation log was not found: {label} starts a fresh conversation",
            source.label
        ));
        fork.conversation = false;
    }
    let from = from.filter(|_| copied.is_some());
    fork.plan.forked(snapshot, source.base_branch.clone(), from);
    let made = create::dispatch_undoable(ctx, store, repo, &fork.plan, out);
    let (session, undo) = match made {
        Ok(made) => made,
        Err(e) => {
            if let Some(file) = copied {
                let _ = std::fs::remove_file(file);
            }
            let _ = store.delete_group(&repo_id, &label);
            return Err(e);
        }
    };
    crate::fault::point("dispatch");
    let settled = store.settle_fork(
        &repo_id,
        &label,
        &fork.group,
        &[(&source.label, &source.id), (&label, &session.id)],
    );
    if let Err(e) = settled {
        for problem in undo.run(repo, &ctx.tmux(), store) {
            out.note(format!("while undoing: {problem}"));
        }
        let _ = store.delete_group(&repo_id, &label);
        return Err(e.into());
    }
    if let Err(e) = crate::group::save_cache(&ctx.home, store) {
        out.note(format!(
            "the status line will not show group {}: {e}",
            fork.group
        ));
    }
    Ok(session)
}

/// Claude keeps a conversation under the folder it was begun in and resumes it only from
/// there: the source's log is copied to where the fork's agent will look. Returns the
/// copy, when one was made.
fn copy_conversation(from: &Path, to: &Path, uuid: &str) -> Option<PathBuf> {
    let config = crate::cost::claude_config_dir()?;
    let logs = crate::agent::claude::cost::log_files(&config, &from.to_string_lossy(), uuid);
    let log = logs.into_iter().find(|p| {
        p.file_name()
            .is_some_and(|n| n == format!("{uuid}.jsonl").as_str())
    })?;
    let folder = config
        .join("projects")
        .join(crate::agent::claude::cost::project_folder(
            &to.to_string_lossy(),
        ));
    std::fs::create_dir_all(&folder).ok()?;
    let copy = folder.join(format!("{uuid}.jsonl"));
    std::fs::copy(&log, &copy).ok()?;
    Some(copy)
}
