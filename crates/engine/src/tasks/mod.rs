//! Task pick-up from a tracker: a project's open tasks, a task's text, and its status
//! moved when it is picked (and when its session is merged), over sys's `http`. A
//! [`TaskSource`] is the interface; `[tasks] source` picks Notion (`notion.rs`, the
//! default), GitHub Issues or Linear.
//!
//! Nothing is configured by default: with no source named and both Notion data sources
//! blank there is no source, and nothing here reads a token or opens a connection.

pub mod github;
pub mod linear;
pub mod notion;
mod token;
pub mod work;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::manifest::{ManifestError, TasksTable};

pub use token::Token;

/// One task of the tracker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    /// The status as the tracker names it ("Not started", "In progress"…).
    pub status: String,
    pub url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The settings, the token, an id or the tracker's answer to them is wrong: something
    /// the person fixes (the message says what).
    #[error("{0}")]
    Fix(String),
    /// The tracker could not be reached, timed out, or failed on its side.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Manifest(Box<ManifestError>),
}

/// What a tracker offers orchestra.
pub trait TaskSource {
    /// What the tasks belong to, for messages: the Notion project's title, the GitHub
    /// repository's owner/name.
    fn project(&self) -> String;
    /// The configured project's tasks whose status is not the done one.
    fn open_tasks(&self) -> Result<Vec<Task>, TaskError>;
    /// One task by id; refused when it is not a task of the configured tasks.
    fn task(&self, id: &str) -> Result<Task, TaskError>;
    /// The task's content as plain text (its page, for Notion).
    fn content(&self, id: &str) -> Result<String, TaskError>;
    /// Checks, before any session starts on task `id`, what [`TaskSource::mark_picked`]
    /// will need (GitHub: whom to assign, and that they may be), so a pick is refused
    /// whole rather than left half-done.
    fn prepare_pick(&self, _id: &str) -> Result<(), TaskError> {
        Ok(())
    }
    /// Marks the task as being worked on (Notion: the in-progress status). Returns what
    /// it is now, as the words after "task ID (TITLE) ": "is In progress now".
    fn mark_picked(&self, id: &str) -> Result<String, TaskError>;
    /// The work of the task's session landed as `merged` says (Notion: the done status).
    /// Returns the line saying what changed.
    fn close_merged(&self, id: &str, merged: &Merged) -> Result<String, TaskError>;
}

/// How a session's work landed, for the tracker's write-back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// "merged into main as 1a2b3c4", "squashed into main": what a comment says.
    pub how: String,
    /// The pull request that merged it, when it was one (then GitHub closed the issues
    /// its body names).
    pub pull_request: Option<u64>,
}

/// How long one request may take unless `[tasks] timeout` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// `[tasks]` of a repo, with defaults and the environment filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub source: Source,
    /// Whether a merge writes back (Notion: moves the task to done; GitHub: a comment and
    /// the issue closed).
    pub done_on_merge: bool,
    pub timeout: Duration,
}

/// The tracker `[tasks] source` names, with its own settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Notion(NotionSettings),
    Github(GithubSettings),
    Linear(LinearSettings),
}

/// Notion's `[tasks]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotionSettings {
    pub projects_data_source: String,
    pub tasks_data_source: String,
    /// The project page's title or id.
    pub project: String,
    pub status_property: String,
    pub in_progress: String,
    pub done: String,
}

/// GitHub Issues' `[tasks]` settings: the repository is the one the remote names (as for
/// `orchestra pr`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GithubSettings {
    /// Only issues with every one of these labels are listed.
    pub labels: Vec<String>,
    /// Only issues assigned so are listed: a login, "none" or "*"; `None`: any.
    pub assignee: Option<String>,
    /// Who a pick assigns; `None`: the token's own user.
    pub pick_assignee: Option<String>,
    /// The label a pick adds.
    pub in_progress: String,
}

pub use linear::LinearSettings;

