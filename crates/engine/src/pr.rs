//! `orchestra pr`: a session's branch pushed to the person's own remote (the git CLI, their
//! credentials) and a pull request opened on GitHub for it, or the open one updated. The
//! order keeps nothing half-done that a second run cannot finish: everything the person
//! can get wrong (no remote, no forge, no token, a token GitHub refuses, a repository it
//! does not know) is found before the push; the draft is reviewed before the push; after
//! the push a failure says the branch is pushed and that running `pr` again finishes it
//! (the open pull request for the branch is looked for first, so never two).

pub mod github;
pub mod refresh;

use crate::error::Error;
use crate::git::Repo;
use crate::report::Report;
use crate::session::find_branch_session;
use crate::state::{PullRequest, Store};

pub use github::{Forge, Pull};

/// What the person asked for beside the label.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub title: Option<String>,
    pub base: Option<String>,
    pub ready: bool,
}

/// A pull request's text, drafted and then the person's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub title: String,
    pub body: String,
}

/// What `open` did.
#[derive(Debug)]
pub enum Opened {
    Created(Pull),
    Updated(Pull),
    /// The open pull request already said this.
    Unchanged(Pull),
}

impl Opened {
    pub fn pull(&self) -> &Pull {
        match self {
            Opened::Created(p) | Opened::Updated(p) | Opened::Unchanged(p) => p,
        }
    }
}

/// How the person reviews the draft for the session of that id: `Ok(None)` when they
/// gave it up (nothing is sent).
pub type Review<'a> = dyn FnMut(&str, Draft) -> Result<Option<Draft>, Error> + 'a;

/// Pushes the session `label`'s branch and opens (or updates) its pull request.
pub fn open(
    store: &Store,
    repo: &Repo,
    label: &str,
    options: &Options,
    review: &mut Review<'_>,
    report: &mut dyn Report,
) -> Result<Option<Opened>, Error> {
    let session = find_branch_session(store, repo, label, "open a pull request for")?;
    if !repo.branch_exists(&session.branch) {
        return Err(Error::Refused(format!(
            "branch {} is gone: there is nothing to push",
            session.branch
        )));
    }
    let remote = repo.push_remote(&session.branch).ok_or_else(|| {
        Error::BadInput(
            "the repository has no remote to push to: add one (`git remote add origin URL`)".into(),
        )
    })?;
    let url = repo
        .remote_url(&remote)
        .ok_or_else(|| Error::BadInput(format!("the remote {remote} has no URL")))?;
    let (api, configured_repo) = crate::forge::configured(repo)?;
    let forge = Forge::of_remote(&remote, &url, api.as_deref(), configured_repo.as_deref())?;
    let token = github::token(&forge)?;
    let api = github::Api::new(forge, token);
    // The token, the repository and the address are proven before anything is sent.
    let default_branch = api.default_branch()?;
    let base = options
        .base
        .clone()
        .or_else(|| session.base_branch.clone())
        .unwrap_or(default_branch);
    let drafted = draft(repo, &session, &base, options)?;
    let Some(reviewed) = review(&session.id, drafted)? else {
        report.note("nothing was pushed or sent".into());
        return Ok(None);
    };
    if reviewed.title.trim().is_empty() {
        return Err(Error::BadInput(
            "the pull request's title is empty: nothing was pushed or sent".into(),
        ));
    }
    repo.push(&remote, &session.branch)
        .map_err(|e| push_failed(&e, &remote, &session.branch))?;
    let opened = publish(&api, &session.branch, &base, &reviewed, options)
        .map_err(|e| pushed_but(e, label, &session.branch))?;
    let mut opened = opened;
    if options.ready && opened.pull().draft {
        let number = opened.pull().number;
        api.mark_ready(opened.pull()).map_err(|e| match e {
            Error::Refused(m) => Error::Refused(format!(
                "{m} (#{number} is open as a draft: `orchestra pr {label} --ready` again marks it ready)"
            )),
            other => other,
        })?;
        opened = match opened {
            Opened::Unchanged(p) => Opened::Updated(Pull { draft: false, ..p }),
            Opened::Updated(p) => Opened::Updated(Pull { draft: false, ..p }),
            Opened::Created(p) => Opened::Created(Pull { draft: false, ..p }),
        };
    }
    let pull = opened.pull();
    store.set_pull_request(
        &session.id,
        &PullRequest::opened(pull.number, pull.url.clone()),
    )?;
    Ok(Some(opened))
}

/// After the push: the open pull request for `branch` updated (when the draft or the base
/// asked for differs), else one created; one opened meanwhile is found and updated.
fn publish(
    api: &github::Api,
    branch: &str,
    base: &str,
    reviewed: &Draft,
    options: &Options,
) -> Result<Opened, Error> {
    let existing = api.open_pull_for(branch)?;
    Ok(match existing {
        Some(pull) => {
            // Only a base asked for moves an open pull request's base.
            let new_base = options.base.as_deref().filter(|b| *b != pull.base);
            if pull.title == reviewed.title && pull.body == reviewed.body && new_base.is_none() {
                Opened::Unchanged(pull)
            } else {
                Opened::Updated(api.update(
                    pull.number,
                    &reviewed.title,
                    &reviewed.body,
                    new_base,
                )?)
            }
        }
        None => {
            let made = api.create(
                branch,
                base,
                &reviewed.title,
                &reviewed.body,
                !options.ready,
            )?;
            match made {
                Some(pull) => Opened::Created(pull),
                // Opened meanwhile (another run, a person on the web): that one is updated.
                None => {
                    let listed = api.open_pull_for(branch)?;
                    let pull = listed.ok_or_else(|| {
                        Error::Refused(
                            "GitHub says a pull request is open for the branch but lists none: try again"
                                .into(),
                        )
                    })?;
                    Opened::Updated(api.update(
                        pull.number,
                        &reviewed.title,
                        &reviewed.body,
                        None,
                    )?)
                }
            }
        }
    })
}

