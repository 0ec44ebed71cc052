//! GitHub's REST API as `orchestra pr` uses it: where a repository's API is (from the
//! remote's address, or `[github]`/`ORCHESTRA_GITHUB_API`), the token (the person's own,
//! read each time, never kept), and the three calls: the repository, its open pull
//! requests for a head, a pull request created or updated. Every refusal becomes one line
//! naming what to fix, classed as the person's input (exit 2) or the service's (exit 1).

use std::time::Duration;

use serde_json::{json, Value};

use crate::error::Error;
use crate::http::{Client, HttpError, Secret};

/// How long one request may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
/// `gh auth token` reads a file or the keyring: anything slower is stuck.
const GH_DEADLINE: Duration = Duration::from_secs(10);
/// Pages of open pull requests read at most when looking for the head's (100 each).
const MAX_PAGES: usize = 10;
const API_VERSION: &str = "2022-11-28";

/// Where a repository's API is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forge {
    /// GitHub's own API, `https://HOST/api/v3`, or the configured base.
    pub api: String,
    pub owner: String,
    pub name: String,
    /// The Enterprise host the remote names (whose token `gh` keeps apart); `None` for
    /// GitHub's own host and for a remote with no host.
    pub enterprise_host: Option<String>,
}

impl Forge {
    /// The forge of a remote at `url`: GitHub's own API for a remote on GitHub's host,
    /// `/api/v3` on any other host (GitHub Enterprise), `api` instead when configured. `repo`
    /// ("owner/name") replaces the owner and name the URL's path gives.
    pub fn of_remote(
        remote: &str,
        url: &str,
        api: Option<&str>,
        repo: Option<&str>,
    ) -> Result<Forge, Error> {
        let (host, path) = split_remote_url(url);
        let (owner, name) = match repo {
            Some(repo) => repo.split_once('/').map(|(o, n)| (o.to_string(), n.to_string())),
            None => owner_and_name(&path),
        }
        .filter(|(o, n)| github_name(o) && github_name(n))
        .ok_or_else(|| {
            Error::BadInput(format!(
                "the remote {remote}'s address does not name a GitHub repository (owner/name): set `repo = \"OWNER/NAME\"` in orchestra.toml's [github]"
            ))
        })?;
        let enterprise_host = host
            .clone()
            .filter(|h| !h.eq_ignore_ascii_case("github.com"));
        let api = match (api, host) {
            (Some(api), _) => api.trim_end_matches('/').to_string(),
            (None, Some(host)) if host.eq_ignore_ascii_case("github.com") => {
                "https://api.github.com".to_string()
            }
            (None, Some(host)) => format!("https://{host}/api/v3"),
            (None, None) => {
                return Err(Error::BadInput(format!(
                    "the remote {remote} is not on a GitHub host (a local path?): set `api = \"https://HOST/api/v3\"` in orchestra.toml's [github] (or ORCHESTRA_GITHUB_API)"
                )))
            }
        };
        Ok(Forge {
            api,
            owner,
            name,
            enterprise_host,
        })
    }

    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

/// The host and path of a remote's URL: `https://[user@]host[:port]/path`,
/// `ssh://[user@]host[:port]/path`, `[user@]host:path` (scp-like); a local path has no
/// host.
fn split_remote_url(url: &str) -> (Option<String>, String) {
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            return (None, rest.to_string());
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        // An ssh port is no part of the web host; an https one is.
        let host = if scheme.eq_ignore_ascii_case("ssh") || scheme.contains("ssh") {
            host.split(':').next().unwrap_or(host)
        } else {
            host
        };
        return (Some(host.to_string()), path.to_string());
    }
    // scp-like: a colon before any slash.
    if let Some((before, path)) = url.split_once(':') {
        if !before.contains('/') && !before.is_empty() {
            let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
            return (Some(host.to_string()), path.to_string());
        }
    }
    (None, url.to_string())
}