/// The label a GitHub pick adds unless `in_progress` says otherwise.
pub const GITHUB_IN_PROGRESS: &str = "in progress";

impl Settings {
    /// The settings from `table`: the source it names (`source`, default "notion"). For
    /// Notion the manifest wins over the environment's `NOTION_PROJECTS_DATA_SOURCE_ID`
    /// and `NOTION_TASKS_DATA_SOURCE_ID`, and `None` when both data sources are blank: no
    /// task source.
    pub fn from_table(
        table: &TasksTable,
        repo_name: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, TaskError> {
        let text = |value: &Option<String>, default: &str| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .unwrap_or(default)
                .to_string()
        };
        let source = match table.source.as_deref().map(str::trim) {
            None | Some("notion") => match notion_settings(table, repo_name, env)? {
                Some(notion) => Source::Notion(notion),
                None => return Ok(None),
            },
            Some("github") => Source::Github(GithubSettings {
                labels: table
                    .labels
                    .iter()
                    .flatten()
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty())
                    .collect(),
                assignee: table
                    .assignee
                    .as_deref()
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(|a| a.trim_start_matches('@').to_string()),
                pick_assignee: table
                    .pick_assignee
                    .as_deref()
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(|a| a.trim_start_matches('@').to_string()),
                in_progress: text(&table.in_progress, GITHUB_IN_PROGRESS),
            }),
            Some("linear") => Source::Linear(LinearSettings {
                team: table
                    .team
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| {
                        TaskError::Fix(
                            "[tasks] source = \"linear\" needs the team: set team = \"KEY\" (such as ENG) in orchestra.toml"
                                .into(),
                        )
                    })?
                    .to_string(),
                in_progress: text(&table.in_progress, linear::DEFAULT_IN_PROGRESS),
                done: text(&table.done, linear::DEFAULT_DONE),
                api: linear::api_base(table.api.as_deref()),
            }),
            Some(other) => {
                return Err(TaskError::Fix(format!(
                    "tasks.source {other:?} is not a task source orchestra knows: \"notion\", \"github\" or \"linear\""
                )))
            }
        };
        let done_on_merge = table
            .done_on_merge
            .unwrap_or(matches!(source, Source::Github(_)));
        Ok(Some(Settings {
            source,
            done_on_merge,
            timeout: table
                .timeout
                .as_deref()
                .and_then(crate::duration::parse_timeout)
                .unwrap_or(DEFAULT_TIMEOUT),
        }))
    }

    /// The source's name, for messages: "Notion", "GitHub", "Linear".
    pub fn name(&self) -> &'static str {
        match self.source {
            Source::Notion(_) => "Notion",
            Source::Github(_) => "GitHub",
            Source::Linear(_) => "Linear",
        }
    }

    /// The task id `given` (an id, a URL) names, as the source writes it; refused when it
    /// is none of this source's ids. No network.
    pub fn task_id(&self, given: &str) -> Result<String, TaskError> {
        let found = match &self.source {
            Source::Notion(_) => notion_id(given),
            Source::Github(_) => issue_number(given).map(|n| n.to_string()),
            Source::Linear(_) => orchestra_model::linear::issue(given),
        };
        found.ok_or_else(|| {
            TaskError::Fix(format!(
                "{given:?} is not a task id{} (`orchestra tasks` lists them)",
                match self.source {
                    Source::Github(_) => " (an issue's number, #N, or its URL)",
                    Source::Linear(_) =>
                        " (an issue's identifier such as ENG-12, its id, or its URL)",
                    _ => "",
                }
            ))
        })
    }

    /// What picking does to a task, for a message about it not happening: "moved to In
    /// progress".
    pub fn picked_words(&self) -> String {
        match &self.source {
            Source::Notion(n) => format!("moved to {}", n.in_progress),
            Source::Github(g) => format!("assigned and labelled {:?}", g.in_progress),
            Source::Linear(l) => format!("moved to {}", l.in_progress),
        }
    }

    /// The line a pull request's body carries for the session's `task`, so its merge
    /// closes the task on the tracker's side: GitHub's "Fixes #N".
    pub fn pull_request_line(&self, task: &str) -> Option<String> {
        match self.source {
            Source::Github(_) => issue_number(task).map(|n| format!("Fixes #{n}")),
            _ => None,
        }
    }
}

