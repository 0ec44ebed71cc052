//! opencode's own database (`opencode.db`, SQLite, in its data folder), read for what its
//! sessions cost: opened read-only, never written, and waited on while opencode writes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long a read waits for opencode's own write to end.
const PATIENCE: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
#[error("opencode's database {path}: {source}")]
pub struct OpencodeDbError {
    pub path: PathBuf,
    pub source: rusqlite::Error,
}

/// opencode's database: `$XDG_DATA_HOME/opencode/opencode.db`, else
/// `~/.local/share/opencode/opencode.db`.
pub fn opencode_db() -> Option<PathBuf> {
    let data = match crate::paths::non_empty_env("XDG_DATA_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => crate::paths::user_home().ok()?.join(".local/share"),
    };
    Some(data.join("opencode").join("opencode.db"))
}

/// The messages of opencode session `session` after message `after` (its ids grow with
/// time), oldest first: (id, its JSON). A database that is not there has none.
pub fn messages_after(
    db: &Path,
    session: &str,
    after: &str,
) -> Result<Vec<(String, String)>, OpencodeDbError> {
    if !db.is_file() {
        return Ok(Vec::new());
    }
    let fail = |source| OpencodeDbError {
        path: db.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(fail)?;
    conn.busy_timeout(PATIENCE).map_err(fail)?;
    let mut statement = conn
        .prepare("SELECT id, data FROM message WHERE session_id = ?1 AND id > ?2 ORDER BY id")
        .map_err(fail)?;
    let rows = statement
        .query_map([session, after], |row| Ok((row.get(0)?, row.get(1)?)))
        .map_err(fail)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database of opencode 1.18.33's `message` table (its schema as it made it): the
    /// session's messages after the one named, in order, and nothing written.
    #[test]
    fn messages_of_a_session_after_a_mark_are_read_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE `message` (
              `id` text PRIMARY KEY,
              `session_id` text NOT NULL,
              `time_created` integer NOT NULL,
              `time_updated` integer NOT NULL,
              `data` text NOT NULL);
             INSERT INTO message VALUES ('msg_2', 'ses_a', 2, 2, '{\"n\":2}');
             INSERT INTO message VALUES ('msg_1', 'ses_a', 1, 1, '{\"n\":1}');
             INSERT INTO message VALUES ('msg_3', 'ses_b', 3, 3, '{\"n\":3}');",
        )
        .unwrap();
        drop(conn);
        let before = std::fs::read(&db).unwrap();
        let all = messages_after(&db, "ses_a", "").unwrap();
        assert_eq!(
            all,
            [
                ("msg_1".to_string(), "{\"n\":1}".to_string()),
                ("msg_2".to_string(), "{\"n\":2}".to_string())
            ]
        );
        assert_eq!(messages_after(&db, "ses_a", "msg_1").unwrap().len(), 1);
        assert!(messages_after(&db, "ses_a", "msg_2").unwrap().is_empty());
        assert_eq!(std::fs::read(&db).unwrap(), before, "read-only");
        assert!(messages_after(&dir.path().join("none.db"), "ses_a", "")
            .unwrap()
            .is_empty());
        std::fs::write(dir.path().join("bad.db"), "not a database").unwrap();
        assert!(messages_after(&dir.path().join("bad.db"), "ses_a", "").is_err());
    }
}
