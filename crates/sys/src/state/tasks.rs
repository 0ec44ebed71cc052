//! The tracker's task each session works on (`sessions.task`): set by `tasks pick
//! --dispatch`, read by `list` and by a merge that closes the task.

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};

use super::{StateError, Store};

impl Store {
    /// Records that session `id` works on `task` (the tracker's id).
    pub fn set_session_task(&self, id: &str, task: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE sessions SET task = ?2 WHERE id = ?1",
                params![id, task],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The task session `id` works on, if it was dispatched from one.
    pub fn session_task(&self, id: &str) -> Result<Option<String>, StateError> {
        self.conn
            .query_row("SELECT task FROM sessions WHERE id = ?1", [id], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }

    /// Session id → task, for the sessions of `repo` (every repo with `None`) that have one.
    pub fn session_tasks(&self, repo: Option<&str>) -> Result<HashMap<String, String>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, task FROM sessions WHERE task IS NOT NULL AND (?1 IS NULL OR repo = ?1)",
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
