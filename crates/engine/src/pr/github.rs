//! GitHub's REST API as `orchestra pr` uses it, over the shared client of `forge` (where
//! the API is, the token, a refusal as one line): the repository, its open pull requests
//! for a head, a pull request created or updated, marked ready, a check's log.

use std::time::Duration;

use serde_json::{json, Value};

use crate::error::Error;
use crate::forge::{query_word, About, Rest};
use crate::http::{Client, HttpError};

pub use crate::forge::{token, Forge, Token};

/// How long one request may take.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
/// Pages of open pull requests read at most when looking for the head's (100 each).
const MAX_PAGES: usize = 10;
/// What a pull request's refusals name.
const PULLS: About<'static> = About {
    access: "pull requests: write",
    missing: None,
    refused: "the pull request",
    fields: &[
        ("base", "GitHub has no such base branch (422): push it, or pass --base BRANCH"),
        ("head", "GitHub does not see the pushed branch (422): check that the remote is the repository's"),
    ],
};

/// A pull request as GitHub shows it (the fields used).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    pub url: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    pub base: String,
    /// GraphQL's id of it (what marking it ready for review names).
    pub node_id: String,
}

fn pull_of(value: &Value) -> Option<Pull> {
    Some(Pull {
        number: value.get("number")?.as_u64()?,
        url: value
            .get("html_url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        title: value
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        body: value
            .get("body")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        draft: value.get("draft").and_then(Value::as_bool) == Some(true),
        node_id: value
            .get("node_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        base: value
            .get("base")
            .and_then(|b| b.get("ref"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// The REST client of one repository, with the token.
pub struct Api {
    pub forge: Forge,
    rest: Rest,
}

impl Api {
    pub fn new(forge: Forge, token: Token) -> Api {
        Api {
            forge: forge.clone(),
            rest: Rest::new(forge, token, REQUEST_DEADLINE),
        }
    }

    /// The client under it (what the background read shares).
    pub fn from_rest(rest: Rest) -> Api {
        Api {
            forge: rest.forge.clone(),
            rest,
        }
    }

    fn request(&self, method: &'static str, url: &str) -> crate::http::Request<'_> {
        self.rest.request(method, url)
    }

    fn call(&self, method: &'static str, url: &str, body: Option<&Value>) -> Result<Value, Error> {
        self.rest.call(method, url, body, &PULLS)
    }

    fn repo_url(&self, rest: &str) -> String {
        self.rest.repo_url(rest)
    }

    fn refusal(&self, e: HttpError) -> Error {
        self.rest.refusal(e, &PULLS)
    }

    /// The repository's default branch (and the token's right to see it).
    pub fn default_branch(&self) -> Result<String, Error> {
        let repo = self.call("GET", &self.repo_url(""), None)?;
        Ok(repo
            .get("default_branch")
            .and_then(Value::as_str)
            .unwrap_or("main")
            .to_string())
    }

    /// The open pull request whose head is `branch` of this repository, if any (pages
    /// followed by their `link` header, bounded).
    pub fn open_pull_for(&self, branch: &str) -> Result<Option<Pull>, Error> {
        let mut url = format!(
            "{}?state=open&per_page=100&head={}",
            self.repo_url("/pulls"),
            query_word(&format!("{}:{branch}", self.forge.owner))
        );
        for _ in 0..MAX_PAGES {
            let response = self
                .request("GET", &url)
                .send()
                .map_err(|e| self.refusal(e))?;
            let found = response
                .json()
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| {
                    p.get("head")
                        .and_then(|h| h.get("ref"))
                        .and_then(Value::as_str)
                        == Some(branch)
                })
                .find_map(pull_of);
            if found.is_some() {
                return Ok(found);
            }
            match response.next_page() {
                Some(next) => url = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The new pull request; `None` when GitHub says one is open for the branch already
    /// (made since it was looked for).
    pub fn create(
        &self,
        branch: &str,
        base: &str,
        title: &str,
        body: &str,
        draft: bool,
    ) -> Result<Option<Pull>, Error> {
        let sent = self
            .request("POST", &self.repo_url("/pulls"))
            .json(&json!({"title": title, "body": body, "head": branch, "base": base, "draft": draft}))
            .send();
        let made = match sent {
            Ok(response) => response.json(),
            Err(HttpError::Status {
                status: 422,
                ref excerpt,
                ..
            }) if excerpt.contains("already exists") => return Ok(None),
            Err(e) => return Err(self.refusal(e)),
        };
        pull_of(&made).map(Some).ok_or_else(|| {
            Error::Refused("GitHub's answer to the new pull request has no number".into())
        })
    }

    /// New title and body, and a new base when `base` says one.
    pub fn update(
        &self,
        number: u64,
        title: &str,
        body: &str,
        base: Option<&str>,
    ) -> Result<Pull, Error> {
        let mut change = json!({"title": title, "body": body});
        if let Some(base) = base {
            change["base"] = json!(base);
        }
        let changed = self.call(
            "PATCH",
            &self.repo_url(&format!("/pulls/{number}")),
            Some(&change),
        )?;
        pull_of(&changed).ok_or_else(|| {
            Error::Refused(format!(
                "GitHub's answer to updating #{number} has no number"
            ))
        })
    }

    /// A draft marked ready for review: GraphQL's `markPullRequestReadyForReview` (REST
    /// cannot), at `{api}/graphql`, or `https://HOST/api/graphql` for an Enterprise API.
    pub fn mark_ready(&self, pull: &Pull) -> Result<(), Error> {
        let api = &self.forge.api;
        let url = match api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{api}/graphql"),
        };
        let query = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";
        let answer = self.call(
            "POST",
            &url,
            Some(&json!({"query": query, "variables": {"id": pull.node_id}})),
        )?;
        // GraphQL says its refusals in a 200's `errors`.
        if let Some(error) = answer
            .get("errors")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            let said = error.get("message").and_then(Value::as_str).unwrap_or("");
            return Err(Error::Refused(format!(
                "GitHub did not mark #{} ready for review: {}",
                pull.number,
                crate::error::one_line(said, "no reason given")
            )));
        }
        Ok(())
    }

    /// The end of check run `id`'s log: its Actions job's log (GitHub answers with a
    /// redirect to a signed address, asked without the token), else the run's own output
    /// (title, summary, text) when it has no job log (a check made by an app).
    pub fn check_log(&self, id: u64) -> Result<String, Error> {
        let url = self.repo_url(&format!("/actions/jobs/{id}/logs"));
        match self.request("GET", &url).send() {
            Ok(answer) => return Ok(answer.body),
            Err(HttpError::Status {
                status: 301 | 302 | 303 | 307,
                location: Some(to),
                ..
            }) if to.starts_with("https://") || to.starts_with("http://") => {
                // A new client: the signed address gets no Authorization header.
                let log = Client::new(REQUEST_DEADLINE)
                    .request("GET", to)
                    .send()
                    .map_err(|e| self.refusal(e))?;
                return Ok(log.body);
            }
            Err(HttpError::Status {
                status: 404 | 410, ..
            }) => {}
            Err(e) => return Err(self.refusal(e)),
        }
        let run = self.call("GET", &self.repo_url(&format!("/check-runs/{id}")), None)?;
        let output = run.get("output").cloned().unwrap_or(Value::Null);
        Ok(["title", "summary", "text"]
            .iter()
            .filter_map(|k| output.get(*k).and_then(Value::as_str))
            .filter(|t| !t.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"))
    }

    /// A GET sent with `etag` as `If-None-Match` (a 304 costs no rate-limit point).
    pub fn get_if_changed(
        &self,
        url: &str,
        etag: Option<&str>,
    ) -> Result<crate::http::Response, Error> {
        let mut request = self.request("GET", url);
        if let Some(etag) = etag {
            request = request.if_none_match(etag);
        }
        request.send().map_err(|e| self.refusal(e))
    }

    /// The repository's address for `rest` (`/pulls?…`).
    pub fn url(&self, rest: &str) -> String {
        self.repo_url(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_422_names_the_field() {
        let base = json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": "base", "code": "invalid"}]});
        let validation = crate::forge::validation;
        assert!(validation(&base, "Validation Failed", &PULLS).contains("--base"));
        let exists = json!({"errors": [{"message": "A pull request already exists for me:x."}]});
        assert!(validation(&exists, "", &PULLS).contains("already exists"));
    }
}
