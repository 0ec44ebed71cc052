//! Merging a session's branch into its target: checked in memory first (nothing is
//! written on a refusal); then objects first, a journal naming the new commit, the ref
//! last (a compare-and-swap), the target's worktree brought along, the wrap-up, the
//! teardown. The person's yes is asked by the command between the two.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::error::Error;
use crate::fault;
use crate::git::{self, Repo, Review};
use crate::health::now_micros;
use crate::paths::short_list;
use crate::report::Report;
use crate::session::remove::{
    check_own_worktree, check_submodules, remove_worktree_keeping_work, Teardown,
};
use crate::session::{close_window, settle_branch};
use crate::state::{AgentState, Session, Status, Store};

/// A merge checked and ready to ask about.
pub struct Checked {
    pub target: String,
    /// Where `target` is checked out, if anywhere (brought along when it moves).
    pub target_worktree: Option<PathBuf>,
    /// The session's worktree is not on its branch: what is committed only there is not
    /// part of the merge.
    pub off_branch: bool,
    pub review: Review,
}

/// Checks a merge of `session` into `target` (the caller holds the work and merge
/// locks): clean trees, something to merge, no conflict. Refused otherwise; nothing changes.
pub fn check(
    repo: &Repo,
    session: &Session,
    target: &str,
    include_uncommitted: bool,
) -> Result<Checked, Error> {
    let target_worktree = repo.worktree_of_branch(target)?;
    if let Some(wt) = &target_worktree {
        let dirty = git::uncommitted_paths(wt)?;
        if !dirty.is_empty() {
            return Err(Error::Refused(format!(
                "{target} is checked out in {} with uncommitted changes ({}): commit or stash them first",
                wt.display(),
                short_list(&dirty)
            )));
        }
    }
    let worktree = Path::new(&session.worktree);
    check_own_worktree(repo, worktree, &session.label, &session.branch)?;
    // A worktree off its branch (a detached HEAD mid-rebase; another branch checked out
    // is refused above): what is committed there is not what merges, and is kept at the
    // teardown instead.
    let off_branch = worktree.exists()
        && Repo::checked_out_branch(worktree)?.as_deref() != Some(session.branch.as_str());
    if worktree.exists() {
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() && !include_uncommitted {
            return Err(Error::Refused(format!(
                "session {} has uncommitted changes ({}): commit them, or pass --include-uncommitted to commit them as a WIP commit first",
                session.label,
                short_list(&dirty)
            )));
        }
        if !dirty.is_empty() && off_branch {
            return Err(Error::Refused(format!(
                "session {} has uncommitted changes, but its worktree is not on {}: --include-uncommitted would commit them where they are not merged; commit them on {} first",
                session.label, session.branch, session.branch
            )));
        }
        check_submodules(
            worktree,
            &session.label,
            (!include_uncommitted).then_some("pass --include-uncommitted"),
        )?;
    }
    let review = repo.review(&session.branch, target)?;
    if review.commits.is_empty()
        && !(include_uncommitted
            && worktree.exists()
            && !git::uncommitted_paths(worktree)?.is_empty())
    {
        return Err(Error::Refused(format!(
            "nothing to merge: {} has no commit that {target} lacks",
            session.branch
        )));
    }
    if !review.conflicts.is_empty() {
        return Err(Error::Refused(format!(
            "{} conflicts with {target} in: {} (nothing was changed; resolve on the branch, then merge again)",
            session.branch,
            review.conflicts.join(", ")
        )));
    }

    Ok(Checked {
        target: target.to_string(),
        target_worktree,
        off_branch,
        review,
    })
}

