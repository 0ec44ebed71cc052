//! `orchestra merge`: a session's branch into its target, only on a person's yes. Checked
//! in memory first; written objects first, ref last; torn down after.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::MergeArgs;
use crate::cmd::kill::remove_worktree_keeping_work;
use crate::cmd::{
    close_window, find_branch_session, find_session, open_repo, run_in_popup, settle_branch,
    short_list, target_branch, Context, Output,
};
use crate::error::Error;
use crate::fault;
use crate::git::{self, Repo, Review};
use crate::health::now_micros;
use crate::state::{AgentState, Session, Status, Store};

const DEFAULT_WRAP_UP_SECS: i64 = 120;

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

pub fn run(ctx: &Context, args: &MergeArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    crate::label::validate(&args.label)?;
    let Some(session) = store.session_by_label(&repo.id(), &args.label)? else {
        let merged = store
            .sessions(Some(&repo.id()), true)?
            .into_iter()
            .any(|s| s.label == args.label && s.status == Status::Merged);
        if merged {
            return Err(Error::Refused(format!(
                "session {} is already merged",
                args.label
            )));
        }
        return Err(find_session(&store, &repo, &args.label)
            .err()
            .unwrap_or(Error::CheckFailed));
    };
    if session.is_manifest() {
        // The same refusal review and kill give.
        find_branch_session(&store, &repo, &args.label, "merge")?;
    }
    let target = target_branch(&repo, &session, args.into.as_deref())?;
    if args.popup {
        return run_in_popup(
            ctx,
            args.client.as_deref(),
            repo.main_worktree(),
            &format!(" merge {} ", session.label),
        );
    }

    let _work = crate::lock::work_shared(&ctx.home).map_err(Error::io("taking the work lock"))?;
    // One merge into a target at a time; the second sees the first's result.
    let lock_name = format!(
        "merge-{}.lock",
        crate::health::server_key(Some(Path::new(&format!("{}\n{target}", repo.id()))))
    );
    let _lock = crate::lock::exclusive(&ctx.home.join("locks").join(lock_name))
        .map_err(Error::io("taking the merge lock"))?;

    let target_worktree = repo.worktree_of_branch(&target)?;
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
    // A worktree off its branch (a detached HEAD mid-rebase, another branch checked out):
    // what is committed there is not what merges, and is kept at the teardown instead.
    let off_branch = worktree.exists()
        && Repo::checked_out_branch(worktree)?.as_deref() != Some(session.branch.as_str());
    if worktree.exists() {
        let dirty = git::uncommitted_paths(worktree)?;
        if !dirty.is_empty() && !args.include_uncommitted {
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
    }
    let review = repo.review(&session.branch, &target)?;
    if review.commits.is_empty()
        && !(args.include_uncommitted
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

    out.line(summary_text(&session, &target, &review));
    // Not a refusal: a person may merge first and let the others catch up.
    let others = store.sessions(Some(&repo.id()), false)?;
    match crate::radar::after_merge(&repo, &others, &session, &target) {
        Ok(collisions) => {
            for (other, paths) in collisions {
                out.note(format!(
                    "after this merge {target} will conflict with session {} in {}",
                    other.label,
                    short_list(&paths)
                ));
            }
        }
        Err(e) => out.note(format!(
            "could not check which sessions this merge leaves in conflict: {e}"
        )),
    }
    if off_branch {
        out.note(format!(
            "the worktree of {} is not on {}: what is committed only there is not part of this merge (it is kept on an archive/ branch when the worktree goes)",
            session.label, session.branch
        ));
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::Refused(
                "no terminal to ask on: pass --yes to merge without the question".into(),
            ));
        }
        let _ = write!(out.out, "Merge {} into {target}? [y/N] ", session.branch);
        let _ = out.out.flush();
        let mut answer = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut answer)
            .map_err(Error::io("reading the answer"))?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            return Err(Error::Refused(format!(
                "not merged: {} stays as it is",
                session.branch
            )));
        }
    }

    fault::point("merge");
    // Only now, after the yes: uncommitted work becomes a WIP commit on the branch.
    if args.include_uncommitted
        && worktree.exists()
        && !git::uncommitted_paths(worktree)?.is_empty()
    {
        git::commit_all(
            worktree,
            &format!("WIP: uncommitted work of session {}", session.label),
        )?;
        fault::point("merge");
    }
    let review = repo.review(&session.branch, &target)?;
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
        &target,
        args.squash,
        &merge_message(&session, &target, &review, args.squash),
    )?;
    fault::point("merge");
    let journal = Journal {
        session_id: session.id.clone(),
        repo: repo.id(),
        label: session.label.clone(),
        branch: session.branch.clone(),
        target: target.clone(),
        old: merged.old.to_string(),
        new: Some(merged.new.to_string()),
        target_worktree: target_worktree.clone(),
    };
    let journal_path = journal_dir(&ctx.home).join(format!("{}.json", session.id));
    write_journal(&journal_path, &journal)?;
    fault::point("merge");
    if let Err(e) = repo.land(&session.branch, &target, merged) {
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
        if args.squash {
            "squashed as"
        } else {
            "merge commit"
        },
        &merged.new.to_string()[..10]
    ));

    wrap_up(ctx, &store, &session, out);
    fault::point("merge");
    finish_teardown(ctx, &repo, &store, &session, &target, out)?;
    let _ = std::fs::remove_file(&journal_path);
    // `done_on_merge`: the session's task moves to done; a failure is only reported.
    crate::cmd::tasks::after_merge(ctx, &repo, &session, out);
    Ok(())
}