/// A refused or failed push as one line: git's own verdict (`! [rejected] …`, `error:`,
/// `fatal:`), without its hints.
fn push_failed(e: &crate::git::GitError, remote: &str, branch: &str) -> Error {
    let said = match e {
        crate::git::GitError::Cli { message, .. } => {
            let verdict: Vec<&str> = message
                .lines()
                .map(str::trim)
                .filter(|l| {
                    l.starts_with('!') || l.starts_with("error:") || l.starts_with("fatal:")
                })
                .collect();
            if verdict.is_empty() {
                crate::error::one_line(message, "no reason given")
            } else {
                verdict.join("; ")
            }
        }
        other => crate::error::one_line(&other.to_string(), "no reason given"),
    };
    let rejected = said.contains("[rejected]") || said.contains("[remote rejected]");
    Error::Refused(format!(
        "git push of {branch} to {remote} {}: {said}{}",
        if rejected { "was rejected" } else { "failed" },
        if said.contains("non-fast-forward") || said.contains("fetch first") {
            " (the remote's branch has commits this one lacks: bring them in, then pr again)"
        } else {
            ""
        }
    ))
}

/// A failure after the push, saying what is left.
fn pushed_but(e: Error, label: &str, branch: &str) -> Error {
    let tail = format!(
        " ({branch} is pushed, with no pull request yet: `orchestra pr {label}` again finishes it)"
    );
    match e {
        Error::BadInput(m) => Error::BadInput(m + &tail),
        Error::Refused(m) => Error::Refused(m + &tail),
        other => other,
    }
}

/// The title and body drafted from the session's prompt, its commits and its diffstat.
fn draft(
    repo: &Repo,
    session: &crate::state::Session,
    base: &str,
    options: &Options,
) -> Result<Draft, Error> {
    let prompt = session.prompt.as_deref().unwrap_or("").trim();
    // Compared with the base here, else with the branch the session started from; a base
    // only the remote has leaves the lists out.
    let against = [Some(base), session.base_branch.as_deref()]
        .into_iter()
        .flatten()
        .find(|b| repo.branch_exists(b));
    let (commits, files, insertions, deletions) = match against {
        Some(target) => {
            let review = repo.review(&session.branch, target)?;
            (
                review.commits,
                review.files,
                review.insertions,
                review.deletions,
            )
        }
        None => (Vec::new(), Vec::new(), 0, 0),
    };
    let title = options.title.clone().unwrap_or_else(|| {
        let first = prompt.lines().map(str::trim).find(|l| !l.is_empty());
        let from = first
            .map(str::to_string)
            .or_else(|| commits.last().map(|c| c.summary.clone()))
            .unwrap_or_else(|| session.label.clone());
        shortened(&from, 72)
    });
    let mut body = String::new();
    if !prompt.is_empty() {
        body.push_str(prompt);
        body.push_str("\n\n");
    }
    body.push_str("## Commits\n\n");
    for commit in commits.iter().rev() {
        body.push_str(&format!(
            "- {} {}\n",
            &commit.id[..commit.id.len().min(7)],
            commit.summary
        ));
    }
    if commits.is_empty() {
        body.push_str("(none yet)\n");
    }
    body.push_str(&format!(
        "\n## Changes\n\n{} file(s), +{} -{}\n\n",
        files.len(),
        insertions,
        deletions
    ));
    for file in &files {
        body.push_str(&format!(
            "- `{}` (+{} -{})\n",
            file.path, file.insertions, file.deletions
        ));
    }
    body.push_str(&format!(
        "\nOpened by orchestra from session `{}`.\n",
        session.label
    ));
    Ok(Draft { title, body })
}

fn shortened(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_string();
    }
    let cut: String = text.chars().take(most - 1).collect();
    format!("{}…", cut.trim_end())
}

/// A draft as the text a person edits: the title on the first line, a blank line, the
/// body.
pub fn as_text(draft: &Draft) -> String {
    format!("{}\n\n{}", draft.title, draft.body)
}

/// The text a person saved, read back: `None` when they emptied it.
pub fn from_text(text: &str) -> Option<Draft> {
    let text = text.trim_start();
    let (title, body) = text.split_once('\n').unwrap_or((text, ""));
    let title = title.trim().to_string();
    (!title.is_empty()).then(|| Draft {
        title,
        body: body.trim_start_matches(['\n', '\r']).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_reads_back_as_it_was_written_and_an_emptied_one_is_given_up() {
        let draft = Draft {
            title: "Fix the login".into(),
            body: "text\n\n## Commits\n".into(),
        };
        assert_eq!(from_text(&as_text(&draft)), Some(draft));
        assert_eq!(from_text("  \n\n"), None);
        assert_eq!(shortened("abcdef", 4), "abc…");
    }
}
