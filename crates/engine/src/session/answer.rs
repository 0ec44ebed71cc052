//! Answering the menu or question on a session's screen by the label of the answer: the
//! cursor moved to the entry (or the answer's key typed), checked on screen, then Enter.

use std::time::{Duration, Instant};

use crate::agent::asked::Asked;
use crate::agent::menu::{self, Answer, Asking, Menu, Question};
use crate::agent::rules::Rules;
use crate::context::Context;
use crate::error::Error;
use crate::session::{agent_pane, record_if_gone};
use crate::state::{AgentState, Session, StateSource};
use crate::tell::announce;
use crate::tmux::{Key, OwnedPane, PaneId, Tmux};

/// How long to wait for a menu (or question) to be drawn.
const MENU_WAIT: Duration = Duration::from_secs(3);

/// The CLI ignores keys for a moment after it draws a menu (against stray presses).
const MENU_SETTLE: Duration = Duration::from_millis(700);

/// Answers the menu or question on `session`'s screen; returns the label chosen ("Esc" for
/// a deny without a No entry). Nothing asking within [`MENU_WAIT`]: refused, nothing sent.
/// A pane that is no longer the session's is never pressed into (and the session is
/// recorded dead).
pub fn answer_session(ctx: &Context, session: &Session, answer: Answer) -> Result<String, Error> {
    answer_named(ctx, session, answer, None)
}

/// [`answer_session`] of the one question `named` names ("run: npm test", as a
/// notification told it, or the bare command): read from the screen just before the key
/// that answers it, and refused, with nothing sent, when the screen asks something else
/// (the agent moved on to another question since the person was told).
pub fn answer_named(
    ctx: &Context,
    session: &Session,
    answer: Answer,
    named: Option<&str>,
) -> Result<String, Error> {
    let rules = match named {
        Some(_) => Some(Rules::load(&ctx.home).map_err(crate::health::HealthError::from)?),
        None => None,
    };
    let named = named.zip(rules.as_ref());
    let result = agent_pane(session)
        .and_then(|(tmux, pane)| answer_pane(&tmux, &pane, session, answer, named));
    let (chosen, pressed_at) = record_if_gone(ctx, session, result)?;
    if answer != Answer::No {
        // An approved tool may run for minutes with no hook until it ends: the agent is
        // busy from now, as orchestra itself just made it.
        let store = ctx.store()?;
        // Said as of the key press: the tool's own hooks (even its Stop, should it have
        // finished already) come later and win.
        let said = format!("approved: {chosen}");
        if let Some(t) = store.apply_state(
            &session.id,
            AgentState::Busy,
            pressed_at,
            StateSource::Approve,
            &said,
        )? {
            announce(&t, None)?;
        }
    }
    Ok(chosen)
}

/// Returns the entry chosen and when the key that chose it was pressed.
fn answer_pane(
    tmux: &Tmux,
    pane: &OwnedPane,
    session: &Session,
    answer: Answer,
    named: Option<(&str, &Rules)>,
) -> Result<(String, i64), Error> {
    let asking = wait_for_asking(tmux, pane.pane(), MENU_WAIT)?.ok_or_else(|| {
        Error::Refused(format!(
            "no menu or question on {}'s screen: nothing sent",
            session.label
        ))
    })?;
    // Let it settle: keys pressed the moment a menu appears may be dropped.
    std::thread::sleep(MENU_SETTLE);
    if let Some((named, rules)) = named {
        still_asks(tmux, pane.pane(), session, named, rules)?;
    }
    match read_asking(tmux, pane.pane())?.unwrap_or(asking) {
        Asking::Menu(menu) => answer_menu_on_screen(tmux, pane, session, menu, answer),
        Asking::Question(question) => answer_question(tmux, pane, session, question, answer),
    }
}

/// Moves the cursor to the entry that gives `answer` and presses Enter there.
fn answer_menu_on_screen(
    tmux: &Tmux,
    pane: &OwnedPane,
    session: &Session,
    menu: Menu,
    answer: Answer,
) -> Result<(String, i64), Error> {
    let Some(target) = menu.choose(answer) else {
        if answer == Answer::No {
            let pressed_at = crate::health::now_micros();
            tmux.press(pane, &[Key::Escape])?;
            return Ok(("Esc".into(), pressed_at));
        }
        return Err(Error::Refused(format!(
            "no entry of {}'s menu gives that answer: {}",
            session.label,
            menu.entries.join(" | ")
        )));
    };
    let label = press_to(tmux, pane, session, &menu, target)?;
    let pressed_at = crate::health::now_micros();
    tmux.press(pane, &[Key::Enter])?;
    // An Enter swallowed while the menu was settling: the same menu stays. Press once more.
    std::thread::sleep(Duration::from_millis(1200));
    let after = read_menu(tmux, pane.pane())?;
    if after.as_ref() == Some(&menu_at(&menu, target)) {
        tmux.press(pane, &[Key::Enter])?;
    } else if let Some((confirm, target)) = after
        .filter(|m| answer == Answer::Always && m.across)
        .and_then(|m| m.confirmation().map(|target| (m, target)))
    {
        // "Allow always" asks once more (opencode): what was asked is confirmed.
        press_to(tmux, pane, session, &confirm, target)?;
        tmux.press(pane, &[Key::Enter])?;
    }
    Ok((label, pressed_at))
}

