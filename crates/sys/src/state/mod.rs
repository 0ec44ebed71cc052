//! The record: the ONLY module that opens SQLite. Sessions, dependencies and the event log
//! live in `$ORCHESTRA_HOME/state.db`, created on first use and migrated by
//! `PRAGMA user_version`.

mod cost;
mod deps;
mod groups;
mod pulls;
mod radar;
mod requested;
mod schema;
mod tasks;

pub use cost::{EndedSession, LogMark, LogRead, Tokens, UsageRow};
pub use deps::{Edge, EdgeRefusal};
pub use groups::{CheckResult, Group};
pub use pulls::PullRequest;
pub use radar::{Conflict, MergeKey};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::tmux::{PaneId, TmuxError, WindowId};
use orchestra_model::sandbox::Network;
use orchestra_model::AgentKind;
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot create the state folder or database in {path}: {source}")]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("state database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("state database {path} is damaged ({source}): `orchestra doctor --fix` moves it aside and rebuilds the record from tmux and git")]
    Corrupt {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("state database {path} was written by a newer orchestra (schema {found}, this one knows {known})")]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("a session labelled {label:?} already exists in {repo}")]
    LabelTaken { repo: String, label: String },
    #[error("cannot move {path} aside: {source}")]
    SetAside {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("ORCHESTRA_EVENTS_RETENTION={0:?} is not a duration: use e.g. 30d, 12h, 90m or 600 (seconds), or off to keep every event")]
    BadRetention(String),
}

impl StateError {
    /// Whether another process held the write lock past this one's patience.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            StateError::Sqlite { source, .. } if matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        )
    }

    /// SQLite's `source` about the database at `path`, told as damage when it says the
    /// file is no database or a damaged one: no retry mends that, only moving it aside.
    fn sqlite(path: &Path, source: rusqlite::Error) -> StateError {
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
                StateError::Corrupt { path, source }
            }
            _ => StateError::Sqlite { path, source },
        }
    }
}

/// Lifecycle of a session; never mixed with [`AgentState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Blocked,
    /// The worktree's setup command runs in the session's window; the agent starts after.
    Setup,
    /// The setup failed or timed out: the window keeps its output, the agent never started.
    #[serde(rename = "setup-failed")]
    SetupFailed,
    Running,
    Stalled,
    Done,
    Merged,
    Dead,
}

/// What the agent is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Busy,
    Waiting,
    Idle,
    Error,
    Exited,
    Unknown,
}

macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $text),+ }
            }
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($ty::$variant),)+ _ => None }
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum!(Status { Blocked => "blocked", Setup => "setup", SetupFailed => "setup-failed", Running => "running", Stalled => "stalled", Done => "done", Merged => "merged", Dead => "dead" });
text_enum!(AgentState { Busy => "busy", Waiting => "waiting", Idle => "idle", Error => "error", Exited => "exited", Unknown => "unknown" });
text_enum!(StateSource { Nobody => "", Hook => "hook", Screen => "screen", Approve => "approve", Activity => "activity", Tmux => "tmux" });
text_enum!(TransitionKind { State => "state", Status => "status" });

/// Who said a session's state last (the newest word wins, and a few words outrank the
/// screen for a while). Stored and shown as its text; "" is nobody yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StateSource {
    #[default]
    Nobody,
    /// The agent's own hook (or `event --settle` reading the pane on the hook's behalf).
    Hook,
    /// The screen rules, reading the pane on a refresh.
    Screen,
    /// orchestra's own key press answering a menu: busy as of that press.
    Approve,
    /// Output activity, for an agent whose screens no rule reads.
    Activity,
    /// tmux itself: the pane is gone, or its program ended or gave way to a shell.
    Tmux,
}

impl StateSource {
    /// Whether this word outranks the screen for a short grace: screens lag behind a
    /// hook's word and behind orchestra's own key press.
    pub fn outranks_screen(self) -> bool {
        matches!(self, StateSource::Hook | StateSource::Approve)
    }
}

impl Serialize for StateSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StateSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StateSource, D::Error> {
        let text = String::deserialize(d)?;
        StateSource::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown state source {text:?}")))
    }
}

/// Which of a session's two words changed: its agent's state or its lifecycle status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransitionKind {
    State,
    Status,
}

