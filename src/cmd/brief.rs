//! `orchestra brief`: text to an agent, exactly as given, as one message.

use crate::cli::BriefArgs;
use crate::cmd::{open_repo, Context, Output};
use crate::error::Error;
use crate::session::brief::brief_one;
use crate::session::find_session;
use crate::state::{Session, Status};

pub fn run(ctx: &Context, args: &BriefArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.conflicts {
        return brief_conflicts(ctx, args, out);
    }
    if args.ci {
        return brief_ci(ctx, args, out);
    }
    let (label, text_arg) = match (args.all, args.words.as_slice()) {
        (true, [text]) => (None, text),
        (false, [label, text]) => (Some(label.as_str()), text),
        (true, _) => {
            return Err(Error::BadInput(
                "with --all, give only the text (or @FILE)".into(),
            ))
        }
        (false, _) => {
            return Err(Error::BadInput(
                "give a label and the text (or @FILE)".into(),
            ))
        }
    };
    let text = match text_arg.strip_prefix('@') {
        Some(file) => std::fs::read_to_string(file)
            .map_err(|e| Error::BadInput(format!("cannot read {file}: {e}")))?,
        None => text_arg.clone(),
    };
    if text.trim().is_empty() {
        return Err(Error::BadInput("the briefing is empty".into()));
    }
    crate::tmux::typable(&text)?;
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let targets: Vec<Session> = match label {
        Some(l) => vec![find_session(&store, &repo, l)?],
        None => store
            .sessions(Some(&repo.id()), false)?
            .into_iter()
            .filter(|s| !matches!(s.status, Status::Dead | Status::Blocked) && !s.status.in_setup())
            .collect(),
    };
    let mut refused = Vec::new();
    for session in &targets {
        match brief_one(ctx, session, &text, args.force) {
            Ok(()) => out.line(format!("briefed {} ({} bytes)", session.label, text.len())),
            Err(e) if label.is_none() => refused.push(format!("{}: {e}", session.label)),
            Err(e) => return Err(e),
        }
    }
    if !refused.is_empty() {
        return Err(Error::Refused(format!(
            "not briefed: {}",
            refused.join("; ")
        )));
    }
    Ok(())
}

/// `brief LABEL --conflicts`: a radar pass over the repo now, then a note to the agent
/// naming the files its work conflicts on and with whom. Refused when there is none.
fn brief_conflicts(ctx: &Context, args: &BriefArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let [label] = args.words.as_slice() else {
        return Err(Error::BadInput(
            "with --conflicts, give only the label: the note is written from what the radar finds"
                .into(),
        ));
    };
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let session = find_session(&store, &repo, label)?;
    crate::radar::run::scan_repo(ctx, &store, &repo)?;
    let sessions = store.sessions(Some(&repo.id()), false)?;
    let conflicts = store.conflicts(Some(&repo.id()))?;
    let Some(text) = crate::radar::briefing(&session, &conflicts, &sessions) else {
        return Err(Error::Refused(format!(
            "the work of {label} conflicts with no other live session nor its target branch: nothing was sent"
        )));
    };
    brief_one(ctx, &session, &text, args.force)?;
    out.line(format!(
        "briefed {label} about its conflicts ({} bytes)",
        text.len()
    ));
    Ok(())
}

/// `brief LABEL --ci`: the failing check's name and the end of its log, typed to the agent.
fn brief_ci(ctx: &Context, args: &BriefArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let [label] = args.words.as_slice() else {
        return Err(Error::BadInput(
            "with --ci, give only the label: the note is the failing check's log".into(),
        ));
    };
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let session = find_session(&store, &repo, label)?;
    let text = crate::pr::refresh::ci_briefing(&store, &repo, &session)?;
    crate::tmux::typable(&text)?;
    brief_one(ctx, &session, &text, args.force)?;
    out.line(format!(
        "briefed {label} about its failing check ({} bytes)",
        text.len()
    ));
    Ok(())
}
