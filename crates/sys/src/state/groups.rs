//! Groups of sessions given one task (`groups`, `group_members`): a fan-out's candidates
//! or a fork's pair, compared and chosen from together; and the last `orchestra check` of
//! each session (`checks`).

use std::collections::HashMap;

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{StateError, Store};

/// A group as recorded: the labels its maker planned, whether it made them all, and the
/// ids of the members whose rows exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub repo: String,
    pub label: String,
    pub planned: Vec<String>,
    pub complete: bool,
    pub created_at: i64,
    /// Member session ids, in the order they were made.
    pub members: Vec<String>,
}

/// What `orchestra check` found in a session's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    pub passed: bool,
    /// How it ended ("exit status 1", "still running after 10m: stopped…").
    pub ended: String,
    pub duration_ms: u64,
    /// The end of its output.
    pub tail: String,
    /// When it ran (seconds since the epoch).
    pub at: i64,
}

impl Store {
    /// Records group `label` of `repo`, planned to hold `planned`, not complete yet. A
    /// complete group left with no live member is history and gives its label up.
    pub fn create_group(
        &self,
        repo: &str,
        label: &str,
        planned: &[String],
    ) -> Result<(), StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        tx.execute(
            "DELETE FROM groups WHERE repo = ?1 AND label = ?2 AND complete = 1 AND NOT EXISTS (
               SELECT 1 FROM group_members m JOIN sessions s ON s.id = m.session_id
               WHERE m.repo = ?1 AND m.grp = ?2 AND s.status <> 'merged')",
            params![repo, label],
        )
        .map_err(|e| self.err(e))?;
        let planned = serde_json::to_string(planned).unwrap_or_else(|_| "[]".into());
        tx.execute(
            "INSERT INTO groups (repo, label, planned, complete, created_at) VALUES (?1, ?2, ?3, 0, ?4)",
            params![repo, label, planned, chrono::Utc::now().timestamp()],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    pub fn add_group_member(&self, repo: &str, group: &str, id: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO group_members (session_id, repo, grp) VALUES (?1, ?2, ?3)",
                params![id, repo, group],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Its maker made every member: from now on it is a group like any other.
    pub fn complete_group(&self, repo: &str, label: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE groups SET complete = 1 WHERE repo = ?1 AND label = ?2",
                params![repo, label],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A fork made: in one transaction its pending group (`pending`, what `doctor --fix`
    /// undoes while it stands) goes, and `members` join group `label`, made complete with
    /// them when it does not exist yet.
    pub fn settle_fork(
        &self,
        repo: &str,
        pending: &str,
        label: &str,
        members: &[(&str, &str)],
    ) -> Result<(), StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        tx.execute(
            "DELETE FROM groups WHERE repo = ?1 AND label = ?2",
            params![repo, pending],
        )
        .map_err(|e| self.err(e))?;
        let planned: Vec<&str> = members.iter().map(|(l, _)| *l).collect();
        let planned = serde_json::to_string(&planned).unwrap_or_else(|_| "[]".into());
        tx.execute(
            "INSERT OR IGNORE INTO groups (repo, label, planned, complete, created_at) VALUES (?1, ?2, ?3, 1, ?4)",
            params![repo, label, planned, chrono::Utc::now().timestamp()],
        )
        .map_err(|e| self.err(e))?;
        for (_, id) in members {
            tx.execute(
                "INSERT OR REPLACE INTO group_members (session_id, repo, grp) VALUES (?1, ?2, ?3)",
                params![id, repo, label],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    pub fn delete_group(&self, repo: &str, label: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "DELETE FROM groups WHERE repo = ?1 AND label = ?2",
                params![repo, label],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The groups of `repo` (every repo with `None`), oldest first.
    pub fn groups(&self, repo: Option<&str>) -> Result<Vec<Group>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT repo, label, planned, complete, created_at FROM groups
                 WHERE ?1 IS NULL OR repo = ?1 ORDER BY created_at, rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([repo], |r| {
                let planned: String = r.get(2)?;
                Ok(Group {
                    repo: r.get(0)?,
                    label: r.get(1)?,
                    planned: serde_json::from_str(&planned).unwrap_or_default(),
                    complete: r.get::<_, i64>(3)? != 0,
                    created_at: r.get(4)?,
                    members: Vec::new(),
                })
            })
            .map_err(|e| self.err(e))?;
        let mut groups = rows
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        let mut members = self
            .conn
            .prepare_cached(
                "SELECT m.repo, m.grp, m.session_id FROM group_members m
                 JOIN sessions s ON s.id = m.session_id
                 WHERE ?1 IS NULL OR m.repo = ?1 ORDER BY s.created_at, s.rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = members
            .query_map([repo], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for row in rows {
            let (repo, grp, id) = row.map_err(|e| self.err(e))?;
            if let Some(g) = groups.iter_mut().find(|g| g.repo == repo && g.label == grp) {
                g.members.push(id);
            }
        }
        Ok(groups)
    }

    pub fn group(&self, repo: &str, label: &str) -> Result<Option<Group>, StateError> {
        Ok(self
            .groups(Some(repo))?
            .into_iter()
            .find(|g| g.label == label))
    }

    /// Session id → the label of its group, for the sessions of `repo` (all with `None`).
    pub fn session_groups(
        &self,
        repo: Option<&str>,
    ) -> Result<HashMap<String, String>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT session_id, grp FROM group_members WHERE ?1 IS NULL OR repo = ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([repo], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<HashMap<_, _>, _>>()
            .map_err(|e| self.err(e))
    }

    /// Records (or replaces) the last check of session `id`.
    pub fn set_check(&self, id: &str, check: &CheckResult) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO checks (session_id, passed, ended, duration_ms, tail, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    check.passed,
                    check.ended,
                    i64::try_from(check.duration_ms).unwrap_or(i64::MAX),
                    check.tail,
                    check.at
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn check_result(&self, id: &str) -> Result<Option<CheckResult>, StateError> {
        self.conn
            .query_row(
                "SELECT passed, ended, duration_ms, tail, at FROM checks WHERE session_id = ?1",
                [id],
                read_check,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Session id → its last check, for the sessions of `repo` (all with `None`).
    pub fn check_results(
        &self,
        repo: Option<&str>,
    ) -> Result<HashMap<String, CheckResult>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT c.passed, c.ended, c.duration_ms, c.tail, c.at, c.session_id FROM checks c
                 JOIN sessions s ON s.id = c.session_id WHERE ?1 IS NULL OR s.repo = ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([repo], |r| Ok((r.get::<_, String>(5)?, read_check(r)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<HashMap<_, _>, _>>()
            .map_err(|e| self.err(e))
    }
}

fn read_check(r: &rusqlite::Row<'_>) -> rusqlite::Result<CheckResult> {
    Ok(CheckResult {
        passed: r.get(0)?,
        ended: r.get(1)?,
        duration_ms: r.get::<_, i64>(2)?.max(0) as u64,
        tail: r.get(3)?,
        at: r.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(store: &Store, id: &str, status: &str) {
        store
            .conn
            .execute(
                "INSERT INTO sessions (id, repo, label, branch, base_commit, worktree, agent_kind, \
                 agent_argv, status, created_at, updated_at) VALUES \
                 (?1, '/r', ?1, 'b', 'c', '/w', 'claude', '[]', ?2, 1, 2)",
                [id, status],
            )
            .unwrap();
    }

    #[test]
    fn a_group_keeps_its_members_until_their_rows_go_and_then_frees_its_label() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        store
            .create_group("/r", "api", &["api-1".into(), "api-2".into()])
            .unwrap();
        session(&store, "api-1", "running");
        session(&store, "api-2", "running");
        store.add_group_member("/r", "api", "api-1").unwrap();
        store.add_group_member("/r", "api", "api-2").unwrap();
        let g = store.group("/r", "api").unwrap().unwrap();
        assert_eq!((g.complete, g.members.len()), (false, 2));
        assert!(
            store.create_group("/r", "api", &[]).is_err(),
            "an incomplete group is never replaced"
        );
        store.complete_group("/r", "api").unwrap();
        assert!(
            store.create_group("/r", "api", &[]).is_err(),
            "a group with live members keeps its label"
        );
        store.conn.execute("DELETE FROM sessions", []).unwrap();
        assert!(store
            .group("/r", "api")
            .unwrap()
            .unwrap()
            .members
            .is_empty());
        store.create_group("/r", "api", &["api-x".into()]).unwrap();
        assert_eq!(
            store.group("/r", "api").unwrap().unwrap().planned,
            ["api-x"]
        );
    }

    #[test]
    fn a_check_is_kept_per_session_and_replaced() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        session(&store, "a", "running");
        let mut check = CheckResult {
            passed: false,
            ended: "exit status 1".into(),
            duration_ms: 12,
            tail: "FAILED".into(),
            at: 5,
        };
        store.set_check("a", &check).unwrap();
        check.passed = true;
        store.set_check("a", &check).unwrap();
        assert_eq!(store.check_result("a").unwrap(), Some(check.clone()));
        assert_eq!(store.check_results(Some("/r")).unwrap()["a"], check);
    }
}
