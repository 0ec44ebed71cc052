//! GitHub Issues as a task source: the open issues of the repository the remote names
//! (found as `orchestra pr` finds it, over the shared client of `forge`), pull requests
//! skipped (GitHub lists them among issues). A pick assigns the person and adds the
//! in-progress label in one change; a local merge closes the issue, then says so in a
//! comment (closed first: a second run finds it closed and writes nothing twice); a merge
//! through a pull request is left to GitHub, which closes what its body's `Fixes #N`
//! names.

use std::cell::RefCell;

use serde_json::{json, Value};

use crate::error::Error;
use crate::forge::{query_word, About, Rest};

use super::{GithubSettings as Settings, Merged, Task, TaskError, TaskSource};

/// Pages of open issues read at most (100 each).
const MAX_PAGES: usize = 20;

pub struct Github {
    settings: Settings,
    rest: Rest,
    /// The token's own login, once asked.
    me: RefCell<Option<String>>,
}

/// A refusal of the shared client as the tracker's: the person's to fix, or the service's.
pub(super) fn task_error(e: Error) -> TaskError {
    match e {
        Error::BadInput(message) => TaskError::Fix(message),
        Error::Refused(message) => TaskError::Failed(message),
        other => TaskError::Failed(other.to_string()),
    }
}

impl Github {
    pub fn new(settings: Settings, rest: Rest) -> Github {
        Github {
            settings,
            rest,
            me: RefCell::new(None),
        }
    }

    fn reading(&self) -> About<'static> {
        About {
            access: "issues: read",
            missing: None,
            refused: "the issue list",
            fields: &[],
        }
    }

    /// What a request about issue `number` names when refused.
    fn about_issue(&self, number: &str, access: &'static str) -> About<'static> {
        About {
            access,
            missing: Some(format!(
                "GitHub finds no issue #{number} in {} (404): `orchestra tasks` lists the open issues",
                self.rest.forge.full_name()
            )),
            refused: "the change to the issue",
            fields: &[],
        }
    }

    fn call(
        &self,
        method: &'static str,
        url: &str,
        body: Option<&Value>,
        about: &About<'_>,
    ) -> Result<Value, TaskError> {
        self.rest.call(method, url, body, about).map_err(task_error)
    }

    /// Issue `number` as GitHub answers, refused when it is a pull request.
    fn issue(&self, number: &str) -> Result<Value, TaskError> {
        let url = self.rest.repo_url(&format!("/issues/{number}"));
        let issue = self.call("GET", &url, None, &self.about_issue(number, "issues: read"))?;
        if issue.get("pull_request").is_some() {
            return Err(TaskError::Fix(format!(
                "#{number} of {} is a pull request, not an issue: `orchestra tasks` lists the open issues",
                self.rest.forge.full_name()
            )));
        }
        Ok(issue)
    }

    /// Who a pick assigns: `pick_assignee`, else the token's own user.
    fn assignee(&self) -> Result<String, TaskError> {
        if let Some(login) = &self.settings.pick_assignee {
            return Ok(login.clone());
        }
        if let Some(login) = self.me.borrow().as_ref() {
            return Ok(login.clone());
        }
        let about = About {
            access: "its own user, or set pick_assignee in orchestra.toml's [tasks]",
            missing: None,
            refused: "the user",
            fields: &[],
        };
        let user = self.call(
            "GET",
            &format!("{}/user", self.rest.forge.api),
            None,
            &about,
        )?;
        let login = user
            .get("login")
            .and_then(Value::as_str)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                TaskError::Fix(format!(
                    "GitHub names no user for the token from {}: set pick_assignee in orchestra.toml's [tasks]",
                    self.rest.token_from()
                ))
            })?
            .to_string();
        *self.me.borrow_mut() = Some(login.clone());
        Ok(login)
    }

    fn task_of(&self, issue: &Value) -> Option<Task> {
        let number = issue.get("number")?.as_u64()?;
        let labels = names(issue, "labels", "name");
        let status = if labels.contains(&self.settings.in_progress) {
            self.settings.in_progress.clone()
        } else {
            issue
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or("open")
                .to_string()
        };
        Some(Task {
            id: number.to_string(),
            title: super::one_line(
                issue.get("title").and_then(Value::as_str).unwrap_or(""),
                500,
            ),
            status,
            url: issue
                .get("html_url")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        })
    }
}