/// Notion's settings from `table` and the environment; `None` when both data sources
/// are blank.
fn notion_settings(
    table: &TasksTable,
    repo_name: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<NotionSettings>, TaskError> {
    let given = |value: &Option<String>, var: &str| {
        value
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .or_else(|| env(var).map(|v| v.trim().to_string()))
            .filter(|v| !v.is_empty())
    };
    let projects = given(
        &table.projects_data_source,
        "NOTION_PROJECTS_DATA_SOURCE_ID",
    );
    let tasks = given(&table.tasks_data_source, "NOTION_TASKS_DATA_SOURCE_ID");
    let (projects, tasks) = match (projects, tasks) {
        (None, None) => return Ok(None),
        (Some(p), Some(t)) => (p, t),
        (p, _) => {
            let missing = if p.is_none() {
                "projects_data_source (or NOTION_PROJECTS_DATA_SOURCE_ID)"
            } else {
                "tasks_data_source (or NOTION_TASKS_DATA_SOURCE_ID)"
            };
            return Err(TaskError::Fix(format!(
                "[tasks] needs both data sources: set {missing} in orchestra.toml"
            )));
        }
    };
    let id = |text: String, name: &str| {
        notion_id(&text).ok_or_else(|| {
            TaskError::Fix(format!(
                "{name} {text:?} is not a Notion id (32 hex digits, dashes allowed)"
            ))
        })
    };
    let text = |value: &Option<String>, default: &str| {
        value
            .as_deref()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or(default)
            .to_string()
    };
    Ok(Some(NotionSettings {
        projects_data_source: id(projects, "the projects data source")?,
        tasks_data_source: id(tasks, "the tasks data source")?,
        project: text(&table.project, repo_name),
        status_property: text(&table.status_property, "Status"),
        in_progress: text(&table.in_progress, "In progress"),
        done: text(&table.done, "Done"),
    }))
}

/// The issue number `given` names: "12", "#12", or an issue's URL (".../issues/12").
pub fn issue_number(given: &str) -> Option<u64> {
    let given = given.trim();
    let number = match given.rsplit_once("/issues/") {
        Some((_, tail)) => tail.split(['?', '#', '/']).next().unwrap_or(""),
        None => given.strip_prefix('#').unwrap_or(given),
    };
    if number.is_empty() || number.len() > 12 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse().ok().filter(|n| *n > 0)
}

/// The task settings of the repo whose main worktree is `root` (named `name`): `None`
/// when no source is configured. Reads orchestra.toml (refusing a broken one) and the
/// environment; no network.
pub fn settings(root: &Path, name: &str) -> Result<Option<Settings>, TaskError> {
    let path = crate::manifest::default_path(root);
    let table = if path.exists() {
        crate::manifest::load(&path)
            .map_err(|e| TaskError::Manifest(Box::new(e)))?
            .tasks
    } else {
        TasksTable::default()
    };
    Settings::from_table(&table, name, crate::paths::non_empty_env)
}

/// The task source `settings` name, with its token found for the repo at `root`
/// (Notion: `token.rs`). Makes no request yet.
pub fn open(settings: &Settings, root: &Path) -> Result<Box<dyn TaskSource>, TaskError> {
    match &settings.source {
        Source::Notion(notion) => {
            let token = token::find(root).ok_or_else(|| {
                TaskError::Fix(
                    "no Notion token: set NOTION_TOKEN, or configure the Notion MCP server in Claude Code \
                     (~/.claude.json, or the repo's .mcp.json once `orchestra allow` allowed it) with its NOTION_TOKEN"
                        .into(),
                )
            })?;
            Ok(Box::new(notion::Notion::new(
                notion.clone(),
                settings.timeout,
                token,
            )))
        }
        Source::Github(github) => {
            let repo = crate::git::Repo::discover(root).map_err(|e| {
                TaskError::Fix(format!("GitHub Issues need the repo's remote: {e}"))
            })?;
            // The remote the checked-out branch is pushed to, as `orchestra pr` finds it.
            let branch = repo.current_branch().unwrap_or_default();
            let rest = crate::forge::rest_of(&repo, &branch, settings.timeout)
                .map_err(self::github::task_error)?;
            Ok(Box::new(self::github::Github::new(github.clone(), rest)))
        }
        Source::Linear(linear) => {
            let key = token::linear_key().ok_or_else(|| {
                TaskError::Fix(
                    "no Linear key: set LINEAR_API_KEY to a personal API key (Linear: Settings → Security & access → Personal API keys)"
                        .into(),
                )
            })?;
            // The repo's own address is someone else's word on where the key goes: only
            // once allowed as it is now (the environment's address needs no allowing).
            let mut chosen = linear.clone();
            if crate::paths::non_empty_env("ORCHESTRA_LINEAR_API").is_none() {
                let home =
                    crate::paths::orchestra_home().map_err(|e| TaskError::Fix(e.to_string()))?;
                chosen.api = match crate::trust::allowed_api(&home, root, crate::trust::TASKS_API) {
                    Ok(Some(api)) => api,
                    Ok(None) => linear::api_base(None),
                    Err(crate::error::Error::BadInput(line)) => return Err(TaskError::Fix(line)),
                    Err(crate::error::Error::Manifest(e)) => return Err(TaskError::Manifest(e)),
                    Err(e) => return Err(TaskError::Failed(e.to_string())),
                };
            }
            Ok(Box::new(linear::Linear::new(chosen, settings.timeout, key)))
        }
    }
}

/// The orchestrator's first message for the repo at `root` (named `name`): `Ok(None)`
/// when no source is configured (then nothing is read and no request made); the open
/// tasks, or why they could not be read, otherwise. `Err` only for broken settings.
pub fn orchestrator_opening(
    root: &Path,
    name: &str,
) -> Result<Option<Result<String, TaskError>>, TaskError> {
    let Some(settings) = settings(root, name)? else {
        return Ok(None);
    };
    let listed =
        open(&settings, root).and_then(|source| Ok((source.project(), source.open_tasks()?)));
    Ok(Some(listed.map(|(project, tasks)| {
        orchestrator_message(&project, &tasks)
    })))
}

/// After session work on `task` merged as `merged` says: with `done_on_merge`, the
/// source's write-back (Notion: the done status; GitHub: a comment and the issue closed).
/// `Ok(None)` when there is nothing to do (no source, or not asked).
pub fn close_on_merge(
    root: &Path,
    name: &str,
    task: &str,
    merged: &Merged,
) -> Result<Option<String>, TaskError> {
    let Some(settings) = settings(root, name)?.filter(|s| s.done_on_merge) else {
        return Ok(None);
    };
    // A task recorded under another source (the settings changed since) is not this one's.
    let id = settings.task_id(task)?;
    Ok(Some(open(&settings, root)?.close_merged(&id, merged)?))
}

pub use orchestra_model::notion::id as notion_id;

/// How long the open tasks in the orchestrator's first message may be: the message
/// travels on the agent's command line, which tmux bounds.
const MESSAGE_MAX: usize = 3 * 1024;

/// The orchestrator's first message: the open tasks, titles and ids, as many as fit,
/// and how to pick one.
pub fn orchestrator_message(project: &str, tasks: &[Task]) -> String {
    if tasks.is_empty() {
        return format!(
            "The project \"{}\" has no open tasks in the tracker. Wait for the person's request \
             and draft tasks as your instructions say.",
            one_line(project, 200)
        );
    }
    let mut text = format!(
        "Open tasks of the project \"{}\" (title, then id):\n",
        one_line(project, 200)
    );
    let mut listed = 0;
    for task in tasks {
        let line = format!("- {} ({})\n", one_line(&task.title, 200), task.id);
        if text.len() + line.len() > MESSAGE_MAX {
            break;
        }
        text.push_str(&line);
        listed += 1;
    }
    if listed < tasks.len() {
        text.push_str(&format!(
            "… and {} more (`orchestra tasks` lists them all).\n",
            tasks.len() - listed
        ));
    }
    text.push_str(
        "\nTo work on one: `orchestra tasks pick <id> --dispatch` (it moves the task to in progress \
         and dispatches a session with the task's text). Otherwise draft your own tasks as your \
         instructions say. Ask the person which to start; start nothing yet.",
    );
    text
}

/// The prompt a session dispatched from `task` gets: its title, then its content. It
/// never starts with `-`: claude takes its prompt as an argument, and a title such as
/// `--dangerously-skip-permissions` must stay text.
pub fn prompt_of(task: &Task, content: &str) -> String {
    let content = content.trim();
    if content.is_empty() {
        format!("Task: {}", task.title)
    } else {
        format!("Task: {}\n\n{content}", task.title)
    }
}

/// `text` on one line (line ends and control characters as spaces), at most `max` chars,
/// what is left that a terminal would act on (a bidi override) shown inert.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::inert::cut(&flat, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_come_from_the_table_then_the_environment() {
        let ds = "1c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b";
        let none = |_: &str| None;
        assert_eq!(
            Settings::from_table(&TasksTable::default(), "app", none).unwrap(),
            None,
            "blank: no source"
        );
        let env = |var: &str| {
            (var == "NOTION_TASKS_DATA_SOURCE_ID" || var == "NOTION_PROJECTS_DATA_SOURCE_ID")
                .then(|| format!("{ds} "))
        };
        let notion = |s: Settings| match s.source {
            Source::Notion(n) => (n, s.timeout),
            other => panic!("not Notion: {other:?}"),
        };
        let (s, timeout) = notion(
            Settings::from_table(&TasksTable::default(), "app", env)
                .unwrap()
                .expect("configured by the environment"),
        );
        assert_eq!(s.project, "app", "the repo folder's name");
        assert_eq!(
            (
                s.status_property.as_str(),
                s.in_progress.as_str(),
                s.done.as_str()
            ),
            ("Status", "In progress", "Done")
        );
        assert_eq!(timeout, DEFAULT_TIMEOUT);
        let table = TasksTable {
            tasks_data_source: Some("2c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b".into()),
            timeout: Some("2s".into()),
            ..TasksTable::default()
        };
        let (s, timeout) = notion(Settings::from_table(&table, "app", env).unwrap().unwrap());
        assert!(
            s.tasks_data_source.starts_with("2c2f3a4b"),
            "the manifest wins"
        );
        assert_eq!(timeout, Duration::from_secs(2));
        let half = TasksTable {
            tasks_data_source: Some(ds.into()),
            ..TasksTable::default()
        };
        let e = Settings::from_table(&half, "app", none).unwrap_err();
        assert!(e.to_string().contains("projects_data_source"), "{e}");
    }

    #[test]
    fn the_source_is_chosen_by_name_and_validates_its_own_ids() {
        let none = |_: &str| None;
        let github = TasksTable {
            source: Some("github".into()),
            labels: Some(vec!["bug".into(), " ".into()]),
            assignee: Some("@octo".into()),
            ..TasksTable::default()
        };
        let s = Settings::from_table(&github, "app", none)
            .unwrap()
            .expect("github needs nothing else");
        assert_eq!(
            s.source,
            Source::Github(GithubSettings {
                labels: vec!["bug".into()],
                assignee: Some("octo".into()),
                pick_assignee: None,
                in_progress: GITHUB_IN_PROGRESS.into(),
            })
        );
        assert!(s.done_on_merge, "GitHub closes on merge unless told not to");
        assert_eq!(s.task_id("#12").unwrap(), "12");
        assert_eq!(
            s.task_id("https://github.com/o/r/issues/7#issuecomment-1")
                .unwrap(),
            "7"
        );
        for bad in ["", "0", "x12", "1c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b", "-1"] {
            assert!(s.task_id(bad).is_err(), "{bad:?}");
        }
        assert_eq!(s.pull_request_line("12").as_deref(), Some("Fixes #12"));
        let notion = TasksTable {
            tasks_data_source: Some("1c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b".into()),
            projects_data_source: Some("2c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b".into()),
            ..TasksTable::default()
        };
        let s = Settings::from_table(&notion, "app", none).unwrap().unwrap();
        assert!(!s.done_on_merge);
        assert!(s.task_id("12").is_err());
        assert_eq!(s.pull_request_line("12"), None);
        let unknown = TasksTable {
            source: Some("jira".into()),
            ..TasksTable::default()
        };
        assert!(Settings::from_table(&unknown, "app", none).is_err());
    }

    #[test]
    fn linear_needs_a_team_and_takes_its_identifiers() {
        let none = |_: &str| None;
        let blank = TasksTable {
            source: Some("linear".into()),
            ..TasksTable::default()
        };
        let e = Settings::from_table(&blank, "app", none).unwrap_err();
        assert!(e.to_string().contains("set team = \"KEY\""), "{e}");
        let table = TasksTable {
            team: Some(" ENG ".into()),
            done: Some("Shipped".into()),
            ..blank
        };
        let s = Settings::from_table(&table, "app", none).unwrap().unwrap();
        match &s.source {
            Source::Linear(l) => assert_eq!(
                (l.team.as_str(), l.in_progress.as_str(), l.done.as_str()),
                ("ENG", "In Progress", "Shipped")
            ),
            other => panic!("not Linear: {other:?}"),
        }
        assert!(!s.done_on_merge);
        assert_eq!(s.task_id("eng-12").unwrap(), "ENG-12");
        assert_eq!(s.pull_request_line("ENG-12"), None);
        let e = s.task_id("12").unwrap_err().to_string();
        assert!(e.contains("such as ENG-12"), "{e}");
    }

    #[test]
    fn a_prompt_is_the_title_then_the_content_and_never_an_option() {
        let task = Task {
            id: "x".into(),
            title: "--dangerously-skip-permissions".into(),
            status: String::new(),
            url: String::new(),
        };
        assert_eq!(
            prompt_of(&task, "  \n"),
            "Task: --dangerously-skip-permissions"
        );
        assert_eq!(
            prompt_of(&task, "Do it.\n"),
            "Task: --dangerously-skip-permissions\n\nDo it."
        );
    }

    #[test]
    fn the_first_message_lists_what_fits_and_says_how_to_pick() {
        let task = |n: usize| Task {
            id: format!("id-{n}"),
            title: format!("Task\nnumber {n}"),
            status: "Not started".into(),
            url: String::new(),
        };
        let few = orchestrator_message("app", &[task(1), task(2)]);
        assert!(few.contains("- Task number 1 (id-1)\n"), "{few}");
        assert!(few.contains("orchestra tasks pick <id> --dispatch"));
        let many: Vec<Task> = (0..500).map(task).collect();
        let text = orchestrator_message("app", &many);
        assert!(text.len() < MESSAGE_MAX + 600, "{}", text.len());
        assert!(text.contains("more (`orchestra tasks` lists them all)"));
        assert!(orchestrator_message("app", &[]).contains("no open tasks"));
    }
}
