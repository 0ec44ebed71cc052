//! `orchestra brief`: text to an agent, exactly as given, as one message.

use std::path::Path;
use std::time::Duration;

use crate::agent::menu;
use crate::agent::rules::Rules;
use crate::cli::BriefArgs;
use crate::cmd::{agent_pane, find_session, open_repo, record_if_gone, Context, Output};
use crate::error::Error;
use crate::state::{AgentState, Session, Status};
use crate::tmux::{Key, OwnedPane, Tmux};

/// How long a briefing may sit in the input box after its Enter before Enter is pressed again.
const RESUBMIT_AFTER: Duration = Duration::from_millis(1500);

pub fn run(ctx: &Context, args: &BriefArgs, out: &mut Output<'_>) -> Result<(), Error> {
    if args.conflicts {
        return brief_conflicts(ctx, args, out);
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
    crate::cmd::conflicts::scan_repo(ctx, &store, &repo)?;
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

/// Types `text` into the session's agent and submits it; logs it under briefings/.
pub fn brief_one(ctx: &Context, session: &Session, text: &str, force: bool) -> Result<(), Error> {
    let result = (|| {
        let (tmux, pane) = agent_pane(session)?;
        if !force {
            if session.status.in_setup() {
                return Err(Error::Refused(format!(
                    "{} is {}: its agent has not started, and the text would go to its setup (--force sends it anyway)",
                    session.label, session.status
                )));
            }
            if session.status == Status::Dead
                || session.state == AgentState::Exited
                || !tmux.pane_alive(&pane)?
            {
                return Err(Error::Refused(format!(
                    "the agent of {} has exited: the text would land in whatever runs there now (--force sends it anyway)",
                    session.label
                )));
            }
            if menu::asking(&tmux.capture_pane(pane.pane(), 0)?).is_some() {
                return Err(Error::Refused(format!(
                    "a menu or question is open in {}: the text would answer it (approve/deny first, or --force)",
                    session.label
                )));
            }
        }
        log_briefing(&ctx.home, session, text)?;
        let kind = session.agent_kind;
        tmux.type_text(&pane, text, kind.typing())?;
        // The agent takes the text in before the key that submits it.
        std::thread::sleep(Duration::from_millis(300));
        tmux.press(&pane, &[Key::Enter])?;
        let rules = ctx.rules()?;
        submit_if_still_typed(&rules, session.agent_kind.as_str(), &tmux, &pane, text)?;
        Ok(())
    })();
    record_if_gone(ctx, session, result)
}

/// A busy machine can make an agent drop an Enter pressed right after the text arrived:
/// the text then sits in the input box. Seen there (no menu and no running turn the key
/// could answer or interrupt, as the kind's screen rules read it), Enter is pressed once
/// more.
fn submit_if_still_typed(
    rules: &Rules,
    kind: &str,
    tmux: &Tmux,
    pane: &OwnedPane,
    text: &str,
) -> Result<(), Error> {
    let tail: String = {
        let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        chars[chars.len().saturating_sub(20)..].iter().collect()
    };
    let still_typed = |screen: &str| -> Result<bool, Error> {
        let typed = rules
            .typed_input(kind, screen)
            .map_err(|e| Error::BadInput(e.to_string()))?
            .unwrap_or_default();
        Ok(!typed.is_empty() && (typed.contains("[Pastedtext") || typed.ends_with(&tail)))
    };
    let started = std::time::Instant::now();
    while started.elapsed() < RESUBMIT_AFTER {
        std::thread::sleep(Duration::from_millis(250));
        if !still_typed(&tmux.capture_pane(pane.pane(), 0)?)? {
            return Ok(());
        }
    }
    let screen = tmux.capture_pane(pane.pane(), 0)?;
    let busy = rules
        .classify(kind, &screen)
        .is_ok_and(|v| v.state == AgentState::Busy);
    if still_typed(&screen)? && menu::parse(&screen).is_none() && !busy {
        tmux.press(pane, &[Key::Enter])?;
    }
    Ok(())
}

fn log_briefing(home: &Path, session: &Session, text: &str) -> Result<std::path::PathBuf, Error> {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S%.3f");
    let path = home
        .join("briefings")
        .join(format!("{}-{stamp}.txt", session.label));
    crate::paths::write_private(&path, text)
        .map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(path)
}