/// The `field` of each object in `issue[list]` (labels' names, assignees' logins).
fn names(issue: &Value, list: &str, field: &str) -> Vec<String> {
    issue
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| item.get(field).and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

impl TaskSource for Github {
    fn project(&self) -> String {
        self.rest.forge.full_name()
    }

    fn open_tasks(&self) -> Result<Vec<Task>, TaskError> {
        let mut url = self
            .rest
            .repo_url("/issues?state=open&sort=created&direction=asc&per_page=100");
        if !self.settings.labels.is_empty() {
            url.push_str("&labels=");
            url.push_str(&query_word(&self.settings.labels.join(",")));
        }
        if let Some(assignee) = &self.settings.assignee {
            url.push_str("&assignee=");
            url.push_str(&query_word(assignee));
        }
        let about = self.reading();
        let mut tasks = Vec::new();
        for _ in 0..MAX_PAGES {
            let answer = self
                .rest
                .request("GET", &url)
                .send()
                .map_err(|e| task_error(self.rest.refusal(e, &about)))?;
            tasks.extend(
                answer
                    .json()
                    .as_array()
                    .into_iter()
                    .flatten()
                    // GitHub lists pull requests among the issues.
                    .filter(|i| i.get("pull_request").is_none())
                    .filter_map(|i| self.task_of(i)),
            );
            match answer.next_page() {
                Some(next) => url = next,
                None => break,
            }
        }
        Ok(tasks)
    }

    fn task(&self, id: &str) -> Result<Task, TaskError> {
        let issue = self.issue(id)?;
        if issue.get("state").and_then(Value::as_str) == Some("closed") {
            return Err(TaskError::Fix(format!(
                "issue #{id} of {} is closed: `orchestra tasks` lists the open issues",
                self.rest.forge.full_name()
            )));
        }
        self.task_of(&issue).ok_or_else(|| {
            TaskError::Failed(format!("GitHub's answer for issue #{id} has no number"))
        })
    }

    fn content(&self, id: &str) -> Result<String, TaskError> {
        let issue = self.issue(id)?;
        let body = issue.get("body").and_then(Value::as_str).unwrap_or("");
        // It becomes an agent's prompt: no control characters but line ends and tabs.
        let body: String = body
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        let url = issue.get("html_url").and_then(Value::as_str).unwrap_or("");
        Ok(format!("{}\n\n(GitHub issue #{id}: {url})", body.trim()))
    }

    fn prepare_pick(&self, _id: &str) -> Result<(), TaskError> {
        let login = self.assignee()?;
        // 204 when the login may be assigned issues of the repository, 404 when not.
        let url = self
            .rest
            .repo_url(&format!("/assignees/{}", query_word(&login)));
        let about = About {
            access: "issues: write",
            missing: Some(format!(
                "GitHub cannot assign {login} to issues of {} (404): set pick_assignee in orchestra.toml's [tasks] to a login with access to it",
                self.rest.forge.full_name()
            )),
            refused: "the assignee",
            fields: &[],
        };
        self.call("GET", &url, None, &about).map(|_| ())
    }

    fn mark_picked(&self, id: &str) -> Result<String, TaskError> {
        let login = self.assignee()?;
        let issue = self.issue(id)?;
        let mut assignees = names(&issue, "assignees", "login");
        if !assignees.iter().any(|a| a.eq_ignore_ascii_case(&login)) {
            assignees.push(login.clone());
        }
        let mut labels = names(&issue, "labels", "name");
        if !labels.contains(&self.settings.in_progress) {
            labels.push(self.settings.in_progress.clone());
        }
        // One change: assigned and labelled together, or neither.
        let mut about = self.about_issue(id, "issues: write");
        let unassignable = format!(
            "GitHub cannot assign {login} to issue #{id} (422): set pick_assignee in orchestra.toml's [tasks] to a login with access to {}",
            self.rest.forge.full_name()
        );
        let fields = [("assignees", unassignable.as_str())];
        about.fields = &fields;
        let changed = self.call(
            "PATCH",
            &self.rest.repo_url(&format!("/issues/{id}")),
            Some(&json!({"assignees": assignees, "labels": labels})),
            &about,
        )?;
        // GitHub drops an assignee it cannot assign without a word.
        if !names(&changed, "assignees", "login")
            .iter()
            .any(|a| a.eq_ignore_ascii_case(&login))
        {
            return Err(TaskError::Fix(format!(
                "issue #{id} is labelled {:?}, but GitHub did not assign {login}: give {login} access to {}, or set pick_assignee in orchestra.toml's [tasks]",
                self.settings.in_progress,
                self.rest.forge.full_name()
            )));
        }
        Ok(format!(
            "is assigned to {login} and labelled {:?} now",
            self.settings.in_progress
        ))
    }

    fn close_merged(&self, id: &str, merged: &Merged) -> Result<String, TaskError> {
        let issue = self.issue(id)?;
        if issue.get("state").and_then(Value::as_str) == Some("closed") {
            return Ok(format!("issue #{id} is closed already"));
        }
        if let Some(pull) = merged.pull_request {
            return Ok(format!(
                "issue #{id} is left to GitHub: pull request #{pull} closes it"
            ));
        }
        let about = self.about_issue(id, "issues: write");
        let url = self.rest.repo_url(&format!("/issues/{id}"));
        self.call(
            "PATCH",
            &url,
            Some(&json!({"state": "closed", "state_reason": "completed"})),
            &about,
        )?;
        let comment = format!(
            "Closed by orchestra: the work on this issue was {}.",
            merged.how
        );
        self.call(
            "POST",
            &format!("{url}/comments"),
            Some(&json!({"body": comment})),
            &about,
        )
        .map_err(|e| match e {
            TaskError::Fix(m) => TaskError::Fix(format!(
                "issue #{id} is closed, but its comment was not written: {m}"
            )),
            TaskError::Failed(m) => TaskError::Failed(format!(
                "issue #{id} is closed, but its comment was not written: {m}"
            )),
            other => other,
        })?;
        Ok(format!("issue #{id} is closed now ({})", merged.how))
    }
}
