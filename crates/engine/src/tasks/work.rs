//! Tasks as the commands use them: the repo's source, a task picked (and a session
//! started on it), the orchestrator's first message, a merged session's task closed.

use crate::context::Context;
use crate::error::Error;
use crate::git::Repo;
use crate::report::Report;
use crate::tasks::{self, Merged, Settings, Task, TaskError, TaskSource};

/// A tracker's refusal as the command's error: what the person fixes (exit 2), or a
/// failure on the way (exit 1).
pub fn task_error(e: TaskError) -> Error {
    match e {
        TaskError::Fix(message) => Error::BadInput(message),
        TaskError::Failed(message) => Error::Refused(message),
        TaskError::Manifest(e) => Error::Manifest(e),
    }
}

/// The repo's task source, or the line saying how to configure one.
pub fn source_of(repo: &Repo) -> Result<(Settings, Box<dyn TaskSource>), Error> {
    let settings = configured(repo)?.ok_or_else(|| {
        Error::BadInput(
            "no task source for this repo: set source = \"github\" in orchestra.toml's [tasks] for its GitHub Issues, \
             or projects_data_source and tasks_data_source there for Notion \
             (or NOTION_PROJECTS_DATA_SOURCE_ID and NOTION_TASKS_DATA_SOURCE_ID)"
                .into(),
        )
    })?;
    let source = tasks::open(&settings, repo.main_worktree()).map_err(task_error)?;
    Ok((settings, source))
}

/// The repo's task settings; `None` when no source is configured. No network.
pub fn configured(repo: &Repo) -> Result<Option<Settings>, Error> {
    tasks::settings(repo.main_worktree(), &repo.name()).map_err(task_error)
}

/// What `tasks pick` asks for.
pub struct Pick<'a> {
    /// The task's id or URL, as given.
    pub id: &'a str,
    /// The session's label (else one from the task's title).
    pub label: Option<&'a str>,
    /// The agent command (`--agent`).
    pub agent: Option<&'a str>,
    /// Start a session on it (`--dispatch`).
    pub dispatch: bool,
}

/// Moves the task to in progress; with `dispatch`, after `start(label, prompt)` started a
/// session on it (dispatch refuses and undoes on its own, so a task is never marked
/// without its session). Returns the line that says what was done.
pub fn pick(
    ctx: &Context,
    repo: &Repo,
    wanted: &Pick<'_>,
    start: impl FnOnce(&str, String) -> Result<(), Error>,
) -> Result<String, Error> {
    let settings = configured(repo)?;
    if let Some(settings) = &settings {
        settings.task_id(wanted.id).map_err(task_error)?;
    }
    if let Some(label) = wanted.label {
        crate::label::validate(label)?;
    }
    if wanted.dispatch {
        // Refused here, before the tracker is asked anything.
        crate::session::launch::agent_command(wanted.agent)?;
    }
    let (settings, source) = source_of(repo)?;
    let id = settings.task_id(wanted.id).map_err(task_error)?;
    let task = source.task(&id).map_err(task_error)?;
    if !wanted.dispatch {
        let now = source.mark_picked(&id).map_err(task_error)?;
        return Ok(moved(&task, &now));
    }
    let content = source.content(&id).map_err(task_error)?;
    let label = match wanted.label {
        Some(label) => label.to_string(),
        None => {
            let slug = crate::label::slug(&task.title).map_err(|_| {
                Error::BadInput(format!(
                    "the title of task {id} makes no label: pass --label"
                ))
            })?;
            crate::session::free_label(ctx, repo, &slug)?
        }
    };
    start(&label, tasks::prompt_of(&task, &content))?;
    let store = ctx.store()?;
    if let Some(session) = store.session_by_label(&repo.id(), &label)? {
        store.set_session_task(&session.id, &id)?;
    }
    let now = source.mark_picked(&id).map_err(|e| {
        Error::Refused(format!(
            "dispatched {label}, but task {id} was not {}: {e}",
            settings.picked_words()
        ))
    })?;
    Ok(format!(
        "{}; session {label} works on it",
        moved(&task, &now)
    ))
}

/// "task ID (TITLE) is In progress now".
fn moved(task: &Task, now: &str) -> String {
    format!(
        "task {} ({}) {now}",
        task.id,
        tasks::one_line(&task.title, 80),
    )
}

/// What the orchestrator's first message gets for an agent of `kind` in `repo`: the open
/// tasks as the words its command line takes a first prompt in. Nothing without a task
/// source (and then nothing is read); a tracker that fails is a note, never a failed
/// launch. Broken settings are refused.
pub fn orchestrator_words(
    repo: &Repo,
    kind: crate::agent::AgentKind,
    out: &mut dyn Report,
) -> Result<Vec<String>, Error> {
    let agent = crate::agent::of(kind);
    // Asked of an empty message: whether it takes one at all.
    if agent.first_message(String::new()).is_none() {
        // No first message to put them in: not worth a request.
        if configured(repo)?.is_some() {
            out.note(format!(
                "a {} orchestrator takes no first message on its command line: `orchestra tasks` lists the open tasks",
                kind.as_str()
            ));
        }
        return Ok(Vec::new());
    }
    let opening =
        tasks::orchestrator_opening(repo.main_worktree(), &repo.name()).map_err(task_error)?;
    let message = match opening {
        None => return Ok(Vec::new()),
        Some(Ok(message)) => message,
        Some(Err(e)) => {
            out.note(format!(
                "the open tasks could not be read, so the orchestrator starts without them: {e}"
            ));
            return Ok(Vec::new());
        }
    };
    Ok(agent.first_message(message).unwrap_or_default())
}

/// After `session` merged (as `merged` says): its task moves to done (GitHub: is closed)
/// when `done_on_merge` asks for it. A failure is reported and never undoes or blocks the
/// merge.
pub fn after_merge(
    store: &crate::state::Store,
    repo: &Repo,
    session: &crate::state::Session,
    merged: &Merged,
    out: &mut dyn Report,
) {
    let task = match store.session_task(&session.id) {
        Ok(Some(task)) => task,
        Ok(None) => return,
        Err(e) => {
            out.note(format!("could not read the task of {}: {e}", session.label));
            return;
        }
    };
    match tasks::close_on_merge(repo.main_worktree(), &repo.name(), &task, merged) {
        Ok(Some(done)) => out.line(done),
        Ok(None) => {}
        Err(e) => out.note(format!(
            "{} is merged, but its task {task} was not moved to done: {e}",
            session.label
        )),
    }
}
