//! `orchestra merge`: a session's branch into its target, only on a person's yes. Checked
//! in memory first; written objects first, ref last; torn down after.

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use crate::cli::MergeArgs;
use crate::cmd::{open_repo, run_in_popup, short_list, Context, Output};
use crate::error::Error;
use crate::git::Review;
use crate::inert;
use crate::session::merge;
use crate::session::{find_branch_session, find_session, target_branch};
use crate::state::{Session, Status};

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

    let checked = merge::check(&repo, &session, &target, args.include_uncommitted)?;
    let review = &checked.review;
    out.line(summary_text(&session, &target, review));
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
    if checked.off_branch {
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
        let _ = write!(
            out.out,
            "Merge {} into {}? [y/N] ",
            inert::line(&session.branch),
            inert::line(&target)
        );
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

    // Said yes to, the merge goes to its end, also when its popup or terminal goes.
    crate::process::outlive_the_terminal();
    merge::land(
        ctx,
        &repo,
        &store,
        &session,
        checked,
        args.squash,
        args.include_uncommitted,
        out,
    )?;
    Ok(())
}

/// The counts, then every commit and every file, each on a line of its own and shown
/// inert: a subject or a name cannot erase what comes before the question.
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
        let short = c.id.get(..10).unwrap_or(&c.id);
        text.push_str(&format!("  {short} {}\n", inert::line(&c.summary)));
    }
    for f in &review.files {
        text.push_str(&format!(
            "  {:<50} +{} -{}\n",
            inert::line(&f.path),
            f.insertions,
            f.deletions
        ));
    }
    text
}