/// Carries out a checked merge after the person's yes: the WIP commit if asked for, the
/// merge commit, the journal, the ref, the target's worktree; then the wrap-up and the
/// teardown (the session becomes `merged`).
#[allow(clippy::too_many_arguments)]
pub fn land(
    ctx: &Context,
    repo: &Repo,
    store: &Store,
    session: &Session,
    checked: Checked,
    squash: bool,
    include_uncommitted: bool,
    out: &mut dyn Report,
) -> Result<(), Error> {
    let Checked {
        target,
        target_worktree,
        ..
    } = checked;
    let target = target.as_str();
    let worktree = Path::new(&session.worktree);
    fault::point("merge");
    // Only now, after the yes: uncommitted work becomes a WIP commit on the branch.
    check_own_worktree(repo, worktree, &session.label, &session.branch)?;
    if include_uncommitted && worktree.exists() && !git::uncommitted_paths(worktree)?.is_empty() {
        git::commit_all(
            worktree,
            &format!("WIP: uncommitted work of session {}", session.label),
        )?;
        fault::point("merge");
    }
    let review = repo.review(&session.branch, target)?;
    if !review.conflicts.is_empty() {
        return Err(Error::Refused(format!(
            "{} now conflicts with {target} in: {}",
            session.branch,
            review.conflicts.join(", ")
        )));
    }

    // The merge commit is written first (objects only), then the journal naming it, then
    // the ref moves: whenever this process dies, `doctor` can tell from the journal and the
    // target's tip whether the merge landed, and finish or forget it.
    let merged = repo.write_merge(
        &session.branch,
        target,
        squash,
        &merge_message(session, target, &review, squash),
    )?;
    fault::point("merge");
    let journal = Journal {
        session_id: session.id.clone(),
        repo: repo.id(),
        label: session.label.clone(),
        branch: session.branch.clone(),
        target: target.to_string(),
        old: merged.old.to_string(),
        new: Some(merged.new.to_string()),
        target_worktree: target_worktree.clone(),
    };
    let journal_path = journal_dir(&ctx.home).join(format!("{}.json", session.id));
    write_journal(&journal_path, &journal)?;
    fault::point("merge");
    if let Err(e) = repo.land(&session.branch, target, merged) {
        let _ = std::fs::remove_file(&journal_path);
        return Err(e.into());
    }
    fault::point("merge");
    if let Some(wt) = &target_worktree {
        repo.update_worktree(wt, merged.old, merged.new)?;
        fault::point("merge");
    }
    out.line(format!(
        "merged {} into {target}: {} {}",
        session.branch,
        if squash {
            "squashed as"
        } else {
            "merge commit"
        },
        &merged.new.to_string()[..10]
    ));

    wrap_up(ctx, store, session, out);
    fault::point("merge");
    finish_teardown(ctx, repo, store, session, target, out)?;
    let _ = std::fs::remove_file(&journal_path);
    Ok(())
}

const DEFAULT_WRAP_UP_SECS: i64 = 120;

/// Sends `@orchestra-wrap-up-cmd` (or orchestra.toml's `wrap_up_cmd`) to the worker and waits (bounded) until it is idle again.
fn wrap_up(ctx: &Context, store: &Store, session: &Session, out: &mut dyn Report) {
    if session.window.is_none() {
        return;
    }
    let Ok((tmux, pane)) = crate::session::agent_pane(session) else {
        return;
    };
    // The tmux option (the person's), else orchestra.toml's wrap_up_cmd once allowed.
    let from_manifest = || {
        let command =
            crate::manifest::load(&crate::manifest::default_path(Path::new(&session.repo)))
                .ok()
                .map(|m| m.orchestrator.wrap_up_cmd)
                .filter(|c| !c.trim().is_empty())?;
        let allowed = crate::trust::Asked::of(Path::new(&session.repo))
            .is_ok_and(|asked| asked.commands_allowed(&ctx.home));
        if !allowed {
            out.note(format!(
                "wrap-up not sent: orchestra.toml's wrap_up_cmd `{}` is not allowed (`orchestra allow` in the repo allows it)",
                crate::trust::shown(&command)
            ));
            return None;
        }
        Some(command)
    };
    let Some(command) = tmux
        .global_option(crate::tmux::options::WRAP_UP_CMD)
        .ok()
        .flatten()
        .or_else(from_manifest)
    else {
        return;
    };
    let limit = tmux
        .global_option(crate::tmux::options::WRAP_UP_TIMEOUT)
        .ok()
        .flatten()
        .and_then(|t| crate::duration::parse_secs(&t))
        .unwrap_or(DEFAULT_WRAP_UP_SECS);
    let sent_at = now_micros();
    // Only into a pane that is still this session's (ids are reused after a tmux restart).
    if tmux
        .type_text(&pane, &command, session.agent_kind.typing())
        .and_then(|_| tmux.press(&pane, &[crate::tmux::Key::Enter]))
        .is_err()
    {
        out.note(
            "could not send the wrap-up command: the window is gone or no longer the session's"
                .into(),
        );
        return;
    }
    out.line(format!(
        "wrap-up sent to {}; waiting up to {limit}s for it to finish",
        session.label
    ));
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(limit as u64) {
        std::thread::sleep(Duration::from_millis(500));
        let _ = crate::health::tick::refresh_once(ctx);
        if let Ok(Some(s)) = store.session_by_id(&session.id) {
            if s.state_at > sent_at
                && matches!(
                    s.state,
                    AgentState::Idle | AgentState::Exited | AgentState::Error
                )
            {
                return;
            }
        }
    }
    out.note(format!(
        "the wrap-up did not finish within {limit}s; tearing down anyway"
    ));
}

