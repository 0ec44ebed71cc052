//! `orchestra list`: the sessions of this repo, or of every repo.

use serde::Serialize;

use crate::cli::ListArgs;
use crate::cmd::{open_repo, render_table, Context, Output};
use crate::error::Error;
use crate::radar;
use crate::state::{now, Session};

/// One row of `list --json`: an interface scripts rely on; keep the names stable.
#[derive(Serialize)]
pub struct ListRow {
    pub id: String,
    pub label: String,
    pub status: String,
    pub state: String,
    /// Who said the state last (hook, screen, approve, activity, tmux; empty: nobody yet).
    pub state_source: String,
    pub branch: String,
    pub worktree: String,
    pub repo: String,
    pub host: Option<String>,
    pub retry_count: i64,
    pub window: Option<String>,
    pub pane: Option<String>,
    /// The agent's conversation id, where the agent has one (claude): what `restart` resumes.
    pub conversation: Option<String>,
    /// Seconds since the session was created.
    pub age: i64,
    /// Why a blocked session can never start by itself ("api killed"); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stranded: Option<String>,
    /// How this live session's work was found in its target though `orchestra merge` did
    /// not merge it ("squashed into main", "rebased onto main"): `kill` deletes its branch
    /// as merged. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
    /// What the conflict radar last found this session's work conflicts with: other
    /// sessions and its target branch (`with`), with the paths.
    pub conflicts_with: Vec<radar::run::Row>,
    /// The tracker's task the session works on (`tasks pick --dispatch`), else null.
    pub task: Option<String>,
    /// Tokens used so far by kind (input, output, cache_creation, cache_read), from the
    /// agent's conversation logs; null for a session without them (not claude, remote).
    pub tokens: Option<crate::state::Tokens>,
    /// Their cost in US dollars; null as well where a model used has no price.
    pub cost_usd: Option<f64>,
    /// The pull request `orchestra pr` opened for the branch ({number, url, state, checks,
    /// failing_check, review, comments, head_sha}, the state as the background refresh last
    /// read it), else null.
    pub pull_request: Option<crate::state::PullRequest>,
    /// Who asked for the session: the orchestrator (or session) whose `orchestra mcp`
    /// dispatched it; null for one a person dispatched.
    pub requested_by: Option<String>,
    /// The group it is a candidate of (`dispatch --agents/--count`), else null.
    pub group: Option<String>,
    /// Its last `orchestra check` ({passed, ended, duration_ms, tail, at}), else null.
    pub check: Option<crate::state::CheckResult>,
    /// Its sandbox's network ("on", "off"), null when its agent runs unboxed.
    pub sandbox: Option<String>,
    /// Whether its agent runs without asking (`--yolo`).
    pub yolo: bool,
}

impl ListRow {
    pub fn from_session(s: &Session, at: i64) -> ListRow {
        ListRow {
            id: s.id.clone(),
            label: s.label.clone(),
            status: s.status.to_string(),
            state: s.state.to_string(),
            state_source: s.state_source.to_string(),
            branch: s.branch.clone(),
            worktree: s.worktree.clone(),
            repo: s.repo.clone(),
            host: s.host.clone(),
            retry_count: s.retry_count,
            window: s.window.as_deref().map(String::from),
            pane: s.pane.as_deref().map(String::from),
            conversation: s.agent_uuid.clone(),
            age: at - s.created_at,
            stranded: None,
            merged: None,
            conflicts_with: Vec::new(),
            task: None,
            tokens: None,
            cost_usd: None,
            pull_request: None,
            requested_by: None,
            group: None,
            check: None,
            sandbox: s
                .sandbox
                .as_ref()
                .map(orchestra_model::sandbox::Network::word),
            yolo: s.yolo,
        }
    }
}