/// One session as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub repo: String,
    pub label: String,
    pub branch: String,
    pub base_commit: String,
    /// The branch checked out in the repo's main worktree at dispatch: what "merged" means.
    pub base_branch: Option<String>,
    pub worktree: String,
    /// `None` for this machine.
    pub host: Option<String>,
    pub tmux_socket: Option<String>,
    pub tmux_session: Option<String>,
    pub window: Option<WindowId>,
    pub pane: Option<PaneId>,
    pub agent_kind: AgentKind,
    pub agent_argv: Vec<String>,
    pub agent_uuid: Option<String>,
    pub port: Option<u16>,
    pub prompt: Option<String>,
    pub status: Status,
    pub state: AgentState,
    pub retry_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// When the state was last said, in microseconds since the epoch.
    pub state_at: i64,
    /// Who said it.
    #[serde(default)]
    pub state_source: StateSource,
    /// The orchestra.toml that describes this session; `None` for a dispatched one. A
    /// manifest session works in a plain folder: no branch, no worktree of ours.
    #[serde(default)]
    pub manifest: Option<String>,
    /// Whether `up` created the tmux session (then `down` ends it).
    #[serde(default)]
    pub owns_tmux_session: bool,
    /// Its agent's sandbox (its network), `None` for an agent that runs as the person.
    #[serde(default, with = "network_word")]
    pub sandbox: Option<Network>,
    /// Whether its agent runs in its no-ask mode (`--yolo`).
    #[serde(default)]
    pub yolo: bool,
}

/// A sandbox's network as its word in the record and in JSON (`"on"`, `"off"`, its hosts
/// joined by commas, null).
mod network_word {
    use super::Network;