/// After the merge: the window, the worktree and the branch go; the session is `merged`.
/// Work that arrived after the merge (a wrap-up commit) keeps its branch, archived.
pub fn finish_teardown(
    ctx: &Context,
    repo: &Repo,
    store: &Store,
    session: &Session,
    target: &str,
    out: &mut Output<'_>,
) -> Result<(), Error> {
    close_window(session, out);
    fault::point("merge");
    remove_worktree_keeping_work(
        repo,
        Path::new(&session.worktree),
        &session.label,
        &format!("WIP: left in session {} after its merge", session.label),
        "merge",
        Some(session),
        out,
    )?;
    settle_branch(repo, session, Some(target), out)?;
    fault::point("merge");
    store.change_status(session, Status::Merged, &format!("merged into {target}"))?;
    fault::point("merge");
    let _ = std::fs::remove_dir_all(crate::paths::session_dir(&ctx.home, &session.id));
    Ok(())
}

/// Sends `@orchestra-wrap-up-cmd` (or orchestra.toml's `wrap_up_cmd`) to the worker and waits (bounded) until it is idle again.
fn wrap_up(ctx: &Context, store: &Store, session: &Session, out: &mut Output<'_>) {
    if session.window.is_none() {
        return;
    }
    let Ok((tmux, pane)) = crate::cmd::agent_pane(session) else {
        return;
    };
    // The tmux option, else orchestra.toml's wrap_up_cmd.
    let from_manifest = || {
        crate::manifest::load(&crate::manifest::default_path(Path::new(&session.repo)))
            .ok()
            .map(|m| m.orchestrator.wrap_up_cmd)
            .filter(|c| !c.trim().is_empty())
    };
    let Some(command) = tmux
        .global_option("@orchestra-wrap-up-cmd")
        .ok()
        .flatten()
        .or_else(from_manifest)
    else {
        return;
    };
    let limit = tmux
        .global_option("@orchestra-wrap-up-timeout")
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
            "could not send the wrap-up command: the window is gone or no longer the session's",
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
        let _ = crate::cmd::refresh::refresh_once(ctx);
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

fn summary_text(session: &Session, target: &str, review: &Review) -> String {
    let mut text = format!(
        "{} → {target}: {} commit(s), {} file(s), +{} -{}\n",
        session.branch,
        review.commits.len(),
        review.files.len(),
        review.insertions,
        review.deletions
    );
    for c in &review.commits {
        text.push_str(&format!("  {} {}\n", &c.id[..10], c.summary));
    }
    for f in &review.files {
        text.push_str(&format!(
            "  {:<50} +{} -{}\n",
            f.path, f.insertions, f.deletions
        ));
    }
    text
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
