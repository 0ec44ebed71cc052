//! `orchestra brief`: text to an agent, exactly as given, as one message.

use std::path::Path;
use std::time::Duration;

use crate::agent::menu;
use crate::agent::AgentKind;
use crate::cli::BriefArgs;
use crate::cmd::{agent_pane, find_session, open_repo, record_if_gone, Context, Output};
use crate::error::Error;
use crate::state::{AgentState, Session, Status};
use crate::tmux::{Key, OwnedPane, Tmux};

/// How long a briefing may sit in the input box after its Enter before Enter is pressed again.
const RESUBMIT_AFTER: Duration = Duration::from_millis(1500);

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
        if session.agent_kind == AgentKind::Claude.as_str() {
            submit_if_still_typed(&tmux, &pane, text)?;
        }
        Ok(())
    })();
    record_if_gone(ctx, session, result)
}

/// A busy machine can make the CLI drop an Enter pressed while it still takes in a paste:
/// the text then sits in the input box. Seen there (and no menu, no running turn that the
/// key could answer or interrupt), Enter is pressed once more.
fn submit_if_still_typed(tmux: &Tmux, pane: &OwnedPane, text: &str) -> Result<(), Error> {
    let tail: String = {
        let last: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        last[last.len().saturating_sub(20)..].iter().collect()
    };
    let started = std::time::Instant::now();
    while started.elapsed() < RESUBMIT_AFTER {
        std::thread::sleep(Duration::from_millis(250));
        let screen = tmux.capture_pane(pane.pane(), 0)?;
        let Some(typed) = input_box(&screen) else {
            return Ok(());
        };
        let waiting =
            !typed.is_empty() && (typed.contains("[Pasted text") || typed.ends_with(&tail));
        if !waiting {
            return Ok(());
        }
    }
    let screen = tmux.capture_pane(pane.pane(), 0)?;
    if menu::parse(&screen).is_none() && !screen.contains("esc to interrupt") {
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

/// What claude's input box holds, whitespace removed (a long line wraps there): the lines
/// from the last one starting with `❯` down to the box's lower border.
fn input_box(screen: &str) -> Option<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let start = lines.iter().rposition(|l| l.starts_with('❯'))?;
    let text: String = lines[start..]
        .iter()
        .take_while(|l| !l.starts_with('─'))
        .flat_map(|l| l.chars())
        .skip(1)
        .filter(|c| !c.is_whitespace())
        .collect();
    Some(text)
}
