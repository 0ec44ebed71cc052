//! The record of what sessions cost (src/cost reads the logs, this keeps what it read):
//! every conversation a session had, how far each log was read, the usage per model and
//! day, and the outcome of sessions a kill removed.

use rusqlite::{params, OptionalExtension};

use super::{now, StateError, Store};

/// Tokens of one kind each, as the API reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_creation: u64,
    pub cache_read: u64,
}

impl Tokens {
    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_creation += o.cache_creation;
        self.cache_read += o.cache_read;
    }

    pub fn total(&self) -> u64 {
        self.input + self.output + self.cache_creation + self.cache_read
    }
}

/// One log's reading position: the byte after the last whole line read, and the last
/// assistant message counted there (JSON, the reader's own) so a message written over
/// several lines counts once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogMark {
    pub offset: u64,
    pub last: String,
}

/// What one read of a log found: the usage to add (model, day, tokens) and the log's
/// new mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    pub session_id: String,
    pub path: String,
    pub mark: LogMark,
    pub usage: Vec<(String, String, Tokens)>,
}

/// Usage of one session for one model on one day (UTC, `YYYY-MM-DD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub session_id: String,
    pub model: String,
    pub day: String,
    pub tokens: Tokens,
}

/// A session whose row a kill removed: what its cost is filed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedSession {
    pub session_id: String,
    pub repo: String,
    pub label: String,
    pub outcome: String,
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Store {
    /// The orchestra home this record lies in (where the sessions' own folders are).
    pub fn home_dir(&self) -> Option<&std::path::Path> {
        self.path.parent()
    }

    /// Remembers that session `id` had conversation `uuid` (again is nothing).
    pub fn add_conversation(&self, id: &str, uuid: &str) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO conversations (session_id, uuid) VALUES (?1, ?2)",
                params![id, uuid],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every log's reading position, by path (one query for a whole refresh).
    pub fn log_marks(&self) -> Result<std::collections::HashMap<String, LogMark>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, offset, last FROM cost_logs")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    LogMark {
                        offset: to_u64(r.get(1)?),
                        last: r.get(2)?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Session id → the conversations it has had.
    pub fn all_conversations(
        &self,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT session_id, uuid FROM conversations ORDER BY session_id, uuid")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut all: std::collections::HashMap<String, Vec<String>> = Default::default();
        for row in rows {
            let (id, uuid) = row.map_err(|e| self.err(e))?;
            all.entry(id).or_default().push(uuid);
        }
        Ok(all)
    }

    /// Adds what reads of logs found to their sessions' usage and moves each log's mark,
    /// all in one transaction: a read is counted once or not at all.
    pub fn record_log_reads(&self, reads: &[LogRead]) -> Result<(), StateError> {
        if reads.is_empty() {
            return Ok(());
        }
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        for read in reads {
            for (model, day, t) in &read.usage {
                tx.execute(
                    "INSERT INTO cost_usage (session_id, model, day, input, output, cache_creation, cache_read) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     ON CONFLICT (session_id, model, day) DO UPDATE SET \
                     input = input + excluded.input, output = output + excluded.output, \
                     cache_creation = cache_creation + excluded.cache_creation, \
                     cache_read = cache_read + excluded.cache_read",
                    params![
                        read.session_id,
                        model,
                        day,
                        to_i64(t.input),
                        to_i64(t.output),
                        to_i64(t.cache_creation),
                        to_i64(t.cache_read)
                    ],
                )
                .map_err(|e| self.err(e))?;
            }
            tx.execute(
                "INSERT INTO cost_logs (path, session_id, offset, last) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (path) DO UPDATE SET offset = excluded.offset, last = excluded.last",
                params![
                    read.path,
                    read.session_id,
                    to_i64(read.mark.offset),
                    read.mark.last
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Every usage row (per session, model and day) recorded.
    pub fn usage_rows(&self) -> Result<Vec<UsageRow>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT session_id, model, day, input, output, cache_creation, cache_read \
                 FROM cost_usage ORDER BY session_id, day, model",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(UsageRow {
                    session_id: r.get(0)?,
                    model: r.get(1)?,
                    day: r.get(2)?,
                    tokens: Tokens {
                        input: to_u64(r.get(3)?),
                        output: to_u64(r.get(4)?),
                        cache_creation: to_u64(r.get(5)?),
                        cache_read: to_u64(r.get(6)?),
                    },
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Files the cost of a session whose row is about to go under `outcome`.
    pub fn record_cost_outcome(
        &self,
        id: &str,
        repo: &str,
        label: &str,
        outcome: &str,
    ) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO cost_ended (session_id, repo, label, outcome, ended_at) VALUES (?1, ?2, ?3, ?4, ?5) \
                 ON CONFLICT (session_id) DO UPDATE SET outcome = excluded.outcome, ended_at = excluded.ended_at",
                params![id, repo, label, outcome, now()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The budget mark (percent: 0, 80, 100) last notified for session `id` under
    /// `budget` dollars; 0 under another budget than the one it was notified for.
    pub fn budget_level(&self, id: &str, budget: f64) -> Result<u8, StateError> {
        let row: Option<(f64, i64)> = self
            .conn
            .query_row(
                "SELECT budget, level FROM cost_budget WHERE session_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(match row {
            Some((b, level)) if b == budget => u8::try_from(level).unwrap_or(0),
            _ => 0,
        })
    }

    pub fn set_budget_level(&self, id: &str, budget: f64, level: u8) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO cost_budget (session_id, budget, level) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (session_id) DO UPDATE SET budget = excluded.budget, level = excluded.level",
                params![id, budget, level],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The sessions a kill removed, with their outcome.
    pub fn ended_sessions(&self) -> Result<Vec<EndedSession>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT session_id, repo, label, outcome FROM cost_ended ORDER BY ended_at",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(EndedSession {
                    session_id: r.get(0)?,
                    repo: r.get(1)?,
                    label: r.get(2)?,
                    outcome: r.get(3)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_adds_to_the_usage_and_moves_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let t = Tokens {
            input: 10,
            output: 5,
            cache_creation: 2,
            cache_read: 1,
        };
        let mark = LogMark {
            offset: 100,
            last: "x".into(),
        };
        let read = LogRead {
            session_id: "s1".into(),
            path: "/p".into(),
            mark: mark.clone(),
            usage: vec![("m".to_string(), "2026-11-30".to_string(), t)],
        };
        store.record_log_reads(&[read.clone(), read]).unwrap();
        assert_eq!(store.log_marks().unwrap()["/p"], mark);
        assert!(!store.log_marks().unwrap().contains_key("/q"));
        let rows = store.usage_rows().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].tokens.input, 20);
        assert_eq!(rows[0].tokens.cache_read, 2);
        store.add_conversation("s1", "u1").unwrap();
        store.add_conversation("s1", "u1").unwrap();
        assert_eq!(
            store.all_conversations().unwrap()["s1"],
            vec!["u1".to_string()]
        );
    }
}