/// Whether `part` may be a GitHub owner's or repository's name (and so goes into a URL's
/// path as it is).
fn github_name(part: &str) -> bool {
    !part.is_empty()
        && part != "."
        && part != ".."
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The last two segments of a remote's path: owner and name (`.git` dropped).
fn owner_and_name(path: &str) -> Option<(String, String)> {
    let mut segments = path
        .trim_end_matches('/')
        .rsplit('/')
        .filter(|s| !s.is_empty());
    let name = segments.next()?.trim_end_matches(".git").to_string();
    let owner = segments.next()?.to_string();
    Some((owner, name))
}

/// A token and where it came from ("GH_TOKEN", "`gh auth token`"), for messages.
pub struct Token {
    secret: Secret,
    pub from: String,
}

/// `GH_TOKEN`, else `GITHUB_TOKEN`, else `gh auth token` when gh is installed (for an
/// Enterprise host, its own: `--hostname`).
pub fn token(forge: &Forge) -> Result<Token, Error> {
    for name in ["GH_TOKEN", "GITHUB_TOKEN"] {
        if let Some(value) = crate::paths::non_empty_env(name).filter(|v| !v.trim().is_empty()) {
            return Ok(Token {
                secret: Secret::new(format!("Bearer {}", value.trim())),
                from: name.into(),
            });
        }
    }
    let mut gh = crate::process::Run::new("gh", GH_DEADLINE).args(["auth", "token"]);
    if let Some(host) = &forge.enterprise_host {
        gh = gh.args(["--hostname", host]);
    }
    let asked = gh.output();
    if let Ok(output) = asked {
        let value = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if output.success() && !value.is_empty() && !value.contains(char::is_whitespace) {
            return Ok(Token {
                secret: Secret::new(format!("Bearer {value}")),
                from: "`gh auth token`".into(),
            });
        }
    }
    Err(Error::BadInput(
        "no GitHub token: set GH_TOKEN (or GITHUB_TOKEN), or sign in with `gh auth login`".into(),
    ))
}

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
    token: Token,
    client: Client,
}

impl Api {
    pub fn new(forge: Forge, token: Token) -> Api {
        Api {
            forge,
            token,
            client: Client::new(REQUEST_DEADLINE),
        }
    }

    /// A request with the token and GitHub's media type and version.
    fn request(&self, method: &'static str, url: &str) -> crate::http::Request<'_> {
        self.client
            .request(method, url)
            .secret_header("Authorization", &self.token.secret)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION)
    }

    fn call(&self, method: &'static str, url: &str, body: Option<&Value>) -> Result<Value, Error> {
        let mut request = self.request(method, url);
        if let Some(body) = body {
            request = request.json(body);
        }
        request
            .send()
            .map(|r| r.json())
            .map_err(|e| self.refusal(e))
    }

