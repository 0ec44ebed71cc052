//! Schema migrations, one per `PRAGMA user_version` step. Append; never edit a shipped step.

use std::path::Path;

use rusqlite::Connection;

use super::StateError;

const MIGRATIONS: &[&str] = &[
    // 1: sessions, dependencies, events.
    "CREATE TABLE sessions (
        id            TEXT PRIMARY KEY,
        repo          TEXT NOT NULL,
        label         TEXT NOT NULL,
        branch        TEXT NOT NULL,
        base_commit   TEXT NOT NULL,
        base_branch   TEXT,
        worktree      TEXT NOT NULL,
        host          TEXT,
        tmux_socket   TEXT,
        tmux_session  TEXT,
        window_id     TEXT,
        pane_id       TEXT,
        agent_kind    TEXT NOT NULL,
        agent_argv    TEXT NOT NULL,
        agent_uuid    TEXT,
        port          INTEGER,
        prompt        TEXT,
        status        TEXT NOT NULL CHECK (status IN ('blocked','running','stalled','done','merged','dead')),
        state         TEXT NOT NULL DEFAULT 'unknown'
                      CHECK (state IN ('busy','waiting','idle','error','exited','unknown')),
        retry_count   INTEGER NOT NULL DEFAULT 0,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL
    );
    -- A label names one live session per repo; merged ones are history and free the label.
    CREATE UNIQUE INDEX sessions_live_label ON sessions(repo, label) WHERE status <> 'merged';
    CREATE TABLE dependencies (
        dependent   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        upstream    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        artifact    TEXT NOT NULL,
        notified_at INTEGER,
        PRIMARY KEY (dependent, upstream, artifact)
    );
    CREATE TABLE events (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        label      TEXT,
        repo       TEXT,
        kind       TEXT NOT NULL,
        old        TEXT,
        new        TEXT,
        detail     TEXT
    );
    CREATE INDEX events_session ON events(session_id, seq);",
    // 2: when the state was last said and by whom (hook or screen): the newest word wins.
    "ALTER TABLE sessions ADD COLUMN state_at INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN state_source TEXT NOT NULL DEFAULT '';",
    // 3: the orchestrator agent of each repo.
    "CREATE TABLE orchestrators (
        repo        TEXT PRIMARY KEY,
        tmux_socket TEXT,
        window_id   TEXT,
        pane_id     TEXT NOT NULL,
        agent_uuid  TEXT,
        launched    INTEGER NOT NULL,
        created_at  INTEGER NOT NULL
    );",
    // 4: sessions described by an orchestra.toml (no branch, no worktree of ours), and
    // whether `up` created the tmux session it runs in (only then does `down` end it).
    "ALTER TABLE sessions ADD COLUMN manifest TEXT;
    ALTER TABLE sessions ADD COLUMN owns_tmux_session INTEGER NOT NULL DEFAULT 0;",
    // 5: an edge outlives a killed upstream (no cascade on that side), remembering its
    // label: the dependent stays blocked and says why, instead of every edge it had
    // vanishing and \"all ready\" coming true of nothing.
    "CREATE TABLE dependencies_v5 (
        dependent      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        upstream       TEXT NOT NULL,
        upstream_label TEXT NOT NULL DEFAULT '',
        artifact       TEXT NOT NULL,
        notified_at    INTEGER,
        PRIMARY KEY (dependent, upstream, artifact)
    );
    INSERT INTO dependencies_v5 (dependent, upstream, upstream_label, artifact, notified_at)
        SELECT d.dependent, d.upstream, COALESCE(s.label, ''), d.artifact, d.notified_at
        FROM dependencies d LEFT JOIN sessions s ON s.id = d.upstream;
    DROP TABLE dependencies;
    ALTER TABLE dependencies_v5 RENAME TO dependencies;",
    // 6: the conflict radar. Merge results by what was merged (a side is a commit, or a
    // commit and the tree of its uncommitted work): an unchanged pair is never merged
    // twice. And the pairs that conflict now — two live sessions, or a session and its
    // target branch — with when they began: a pair is announced once, when it appears.
    "CREATE TABLE radar_merges (
        repo   TEXT NOT NULL,
        ours   TEXT NOT NULL,
        theirs TEXT NOT NULL,
        paths  TEXT NOT NULL,
        at     INTEGER NOT NULL,
        PRIMARY KEY (repo, ours, theirs)
    );
    CREATE TABLE radar_conflicts (
        repo        TEXT NOT NULL,
        session     TEXT NOT NULL,
        other       TEXT NOT NULL,
        target      INTEGER NOT NULL,
        paths       TEXT NOT NULL,
        uncommitted INTEGER NOT NULL,
        since       INTEGER NOT NULL,
        PRIMARY KEY (repo, session, other, target)
    );",
    // 7: two more statuses, `setup` (the worktree's setup command runs in the window) and
    // `setup-failed`. SQLite cannot change a CHECK in place: the table is rebuilt. Its
    // drop would cascade to the dependency edges (foreign keys are on), so they are kept
    // aside and put back.
    "CREATE TABLE sessions_v7 (
        id            TEXT PRIMARY KEY,
        repo          TEXT NOT NULL,
        label         TEXT NOT NULL,
        branch        TEXT NOT NULL,
        base_commit   TEXT NOT NULL,
        base_branch   TEXT,
        worktree      TEXT NOT NULL,
        host          TEXT,
        tmux_socket   TEXT,
        tmux_session  TEXT,
        window_id     TEXT,
        pane_id       TEXT,
        agent_kind    TEXT NOT NULL,
        agent_argv    TEXT NOT NULL,
        agent_uuid    TEXT,
        port          INTEGER,
        prompt        TEXT,
        status        TEXT NOT NULL CHECK (status IN ('blocked','setup','setup-failed','running','stalled','done','merged','dead')),
        state         TEXT NOT NULL DEFAULT 'unknown'
                      CHECK (state IN ('busy','waiting','idle','error','exited','unknown')),
        retry_count   INTEGER NOT NULL DEFAULT 0,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        state_at      INTEGER NOT NULL DEFAULT 0,
        state_source  TEXT NOT NULL DEFAULT '',
        manifest      TEXT,
        owns_tmux_session INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO sessions_v7 (id, repo, label, branch, base_commit, base_branch, worktree, host,
        tmux_socket, tmux_session, window_id, pane_id, agent_kind, agent_argv, agent_uuid, port,
        prompt, status, state, retry_count, created_at, updated_at, state_at, state_source,
        manifest, owns_tmux_session)
    SELECT id, repo, label, branch, base_commit, base_branch, worktree, host,
        tmux_socket, tmux_session, window_id, pane_id, agent_kind, agent_argv, agent_uuid, port,
        prompt, status, state, retry_count, created_at, updated_at, state_at, state_source,
        manifest, owns_tmux_session FROM sessions;
    CREATE TEMP TABLE dependencies_kept AS SELECT * FROM dependencies;
    DROP TABLE sessions;
    ALTER TABLE sessions_v7 RENAME TO sessions;
    CREATE UNIQUE INDEX sessions_live_label ON sessions(repo, label) WHERE status <> 'merged';
    DELETE FROM dependencies;
    INSERT INTO dependencies (dependent, upstream, upstream_label, artifact, notified_at)
        SELECT dependent, upstream, upstream_label, artifact, notified_at FROM dependencies_kept;
    DROP TABLE dependencies_kept;",
    // 8: the tracker's task a session works on (`orchestra tasks pick --dispatch`), so a
    // merge can close it.
    "ALTER TABLE sessions ADD COLUMN task TEXT;",
    // 9: what sessions cost (src/cost): every conversation a session had (a `/clear` or
    // resume adds one), how far each log was read, the usage summed per model and day,
    // the outcome of sessions whose row a kill removed (their cost stays history), and
    // the budget mark (80, 100 %) last notified per session.
    "CREATE TABLE conversations (
        session_id TEXT NOT NULL,
        uuid       TEXT NOT NULL,
        PRIMARY KEY (session_id, uuid)
    );
    INSERT OR IGNORE INTO conversations (session_id, uuid)
        SELECT id, agent_uuid FROM sessions WHERE agent_uuid IS NOT NULL AND agent_uuid <> '';
    INSERT OR IGNORE INTO conversations (session_id, uuid)
        SELECT session_id, old FROM events WHERE kind = 'conversation' AND old IS NOT NULL AND old <> '';
    CREATE TABLE cost_logs (
        path       TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        offset     INTEGER NOT NULL,
        last       TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE cost_usage (
        session_id     TEXT NOT NULL,
        model          TEXT NOT NULL,
        day            TEXT NOT NULL,
        input          INTEGER NOT NULL DEFAULT 0,
        output         INTEGER NOT NULL DEFAULT 0,
        cache_creation INTEGER NOT NULL DEFAULT 0,
        cache_read     INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (session_id, model, day)
    );
    CREATE TABLE cost_ended (
        session_id TEXT PRIMARY KEY,
        repo       TEXT NOT NULL,
        label      TEXT NOT NULL,
        outcome    TEXT NOT NULL,
        ended_at   INTEGER NOT NULL
    );
    CREATE TABLE cost_budget (
        session_id TEXT PRIMARY KEY,
        budget     REAL NOT NULL,
        level      INTEGER NOT NULL
    );",
    // 10: when this record began. A session whose branch is older had its row in a record
    // that was lost, not a dispatch that died before its row: doctor adopts it. A record
    // that held something already began before anyone can tell (0).
    "CREATE TABLE record (began_at INTEGER NOT NULL);
    INSERT INTO record (began_at) SELECT CASE
        WHEN EXISTS (SELECT 1 FROM sessions) OR EXISTS (SELECT 1 FROM events) THEN 0
        ELSE CAST(strftime('%s', 'now') AS INTEGER) END;",
    // 11: the pull request `orchestra pr` opened for a session's branch (its forge's
    // number and address), so a second run updates it and `list` shows it.
    "CREATE TABLE pull_requests (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        number     INTEGER NOT NULL,
        url        TEXT NOT NULL,
        at         INTEGER NOT NULL
    );",
    // 12: a pull request's state as the background refresh last read it from its forge
    // (NULL: never read), and the ETags of the answers it was read from, so an unchanged
    // poll is a 304 that costs nothing against the forge's rate limit.
    "ALTER TABLE pull_requests ADD COLUMN state TEXT;
    ALTER TABLE pull_requests ADD COLUMN checks TEXT;
    ALTER TABLE pull_requests ADD COLUMN failing_check TEXT;
    ALTER TABLE pull_requests ADD COLUMN failing_check_id INTEGER;
    ALTER TABLE pull_requests ADD COLUMN review TEXT;
    ALTER TABLE pull_requests ADD COLUMN comments INTEGER;
    ALTER TABLE pull_requests ADD COLUMN head_sha TEXT;
    ALTER TABLE pull_requests ADD COLUMN updated TEXT;
    CREATE TABLE forge_etags (
        url  TEXT PRIMARY KEY,
        etag TEXT NOT NULL,
        at   INTEGER NOT NULL
    );",
    // 13: who asked for a session: the orchestrator (or session) whose `orchestra mcp`
    // server dispatched it; NULL for one a person dispatched.
    "ALTER TABLE sessions ADD COLUMN requested_by TEXT;",
    // 14: groups of sessions given one
    // task (`dispatch --agents/--count`, `fork`). `planned` names the labels a fan-out
    // meant to make, `complete` says it made them all: an incomplete group doctor --fix
    // finds (its maker killed part-way) is undone whole. A member row goes with its
    // session. `checks`: the last `orchestra check` of a session.
    "CREATE TABLE groups (
        repo       TEXT NOT NULL,
        label      TEXT NOT NULL,
        planned    TEXT NOT NULL,
        complete   INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (repo, label)
    );
    CREATE TABLE group_members (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        repo       TEXT NOT NULL,
        grp        TEXT NOT NULL,
        FOREIGN KEY (repo, grp) REFERENCES groups(repo, label) ON DELETE CASCADE
    );
    CREATE TABLE checks (
        session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        passed      INTEGER NOT NULL,
        ended       TEXT NOT NULL,
        duration_ms INTEGER NOT NULL,
        tail        TEXT NOT NULL,
        at          INTEGER NOT NULL
    );",
    // 15: a session's agent in a
    // sandbox (its network, `on` or `off`; NULL: none) and in its no-ask mode.
    "ALTER TABLE sessions ADD COLUMN sandbox TEXT;
    ALTER TABLE sessions ADD COLUMN yolo INTEGER NOT NULL DEFAULT 0;",
];

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StateError> {
    let sqlite = |source| StateError::sqlite(path, source);
    let known = MIGRATIONS.len() as i64;
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sqlite)?;
    if found == known {
        return Ok(());
    }
    if found > known {
        return Err(StateError::TooNew {
            path: path.to_path_buf(),
            found,
            known,
        });
    }
    // IMMEDIATE: two first-use processes must not both run a step.
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sqlite)?;
    let current: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sqlite)?;
    for (step, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.execute_batch(sql).map_err(sqlite)?;
        tx.pragma_update(None, "user_version", step as i64 + 1)
            .map_err(sqlite)?;
    }
    tx.commit().map_err(sqlite)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database made by an orchestra that knew migrations 1..=5, with a session and an
    /// edge: step 6 keeps both and takes the new statuses.
    #[test]
    fn the_status_rebuild_keeps_rows_and_edges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let mut conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        for (step, sql) in MIGRATIONS.iter().take(5).enumerate() {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", step as i64 + 1)
                .unwrap();
        }
        for (id, label) in [("a1", "up"), ("b2", "down")] {
            conn.execute(
                "INSERT INTO sessions (id, repo, label, branch, base_commit, worktree, agent_kind, \
                 agent_argv, status, created_at, updated_at, manifest) VALUES \
                 (?1, '/r', ?2, 'b', 'c', '/w', 'generic', '[]', 'blocked', 1, 2, 'm.toml')",
                [id, label],
            )
            .unwrap();
        }
        conn.execute(
            "INSERT INTO dependencies (dependent, upstream, upstream_label, artifact) VALUES ('b2', 'a1', 'up', 'x')",
            [],
        )
        .unwrap();
        migrate(&mut conn, &path).unwrap();
        let edges: i64 = conn
            .query_row("SELECT count(*) FROM dependencies", [], |r| r.get(0))
            .unwrap();
        assert_eq!(edges, 1, "the edge survived the rebuild");
        let manifest: String = conn
            .query_row("SELECT manifest FROM sessions WHERE id = 'a1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(manifest, "m.toml");
        for status in ["setup", "setup-failed"] {
            conn.execute("UPDATE sessions SET status = ?1 WHERE id = 'a1'", [status])
                .unwrap();
        }
        assert!(conn
            .execute("UPDATE sessions SET status = 'bogus' WHERE id = 'a1'", [])
            .is_err());
        // The label index came back: a second live `down` is refused.
        assert!(conn
            .execute(
                "INSERT INTO sessions (id, repo, label, branch, base_commit, worktree, agent_kind, \
                 agent_argv, status, created_at, updated_at) VALUES \
                 ('c3', '/r', 'down', 'b', 'c', '/w', 'generic', '[]', 'running', 1, 2)",
                [],
            )
            .is_err());
        // Foreign keys still hold: removing the dependent takes its edge.
        conn.execute("DELETE FROM sessions WHERE id = 'b2'", [])
            .unwrap();
        let edges: i64 = conn
            .query_row("SELECT count(*) FROM dependencies", [], |r| r.get(0))
            .unwrap();
        assert_eq!(edges, 0);
    }
}
