//! Who asked for each session (`sessions.requested_by`): set when `orchestra mcp`
//! dispatches one for its orchestrator, read by `list`.

use std::collections::HashMap;

use rusqlite::params;

use super::{StateError, Store};

impl Store {
    /// Records that session `id` was dispatched at `who`'s request.
    pub fn set_requested_by(&self, id: &str, who: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE sessions SET requested_by = ?2 WHERE id = ?1",
                params![id, who],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Session id → who asked for it, for the sessions of `repo` (every repo with `None`)
    /// that were asked for.
    pub fn requested_by(&self, repo: Option<&str>) -> Result<HashMap<String, String>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, requested_by FROM sessions \
                 WHERE requested_by IS NOT NULL AND (?1 IS NULL OR repo = ?1)",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([repo], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<HashMap<_, _>, _>>()
            .map_err(|e| self.err(e))
    }
}
