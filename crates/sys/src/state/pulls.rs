//! The pull request each session's branch has on its forge (`pull_requests`): recorded
//! by `orchestra pr`, its state read back by the background refresh (`pr --background`),
//! shown by `list`, the badge and the status line; and the ETags of the forge's answers
//! (`forge_etags`) that make an unchanged poll a free 304.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{StateError, Store};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullRequest {
    pub number: u64,
    pub url: String,
    /// `open`, `draft`, `merged` or `closed`; `None` until the refresh read it.
    pub state: Option<String>,
    /// The head commit's checks: `pending`, `passing`, `failing` or `none`.
    pub checks: Option<String>,
    /// The first failing check's name.
    pub failing_check: Option<String>,
    /// Its check run's id (what its log is fetched by).
    #[serde(skip)]
    pub failing_check_id: Option<u64>,
    /// `approved` or `changes_requested` (the latest review of each reviewer decides).
    pub review: Option<String>,
    /// Comments on the conversation and on the code.
    pub comments: Option<u64>,
    pub head_sha: Option<String>,
    /// The forge's `updated_at` when last read: an entry whose is the same is unchanged.
    #[serde(skip)]
    pub updated: Option<String>,
}

impl PullRequest {
    /// A pull request just opened: number and address, nothing read yet.
    pub fn opened(number: u64, url: String) -> PullRequest {
        PullRequest {
            number,
            url,
            state: None,
            checks: None,
            failing_check: None,
            failing_check_id: None,
            review: None,
            comments: None,
            head_sha: None,
            updated: None,
        }
    }

    /// Whether the forge says it was merged (merge, squash or rebase alike).
    pub fn merged(&self) -> bool {
        self.state.as_deref() == Some("merged")
    }
}

const COLUMNS: &str = "p.number, p.url, p.state, p.checks, p.failing_check, p.failing_check_id, \
                       p.review, p.comments, p.head_sha, p.updated";

fn read(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<PullRequest> {
    let number = |v: Option<i64>| v.map(|n| n.max(0) as u64);
    Ok(PullRequest {
        number: r.get::<_, i64>(at)?.max(0) as u64,
        url: r.get(at + 1)?,
        state: r.get(at + 2)?,
        checks: r.get(at + 3)?,
        failing_check: r.get(at + 4)?,
        failing_check_id: number(r.get(at + 5)?),
        review: r.get(at + 6)?,
        comments: number(r.get(at + 7)?),
        head_sha: r.get(at + 8)?,
        updated: r.get(at + 9)?,
    })
}

impl Store {
    /// Records (or replaces) the pull request of session `id`: another number forgets
    /// what was read of the old one.
    pub fn set_pull_request(&self, id: &str, pull: &PullRequest) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO pull_requests (session_id, number, url, at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(session_id) DO UPDATE SET url = ?3, at = ?4,
                   state = CASE WHEN number = ?2 THEN state END,
                   checks = CASE WHEN number = ?2 THEN checks END,
                   failing_check = CASE WHEN number = ?2 THEN failing_check END,
                   failing_check_id = CASE WHEN number = ?2 THEN failing_check_id END,
                   review = CASE WHEN number = ?2 THEN review END,
                   comments = CASE WHEN number = ?2 THEN comments END,
                   head_sha = CASE WHEN number = ?2 THEN head_sha END,
                   updated = CASE WHEN number = ?2 THEN updated END,
                   number = ?2",
                params![
                    id,
                    pull.number as i64,
                    pull.url,
                    chrono::Utc::now().timestamp()
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// What the refresh read of session `id`'s pull request (its number and address stay).
    pub fn set_pull_state(&self, id: &str, pull: &PullRequest) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE pull_requests SET state = ?2, checks = ?3, failing_check = ?4,
                   failing_check_id = ?5, review = ?6, comments = ?7, head_sha = ?8, updated = ?9
                 WHERE session_id = ?1",
                params![
                    id,
                    pull.state,
                    pull.checks,
                    pull.failing_check,
                    pull.failing_check_id.map(|n| n as i64),
                    pull.review,
                    pull.comments.map(|n| n as i64),
                    pull.head_sha,
                    pull.updated,
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn pull_request(&self, id: &str) -> Result<Option<PullRequest>, StateError> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM pull_requests p WHERE p.session_id = ?1"),
                [id],
                |r| read(r, 0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Session id → pull request, for the sessions of `repo` (every repo with `None`).
    pub fn pull_requests(
        &self,
        repo: Option<&str>,
    ) -> Result<HashMap<String, PullRequest>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT p.session_id, {COLUMNS} FROM pull_requests p
                 JOIN sessions s ON s.id = p.session_id WHERE ?1 IS NULL OR s.repo = ?1"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([repo], |r| Ok((r.get::<_, String>(0)?, read(r, 1)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<HashMap<_, _>, _>>()
            .map_err(|e| self.err(e))
    }

    /// The ETag kept for the answer at `url`.
    pub fn forge_etag(&self, url: &str) -> Result<Option<String>, StateError> {
        self.conn
            .query_row("SELECT etag FROM forge_etags WHERE url = ?1", [url], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    pub fn set_forge_etag(&self, url: &str, etag: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO forge_etags (url, etag, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(url) DO UPDATE SET etag = ?2, at = ?3",
                params![url, etag, chrono::Utc::now().timestamp()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_state_survives_a_new_address_but_not_a_new_number() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        let s = "api";
        store
            .conn
            .execute(
                "INSERT INTO sessions (id, repo, label, branch, base_commit, worktree, agent_kind, \
                 agent_argv, status, created_at, updated_at) VALUES \
                 (?1, '/r', ?1, 'b', 'c', '/w', 'claude', '[]', 'running', 1, 2)",
                [s],
            )
            .unwrap();
        store
            .set_pull_request(s, &PullRequest::opened(7, "u".into()))
            .unwrap();
        let read = PullRequest {
            state: Some("open".into()),
            checks: Some("failing".into()),
            failing_check: Some("lint".into()),
            failing_check_id: Some(9),
            ..PullRequest::opened(7, "u".into())
        };
        store.set_pull_state(s, &read).unwrap();
        assert_eq!(store.pull_request(s).unwrap().unwrap(), read);
        store
            .set_pull_request(s, &PullRequest::opened(7, "v".into()))
            .unwrap();
        assert_eq!(
            store.pull_request(s).unwrap().unwrap().checks.as_deref(),
            Some("failing")
        );
        store
            .set_pull_request(s, &PullRequest::opened(8, "w".into()))
            .unwrap();
        assert_eq!(
            store.pull_request(s).unwrap().unwrap(),
            PullRequest::opened(8, "w".into())
        );
        store.set_forge_etag("http://x/pulls", "\"a\"").unwrap();
        store.set_forge_etag("http://x/pulls", "\"b\"").unwrap();
        assert_eq!(
            store.forge_etag("http://x/pulls").unwrap().as_deref(),
            Some("\"b\"")
        );
    }
}
