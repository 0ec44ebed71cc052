//! The conflict radar's record: merge results by the pair of sides merged, and the pairs
//! that conflict now.

use std::collections::{HashMap, HashSet};

use rusqlite::params;
use serde::Serialize;

use super::{now, StateError, Store};

/// A merge the radar checked, by the keys of its two sides (ordered, so either way round
/// is the same merge).
pub type MergeKey = (String, String);

/// Two pieces of work that conflict: a session and another live session of its repo, or
/// a session and its target branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub repo: String,
    /// The session's id.
    pub session: String,
    /// The other session's id, or the target branch's name.
    pub other: String,
    /// Whether `other` is the session's target branch.
    pub target: bool,
    /// The paths that conflict.
    pub paths: Vec<String>,
    /// Whether uncommitted work takes part (on either side).
    pub uncommitted: bool,
    /// When the pair began to conflict (seconds since the epoch).
    pub since: i64,
}

impl Conflict {
    fn pair(&self) -> (&str, &str, bool) {
        (&self.session, &self.other, self.target)
    }

    /// Whether the pair involves session `id` (on either side).
    pub fn involves(&self, id: &str) -> bool {
        self.session == id || (!self.target && self.other == id)
    }

    /// The name of the other side: a session's label (from `by_id`), or the target branch.
    pub fn other_name(&self, by_id: &HashMap<&str, &super::Session>) -> String {
        if self.target {
            return self.other.clone();
        }
        by_id
            .get(self.other.as_str())
            .map_or_else(|| self.other.clone(), |s| s.label.clone())
    }
}