/// Moves the cursor of `menu` to entry `target` and waits until the screen shows it
/// there; returns the entry's label.
fn press_to(
    tmux: &Tmux,
    pane: &OwnedPane,
    session: &Session,
    menu: &Menu,
    target: usize,
) -> Result<String, Error> {
    let label = menu.entries[target].clone();
    for key in menu.keys_to(target) {
        tmux.press(pane, &[key])?;
    }
    // Confirm the cursor is on the chosen entry before pressing Enter.
    let started = Instant::now();
    loop {
        match read_menu(tmux, pane.pane())? {
            Some(m) if m.entries.get(m.cursor) == Some(&label) => break,
            _ if started.elapsed() > Duration::from_secs(2) => {
                return Err(Error::Refused(format!(
                    "the cursor did not reach {label:?} on {}'s menu: nothing chosen",
                    session.label
                )))
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    Ok(label)
}

/// Types the key of the answer that gives `answer` ("y", "n") into the question and,
/// once it shows there, presses Enter. Something already typed into the question is not
/// ours to send: refused.
fn answer_question(
    tmux: &Tmux,
    pane: &OwnedPane,
    session: &Session,
    question: Question,
    answer: Answer,
) -> Result<(String, i64), Error> {
    let Some(chosen) = question.choose(answer) else {
        return Err(Error::Refused(format!(
            "no answer to {}'s question {:?} gives that: {}",
            session.label,
            question.text,
            question.labels().join(" | ")
        )));
    };
    if !question.typed.is_empty() {
        return Err(Error::Refused(format!(
            "{:?} is typed into {}'s question already: nothing sent",
            question.typed, session.label
        )));
    }
    let (key, label) = question.options[chosen].clone();
    let kind = session.agent_kind;
    tmux.type_text(pane, &key, kind.typing())?;
    let typed = Question {
        typed: key.clone(),
        ..question
    };
    // Confirm the answer shows after the question before Enter submits it.
    let started = Instant::now();
    loop {
        match read_question(tmux, pane.pane())? {
            Some(q) if q == typed => break,
            _ if started.elapsed() > Duration::from_secs(2) => {
                return Err(Error::Refused(format!(
                    "{key:?} did not show in {}'s question {:?}: not submitted",
                    session.label, typed.text
                )))
            }
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let pressed_at = crate::health::now_micros();
    tmux.press(pane, &[Key::Enter])?;
    // An Enter swallowed: the question still holds the answer. Press once more.
    std::thread::sleep(Duration::from_millis(1200));
    if read_question(tmux, pane.pane())?.is_some_and(|q| q == typed) {
        tmux.press(pane, &[Key::Enter])?;
    }
    Ok((label, pressed_at))
}

/// Refused unless what the screen asks now is what `named` names.
fn still_asks(
    tmux: &Tmux,
    pane: &PaneId,
    session: &Session,
    named: &str,
    rules: &Rules,
) -> Result<(), Error> {
    let screen = tmux.capture_pane(pane, 0)?;
    let asked = rules
        .asked(session.agent_kind.as_str(), &screen)
        .map_err(crate::health::HealthError::from)?
        .map(|a| a.relative_to(std::path::Path::new(&session.worktree)));
    match asked {
        Some(asked) if asked.is_named_by(named) => Ok(()),
        Some(asked) => Err(Error::Refused(format!(
            "{} now asks to {}, not to {}: nothing sent",
            session.label,
            asked.phrase().unwrap_or_default(),
            crate::inert::cut(named, crate::notify::ASK_CHARS + "fetch ".len())
        ))),
        // No rule reads this kind of question (claude's edits, fetches, tools): it is the
        // one named only if what was named (the path, the address) stands in it.
        None if Asked::named_text(named).is_some_and(|text| {
            rules
                .asking_text(session.agent_kind.as_str(), &screen)
                .is_ok_and(|asking| crate::inert::line(&asking).contains(text))
        }) =>
        {
            Ok(())
        }
        None => Err(Error::Refused(format!(
            "cannot tell whether {}'s screen still asks to {}: nothing sent (answer it in its window)",
            session.label,
            crate::inert::cut(named, crate::notify::ASK_CHARS + "fetch ".len())
        ))),
    }
}

fn menu_at(menu: &Menu, cursor: usize) -> Menu {
    Menu {
        cursor,
        ..menu.clone()
    }
}

/// The menu on `pane`'s screen: read from its text, else from its colours (a row whose
/// cursor is only a colour, [`menu::parse_row`]).
fn read_menu(tmux: &Tmux, pane: &PaneId) -> Result<Option<Menu>, Error> {
    if let Some(menu) = menu::parse(&tmux.capture_pane(pane, 0)?) {
        return Ok(Some(menu));
    }
    Ok(menu::parse_row(&tmux.capture_pane_styled(pane)?))
}

fn read_question(tmux: &Tmux, pane: &PaneId) -> Result<Option<Question>, Error> {
    Ok(menu::parse_question(&tmux.capture_pane(pane, 0)?))
}

fn read_asking(tmux: &Tmux, pane: &PaneId) -> Result<Option<Asking>, Error> {
    if let Some(asking) = menu::asking(&tmux.capture_pane(pane, 0)?) {
        return Ok(Some(asking));
    }
    Ok(menu::parse_row(&tmux.capture_pane_styled(pane)?).map(Asking::Menu))
}

fn wait_for_asking(tmux: &Tmux, pane: &PaneId, limit: Duration) -> Result<Option<Asking>, Error> {
    let started = Instant::now();
    loop {
        if let Some(m) = read_asking(tmux, pane)? {
            return Ok(Some(m));
        }
        if started.elapsed() >= limit {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
