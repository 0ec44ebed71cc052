//! Linear as a task source, over its GraphQL API: tasks are the issues of the configured
//! team whose workflow state is neither completed nor canceled (Linear filters them), a
//! task is an issue by its identifier (`ENG-12`) or id, and a status is one of the team's
//! workflow states by name. One POST per operation; every refusal, whether an HTTP status
//! or a 200 carrying `errors`, becomes one line.

use std::cell::RefCell;
use std::time::Duration;

use serde_json::{json, Value};

use crate::http::{Client, HttpError};

use super::{one_line, Merged, Task, TaskError, TaskSource, Token};

pub const DEFAULT_API: &str = "https://api.linear.app";
/// How often a rate-limited request is sent again, each after the wait Linear asks for
/// (`retry-after`), else 1 s, 2 s, 4 s.
const MAX_RETRIES: u32 = 3;
/// A longer wait than this is not waited for: the command fails and says so.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);
/// Pages of a connection read at most, and the nodes asked per page.
const MAX_PAGES: usize = 100;
const PAGE: u32 = 50;
/// The state types an open task is not in.
const CLOSED_TYPES: [&str; 2] = ["completed", "canceled"];

/// `[tasks]` for Linear, with its defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinearSettings {
    /// The team's key (`ENG`) or id.
    pub team: String,
    /// The workflow states pick and a merge move an issue to.
    pub in_progress: String,
    pub done: String,
    /// The API's base: `/graphql` is its endpoint.
    pub api: String,
}

pub const DEFAULT_IN_PROGRESS: &str = "In Progress";
pub const DEFAULT_DONE: &str = "Done";

impl LinearSettings {
    /// The GraphQL endpoint of `api` (a base, or the endpoint itself).
    fn endpoint(&self) -> String {
        let base = self.api.trim().trim_end_matches('/');
        if base.ends_with("/graphql") {
            base.to_string()
        } else {
            format!("{base}/graphql")
        }
    }
}