fn write_journal(path: &Path, journal: &Journal) -> Result<(), Error> {
    let json = serde_json::to_vec_pretty(journal).unwrap_or_default();
    crate::paths::replace_private(path, json).map_err(Error::io("writing the merge journal"))
}

fn merge_message(session: &Session, target: &str, review: &Review, squash: bool) -> String {
    let mut text = if squash {
        format!(
            "{} (session {}, squashed)\n\n",
            session.label, session.branch
        )
    } else {
        format!(
            "Merge {} into {target}\n\nSession {}:\n\n",
            session.branch, session.label
        )
    };
    for c in review.commits.iter().rev() {
        text.push_str(&format!("* {} {}\n", &c.id[..10], c.summary));
    }
    text
}

/// What a merge in progress writes first, so `doctor` can finish a half-done one.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Journal {
    pub session_id: String,
    pub repo: String,
    pub label: String,
    pub branch: String,
    pub target: String,
    pub old: String,
    pub new: Option<String>,
    pub target_worktree: Option<PathBuf>,
}

pub fn journal_dir(home: &Path) -> PathBuf {
    home.join("merges")
}

/// After the merge: the window, the worktree and the branch go; the session is `merged`.
/// Work that arrived after the merge (a wrap-up commit) keeps its branch, archived.
pub fn finish_teardown(
    ctx: &Context,
    repo: &Repo,
    store: &Store,
    session: &Session,
    target: &str,
    out: &mut dyn Report,
) -> Result<(), Error> {
    // Until the record says merged, the gone window is no agent that exited.
    let _closing = crate::lock::closing(&ctx.home, &session.id)
        .map_err(Error::io("taking the session's closing lock"))?;
    close_window(session, out);
    fault::point("merge");
    remove_worktree_keeping_work(
        repo,
        Path::new(&session.worktree),
        &session.label,
        &session.branch,
        &format!("WIP: left in session {} after its merge", session.label),
        "merge",
        Some(Teardown {
            home: &ctx.home,
            session,
        }),
        out,
    )?;
    settle_branch(repo, session, Some(target), None, out)?;
    fault::point("merge");
    store.change_status(session, Status::Merged, &format!("merged into {target}"))?;
    fault::point("merge");
    // Inside the teardown the journal covers, so a merge killed before its task moved
    // leaves doctor to move it (moving a Done task to Done again changes nothing).
    let merged = crate::tasks::Merged {
        how: format!("merged into {target}"),
        pull_request: None,
    };
    crate::tasks::work::after_merge(store, repo, session, &merged, out);
    crate::paths::remove_session_files(&ctx.home, &session.id);
    Ok(())
}
