//! `orchestra brief`: text to an agent, exactly as given, as one message.

use std::path::Path;
use std::time::Duration;

use crate::agent::menu;
use crate::cli::BriefArgs;
use crate::cmd::{agent_pane, find_session, open_repo, record_if_gone, Context, Output};
use crate::error::Error;
use crate::state::{AgentState, Session, Status};
use crate::tmux::Key;

pub fn run(ctx: &Context, args: &BriefArgs, out: &mut Output<'_>) -> Result<(), Error> {
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
    let repo = open_repo(args.repo.repo.as_deref())?;
    let store = ctx.store()?;
    let targets: Vec<Session> = match label {
        Some(l) => vec![find_session(&store, &repo, l)?],
        None => store
            .sessions(Some(&repo.id()), false)?
            .into_iter()
            .filter(|s| !matches!(s.status, Status::Dead | Status::Blocked))
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

/// Types `text` into the session's agent and submits it; logs it under briefings/.
pub fn brief_one(ctx: &Context, session: &Session, text: &str, force: bool) -> Result<(), Error> {
    let result = (|| {
        let (tmux, pane) = agent_pane(session)?;
        if !force {
            if session.status == Status::Dead
                || session.state == AgentState::Exited
                || !tmux.pane_alive(&pane)?
            {
                return Err(Error::Refused(format!(
                    "the agent of {} has exited: the text would land in whatever runs there now (--force sends it anyway)",
                    session.label
                )));
            }
            if menu::parse(&tmux.capture_pane(pane.pane(), 0)?).is_some() {
                return Err(Error::Refused(format!(
                    "a menu is open in {}: keys would answer it (approve/deny first, or --force)",
                    session.label
                )));
            }
        }
        log_briefing(&ctx.home, session, text)?;
        tmux.type_text(&pane, text)?;
        // The agent takes the text in before the key that submits it.
        std::thread::sleep(Duration::from_millis(300));
        tmux.press(&pane, &[Key::Enter])?;
        Ok(())
    })();
    record_if_gone(ctx, session, result)
}

fn log_briefing(home: &Path, session: &Session, text: &str) -> Result<std::path::PathBuf, Error> {
    let dir = home.join("briefings");
    std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S%.3f");
    let path = dir.join(format!("{}-{stamp}.txt", session.label));
    std::fs::write(&path, text).map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(path)
}