impl Store {
    /// Every merge result recorded for `repo`: key → conflicting paths (empty: clean).
    pub fn merge_results(&self, repo: &str) -> Result<HashMap<MergeKey, Vec<String>>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT ours, theirs, paths FROM radar_merges WHERE repo = ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![repo], |r| {
                Ok((
                    (r.get::<_, String>(0)?, r.get::<_, String>(1)?),
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for row in rows {
            let (key, paths) = row.map_err(|e| self.err(e))?;
            out.insert(key, serde_json::from_str(&paths).unwrap_or_default());
        }
        Ok(out)
    }

    /// Records the merges of `repo` just checked, and forgets those in `stale` (pairs
    /// whose sides have moved on): the table holds about one row per live pair.
    pub fn save_merge_results(
        &self,
        repo: &str,
        fresh: &[(MergeKey, Vec<String>)],
        stale: &[MergeKey],
    ) -> Result<(), StateError> {
        if fresh.is_empty() && stale.is_empty() {
            return Ok(());
        }
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO radar_merges (repo, ours, theirs, paths, at) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| self.err(e))?;
            let at = now();
            for ((ours, theirs), paths) in fresh {
                let paths = serde_json::to_string(paths).unwrap_or_else(|_| "[]".into());
                insert
                    .execute(params![repo, ours, theirs, paths, at])
                    .map_err(|e| self.err(e))?;
            }
            let mut delete = tx
                .prepare_cached(
                    "DELETE FROM radar_merges WHERE repo = ?1 AND ours = ?2 AND theirs = ?3",
                )
                .map_err(|e| self.err(e))?;
            for (ours, theirs) in stale {
                delete
                    .execute(params![repo, ours, theirs])
                    .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Makes `found` the conflicts of `repo`: pairs no longer found go, pairs still found
    /// keep their `since`, and the pairs new since the last call are returned. Check and
    /// write are one transaction, so two radars at once announce a pair once.
    pub fn replace_conflicts(
        &self,
        repo: &str,
        found: &[Conflict],
    ) -> Result<Vec<Conflict>, StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        // Taking the write lock first makes the read below current.
        tx.execute(
            "UPDATE radar_conflicts SET repo = repo WHERE repo = ?1",
            params![repo],
        )
        .map_err(|e| self.err(e))?;
        let before = self.conflicts_in(&tx, Some(repo), false)?;
        let found_pairs: HashSet<(&str, &str, bool)> = found.iter().map(Conflict::pair).collect();
        let before_pairs: HashMap<(&str, &str, bool), &Conflict> =
            before.iter().map(|c| (c.pair(), c)).collect();
        let mut new = Vec::new();
        for gone in before.iter().filter(|c| !found_pairs.contains(&c.pair())) {
            tx.execute(
                "DELETE FROM radar_conflicts WHERE repo = ?1 AND session = ?2 AND other = ?3 AND target = ?4",
                params![repo, gone.session, gone.other, gone.target],
            )
            .map_err(|e| self.err(e))?;
        }
        for c in found {
            let since = match before_pairs.get(&c.pair()) {
                Some(old) if old.paths == c.paths && old.uncommitted == c.uncommitted => continue,
                Some(old) => old.since,
                None => {
                    new.push(c.clone());
                    c.since
                }
            };
            let paths = serde_json::to_string(&c.paths).unwrap_or_else(|_| "[]".into());
            tx.execute(
                "INSERT OR REPLACE INTO radar_conflicts \
                 (repo, session, other, target, paths, uncommitted, since) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    repo,
                    c.session,
                    c.other,
                    c.target,
                    paths,
                    c.uncommitted,
                    since
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(new)
    }

    /// Drops the conflicts and merge results of every repo not in `keep` (its last live
    /// session is gone).
    pub fn forget_radar_except(&self, keep: &[String]) -> Result<(), StateError> {
        let keep = serde_json::to_string(keep).unwrap_or_else(|_| "[]".into());
        for table in ["radar_conflicts", "radar_merges"] {
            self.conn
                .execute(
                    &format!(
                        "DELETE FROM {table} WHERE repo NOT IN (SELECT value FROM json_each(?1))"
                    ),
                    params![keep],
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// The pairs that conflict now (of one repo, when given), between sessions that are
    /// still live, oldest first.
    pub fn conflicts(&self, repo: Option<&str>) -> Result<Vec<Conflict>, StateError> {
        self.conflicts_in(&self.conn, repo, true)
    }

    fn conflicts_in(
        &self,
        conn: &rusqlite::Connection,
        repo: Option<&str>,
        live_only: bool,
    ) -> Result<Vec<Conflict>, StateError> {
        let live = "EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.session AND s.status <> 'merged') \
             AND (c.target OR EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.other AND s.status <> 'merged'))";
        let sql = format!(
            "SELECT repo, session, other, target, paths, uncommitted, since FROM radar_conflicts c \
             WHERE (?1 IS NULL OR repo = ?1) AND ({}) ORDER BY since, session, other",
            if live_only { live } else { "1" }
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![repo], |r| {
                Ok(Conflict {
                    repo: r.get(0)?,
                    session: r.get(1)?,
                    other: r.get(2)?,
                    target: r.get(3)?,
                    paths: serde_json::from_str(&r.get::<_, String>(4)?).unwrap_or_default(),
                    uncommitted: r.get(5)?,
                    since: r.get(6)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(session: &str, other: &str, paths: &[&str], since: i64) -> Conflict {
        Conflict {
            repo: "/r".into(),
            session: session.into(),
            other: other.into(),
            target: false,
            paths: paths.iter().map(std::string::ToString::to_string).collect(),
            uncommitted: false,
            since,
        }
    }

    #[test]
    fn a_pair_is_new_once_until_it_clears() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        let a = conflict("a", "b", &["x.rs"], 100);
        assert_eq!(
            store
                .replace_conflicts("/r", std::slice::from_ref(&a))
                .unwrap(),
            [a]
        );
        // Found again, even with other paths: not new, and it keeps its start.
        let moved = conflict("a", "b", &["x.rs", "y.rs"], 200);
        assert!(store.replace_conflicts("/r", &[moved]).unwrap().is_empty());
        let rows = store.conflicts_in(&store.conn, Some("/r"), false).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].since, 100);
        assert_eq!(rows[0].paths, ["x.rs", "y.rs"]);
        // Cleared, then back: new again.
        assert!(store.replace_conflicts("/r", &[]).unwrap().is_empty());
        let back = conflict("a", "b", &["x.rs"], 300);
        assert_eq!(
            store
                .replace_conflicts("/r", std::slice::from_ref(&back))
                .unwrap(),
            [back]
        );
    }

    #[test]
    fn merge_results_are_kept_by_repo_and_stale_ones_go() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        let k1 = ("a".to_string(), "b".to_string());
        let k2 = ("a".to_string(), "c".to_string());
        store
            .save_merge_results(
                "/r",
                &[(k1.clone(), vec!["x".into()]), (k2.clone(), vec![])],
                &[],
            )
            .unwrap();
        assert_eq!(store.merge_results("/r").unwrap().len(), 2);
        assert!(store.merge_results("/other").unwrap().is_empty());
        store.save_merge_results("/r", &[], &[k2]).unwrap();
        let left = store.merge_results("/r").unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[&k1], ["x"]);
        store.forget_radar_except(&[]).unwrap();
        assert!(store.merge_results("/r").unwrap().is_empty());
    }
}
