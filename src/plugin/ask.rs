//! What a menu's popup asks on its own terminal (src/term.rs), never through a tmux
//! prompt: a dispatch's title and task, a brief's text, a fork's label, whether to allow a
//! repo's commands.

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::state::Session;
use crate::term::Terminal;

fn terminal_error(e: std::io::Error) -> Error {
    Error::Io {
        context: "reading the popup's terminal".into(),
        source: e,
    }
}

/// A dispatch asked for: a free label made from the title, and the task typed (none when
/// left empty). Holds the popup's terminal raw until it is dropped, so a Ctrl-C while the
/// dispatch runs is a byte, not a signal that would stop it half-way.
pub struct Dispatch {
    pub label: String,
    pub task: Option<String>,
    _term: Terminal,
}

/// Asks for a title (until it makes a free label of `repo`) and a task; `None` when the
/// person cancels. The terminal says "dispatching" before this returns.
pub fn dispatch_dialog(ctx: &Context, repo: &Repo) -> Result<Option<Dispatch>, Error> {
    let mut term = Terminal::open().map_err(terminal_error)?;
    term.say(format!(
        "Dispatch an agent in {}",
        repo.main_worktree().display()
    ));
    let label = loop {
        let title = term
            .ask("title: ", "Enter: next · Esc: cancel", false)
            .map_err(terminal_error)?;
        let Some(title) = title.filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        let label = crate::label::slug(&title)
            .map_err(Error::from)
            .and_then(|slug| crate::session::free_label(ctx, repo, &slug));
        match label {
            Ok(label) => break label,
            Err(e) => term.say(format!("{e}: try another title")),
        }
    };
    term.say(format!("label: {label}"));
    let Some(task) = term
        .ask(
            "task: ",
            "Enter: dispatch · Ctrl-J: new line · Esc: cancel",
            true,
        )
        .map_err(terminal_error)?
    else {
        return Ok(None);
    };
    term.show(&format!("dispatching {label}…"))
        .map_err(terminal_error)?;
    Ok(Some(Dispatch {
        label,
        task: Some(task).filter(|t| !t.trim().is_empty()),
        _term: term,
    }))
}

/// Asks for the text to brief the session `id` with and types it in; what was done, or
/// `None` when the person typed nothing.
pub fn brief_dialog(ctx: &Context, id: Option<&str>) -> Result<Option<String>, Error> {
    let session = super::menu::menu_session(ctx, id)?;
    let mut term = Terminal::open().map_err(terminal_error)?;
    let text = term
        .ask(
            &format!("brief {}: ", session.label),
            "Enter: send · Ctrl-J: new line · Esc: cancel",
            true,
        )
        .map_err(terminal_error)?;
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    term.show("sending…").map_err(terminal_error)?;
    // The text as typed: brief_one, not `brief`, which would read `@FILE`.
    crate::session::brief::brief_one(ctx, &session, &text, false)?;
    Ok(Some(format!("briefed {}", session.label)))
}

/// A fork asked for: the session forked and the free label typed for the new one. Holds
/// the popup's terminal raw until it is dropped, as [`Dispatch`] does, while the fork runs.
pub struct Fork {
    pub source: Session,
    pub label: String,
    _term: Terminal,
}

/// Asks for the label of a fork of the session `id` (until it is a valid label no session
/// or branch of its repo has); `None` when the person cancels. The terminal says "forking"
/// before this returns.
pub fn fork_dialog(ctx: &Context, id: Option<&str>) -> Result<Option<Fork>, Error> {
    let source = super::menu::menu_session(ctx, id)?;
    let repo = Repo::discover(std::path::Path::new(&source.repo))?;
    let mut term = Terminal::open().map_err(terminal_error)?;
    term.say(format!(
        "Fork {}: a new session from where it stands, its work carried on a branch of its own",
        source.label
    ));
    let label = loop {
        let typed = term
            .ask("new label: ", "Enter: fork · Esc: cancel", false)
            .map_err(terminal_error)?;
        let Some(typed) = typed
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
        else {
            return Ok(None);
        };
        let free = crate::label::validate(&typed)
            .map_err(Error::from)
            .and_then(|()| crate::session::free_label(ctx, &repo, &typed));
        match free {
            Ok(free) if free == typed => break typed,
            Ok(_) => term.say(format!(
                "{typed} is already a session's or a branch's label: try another"
            )),
            Err(e) => term.say(format!("{e}: try another label")),
        }
    };
    term.show(&format!("forking {} into {label}…", source.label))
        .map_err(terminal_error)?;
    Ok(Some(Fork {
        source,
        label,
        _term: term,
    }))
}

/// Shows what the repo asks to be allowed (its commands, its .mcp.json) and allows it on
/// a `y`; what was done, or `None` when the person said no or there was nothing to allow.
pub fn allow_dialog(ctx: &Context, repo: &Repo) -> Result<Option<String>, Error> {
    let main = repo.main_worktree();
    let asked = crate::trust::Asked::of(main)?;
    let listing = asked.listing();
    if listing.is_empty() {
        return Ok(Some(format!("nothing to allow in {}", main.display())));
    }
    let mut term = Terminal::open().map_err(terminal_error)?;
    term.say(format!(
        "{} would have orchestra run, on its own:",
        main.display()
    ));
    for line in listing {
        term.say(format!("  {line}"));
    }
    let answer = term
        .ask("allow these? [y/N] ", "y: allow · Enter or Esc: no", false)
        .map_err(terminal_error)?;
    if !answer.is_some_and(|a| a.trim().eq_ignore_ascii_case("y")) {
        return Ok(None);
    }
    asked
        .allow(&ctx.home)
        .map_err(Error::io("recording what is allowed"))?;
    Ok(Some(format!("allowed for {}", main.display())))
}
