//! Briefing a session: text typed into its agent, exactly as given, as one message,
//! refused where it would land somewhere else (a setup, an exited agent, an open menu).

use std::path::Path;
use std::time::Duration;

use crate::agent::menu;
use crate::agent::rules::Rules;
use crate::context::Context;
use crate::error::Error;
use crate::session::{agent_pane, record_if_gone};
use crate::state::{AgentState, Session, Status};
use crate::tmux::{Key, OwnedPane, Tmux};

/// How long a briefing may sit in the input box after its Enter before Enter is pressed again.
const RESUBMIT_AFTER: Duration = Duration::from_millis(1500);

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
            // A row whose cursor is only a colour (opencode's) shows only with the colours.
            if menu::asking(&tmux.capture_pane(pane.pane(), 0)?).is_some()
                || menu::parse_row(&tmux.capture_pane_styled(pane.pane())?).is_some()
            {
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

/// How many times Enter is pressed again for a briefing left in the input box.
const RESUBMITS: usize = 3;

/// A busy machine can make an agent drop an Enter pressed right after the text arrived:
/// the text then sits in the input box. Seen there (no menu or question and no running
/// turn the key could answer or interrupt, as the kind's screen rules read it), Enter is
/// pressed again; again after that only while the screen stays exactly as it was when the
/// key was pressed (the key was dropped, not taken: an agent at work draws).
fn submit_if_still_typed(
    rules: &Rules,
    kind: &str,
    tmux: &Tmux,
    pane: &OwnedPane,
    text: &str,
) -> Result<(), Error> {
    let mut pressed_on: Option<String> = None;
    for _ in 0..RESUBMITS {
        let started = std::time::Instant::now();
        while started.elapsed() < RESUBMIT_AFTER {
            std::thread::sleep(Duration::from_millis(250));
            if !still_typed(rules, kind, &tmux.capture_pane(pane.pane(), 0)?, text)? {
                return Ok(());
            }
        }
        let screen = tmux.capture_pane(pane.pane(), 0)?;
        let busy = rules
            .classify(kind, &screen)
            .is_ok_and(|v| v.state == AgentState::Busy);
        let changed = pressed_on.as_ref().is_some_and(|before| *before != screen);
        if changed
            || busy
            || !still_typed(rules, kind, &screen, text)?
            || menu::asking(&screen).is_some()
        {
            return Ok(());
        }
        tmux.press(pane, &[Key::Enter])?;
        pressed_on = Some(screen);
    }
    Ok(())
}

/// Whether `text` still sits in the input box on `screen`: what the kind's rules read as
/// typed ends with it, or the CLI shows it folded as pasted text.
fn still_typed(rules: &Rules, kind: &str, screen: &str, text: &str) -> Result<bool, Error> {
    let tail: String = {
        let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        chars[chars.len().saturating_sub(20)..].iter().collect()
    };
    let typed = rules
        .typed_input(kind, screen)
        .map_err(|e| Error::BadInput(e.to_string()))?
        .unwrap_or_default();
    Ok(!typed.is_empty() && (typed.contains("[Pastedtext") || typed.ends_with(&tail)))
}

fn log_briefing(home: &Path, session: &Session, text: &str) -> Result<std::path::PathBuf, Error> {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S%.3f");
    // Named by the session's id first: they go with it (`paths::remove_session_files`).
    let path = crate::paths::briefings_dir(home)
        .join(format!("{}-{}-{stamp}.txt", session.id, session.label));
    crate::paths::write_private(&path, text)
        .map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gemini 0.61.0 on a loaded machine: a briefing left in the input box above the
    /// footer, no border between them.
    const GEMINI_LEFT_TYPED: &str = "\
 > [[bash: touch approved.txt]] [[after: it ran]]

\u{2726} it ran

────────────────────────────────────────────────────────────────────────────────
 Shift+Tab to accept edits

 > [[bash: touch denied.txt]]


 workspace (/directory)                  branch            sandbox       /model
 /tmp/orchtIrKu6/repo.worktrees/tools    session/tools     no sandbox      Auto
";

    #[test]
    fn a_briefing_left_in_geminis_input_box_is_seen_there_and_not_once_sent() {
        let rules = Rules::built_in();
        let text = "[[bash: touch denied.txt]]";
        assert!(still_typed(&rules, "gemini", GEMINI_LEFT_TYPED, text).unwrap());
        let sent = GEMINI_LEFT_TYPED.replace(
            " > [[bash: touch denied.txt]]",
            " >   Type your message or @path/to/file",
        );
        assert!(!still_typed(&rules, "gemini", &sent, text).unwrap());
        // aider's echo of a sent prompt, its question under it: sent, not typed.
        let aider = "> [[bash: touch denied.txt]] [[say: Making another.]]\n\ntouch denied.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:";
        assert!(!still_typed(
            &rules,
            "aider",
            aider,
            "[[bash: touch denied.txt]] [[say: Making another.]]"
        )
        .unwrap());
        // Text that was typed and sent before is history, not the box.
        assert!(!still_typed(
            &rules,
            "gemini",
            GEMINI_LEFT_TYPED,
            "[[bash: touch approved.txt]] [[after: it ran]]"
        )
        .unwrap());
    }
}