    pub(super) fn serialize<S: serde::Serializer>(
        n: &Option<Network>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match n {
            Some(n) => s.serialize_str(&n.word()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Network>, D::Error> {
        let word: Option<String> = serde::Deserialize::deserialize(d)?;
        Ok(word.as_deref().and_then(Network::parse))
    }
}

impl Status {
    /// `setup` or `setup-failed`: the window runs (or ran) the worktree's setup, and no
    /// agent has started yet.
    pub fn in_setup(self) -> bool {
        matches!(self, Status::Setup | Status::SetupFailed)
    }
}

impl Session {
    /// What the window's badge says: the setup while there is one, `blocked` while the
    /// agent waits for its upstreams (it has no state yet), else the agent's state.
    pub fn badge(&self) -> &'static str {
        if self.status.in_setup() || self.status == Status::Blocked {
            self.status.as_str()
        } else {
            self.state.as_str()
        }
    }

    /// Whether this session comes from an orchestra.toml rather than `dispatch`.
    pub fn is_manifest(&self) -> bool {
        self.manifest.is_some()
    }
}

/// The orchestrator agent of a repo: launched by orchestra, or an existing pane promoted.
#[derive(Debug, Clone)]
pub struct Orchestrator {
    pub repo: String,
    pub tmux_socket: Option<String>,
    pub window: Option<WindowId>,
    pub pane: PaneId,
    /// Its conversation, for `launch --resume`.
    pub agent_uuid: Option<String>,
    /// False for a promoted pane (its prompt was not applied).
    pub launched: bool,
}

/// A recorded change of state or status.
#[derive(Debug, Clone)]
pub struct Transition {
    pub session: Session,
    pub kind: TransitionKind,
    pub old: String,
    pub new: String,
    /// The event's `seq`: names this very change (a notification's actions act only while
    /// the session's newest change is still the one they were offered for).
    pub event: i64,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    retention: Retention,
}

/// What the record keeps for how long.
struct Retention {
    /// Events older than this many seconds are pruned; `None` keeps them all.
    keep: Option<i64>,
    /// Where briefings are kept: they go with the events of their time.
    briefings: PathBuf,
}

/// How long events are kept unless `ORCHESTRA_EVENTS_RETENTION` says otherwise.
pub const DEFAULT_EVENTS_RETENTION_SECS: i64 = 30 * 86_400;

/// `$ORCHESTRA_EVENTS_RETENTION` in seconds (`30d`, `12h`, `90m`, `600`), default 30 days;
/// `None` for `off` (keep every event).
pub fn events_retention() -> Result<Option<i64>, StateError> {
    let Some(text) = crate::paths::non_empty_env("ORCHESTRA_EVENTS_RETENTION") else {
        return Ok(Some(DEFAULT_EVENTS_RETENTION_SECS));
    };
    if text.trim() == "off" {
        return Ok(None);
    }
    match crate::duration::parse_secs(&text) {
        Some(secs) if secs > 0 => Ok(Some(secs)),
        _ => Err(StateError::BadRetention(text)),
    }
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// This machine's clock in microseconds since the epoch: what words are ordered by.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// How far ahead of this machine's clock a time may be and still be believed (µs): a
/// host's clock is moved onto ours only past 2 s of difference, read to the second.
pub const FUTURE_SKEW_MICROS: i64 = 3_000_000;

/// `at` (µs) as a time to order by, `now_us` being this machine's clock: one further
/// ahead than [`FUTURE_SKEW_MICROS`] was never said then (a clock that stepped back since,
/// NTP or a resumed VM; a broken or forged word) and orders nothing: `None`.
pub fn believable_at(at: i64, now_us: i64) -> Option<i64> {
    (at <= now_us.saturating_add(FUTURE_SKEW_MICROS)).then_some(at)
}

/// How long a process waits for another's write lock: many short-lived processes (hooks,
/// status jobs, the person) write at once.
const PATIENCE: Duration = Duration::from_secs(10);

/// The same, for a process whose caller has a deadline of its own (an agent's hook:
/// Claude's is 10 s; tmux's status job): it gives up well before that and keeps what it
/// had to say another way (`hooks::spool`).
const HASTE: Duration = Duration::from_millis(800);

static HASTY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Every record this process opens from now on waits for a write lock no longer than
/// [`HASTE`]: a busy record is then an error (`StateError::is_busy`) the caller settles.
pub fn answer_quickly() {
    HASTY.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn patience() -> Duration {
    if HASTY.load(std::sync::atomic::Ordering::Relaxed) {
        HASTE
    } else {
        PATIENCE
    }
}

const SESSION_COLUMNS: &str = "id, repo, label, branch, base_commit, base_branch, worktree, host, \
     tmux_socket, tmux_session, window_id, pane_id, agent_kind, agent_argv, agent_uuid, port, \
     prompt, status, state, retry_count, created_at, updated_at, state_at, state_source, manifest, \
     owns_tmux_session, sandbox, yolo";

impl Store {
    /// Opens (creating on first use) `home/state.db`.
    pub fn open(home: &Path) -> Result<Store, StateError> {
        let folder = |source| StateError::Folder {
            path: home.to_path_buf(),
            source,
        };
        let path = home.join("state.db");
        // SQLite makes its -wal and -shm files with the database file's mode: a private
        // file made first keeps all three private.
        crate::paths::open_private(
            &path,
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true),
        )
        .map_err(folder)?;
        let sqlite = |source| StateError::sqlite(&path, source);
        let conn = Connection::open(&path).map_err(sqlite)?;
        let patience = patience();
        conn.busy_timeout(patience).map_err(sqlite)?;
        // Turning a new database to WAL takes a lock SQLite does not wait for (two
        // first-use processes would deadlock): a busy answer is retried, within the same
        // bound as any other wait.
        let started = std::time::Instant::now();
        while let Err(e) = conn.pragma_update(None, "journal_mode", "WAL") {
            let busy = e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy);
            if !busy || started.elapsed() > patience {
                return Err(sqlite(e));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sqlite)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(sqlite)?;
        // Every orchestra process is short-lived: checkpointing the WAL on each close would
        // cost two fsyncs per hook event. SQLite's automatic checkpoints keep it bounded.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(sqlite)?;
        let mut store = Store {
            conn,
            path,
            retention: Retention {
                // A bad value was refused where the command started; here it is the default.
                keep: events_retention().unwrap_or(Some(DEFAULT_EVENTS_RETENTION_SECS)),
                briefings: crate::paths::briefings_dir(home),
            },
        };
        schema::migrate(&mut store.conn, &store.path)?;
        Ok(store)
    }

    /// A fingerprint of the database files (sizes and modification times): equal
    /// fingerprints mean nothing was written in between, so a cached read still holds.
    /// Costs two `stat`s and no SQLite.
    pub fn fingerprint(home: &Path) -> String {
        let mut text = String::new();
        for name in ["state.db", "state.db-wal"] {
            if let Some(stamp) = crate::paths::file_stamp(&home.join(name)) {
                text.push_str(&format!("{name}:{stamp};"));
            }
        }
        text
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves `home/state.db` (and its -wal and -shm, under the same new name so SQLite
    /// still finds them together) aside to `state.db.corrupt-<time>`: a damaged record is
    /// kept for whoever wants to read it, never deleted. Returns the new path.
    pub fn set_aside(home: &Path) -> Result<PathBuf, StateError> {
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        let mut aside = home.join(format!("state.db.corrupt-{stamp}"));
        let mut n = 2;
        while aside.exists() {
            aside = home.join(format!("state.db.corrupt-{stamp}-{n}"));
            n += 1;
        }
        for suffix in ["", "-wal", "-shm"] {
            let from = home.join(format!("state.db{suffix}"));
            if !from.exists() {
                continue;
            }
            let to = PathBuf::from(format!("{}{suffix}", aside.display()));
            std::fs::rename(&from, &to)
                .map_err(|source| StateError::SetAside { path: from, source })?;
        }
        Ok(aside)
    }

    /// When this record began (seconds): a session made before it had its row in a record
    /// that was lost. 0 for a record that held something before this was kept.
    pub fn began_at(&self) -> Result<i64, StateError> {
        self.conn
            .query_row("SELECT began_at FROM record", [], |r| r.get(0))
            .optional()
            .map(Option::unwrap_or_default)
            .map_err(|e| self.err(e))
    }

    /// Records `s`, a live session found in tmux and git whose row was lost, as it is now.
    pub fn adopt(&self, s: &Session) -> Result<(), StateError> {
        self.insert_session(s)?;
        self.record_event(
            s,
            "adopted",
            "",
            s.status.as_str(),
            "doctor: its row was lost",
        )
    }

    fn err(&self, source: rusqlite::Error) -> StateError {
        StateError::sqlite(&self.path, source)
    }

    pub fn insert_session(&self, s: &Session) -> Result<(), StateError> {
        let argv = serde_json::to_string(&s.agent_argv).unwrap_or_else(|_| "[]".into());
        let result = self.conn.execute(
            &format!(
                "INSERT INTO sessions ({SESSION_COLUMNS}) VALUES \
                 (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)"
            ),
            params![
                s.id,
                s.repo,
                s.label,
                s.branch,
                s.base_commit,
                s.base_branch,
                s.worktree,
                s.host,
                s.tmux_socket,
                s.tmux_session,
                s.window,
                s.pane,
                s.agent_kind.as_str(),
                argv,
                s.agent_uuid,
                s.port,
                s.prompt,
                s.status.as_str(),
                s.state.as_str(),
                s.retry_count,
                s.created_at,
                s.updated_at,
                s.state_at,
                s.state_source.as_str(),
                s.manifest,
                s.owns_tmux_session,
                s.sandbox.as_ref().map(Network::word),
                s.yolo,
            ],
        );
        match result {
            Ok(_) => Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Err(StateError::LabelTaken {
                    repo: s.repo.clone(),
                    label: s.label.clone(),
                })
            }
            Err(e) => Err(self.err(e)),
        }
    }

    /// Sessions of one repo (or of every repo), oldest first. Merged sessions are history:
    /// shown only when `include_merged`.
    pub fn sessions(
        &self,
        repo: Option<&str>,
        include_merged: bool,
    ) -> Result<Vec<Session>, StateError> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE (?1 IS NULL OR repo = ?1) \
             AND (?2 OR status <> 'merged') ORDER BY created_at, rowid"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![repo, include_merged], session_from_row)
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The live (not merged) session with this label in this repo.
    pub fn session_by_label(&self, repo: &str, label: &str) -> Result<Option<Session>, StateError> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE repo = ?1 AND label = ?2 AND status <> 'merged'"
        );
        self.conn
            .query_row(&sql, params![repo, label], session_from_row)
            .optional()
            .map_err(|e| self.err(e))
    }

    pub fn session_by_id(&self, id: &str) -> Result<Option<Session>, StateError> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
        self.conn
            .query_row(&sql, params![id], session_from_row)
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Ports handed to sessions that are not merged yet.
    pub fn ports_in_use(&self) -> Result<Vec<u16>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT port FROM sessions WHERE port IS NOT NULL AND status <> 'merged'",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, u16>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Records that `source` said the session is in `state` at `at` (microseconds). The
    /// newest word wins: an older one (a hook process that ran late) changes nothing.
    /// Returns the transition when the state changed; the check and the write are one
    /// transaction, so a transition is recorded (and notified) once.
    pub fn apply_state(
        &self,
        id: &str,
        state: AgentState,
        at: i64,
        source: StateSource,
        detail: &str,
    ) -> Result<Option<Transition>, StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        // Taking the write lock first makes the read below current.
        tx.execute("UPDATE sessions SET id = id WHERE id = ?1", params![id])
            .map_err(|e| self.err(e))?;
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
        let Some(current) = tx
            .query_row(&sql, params![id], session_from_row)
            .optional()
            .map_err(|e| self.err(e))?
        else {
            return Ok(None);
        };
        // No time is trusted past now + skew: a word stamped further ahead is taken as
        // said now, and a recorded one that far ahead (the clock stepped back since it was
        // written) holds back no later word.
        let now_us = now_micros();
        let at = believable_at(at, now_us).unwrap_or(now_us);
        if believable_at(current.state_at, now_us).is_some_and(|recorded| at < recorded) {
            return Ok(None);
        }
        tx.execute(
            "UPDATE sessions SET state = ?2, state_at = ?3, state_source = ?4, updated_at = ?5 WHERE id = ?1",
            params![id, state.as_str(), at, source.as_str(), now()],
        )
        .map_err(|e| self.err(e))?;
        let transition = if current.state == state {
            None
        } else {
            let event = insert_event(
                &tx,
                &self.retention,
                &current,
                TransitionKind::State.as_str(),
                current.state.as_str(),
                state.as_str(),
                detail,
            )
            .map_err(|e| self.err(e))?;
            Some(Transition {
                old: current.state.to_string(),
                new: state.to_string(),
                kind: TransitionKind::State,
                event,
                session: Session {
                    state,
                    state_at: at,
                    state_source: source,
                    ..current
                },
            })
        };
        tx.commit().map_err(|e| self.err(e))?;
        Ok(transition)
    }

    /// Sets the lifecycle status if it differs, returning the transition.
    pub fn change_status(
        &self,
        s: &Session,
        status: Status,
        detail: &str,
    ) -> Result<Option<Transition>, StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let changed = tx
            .execute(
                "UPDATE sessions SET status = ?2, updated_at = ?3 WHERE id = ?1 AND status <> ?2",
                params![s.id, status.as_str(), now()],
            )
            .map_err(|e| self.err(e))?;
        if changed == 0 {
            return Ok(None);
        }
        let event = insert_event(
            &tx,
            &self.retention,
            s,
            TransitionKind::Status.as_str(),
            s.status.as_str(),
            status.as_str(),
            detail,
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(Some(Transition {
            old: s.status.to_string(),
            new: status.to_string(),
            kind: TransitionKind::Status,
            event,
            session: Session {
                status,
                ..s.clone()
            },
        }))
    }

    /// Moves a blocked session on to `to` (running, or setup when its worktree has a
    /// setup command); true only for the one process that does it.
    pub fn claim_blocked(&self, s: &Session, to: Status, detail: &str) -> Result<bool, StateError> {
        self.claim_status(s, Status::Blocked, to, detail)
    }

    /// Moves the session from `from` to `to` if it is still `from`, recording the change:
    /// true only for the one process that does it (a check and a write in one statement).
    pub fn claim_status(
        &self,
        s: &Session,
        from: Status,
        to: Status,
        detail: &str,
    ) -> Result<bool, StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let changed = tx
            .execute(
                "UPDATE sessions SET status = ?3, updated_at = ?4 WHERE id = ?1 AND status = ?2",
                params![s.id, from.as_str(), to.as_str(), now()],
            )
            .map_err(|e| self.err(e))?;
        if changed > 0 {
            insert_event(
                &tx,
                &self.retention,
                s,
                "status",
                from.as_str(),
                to.as_str(),
                detail,
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(changed > 0)
    }

    /// When the session's current setup began (seconds): its newest move into `setup`.
    pub fn setup_started_at(&self, s: &Session) -> Result<Option<i64>, StateError> {
        self.conn
            .query_row(
                "SELECT max(at) FROM events WHERE session_id = ?1 AND kind IN ('dispatched', 'status', 'restart') AND new = 'setup'",
                params![s.id],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Records a restart: the session's new window and pane, one more retry, `status` (none:
    /// the status stays, as a restarted setup's window records its own), and its state
    /// unknown until the agent says.
    /// The conversation the session's agent is in now (it changes on `/clear`, `/resume`).
    pub fn set_agent_uuid(&self, s: &Session, uuid: &str) -> Result<(), StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        tx.execute(
            "UPDATE sessions SET agent_uuid = ?2, updated_at = ?3 WHERE id = ?1",
            params![s.id, uuid, now()],
        )
        .map_err(|e| self.err(e))?;
        // Its cost counts every conversation it had (src/cost).
        for id in [s.agent_uuid.as_deref().unwrap_or_default(), uuid] {
            if !id.is_empty() {
                tx.execute(
                    "INSERT OR IGNORE INTO conversations (session_id, uuid) VALUES (?1, ?2)",
                    params![s.id, id],
                )
                .map_err(|e| self.err(e))?;
            }
        }
        insert_event(
            &tx,
            &self.retention,
            s,
            "conversation",
            s.agent_uuid.as_deref().unwrap_or_default(),
            uuid,
            "the agent moved to another conversation",
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    pub fn record_restart(
        &self,
        s: &Session,
        window: Option<&WindowId>,
        pane: Option<&PaneId>,
        tmux_session: &str,
        tmux_socket: Option<&str>,
        status: Option<Status>,
    ) -> Result<(), StateError> {
        self.conn
            .execute(
                "UPDATE sessions SET window_id = ?2, pane_id = ?3, tmux_session = ?4, \
                 status = COALESCE(?7, status), state = 'unknown', state_source = '', \
                 retry_count = retry_count + 1, updated_at = ?5, \
                 tmux_socket = COALESCE(?6, tmux_socket) WHERE id = ?1",
                params![
                    s.id,
                    window,
                    pane,
                    tmux_session,
                    now(),
                    tmux_socket,
                    status.map(Status::as_str)
                ],
            )
            .map_err(|e| self.err(e))?;
        self.record_event(
            s,
            "restart",
            s.status.as_str(),
            status.unwrap_or(s.status).as_str(),
            &format!("retry {}", s.retry_count + 1),
        )
    }

    /// Records `pane` as the orchestrator agent of `repo` (one per repo).
    pub fn set_orchestrator(&self, o: &Orchestrator) -> Result<(), StateError> {
        self.conn
            .execute(
                "INSERT INTO orchestrators (repo, tmux_socket, window_id, pane_id, agent_uuid, launched, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(repo) DO UPDATE SET tmux_socket = ?2, \
                 window_id = ?3, pane_id = ?4, agent_uuid = COALESCE(?5, agent_uuid), launched = ?6, created_at = ?7",
                params![o.repo, o.tmux_socket, o.window, o.pane, o.agent_uuid, o.launched, now()],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    pub fn orchestrator(&self, repo: &str) -> Result<Option<Orchestrator>, StateError> {
        self.conn
            .query_row(
                "SELECT repo, tmux_socket, window_id, pane_id, agent_uuid, launched FROM orchestrators WHERE repo = ?1",
                params![repo],
                |r| {
                    // A recorded pane that is no pane id is no orchestrator to reach.
                    let Some(pane) = tmux_id(r.get(3)?, PaneId::parse) else {
                        return Ok(None);
                    };
                    Ok(Some(Orchestrator {
                        repo: r.get(0)?,
                        tmux_socket: r.get(1)?,
                        window: tmux_id(r.get(2)?, WindowId::parse),
                        pane,
                        agent_uuid: r.get(4)?,
                        launched: r.get(5)?,
                    }))
                },
            )
            .optional()
            .map(Option::flatten)
            .map_err(|e| self.err(e))
    }

    /// Removes a session's row; its events stay as history.
    pub fn delete_session(&self, s: &Session, detail: &str) -> Result<(), StateError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        insert_event(
            &tx,
            &self.retention,
            s,
            "removed",
            s.status.as_str(),
            "",
            detail,
        )
        .map_err(|e| self.err(e))?;
        tx.execute("DELETE FROM sessions WHERE id = ?1", params![s.id])
            .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    pub fn record_event(
        &self,
        s: &Session,
        kind: &str,
        old: &str,
        new: &str,
        detail: &str,
    ) -> Result<(), StateError> {
        insert_event(&self.conn, &self.retention, s, kind, old, new, detail)
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// The `seq` of session `id`'s newest change of state (the event a [`Transition`] of
    /// kind state names); `None` before its first.
    pub fn last_state_event(&self, id: &str) -> Result<Option<i64>, StateError> {
        self.conn
            .query_row(
                "SELECT max(seq) FROM events WHERE session_id = ?1 AND kind = 'state'",
                params![id],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// Whether session `id`'s agent started a conversation (claude's SessionStart hook:
    /// a start or a resume) since it was last busy: no turn has run in it yet.
    pub fn started_since_busy(&self, id: &str) -> Result<bool, StateError> {
        self.conn
            .query_row(
                "SELECT COALESCE((SELECT max(seq) FROM events WHERE session_id = ?1 \
                 AND kind = 'state' AND detail = 'SessionStart'), 0) > COALESCE((SELECT \
                 max(seq) FROM events WHERE session_id = ?1 AND kind = 'state' \
                 AND new = 'busy'), 0)",
                params![id],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))
    }

    /// The newest `limit` events (of one repo, and one label, when given), oldest first.
    pub fn events(
        &self,
        repo: Option<&str>,
        label: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Event>, StateError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, at, session_id, label, repo, kind, old, new, detail FROM \
                 (SELECT * FROM events WHERE (?1 IS NULL OR repo = ?1) AND (?2 IS NULL OR label = ?2) \
                  ORDER BY seq DESC LIMIT ?3) ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![repo, label, limit as i64], |r| {
                Ok(Event {
                    seq: r.get(0)?,
                    at: r.get(1)?,
                    session_id: r.get(2)?,
                    label: r.get(3)?,
                    repo: r.get(4)?,
                    kind: r.get(5)?,
                    old: r.get(6)?,
                    new: r.get(7)?,
                    detail: r.get(8)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// SQLite's own consistency check: `None` when the file is sound.
    pub fn integrity_problem(&self) -> Result<Option<String>, StateError> {
        let verdict: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok((verdict != "ok").then_some(verdict))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Event {
    pub seq: i64,
    pub at: i64,
    pub session_id: String,
    pub label: Option<String>,
    pub repo: Option<String>,
    pub kind: String,
    pub old: Option<String>,
    pub new: Option<String>,
    pub detail: Option<String>,
}

/// Records one event (returning its `seq`), and prunes the events older than `retention`
/// when that is due, and the briefings of their time with them.
fn insert_event(
    conn: &Connection,
    retention: &Retention,
    s: &Session,
    kind: &str,
    old: &str,
    new: &str,
    detail: &str,
) -> rusqlite::Result<i64> {
    let at = now();
    conn.execute(
        "INSERT INTO events (at, session_id, label, repo, kind, old, new, detail) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![at, s.id, s.label, s.repo, kind, old, new, detail],
    )?;
    let seq = conn.last_insert_rowid();
    if let Some(keep) = retention.keep {
        if let Some(cutoff) = prune_events(conn, at, keep)? {
            crate::paths::remove_older(&retention.briefings, cutoff);
        }
    }
    Ok(seq)
}

/// Deletes the events older than `keep` seconds, once the oldest is older than that by a
/// day (or by `keep`, when shorter): each write pays one primary-key lookup, and the
/// delete (a scan of what is left) runs about once a day however busy the log is.
/// Returns the cutoff when it deleted.
fn prune_events(conn: &Connection, now: i64, keep: i64) -> rusqlite::Result<Option<i64>> {
    // Events are written in time order, so the first by seq is the oldest.
    let oldest: Option<i64> = conn
        .query_row("SELECT at FROM events ORDER BY seq LIMIT 1", [], |r| {
            r.get(0)
        })
        .optional()?;
    let cutoff = now.saturating_sub(keep);
    if oldest.is_some_and(|at| at < cutoff.saturating_sub(keep.min(86_400))) {
        conn.execute("DELETE FROM events WHERE at < ?1", params![cutoff])?;
        return Ok(Some(cutoff));
    }
    Ok(None)
}

/// A recorded pane or window id; one that is no id (the file was edited by hand) is no
/// pane at all: nothing is sent to it, and the session reads as having none.
fn tmux_id<T>(text: Option<String>, parse: fn(&str) -> Result<T, TmuxError>) -> Option<T> {
    parse(text?.as_str()).ok()
}

impl rusqlite::ToSql for PaneId {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::ToSql for WindowId {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

fn session_from_row(r: &Row<'_>) -> rusqlite::Result<Session> {
    let agent_kind: String = r.get(12)?;
    let argv: String = r.get(13)?;
    let status: String = r.get(17)?;
    let state: String = r.get(18)?;
    let source: String = r.get(23)?;
    Ok(Session {
        id: r.get(0)?,
        repo: r.get(1)?,
        label: r.get(2)?,
        branch: r.get(3)?,
        base_commit: r.get(4)?,
        base_branch: r.get(5)?,
        worktree: r.get(6)?,
        host: r.get(7)?,
        tmux_socket: r.get(8)?,
        tmux_session: r.get(9)?,
        window: tmux_id(r.get(10)?, WindowId::parse),
        pane: tmux_id(r.get(11)?, PaneId::parse),
        // Written by dispatch and up from a known kind; one this orchestra does not know is
        // a program it reads nothing special into.
        agent_kind: AgentKind::parse(&agent_kind).unwrap_or(AgentKind::Generic),
        agent_argv: serde_json::from_str(&argv).unwrap_or_default(),
        agent_uuid: r.get(14)?,
        port: r.get(15)?,
        prompt: r.get(16)?,
        // The CHECK constraints keep these to known words.
        status: Status::parse(&status).unwrap_or(Status::Dead),
        state: AgentState::parse(&state).unwrap_or(AgentState::Unknown),
        retry_count: r.get(19)?,
        created_at: r.get(20)?,
        updated_at: r.get(21)?,
        state_at: r.get(22)?,
        // A word a newer orchestra knows outranks nothing here.
        state_source: StateSource::parse(&source).unwrap_or_default(),
        manifest: r.get(24)?,
        owns_tmux_session: r.get(25)?,
        sandbox: r
            .get::<_, Option<String>>(26)?
            .as_deref()
            .and_then(Network::parse),
        yolo: r.get(27)?,
    })
}

/// What every new session has, dispatched or from a manifest.
pub struct New {
    pub id: String,
    pub repo: String,
    pub label: String,
    /// The folder it works in: its worktree, or a manifest session's path.
    pub worktree: String,
    pub kind: AgentKind,
    pub argv: Vec<String>,
    /// The conversation id to start (or resume) claude with; kept for claude only.
    pub agent_uuid: String,
    pub status: Status,
}

/// A dispatched session's branch and where it started.
pub struct Branch {
    pub name: String,
    pub base_commit: String,
    /// The branch checked out where it started: what "merged" means.
    pub base_branch: Option<String>,
}

impl Session {
    fn new(new: New) -> Session {
        let at = now();
        Session {
            id: new.id,
            repo: new.repo,
            label: new.label,
            branch: String::new(),
            base_commit: String::new(),
            base_branch: None,
            worktree: new.worktree,
            host: None,
            tmux_socket: None,
            tmux_session: None,
            window: None,
            pane: None,
            agent_kind: new.kind,
            agent_argv: new.argv,
            agent_uuid: (new.kind == AgentKind::Claude).then_some(new.agent_uuid),
            port: None,
            prompt: None,
            status: new.status,
            state: AgentState::Unknown,
            retry_count: 0,
            created_at: at,
            updated_at: at,
            state_at: 0,
            state_source: Default::default(),
            manifest: None,
            owns_tmux_session: false,
            sandbox: None,
            yolo: false,
        }
    }

    /// A session `dispatch` makes, before its window: its own branch, its port, its task.
    pub fn dispatched(new: New, branch: Branch, port: u16, prompt: Option<String>) -> Session {
        Session {
            branch: branch.name,
            base_commit: branch.base_commit,
            base_branch: branch.base_branch,
            port: Some(port),
            prompt,
            ..Session::new(new)
        }
    }

    /// A session `up` makes from `manifest` (on `host`, or here), before its window: a
    /// plain folder, no branch.
    pub fn from_manifest(new: New, manifest: String, host: Option<String>) -> Session {
        Session {
            host,
            manifest: Some(manifest),
            ..Session::new(new)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event_times(store: &Store) -> Vec<i64> {
        let mut stmt = store
            .conn
            .prepare("SELECT at FROM events ORDER BY seq")
            .unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    }

    fn add_event(store: &Store, at: i64) {
        store
            .conn
            .execute(
                "INSERT INTO events (at, session_id, kind) VALUES (?1, 's', 'state')",
                params![at],
            )
            .unwrap();
    }

    #[test]
    fn events_are_pruned_about_once_a_day_past_the_retention() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        let day = 86_400;
        let now = 100 * day;
        let keep = 30 * day;
        // Older than the retention, but not by a day yet: not due, nothing goes.
        for at in [now - keep - day + 10, now - keep - 5, now - 60] {
            add_event(&store, at);
        }
        prune_events(&store.conn, now, keep).unwrap();
        assert_eq!(event_times(&store).len(), 3);
        // A day later it is due: everything older than the retention goes at once.
        let later = now + day;
        prune_events(&store.conn, later, keep).unwrap();
        assert_eq!(event_times(&store), [now - 60]);
    }

    fn session_row(store: &Store, id: &str) {
        store
            .conn
            .execute(
                "INSERT INTO sessions (id, repo, label, branch, base_commit, worktree, agent_kind, \
                 agent_argv, status, created_at, updated_at) VALUES \
                 (?1, '/r', ?1, 'b', 'c', '/w', 'claude', '[]', 'running', 1, 2)",
                [id],
            )
            .unwrap();
    }

    fn said(store: &Store, id: &str) -> (AgentState, i64) {
        let s = store.session_by_id(id).unwrap().unwrap();
        (s.state, s.state_at)
    }

    /// No time is trusted past now + skew: a word stamped far ahead (9e18 µs, the
    /// largest time there is) is recorded as said now and holds back no later word.
    #[test]
    fn a_word_from_the_far_future_freezes_nothing() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        session_row(&store, "s1");
        for ahead in [9_000_000_000_000_000_000, i64::MAX] {
            let before = now_micros();
            store
                .apply_state("s1", AgentState::Idle, ahead, StateSource::Hook, "Stop")
                .unwrap();
            let (state, at) = said(&store, "s1");
            assert_eq!(state, AgentState::Idle);
            assert!(at >= before && at <= now_micros(), "{at}");
            let later = now_micros() + 1;
            let t = store
                .apply_state(
                    "s1",
                    AgentState::Busy,
                    later,
                    StateSource::Hook,
                    "UserPromptSubmit",
                )
                .unwrap();
            assert!(t.is_some(), "the later word was dropped");
            assert_eq!(said(&store, "s1"), (AgentState::Busy, later));
        }
        // Within the skew a time is believed (a host's clock read to the second): an
        // older word still loses to it.
        let near = now_micros() + FUTURE_SKEW_MICROS / 2;
        store
            .apply_state(
                "s1",
                AgentState::Waiting,
                near,
                StateSource::Hook,
                "Notification",
            )
            .unwrap();
        let t = store
            .apply_state(
                "s1",
                AgentState::Idle,
                now_micros(),
                StateSource::Hook,
                "Stop",
            )
            .unwrap();
        assert!(t.is_none());
        assert_eq!(said(&store, "s1"), (AgentState::Waiting, near));
    }

    /// A record stamped ten minutes ahead (the clock stepped back since) takes a word of
    /// now; a negative time is merely old.
    #[test]
    fn a_record_stamped_ahead_of_the_clock_takes_new_words() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        session_row(&store, "s2");
        store
            .conn
            .execute(
                "UPDATE sessions SET state = 'idle', state_at = ?1 WHERE id = 's2'",
                [now_micros() + 600_000_000],
            )
            .unwrap();
        let now = now_micros();
        let t = store
            .apply_state(
                "s2",
                AgentState::Busy,
                now,
                StateSource::Hook,
                "UserPromptSubmit",
            )
            .unwrap();
        assert!(t.is_some());
        assert_eq!(said(&store, "s2"), (AgentState::Busy, now));
        let t = store
            .apply_state("s2", AgentState::Idle, -5, StateSource::Hook, "Stop")
            .unwrap();
        assert!(t.is_none(), "a negative time is older than any word");
    }

    #[test]
    fn a_short_retention_prunes_within_its_own_length() {
        let home = tempfile::tempdir().unwrap();
        let store = Store::open(home.path()).unwrap();
        for at in [1_000, 1_005, 1_009] {
            add_event(&store, at);
        }
        prune_events(&store.conn, 1_010, 4).unwrap();
        assert_eq!(event_times(&store), [1_009]);
    }
}