/// The API base: `$ORCHESTRA_LINEAR_API` (a stand-in, a proxy), else `[tasks] api`, else
/// Linear's own.
pub fn api_base(configured: Option<&str>) -> String {
    crate::paths::non_empty_env("ORCHESTRA_LINEAR_API")
        .or_else(|| {
            configured
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| DEFAULT_API.to_string())
}

pub struct Linear {
    settings: LinearSettings,
    timeout: Duration,
    token: Token,
    endpoint: String,
    client: Client,
    team: RefCell<Option<Team>>,
}

#[derive(Debug, Clone)]
struct Team {
    id: String,
    key: String,
    states: Vec<State>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    id: String,
    name: String,
}

/// An issue as `task` reads it.
struct Issue {
    id: String,
    task: Task,
    description: String,
}

/// What a request is about, for the one line a refusal becomes.
struct About {
    /// "team ENG", "issue ENG-12"
    thing: String,
    /// What the person checks: "team in orchestra.toml's [tasks]".
    fix: String,
}

const ISSUE_FIELDS: &str =
    "id identifier title description url state { name type } team { id key }";

impl Linear {
    pub fn new(settings: LinearSettings, timeout: Duration, token: Token) -> Linear {
        let endpoint = settings.endpoint();
        let client = Client::new(timeout);
        Linear {
            settings,
            timeout,
            token,
            endpoint,
            client,
            team: RefCell::new(None),
        }
    }

    fn team_about(&self) -> About {
        About {
            thing: format!("team {}", self.settings.team),
            fix: "team in orchestra.toml's [tasks] (its key, such as ENG, or its id)".into(),
        }
    }

    fn issue_about(id: &str) -> About {
        About {
            thing: format!("issue {id}"),
            fix: "the identifier (`orchestra tasks` lists them)".into(),
        }
    }

    /// One GraphQL operation: its `data`, or the refusal as one line. Rate limits are
    /// waited for (bounded), whether they come as an HTTP status or as `errors`.
    fn call(&self, query: &str, variables: Value, about: &About) -> Result<Value, TaskError> {
        let body = json!({"query": query, "variables": variables});
        let mut retries = 0;
        loop {
            let sent = self
                .client
                .request("POST", &self.endpoint)
                .secret_header("Authorization", &self.token.as_given())
                .json(&body)
                .send();
            let (status, answer, retry_after) = match sent {
                Ok(response) => (response.status, response.json(), None),
                Err(HttpError::Status {
                    status,
                    excerpt,
                    retry_after,
                    ..
                }) => (
                    status,
                    serde_json::from_str(&excerpt).unwrap_or(Value::Null),
                    retry_after,
                ),
                Err(e) => return Err(self.unreachable(e, about)),
            };
            let errors = answer
                .get("errors")
                .and_then(Value::as_array)
                .filter(|e| !e.is_empty());
            let limited = status == 429 || errors.is_some_and(|e| code_of(e) == "RATELIMITED");
            if limited && retries < MAX_RETRIES {
                let wait = retry_after.unwrap_or(Duration::from_secs(1 << retries));
                if wait > MAX_RETRY_WAIT {
                    return Err(TaskError::Failed(format!(
                        "Linear is rate limiting (RATELIMITED) and asks to wait {}s: try again later",
                        wait.as_secs()
                    )));
                }
                std::thread::sleep(wait);
                retries += 1;
                continue;
            }
            if let Some(errors) = errors {
                return Err(self.refusal(status, errors, about, retries));
            }
            if !(200..300).contains(&status) {
                return Err(self.refusal(status, &[], about, retries));
            }
            return match answer.get("data") {
                Some(data) if data.is_object() => Ok(data.clone()),
                _ => Err(TaskError::Failed(format!(
                    "Linear's answer about {} has no data",
                    about.thing
                ))),
            };
        }
    }

    fn unreachable(&self, e: HttpError, about: &About) -> TaskError {
        match e {
            HttpError::TimedOut { .. } => TaskError::Failed(format!(
                "Linear did not answer within {} about {} (`timeout` in orchestra.toml's [tasks] sets the limit)",
                crate::duration::spell(self.timeout),
                about.thing
            )),
            HttpError::Unreachable { reason, .. } => TaskError::Failed(format!(
                "cannot reach Linear at {}: {reason}",
                crate::http::host_of(&self.endpoint)
            )),
            other => TaskError::Failed(format!("Linear failed about {}: {other}", about.thing)),
        }
    }

    /// The one line a refused request becomes, naming what to fix.
    fn refusal(&self, status: u16, errors: &[Value], about: &About, retries: u32) -> TaskError {
        let code = code_of(errors);
        let said = errors
            .first()
            .map(|e| {
                let presentable = e
                    .get("extensions")
                    .and_then(|x| x.get("userPresentableMessage"))
                    .and_then(Value::as_str);
                let message = e.get("message").and_then(Value::as_str);
                one_line(presentable.or(message).unwrap_or(""), 300)
            })
            .unwrap_or_default();
        let user_error = errors.first().is_some_and(|e| {
            e.get("extensions")
                .and_then(|x| x.get("userError"))
                .and_then(Value::as_bool)
                == Some(true)
        });
        let message = errors
            .first()
            .and_then(|e| e.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let shown = if code.is_empty() {
            status.to_string()
        } else {
            format!("{status} {code}")
        };
        if status == 401 || code == "AUTHENTICATION_ERROR" {
            return TaskError::Fix(format!(
                "Linear refused the key from {} ({shown}): set it to a personal API key (Linear: Settings → Security & access → Personal API keys)",
                self.token.from
            ));
        }
        if status == 403 || code == "FORBIDDEN" {
            return TaskError::Fix(format!(
                "Linear's key may not use {} ({shown}): give the key access to that team in Linear",
                about.thing
            ));
        }
        if code == "RATELIMITED" || status == 429 {
            return TaskError::Failed(format!(
                "Linear is still rate limiting (RATELIMITED) after {retries} retries: try again later"
            ));
        }
        if message.starts_with("Entity not found") {
            return TaskError::Fix(format!(
                "Linear finds no {} ({}): check {}",
                about.thing,
                if said.is_empty() { "not found" } else { &said },
                about.fix
            ));
        }
        if user_error || code == "INVALID_INPUT" {
            return TaskError::Fix(format!(
                "Linear refused the request about {} ({shown}): {said} (check {})",
                about.thing, about.fix
            ));
        }
        TaskError::Failed(format!(
            "Linear failed ({shown}) about {}{}",
            about.thing,
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ))
    }

    /// Every node of the connection at `path` of a paginated query (`pageInfo`), bounded;
    /// `$after` carries the cursor.
    fn all_nodes(
        &self,
        query: &str,
        mut variables: Value,
        field: &str,
        about: &About,
    ) -> Result<Vec<Value>, TaskError> {
        let mut nodes = Vec::new();
        for _ in 0..MAX_PAGES {
            let data = self.call(query, variables.clone(), about)?;
            let connection = data.get(field).unwrap_or(&Value::Null);
            nodes.extend(
                connection
                    .get("nodes")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            let info = connection.get("pageInfo");
            let more = info
                .and_then(|i| i.get("hasNextPage"))
                .and_then(Value::as_bool);
            match (
                more,
                info.and_then(|i| i.get("endCursor"))
                    .and_then(Value::as_str),
            ) {
                (Some(true), Some(cursor)) => variables["after"] = json!(cursor),
                _ => return Ok(nodes),
            }
        }
        Ok(nodes)
    }

    /// The configured team, with its workflow states (read once).
    fn team(&self) -> Result<Team, TaskError> {
        if let Some(team) = self.team.borrow().as_ref() {
            return Ok(team.clone());
        }
        let about = self.team_about();
        let wanted = self.settings.team.trim();
        let (query, variables) = match orchestra_model::linear::uuid(wanted) {
            Some(id) => (
                "query Team($id: ID!) { teams(first: 2, filter: {id: {eq: $id}}) { nodes { id key name } } }",
                json!({"id": id}),
            ),
            None => (
                "query Team($key: String!) { teams(first: 2, filter: {key: {eqIgnoreCase: $key}}) { nodes { id key name } } }",
                json!({"key": wanted}),
            ),
        };
        let data = self.call(query, variables, &about)?;
        let found = data
            .get("teams")
            .and_then(|t| t.get("nodes"))
            .and_then(Value::as_array)
            .and_then(|n| n.first())
            .ok_or_else(|| {
                TaskError::Fix(format!(
                    "Linear has no team {wanted:?} this key may see: set team in orchestra.toml's [tasks] to its key (such as ENG) or id"
                ))
            })?;
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let id = text(found, "id");
        let key = text(found, "key");
        let states = self
            .all_nodes(
                "query States($team: ID!, $after: String) { workflowStates(first: 100, after: $after, filter: {team: {id: {eq: $team}}}) { nodes { id name } pageInfo { hasNextPage endCursor } } }",
                json!({"team": id, "after": null}),
                "workflowStates",
                &about,
            )?
            .iter()
            .map(|s| State {
                id: text(s, "id"),
                name: text(s, "name"),
            })
            .collect();
        let team = Team { id, key, states };
        *self.team.borrow_mut() = Some(team.clone());
        Ok(team)
    }

    /// The team's state named `name` (exactly, else ignoring case), or the line naming
    /// the setting to change and the names there are.
    fn state(&self, team: &Team, name: &str, key: &str) -> Result<State, TaskError> {
        team.states
            .iter()
            .find(|s| s.name == name)
            .or_else(|| team.states.iter().find(|s| s.name.eq_ignore_ascii_case(name)))
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = team.states.iter().map(|s| s.name.as_str()).collect();
                TaskError::Fix(format!(
                    "team {} has no workflow state {name:?}: set {key} in orchestra.toml's [tasks] (its states: {})",
                    team.key,
                    names.join(", ")
                ))
            })
    }

    /// Refuses settings naming a state the team lacks, before anything is changed.
    fn check_states(&self, team: &Team) -> Result<(), TaskError> {
        for (key, name) in [
            ("in_progress", &self.settings.in_progress),
            ("done", &self.settings.done),
        ] {
            self.state(team, name, key)?;
        }
        Ok(())
    }

    /// The issue `id` (an identifier or an id), refused when it is not the team's.
    fn issue(&self, id: &str) -> Result<Issue, TaskError> {
        let team = self.team()?;
        self.check_states(&team)?;
        let wanted = orchestra_model::linear::issue(id).ok_or_else(|| {
            TaskError::Fix(format!(
                "{id:?} is not a Linear issue (an identifier such as {}-12, or its id)",
                team.key
            ))
        })?;
        let data = self.call(
            &format!("query Issue($id: String!) {{ issue(id: $id) {{ {ISSUE_FIELDS} }} }}"),
            json!({"id": wanted}),
            &Self::issue_about(&wanted),
        )?;
        let node = data.get("issue").filter(|i| i.is_object()).ok_or_else(|| {
            TaskError::Fix(format!(
                "Linear finds no issue {wanted}: check the identifier (`orchestra tasks` lists them)"
            ))
        })?;
        let its_team = node
            .get("team")
            .and_then(|t| t.get("id"))
            .and_then(Value::as_str);
        if its_team != Some(team.id.as_str()) {
            let other = node
                .get("team")
                .and_then(|t| t.get("key"))
                .and_then(Value::as_str)
                .unwrap_or("another team");
            return Err(TaskError::Fix(format!(
                "{wanted} is an issue of {other}, not of team {}: `orchestra tasks` lists the team's",
                team.key
            )));
        }
        let task = issue_task(node).ok_or_else(|| {
            TaskError::Failed(format!(
                "Linear's answer for issue {wanted} has no identifier"
            ))
        })?;
        Ok(Issue {
            id: node
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            description: plain(
                node.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
            task,
        })
    }

    /// Moves the issue `id` to the team's state named `status` (`key` the setting that
    /// names it, for a refusal).
    fn move_to(&self, id: &str, status: &str, key: &str) -> Result<Issue, TaskError> {
        let issue = self.issue(id)?;
        let state = self.state(&self.team()?, status, key)?;
        let about = Self::issue_about(&issue.task.id);
        let data = self.call(
            "mutation Move($id: String!, $state: String!) { issueUpdate(id: $id, input: {stateId: $state}) { success issue { state { name } } } }",
            json!({"id": issue.id, "state": state.id}),
            &about,
        )?;
        succeeded(&data, "issueUpdate", &about)?;
        Ok(issue)
    }

    /// Adds `body` as a comment on `issue`.
    fn comment(&self, issue: &Issue, body: &str) -> Result<(), TaskError> {
        let about = Self::issue_about(&issue.task.id);
        let data = self.call(
            "mutation Comment($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id } } }",
            json!({"input": {"issueId": issue.id, "body": body}}),
            &about,
        )?;
        succeeded(&data, "commentCreate", &about)
    }
}

impl TaskSource for Linear {
    fn project(&self) -> String {
        format!("team {}", self.settings.team)
    }

    fn open_tasks(&self) -> Result<Vec<Task>, TaskError> {
        let team = self.team()?;
        let nodes = self.all_nodes(
            "query Open($team: ID!, $closed: [String!], $done: String, $first: Int, $after: String) { issues(first: $first, after: $after, filter: {team: {id: {eq: $team}}, state: {type: {nin: $closed}, name: {neq: $done}}}) { nodes { id identifier title url state { name type } } pageInfo { hasNextPage endCursor } } }",
            json!({"team": team.id, "closed": CLOSED_TYPES, "done": self.settings.done, "after": null, "first": PAGE}),
            "issues",
            &self.team_about(),
        )?;
        Ok(nodes.iter().filter_map(issue_task).collect())
    }

    fn task(&self, id: &str) -> Result<Task, TaskError> {
        Ok(self.issue(id)?.task)
    }

    fn content(&self, id: &str) -> Result<String, TaskError> {
        Ok(self.issue(id)?.description)
    }

    fn mark_picked(&self, id: &str) -> Result<String, TaskError> {
        self.move_to(id, &self.settings.in_progress, "in_progress")?;
        Ok(format!("is {} now", self.settings.in_progress))
    }

    /// The done state, then a comment saying how the work landed (a comment that fails
    /// after the move says so: the move stands).
    fn close_merged(&self, id: &str, merged: &Merged) -> Result<String, TaskError> {
        let done = &self.settings.done;
        let issue = self.move_to(id, done, "done")?;
        let body = format!(
            "Done: orchestra's session for {} was {}.",
            issue.task.id, merged.how
        );
        self.comment(&issue, &body).map_err(|e| {
            TaskError::Failed(format!(
                "task {} is {done} now, but the comment on it failed: {e}",
                issue.task.id
            ))
        })?;
        Ok(format!("task {} is {done} now (commented)", issue.task.id))
    }
}

/// The extensions code of the first error (`RATELIMITED`, `AUTHENTICATION_ERROR`…).
fn code_of(errors: &[Value]) -> &str {
    errors
        .first()
        .and_then(|e| e.get("extensions"))
        .and_then(|x| x.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A mutation's payload said `success: true`.
fn succeeded(data: &Value, field: &str, about: &About) -> Result<(), TaskError> {
    match data
        .get(field)
        .and_then(|p| p.get("success"))
        .and_then(Value::as_bool)
    {
        Some(true) => Ok(()),
        _ => Err(TaskError::Failed(format!(
            "Linear did not apply {field} to {}",
            about.thing
        ))),
    }
}

/// An issue node as a task: its identifier is the id a person types.
fn issue_task(node: &Value) -> Option<Task> {
    let text = |k: &str| node.get(k).and_then(Value::as_str);
    Some(Task {
        id: text("identifier").filter(|i| !i.is_empty())?.to_string(),
        title: one_line(text("title").unwrap_or(""), 500),
        status: node
            .get("state")
            .and_then(|s| s.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        url: text("url").unwrap_or("").to_string(),
    })
}

/// An issue's Markdown description as the agent's prompt takes it: the text as written,
/// control characters (but line ends and tabs) dropped.
fn plain(markdown: &str) -> String {
    markdown
        .replace("\r\n", "\n")
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linear() -> Linear {
        Linear::new(
            LinearSettings {
                team: "ENG".into(),
                in_progress: DEFAULT_IN_PROGRESS.into(),
                done: DEFAULT_DONE.into(),
                api: "http://127.0.0.1:9/".into(),
            },
            Duration::from_secs(1),
            Token::for_tests("lin_api_x", "LINEAR_API_KEY"),
        )
    }

    #[test]
    fn the_endpoint_is_the_base_and_graphql() {
        assert_eq!(linear().endpoint, "http://127.0.0.1:9/graphql");
        let mut s = linear().settings;
        s.api = "https://proxy.example/linear/graphql/".into();
        assert_eq!(s.endpoint(), "https://proxy.example/linear/graphql");
    }

    #[test]
    fn refusals_are_one_line_fix_or_failed() {
        let l = linear();
        let about = Linear::issue_about("ENG-9");
        let error = |code: &str, message: &str, user: bool| json!([{"message": message, "extensions": {"code": code, "userError": user}}]);
        let fix = |e: TaskError| match e {
            TaskError::Fix(m) => m,
            other => panic!("not a Fix: {other:?}"),
        };
        let failed = |e: TaskError| match e {
            TaskError::Failed(m) => m,
            other => panic!("not Failed: {other:?}"),
        };
        let auth = error("AUTHENTICATION_ERROR", "Authentication required", false);
        let m = fix(l.refusal(400, auth.as_array().unwrap(), &about, 0));
        assert!(
            m.contains("LINEAR_API_KEY") && m.contains("400 AUTHENTICATION_ERROR"),
            "{m}"
        );
        assert!(fix(l.refusal(401, &[], &about, 0)).contains("(401)"));
        let missing = error("INVALID_INPUT", "Entity not found: Issue", true);
        let m = fix(l.refusal(200, missing.as_array().unwrap(), &about, 0));
        assert!(m.starts_with("Linear finds no issue ENG-9"), "{m}");
        let limited = error("RATELIMITED", "Rate limit exceeded", true);
        let m = failed(l.refusal(400, limited.as_array().unwrap(), &about, 3));
        assert!(m.contains("after 3 retries"), "{m}");
        let query = error(
            "GRAPHQL_VALIDATION_FAILED",
            "Cannot query field \"x\"\non Issue",
            false,
        );
        let m = failed(l.refusal(400, query.as_array().unwrap(), &about, 0));
        assert!(
            !m.contains('\n') && m.contains("GRAPHQL_VALIDATION_FAILED"),
            "{m}"
        );
        assert!(failed(l.refusal(503, &[], &about, 0)).contains("(503)"));
    }

    #[test]
    fn issues_read_as_tasks_and_descriptions_as_plain_text() {
        let node = json!({"identifier": "ENG-3", "title": "Fix\nlogin", "url": "u",
                          "state": {"name": "Todo", "type": "unstarted"}});
        let task = issue_task(&node).unwrap();
        assert_eq!(
            (task.id.as_str(), task.title.as_str(), task.status.as_str()),
            ("ENG-3", "Fix login", "Todo")
        );
        assert!(issue_task(&json!({"title": "no identifier"})).is_none());
        assert_eq!(
            plain("# Goal\r\n- one\u{1b}[2J\ttab"),
            "# Goal\n- one[2J\ttab"
        );
    }

    #[test]
    fn a_state_is_found_by_name_else_the_setting_is_named() {
        let l = linear();
        let team = Team {
            id: "t".into(),
            key: "ENG".into(),
            states: vec![
                State {
                    id: "1".into(),
                    name: "Todo".into(),
                },
                State {
                    id: "2".into(),
                    name: "In Progress".into(),
                },
            ],
        };
        assert_eq!(
            l.state(&team, "in progress", "in_progress").unwrap().id,
            "2"
        );
        let e = l
            .state(&team, "Doing", "in_progress")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no workflow state \"Doing\"")
                && e.contains("set in_progress")
                && e.contains("Todo, In Progress"),
            "{e}"
        );
        assert!(l
            .check_states(&team)
            .unwrap_err()
            .to_string()
            .contains("set done"));
    }
}