pub fn run(ctx: &Context, args: &ListArgs, out: &mut Output<'_>) -> Result<(), Error> {
    let repo = if args.all {
        None
    } else {
        Some(open_repo(args.repo.repo.as_deref()).map_err(|e| match e {
            Error::Git(g, _) => {
                Error::BadInput(format!("{g} (use --all for the sessions of every repo)"))
            }
            other => other,
        })?)
    };
    let store = ctx.store()?;
    let sessions = store.sessions(repo.as_ref().map(crate::git::Repo::id).as_deref(), false)?;
    let at = now();
    let mut stranded =
        store.stranded_reasons(repo.as_ref().map(crate::git::Repo::id).as_deref())?;
    let pairs = radar::run::rows(
        &store.conflicts(repo.as_ref().map(crate::git::Repo::id).as_deref())?,
        &sessions,
    );
    let mut tasks = store.session_tasks(repo.as_ref().map(crate::git::Repo::id).as_deref())?;
    let mut pulls = store.pull_requests(repo.as_ref().map(crate::git::Repo::id).as_deref())?;
    let mut requested = store.requested_by(repo.as_ref().map(crate::git::Repo::id).as_deref())?;
    let prices =
        crate::cost::Prices::load(&ctx.home).map_err(|e| Error::BadInput(e.to_string()))?;
    let mut costs = crate::cost::session_costs(&store, &prices, &sessions)?;
    let mut merged = crate::session::merged_elsewhere(&sessions, &pulls);
    let mut groups = store.session_groups(repo.as_ref().map(crate::git::Repo::id).as_deref())?;
    let mut checks = store.check_results(repo.as_ref().map(crate::git::Repo::id).as_deref())?;
    let rows: Vec<ListRow> = sessions
        .iter()
        .map(|s| ListRow {
            stranded: stranded.remove(&s.id),
            merged: merged.remove(&s.id),
            task: tasks.remove(&s.id),
            pull_request: pulls.remove(&s.id),
            requested_by: requested.remove(&s.id),
            tokens: costs.get(&s.id).map(|c| c.tokens),
            cost_usd: costs.remove(&s.id).and_then(|c| c.cost_usd),
            conflicts_with: radar::run::rows_of(&pairs, &s.id),
            group: groups.remove(&s.id),
            check: checks.remove(&s.id),
            ..ListRow::from_session(s, at)
        })
        .collect();
    if args.json {
        let json = serde_json::to_string_pretty(&rows).unwrap_or_else(|_| "[]".into());
        out.line(json);
        return Ok(());
    }
    if rows.is_empty() {
        out.line("no sessions");
        return Ok(());
    }
    let mut header = vec![
        "LABEL",
        "STATUS",
        "STATE",
        "CONFLICTS",
        "PR",
        "BRANCH",
        "WINDOW",
        "PANE",
        "AGE",
        "RETRIES",
        "HOST",
        "ID",
        "WORKTREE",
    ];
    if args.all {
        header.push("REPO");
    }
    // A group's candidates are shown together, under the group's label.
    let grouped = rows.iter().any(|r| r.group.is_some());
    if grouped {
        header.insert(1, "GROUP");
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.label.clone(),
                match (&r.stranded, &r.merged) {
                    (Some(why), _) => format!("{} ({why})", r.status),
                    (None, Some(how)) => format!("{}, merged ({how})", r.status),
                    (None, None) => r.status.clone(),
                },
                r.state.clone(),
                if r.conflicts_with.is_empty() {
                    "-".into()
                } else {
                    r.conflicts_with
                        .iter()
                        .map(|c| c.with.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
                r.pull_request
                    .as_ref()
                    .map_or_else(|| "-".into(), crate::pr::refresh::phrase),
                r.branch.clone(),
                r.window.clone().unwrap_or_else(|| "-".into()),
                r.pane.clone().unwrap_or_else(|| "-".into()),
                crate::duration::age(r.age),
                r.retry_count.to_string(),
                r.host.clone().unwrap_or_else(|| "local".into()),
                r.id.clone(),
                r.worktree.clone(),
            ];
            if args.all {
                cells.push(r.repo.clone());
            }
            if grouped {
                cells.insert(1, r.group.clone().unwrap_or_else(|| "-".into()));
            }
            cells
        })
        .collect();
    for line in render_table(&header, &table) {
        out.line(line);
    }
    Ok(())
}
