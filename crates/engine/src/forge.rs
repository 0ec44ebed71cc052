//! GitHub's REST API as orchestra uses it (`orchestra pr`, the background pull-request
//! read, GitHub Issues as a task source): where a repository's API is (from the remote's
//! address, or `[github]`/`ORCHESTRA_GITHUB_API`), the token (the person's own, read each
//! time, never kept), one request with GitHub's headers, and a refusal as one line naming
//! what to fix, classed as the person's input (exit 2) or the service's (exit 1).

use std::time::Duration;

use serde_json::Value;

use crate::error::Error;
use crate::git::Repo;
use crate::http::{Client, HttpError, Secret};

/// `gh auth token` reads a file or the keyring: anything slower is stuck.
const GH_DEADLINE: Duration = Duration::from_secs(10);
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

/// `[github]`'s api and repo: `ORCHESTRA_GITHUB_API` over orchestra.toml's `api`. The
/// repo's own `api` is someone else's word on where the person's token goes: it is
/// refused (bad input, nothing sent) until `orchestra allow` allowed it as it is now.
pub fn configured(repo: &Repo) -> Result<(Option<String>, Option<String>), Error> {
    let path = crate::manifest::default_path(repo.main_worktree());
    let table = if path.exists() {
        crate::manifest::load(&path)
            .map_err(|e| Error::Manifest(Box::new(e)))?
            .github
    } else {
        Default::default()
    };
    let api = match crate::paths::non_empty_env("ORCHESTRA_GITHUB_API") {
        Some(api) => Some(api),
        None if table.api.as_deref().is_some_and(|a| !a.trim().is_empty()) => {
            let home =
                crate::paths::orchestra_home().map_err(|e| Error::BadInput(e.to_string()))?;
            crate::trust::allowed_api(&home, repo.main_worktree(), crate::trust::GITHUB_API)?
        }
        None => None,
    }
    .filter(|a| !a.trim().is_empty());
    Ok((api, table.repo.filter(|r| !r.trim().is_empty())))
}

/// The forge of `repo` from the remote `branch` is pushed to (as `orchestra pr` finds
/// it), with its token. No request yet.
pub fn rest_of(repo: &Repo, branch: &str, deadline: Duration) -> Result<Rest, Error> {
    let remote = repo.push_remote(branch).ok_or_else(|| {
        Error::BadInput(
            "the repository has no remote: add one (`git remote add origin URL`)".into(),
        )
    })?;
    let url = repo
        .remote_url(&remote)
        .ok_or_else(|| Error::BadInput(format!("the remote {remote} has no URL")))?;
    let (api, configured_repo) = configured(repo)?;
    let forge = Forge::of_remote(&remote, &url, api.as_deref(), configured_repo.as_deref())?;
    let token = token(&forge)?;
    Ok(Rest::new(forge, token, deadline))
}

/// What a request is about, for the line its refusal becomes.
pub struct About<'a> {
    /// The permission a 403 names: "pull requests: write".
    pub access: &'a str,
    /// The line a 404 becomes; `None`: the repository is not found.
    pub missing: Option<String>,
    /// What a 422 refused: "the pull request".
    pub refused: &'a str,
    /// A 422's field and the line it becomes instead of GitHub's own message.
    pub fields: &'a [(&'a str, &'a str)],
}

/// One repository's REST client, with the token.
pub struct Rest {
    pub forge: Forge,
    token: Token,
    client: Client,
}

impl Rest {
    pub fn new(forge: Forge, token: Token, deadline: Duration) -> Rest {
        Rest {
            forge,
            token,
            client: Client::new(deadline),
        }
    }

    /// Where the token came from, for messages.
    pub fn token_from(&self) -> &str {
        &self.token.from
    }

    /// A request with the token and GitHub's media type and version.
    pub fn request(&self, method: &'static str, url: &str) -> crate::http::Request<'_> {
        self.client
            .request(method, url)
            .secret_header("Authorization", &self.token.secret)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION)
    }

    /// One call, its answer as JSON, its refusal as one line.
    pub fn call(
        &self,
        method: &'static str,
        url: &str,
        body: Option<&Value>,
        about: &About<'_>,
    ) -> Result<Value, Error> {
        let mut request = self.request(method, url);
        if let Some(body) = body {
            request = request.json(body);
        }
        request
            .send()
            .map(|r| r.json())
            .map_err(|e| self.refusal(e, about))
    }

    /// The repository's address for `rest` (`/pulls?…`).
    pub fn repo_url(&self, rest: &str) -> String {
        format!(
            "{}/repos/{}/{}{rest}",
            self.forge.api, self.forge.owner, self.forge.name
        )
    }

    /// The one line a failed request becomes: the person's to fix (exit 2) or the
    /// service's (exit 1).
    pub fn refusal(&self, e: HttpError, about: &About<'_>) -> Error {
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
                        "GitHub forbids this to the token from {} (403 {said}): give it access to {} ({})",
                        self.token.from,
                        self.forge.full_name(),
                        about.access
                    )),
                    404 => Error::BadInput(about.missing.clone().unwrap_or_else(|| format!(
                        "GitHub finds no repository {} at {api} (404): check the remote's address (or [github] repo), and that the token from {} may see it",
                        self.forge.full_name(),
                        self.token.from
                    ))),
                    422 => Error::BadInput(validation(&answer, &said, about)),
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
pub(crate) fn validation(answer: &Value, said: &str, about: &About<'_>) -> String {
    let errors: Vec<&Value> = answer
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for error in &errors {
        let field = error.get("field").and_then(Value::as_str).unwrap_or("");
        if let Some((_, line)) = about.fields.iter().find(|(f, _)| *f == field) {
            return (*line).to_string();
        }
        if let Some(message) = error.get("message").and_then(Value::as_str) {
            return format!(
                "GitHub refused {} (422): {}",
                about.refused,
                crate::error::one_line(message, "")
            );
        }
    }
    format!("GitHub refused {} (422 {said})", about.refused)
}

/// A query value, escaped.
pub fn query_word(text: &str) -> String {
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
    use serde_json::json;

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
        let about = About {
            access: "issues: write",
            missing: None,
            refused: "the label",
            fields: &[("base", "no such base")],
        };
        let base = json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": "base", "code": "invalid"}]});
        assert_eq!(
            validation(&base, "Validation Failed", &about),
            "no such base"
        );
        let other = json!({"errors": [{"message": "name is too long"}]});
        assert_eq!(
            validation(&other, "", &about),
            "GitHub refused the label (422): name is too long"
        );
    }
}