    fn repo_url(&self, rest: &str) -> String {
        format!(
            "{}/repos/{}/{}{rest}",
            self.forge.api, self.forge.owner, self.forge.name
        )
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

    /// The one line a failed request becomes: the person's to fix (exit 2) or the
    /// service's (exit 1).
    fn refusal(&self, e: HttpError) -> Error {
        let api = &self.forge.api;
        match e {
            HttpError::TimedOut { after, .. } => Error::Refused(format!(
                "GitHub ({api}) did not answer within {}: try again later",
                crate::duration::spell(after)
            )),
            HttpError::Unreachable { reason, .. } => Error::Refused(format!(
                "cannot reach GitHub at {api}: {}",
                crate::error::one_line(&reason, "no reason given")
            )),
            HttpError::Status {
                status,
                retry_after,
                excerpt,
                ..
            } => {
                let answer: Value = serde_json::from_str(&excerpt).unwrap_or(Value::Null);
                let said = answer
                    .get("message")
                    .and_then(Value::as_str)
                    .map(|m| crate::error::one_line(m, ""))
                    .unwrap_or_default();
                let rate_limited = retry_after.is_some() || said.contains("rate limit");
                match status {
                    401 => Error::BadInput(format!(
                        "GitHub refused the token from {} (401 {}): set GH_TOKEN to a valid token, or `gh auth login`",
                        self.token.from,
                        if said.is_empty() { "unauthorized" } else { &said }
                    )),
                    403 | 429 if rate_limited => Error::Refused(format!(
                        "GitHub is rate limiting ({status}){}: try again then",
                        retry_after.map_or(String::new(), |w| format!(
                            " and asks to wait {}s",
                            w.as_secs()
                        ))
                    )),
                    403 => Error::BadInput(format!(
                        "GitHub forbids this to the token from {} (403 {said}): give it access to {} (pull requests: write)",
                        self.token.from,
                        self.forge.full_name()
                    )),
                    404 => Error::BadInput(format!(
                        "GitHub finds no repository {} at {api} (404): check the remote's address (or [github] repo), and that the token from {} may see it",
                        self.forge.full_name(),
                        self.token.from
                    )),
                    422 => Error::BadInput(validation(&answer, &said)),
                    _ => Error::Refused(format!(
                        "GitHub failed ({status}{}): try again later",
                        if said.is_empty() {
                            String::new()
                        } else {
                            format!(" {said}")
                        }
                    )),
                }
            }
        }
    }
}

/// A 422's line: which field GitHub found wrong.
fn validation(answer: &Value, said: &str) -> String {
    let errors: Vec<&Value> = answer
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for error in &errors {
        let field = error.get("field").and_then(Value::as_str).unwrap_or("");
        if field == "base" {
            return "GitHub has no such base branch (422): push it, or pass --base BRANCH".into();
        }
        if field == "head" {
            return "GitHub does not see the pushed branch (422): check that the remote is the repository's".into();
        }
        if let Some(message) = error.get("message").and_then(Value::as_str) {
            return format!(
                "GitHub refused the pull request (422): {}",
                crate::error::one_line(message, "")
            );
        }
    }
    format!("GitHub refused the pull request (422 {said})")
}

/// A query value, escaped.
fn query_word(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remotes_address_names_its_api_owner_and_name() {
        let forge = |url: &str| Forge::of_remote("origin", url, None, None);
        assert_eq!(
            forge("git@github.com:me/app.git").unwrap(),
            Forge {
                api: "https://api.github.com".into(),
                owner: "me".into(),
                name: "app".into(),
                enterprise_host: None,
            }
        );
        assert_eq!(
            forge("https://github.com/me/app").unwrap().api,
            "https://api.github.com"
        );
        let enterprise = forge("ssh://git@git.corp.example:2222/team/tool.git").unwrap();
        assert_eq!(
            (
                enterprise.api.as_str(),
                enterprise.full_name().as_str(),
                enterprise.enterprise_host.as_deref()
            ),
            (
                "https://git.corp.example/api/v3",
                "team/tool",
                Some("git.corp.example")
            )
        );
        let e = forge("/srv/git/me/app.git").unwrap_err().to_string();
        assert!(
            e.contains("[github]") && e.contains("ORCHESTRA_GITHUB_API"),
            "{e}"
        );
        let local = Forge::of_remote(
            "origin",
            "/srv/git/me/app.git",
            Some("http://127.0.0.1:9/"),
            None,
        )
        .unwrap();
        assert_eq!(
            (local.api.as_str(), local.full_name().as_str()),
            ("http://127.0.0.1:9", "me/app")
        );
        let named = Forge::of_remote("origin", "/x.git", Some("http://h"), Some("o/n")).unwrap();
        assert_eq!(named.full_name(), "o/n");
        assert!(Forge::of_remote("origin", "/x.git", Some("http://h"), None).is_err());
    }

    #[test]
    fn a_422_names_the_field() {
        let base = json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": "base", "code": "invalid"}]});
        assert!(validation(&base, "Validation Failed").contains("--base"));
        let exists = json!({"errors": [{"message": "A pull request already exists for me:x."}]});
        assert!(validation(&exists, "").contains("already exists"));
    }
}
