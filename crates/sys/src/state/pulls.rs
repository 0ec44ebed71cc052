//! The pull request each session's branch has on its forge (`pull_requests`): recorded
//! by `orchestra pr`, read by `list` and by the next `pr`, which updates it.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{StateError, Store};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullRequest {
    pub number: u64,
    pub url: String,
}

impl Store {
    /// Records (or replaces) the pull request of session `id`.
    pub fn set_pull_request(&self, id: &str, pull: &PullRequest) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO pull_requests (session_id, number, url, at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(session_id) DO UPDATE SET number = ?2, url = ?3, at = ?4",
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

    pub fn pull_request(&self, id: &str) -> Result<Option<PullRequest>, StateError> {
        self.conn
            .query_row(
                "SELECT number, url FROM pull_requests WHERE session_id = ?1",
                [id],
                |r| {
                    Ok(PullRequest {
                        number: r.get::<_, i64>(0)?.max(0) as u64,
                        url: r.get(1)?,
                    })
                },
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
            .prepare_cached(
                "SELECT p.session_id, p.number, p.url FROM pull_requests p
                 JOIN sessions s ON s.id = p.session_id WHERE ?1 IS NULL OR s.repo = ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([repo], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    PullRequest {
                        number: r.get::<_, i64>(1)?.max(0) as u64,
                        url: r.get(2)?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<HashMap<_, _>, _>>()
            .map_err(|e| self.err(e))
    }
}
