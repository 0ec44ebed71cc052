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
];

pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StateError> {
    let sqlite = |source| StateError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
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
