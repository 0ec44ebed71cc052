//! Agent health without a daemon: a refresh reads every orchestra pane in one tmux call,
//! captures only the panes that changed (one more call), classifies their screens, writes
//! what changed (one more call, only if anything did), records transitions and tells a
//! person of them (`tell`). Hooks (`orchestra event`) report state at once; a screen that
//! clearly says otherwise later overrides them, since some changes fire no hook. A refresh
//! is `observe` (the reads), `decide::decide` (pure: what they mean) and `apply` (the
//! writes).

mod decide;
pub mod disagreements;
pub mod releases;
pub mod remote;
pub mod tick;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::agent::rules::{Rules, RulesError};
use crate::agent::AgentKind;
use crate::notify::Fallback;
use crate::state::{
    believable_at, AgentState, Session, StateError, StateSource, Status, Store, Transition,
    TransitionKind,
};
use crate::tmux::{Pane, PaneId, Snapshot, Tmux, WindowId};

/// A hook's word stands against the screen for this long: screens lag behind hooks (a
/// menu is announced before it is drawn).
const HOOK_GRACE_MICROS: i64 = 2_000_000;
/// A screen that contradicts a hook's word about a state that kind's hooks say
/// ([`crate::agent::Agent::hook_exact`]) wins once it has done so on this many ticks in a row…
const CONTRADICTED_TICKS: u32 = 3;
/// …spanning at least this long (the hook's grace): a hook's word is exact when it is
/// said, not forever, and one misread screen overrules nothing.
const CONTRADICTED_MICROS: i64 = HOOK_GRACE_MICROS;
/// The status line refreshes at most this often, however many clients ask.
const STATUS_EVERY_MS: i64 = 1_000;
/// An agent without screen rules counts as busy while its window showed output this
/// recently, and idle after.
const ACTIVE_OUTPUT_SECS: i64 = 5;
/// A pane with output this recently is recaptured inside the listing call.
const RECENTLY_ACTIVE_SECS: i64 = 2;
pub const DEFAULT_STALL_AFTER_SECS: i64 = 600;

const SHELLS: &[&str] = &[
    "bash", "zsh", "sh", "dash", "fish", "ksh", "tcsh", "csh", "nu",
];

/// The states shown in the summary, in order: (state, default symbol, default style).
const SUMMARY: &[(&str, &str, &str)] = &[
    ("busy", "⚙", "fg=yellow"),
    ("waiting", "✋", "fg=magenta,bold"),
    ("idle", "✓", "fg=green"),
    ("error", "✗", "fg=red,bold"),
    ("exited", "⏹", "fg=colour244"),
    ("stalled", "⏳", "fg=red"),
];

pub use crate::error::HealthError;

/// The tmux options a refresh reads (in its one listing call).
fn option_names() -> Vec<String> {
    let mut names = vec![
        crate::tmux::options::STALL_AFTER.to_string(),
        crate::tmux::options::NOTIFY_CMD.to_string(),
        crate::tmux::options::RADAR.to_string(),
        crate::tmux::options::RADAR_INTERVAL.to_string(),
        crate::tmux::options::PR_INTERVAL.to_string(),
        crate::tmux::options::STATUS_COST.to_string(),
        crate::tmux::options::BUDGET.to_string(),
    ];
    for (state, _, _) in SUMMARY {
        names.push(crate::tmux::options::symbol(state));
        names.push(crate::tmux::options::style(state));
    }
    names
}

/// What a refresh remembers between runs, per tmux server.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Cache {
    pub refreshed_ms: i64,
    pub summary: String,
    /// The database fingerprint the cached `sessions` were read at ("": read it again).
    #[serde(skip)]
    pub db_fingerprint: String,
    /// The local sessions as last read, kept in a file of their own: a quiet tick
    /// rewrites the small part only.
    #[serde(skip)]
    pub sessions: Vec<Session>,
    /// pane id → what was seen on it.
    pub panes: BTreeMap<PaneId, PaneSeen>,
    /// Seconds between conflict radar passes; 0 when it is off or has nothing to watch.
    #[serde(default)]
    pub radar_every: i64,
    /// Seconds between background reads of pull requests; 0 when off.
    #[serde(default)]
    pub pr_every: i64,
    /// The socket of the server the panes are on.
    #[serde(default)]
    pub socket_path: String,
    /// pane id → its foreground program when last asked: a tick asks only windows that
    /// showed output since the tick before ([`Tmux::snapshot_since`]).
    #[serde(default)]
    pub commands: BTreeMap<PaneId, String>,
}

/// The sessions part of a [`Cache`]: rewritten only when the tick read the sessions from
/// the record (or wrote to it), so a quiet tick does not serialize every session.
#[derive(Debug, Default, Serialize, Deserialize)]
struct SessionsCache {
    /// The database fingerprint `sessions` were read at ("": read it again).
    db_fingerprint: String,
    #[serde(default, serialize_with = "sessions_without_prompts")]
    sessions: Vec<Session>,
}

/// The cache keeps no prompt text: it may quote secrets, and a refresh never reads it.
fn sessions_without_prompts<S: serde::Serializer>(
    sessions: &[Session],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(sessions.iter().map(|s| Session {
        prompt: None,
        ..s.clone()
    }))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PaneSeen {
    /// The second of the last capture (0: capture again).
    pub captured_at: i64,
    /// The pane's window activity when last listed.
    #[serde(default)]
    pub activity: i64,
    pub screen_state: String,
    pub rule: Option<String>,
    /// The hook's word this pane's screen contradicts, tick after tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<Against>,
}

/// A screen's run of ticks contradicting one hook word.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Against {
    /// The contradicted word's time (`state_at`): a new word starts a new run.
    pub word_at: i64,
    pub ticks: u32,
    /// When the run began (microseconds).
    pub since: i64,
}

/// Whether screen verdict `screen` disputes `s`'s recorded state: a hook's word of a
/// state its kind's hooks say exactly, against a screen saying another such state (one
/// the hooks would have said too). A screen saying what no hook of its kind says (codex
/// busy, an API error before claude's StopFailure) only follows the hook's grace.
fn disputes(s: &Session, screen: AgentState) -> bool {
    let exact = crate::agent::of(s.agent_kind).hook_exact();
    screen != AgentState::Unknown
        && screen != s.state
        && s.state_source == StateSource::Hook
        && exact.contains(&s.state)
        && exact.contains(&screen)
}

/// Whether the verdict a pane's screen had at its last capture differs from what is
/// recorded now by a word that outranks the screen: a word said after that capture (a
/// hook's `idle` while the turn goes on). Such a pane is read again whether it printed
/// or not, since a quiet pane is otherwise never captured again and the word would stand
/// against a screen nobody looks at.
fn seen_differs(s: &Session, seen: &PaneSeen) -> bool {
    AgentState::parse(&seen.screen_state).is_some_and(|screen| {
        screen != AgentState::Unknown && screen != s.state && s.state_source.outranks_screen()
    })
}

/// One row of `health`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealthRow {
    pub id: String,
    pub label: String,
    pub repo: String,
    pub state: String,
    pub status: String,
    /// Who said the state last: hook, screen, tmux… (text: a host's orchestra may know
    /// words this one does not).
    pub source: String,
    /// Seconds since the state was last said.
    pub state_age: i64,
    /// Seconds since the window last showed output.
    pub idle_for: i64,
    /// What the screen said at the last capture, and by which rule.
    pub screen: Option<String>,
    pub rule: Option<String>,
    pub window: String,
    pub pane: String,
    /// The remote host it runs on; `None` here.
    #[serde(default)]
    pub host: Option<String>,
    /// The permission mode its claude says it runs in (its hooks' word), if any.
    #[serde(default)]
    pub permission_mode: Option<String>,
    /// Its pull request as the background read last saw it (`#12 draft ✗lint`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    /// The release its agent runs (`health` learns it once per session), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_release: Option<String>,
    /// Whether the screen rules were proven on that release (captured and read right).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_proven: Option<bool>,
    /// Its box and mode ("sandboxed", "sandboxed,net-off", "yolo"); empty for neither.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sandbox: String,
}

impl HealthRow {
    /// The row of `s` as recorded; where it runs and what its screen says are the caller's.
    pub fn recorded(s: &Session, now_us: i64) -> HealthRow {
        HealthRow {
            id: s.id.clone(),
            label: s.label.clone(),
            repo: s.repo.clone(),
            state: s.state.to_string(),
            status: s.status.to_string(),
            source: s.state_source.to_string(),
            // A state stamped ahead of the clock (it stepped back since) is new, not negative.
            state_age: if s.state_at > 0 {
                (now_us - s.state_at).max(0) / 1_000_000
            } else {
                now_us / 1_000_000 - s.created_at
            },
            idle_for: 0,
            screen: None,
            rule: None,
            window: s.window.as_deref().unwrap_or_default().to_string(),
            pane: s.pane.as_deref().unwrap_or_default().to_string(),
            host: s.host.clone(),
            permission_mode: None,
            pull_request: None,
            agent_release: None,
            rules_proven: None,
            sandbox: crate::session::sandbox::mode(s),
        }
    }
}

#[derive(Debug, Default)]
pub struct Outcome {
    /// tmux processes this refresh started.
    pub tmux_calls: usize,
    /// Sessions waiting for artifacts.
    pub blocked: usize,
    pub captured: usize,
    pub transitions: Vec<Transition>,
    pub summary: String,
    pub rows: Vec<HealthRow>,
    /// Seconds between conflict radar passes; 0 when it is off or has nothing to watch.
    pub radar_every: i64,
    /// Seconds between background reads of pull requests; 0 when off.
    pub pr_every: i64,
}

pub use crate::state::now_micros;

/// A file-name-safe key for a tmux server, known without asking tmux.
pub fn server_key(socket: Option<&Path>) -> String {
    let text = socket.map_or_else(|| "default".into(), |p| p.to_string_lossy().into_owned());
    crate::paths::stable_hash(&text)
}

fn cache_path(home: &Path, key: &str) -> PathBuf {
    home.join("cache").join(format!("status-{key}.json"))
}

fn sessions_cache_path(home: &Path, key: &str) -> PathBuf {
    home.join("cache").join(format!("sessions-{key}.json"))
}

pub fn load_cache(home: &Path, key: &str) -> Cache {
    let mut cache: Cache = read_json(&cache_path(home, key)).unwrap_or_default();
    let part: SessionsCache = read_json(&sessions_cache_path(home, key)).unwrap_or_default();
    cache.db_fingerprint = part.db_fingerprint;
    cache.sessions = part.sessions;
    cache
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// When each local session's window last showed output (seconds since the epoch), as the
/// status line's caches saw it, with when that cache was refreshed (ms): session id →
/// (activity, refreshed). No tmux call: what the last refresh of each server wrote.
pub fn window_activity(home: &Path) -> HashMap<String, (i64, i64)> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir(home.join("cache")) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Some(key) = name
            .strip_prefix("status-")
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let cache = load_cache(home, key);
        for s in &cache.sessions {
            // Pane ids are the server's own: only this server's sessions.
            if s.tmux_socket.as_deref() != Some(cache.socket_path.as_str()) {
                continue;
            }
            let Some(seen) = s.pane.as_ref().and_then(|p| cache.panes.get(p)) else {
                continue;
            };
            out.insert(s.id.clone(), (seen.activity, cache.refreshed_ms));
        }
    }
    out
}

/// Saves `cache`, and its sessions part too when `sessions_changed` (that one first: the
/// small part's panes then never name a session the other does not hold yet).
fn save_cache(home: &Path, key: &str, cache: &Cache, sessions_changed: bool) {
    if sessions_changed {
        #[derive(Serialize)]
        struct Part<'a> {
            db_fingerprint: &'a str,
            #[serde(serialize_with = "sessions_without_prompts")]
            sessions: &'a [Session],
        }
        save_json(
            &sessions_cache_path(home, key),
            &Part {
                db_fingerprint: &cache.db_fingerprint,
                sessions: &cache.sessions,
            },
        );
    }
    save_json(&cache_path(home, key), cache);
}

/// Writes `value` as JSON to `path` whole or not at all (a temp file renamed over it), so a
/// reader never sees half a cache. A cache that cannot be written is only a slower tick.
fn save_json(path: &Path, value: &impl Serialize) {
    if let Ok(json) = serde_json::to_vec(value) {
        let _ = crate::paths::replace_private(path, json);
    }
}

/// One refresh of the server `tmux` talks to: `observe` what tmux and the record show,
/// `decide::decide` what that means (pure), `apply` it. A quiet tick (no pane showed
/// output since its last capture, nothing written to the record since the last tick) is
/// ONE tmux call and no database at all: changed panes are recaptured inside that call,
/// and the sessions are read from the cache while the database files are unchanged.
pub fn refresh(
    home: &Path,
    key: &str,
    tmux: &Tmux,
    rules: impl Fn() -> Result<Rules, RulesError>,
) -> Result<Outcome, HealthError> {
    let now_us = now_micros();
    // Counted by the handle: a batch past tmux's command limit takes more than one call.
    let calls_before = tmux.calls();
    let mut cache = load_cache(home, key);
    let mut store: Option<Store> = None;
    let Some(seen) = observe(home, tmux, &mut cache, &mut store, now_us)? else {
        cache.refreshed_ms = now_us / 1000;
        cache.summary.clear();
        cache.panes.clear();
        cache.commands.clear();
        cache.radar_every = 0;
        cache.pr_every = 0;
        save_cache(home, key, &cache, false);
        return Ok(Outcome {
            tmux_calls: tmux.calls() - calls_before,
            ..Outcome::default()
        });
    };
    let mut lookups = OnDisk {
        home,
        store: &mut store,
    };
    let decided = decide::decide(
        &seen,
        &cache.panes,
        &mut Lazy::new(rules),
        &mut lookups,
        now_us,
    )?;
    let mut outcome = apply(home, key, tmux, seen, decided, cache, store, now_us)?;
    outcome.tmux_calls = tmux.calls() - calls_before;
    Ok(outcome)
}

/// What the server shows (one listing call, which recaptures the panes busy lately, and
/// one capture of the panes never seen or woken since), with the sessions from the cache
/// while the record's files are unchanged, else from the record. `None`: no server.
fn observe(
    home: &Path,
    tmux: &Tmux,
    cache: &mut Cache,
    store: &mut Option<Store>,
    now_us: i64,
) -> Result<Option<decide::Observation>, HealthError> {
    let now_s = now_us / 1_000_000;
    let names = option_names();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    // Panes busy lately are likely to have changed again: tmux recaptures them inside the
    // listing call when they did. Quiet panes cost nothing there; one that wakes up is
    // captured by a second call. "Lately" is also "when the last tick looked": each
    // recapture is a command of the call, and ticks close together (a refresh run by
    // hand beside the status line's) would otherwise carry every pane that stopped
    // printing a moment ago.
    let last_tick_s = cache.refreshed_ms / 1000;
    let recapture: Vec<(PaneId, i64)> = cache
        .panes
        .iter()
        .filter(|(_, seen)| {
            seen.activity >= now_s - RECENTLY_ACTIVE_SECS && seen.activity >= last_tick_s - 1
        })
        .map(|(pane, seen)| (pane.clone(), seen.captured_at))
        .collect();
    // Programs change only in windows that print: ask the windows active since the last
    // tick (a second of slack; activity is in whole seconds), all of them without one.
    let commands_since = (cache.refreshed_ms > 0).then(|| cache.refreshed_ms / 1000 - 1);
    let Some(mut snap) = tmux.snapshot_since(&name_refs, &recapture, commands_since)? else {
        return Ok(None);
    };
    for pane in &mut snap.panes {
        if pane.current_command.is_empty() {
            if let Some(known) = cache.commands.get(&pane.pane) {
                pane.current_command = known.clone();
            }
        } else {
            cache
                .commands
                .insert(pane.pane.clone(), pane.current_command.clone());
        }
    }
    let live: std::collections::HashSet<&str> =
        snap.panes.iter().map(|p| p.pane.as_str()).collect();
    cache
        .commands
        .retain(|pane, _| live.contains(pane.as_str()));

    let fingerprint = Store::fingerprint(home);
    let sessions_cached = !fingerprint.is_empty() && cache.db_fingerprint == fingerprint;
    let list = if sessions_cached {
        std::mem::take(&mut cache.sessions)
    } else {
        opened(store, home)?.sessions(None, false)?
    };
    let mut seen = decide::Observation {
        snap,
        sessions: list
            .into_iter()
            .filter(|s| s.host.is_none())
            .map(|s| (s.id.clone(), s))
            .collect(),
        fingerprint,
        sessions_cached,
    };

    // Panes to capture by a second call: never seen, or woken up since their capture, or
    // seen saying other than a word said since. Not a window in setup (it shows the
    // setup, not an agent) nor a program that ended.
    let mut second: Vec<PaneId> = Vec::new();
    for pane in seen.ours() {
        let s = &seen.sessions[&pane.orchestra_id];
        if s.status.in_setup() || pane.dead || agent_replaced_by_shell(s, pane) {
            continue;
        }
        let recaptured = recapture.iter().any(|(p, _)| p == &pane.pane);
        let before = cache.panes.get(&pane.pane);
        let changed =
            before.is_none_or(|before| !recaptured && pane.window_activity >= before.captured_at);
        let read_now = seen.snap.screens.iter().any(|(p, _)| p == &pane.pane);
        let disputed = before.is_some_and(|before| seen_differs(s, before));
        if changed || (disputed && !read_now) {
            second.push(pane.pane.clone());
        }
    }
    if !second.is_empty() {
        let captured = tmux.capture_many(&second)?;
        seen.snap.screens.extend(second.into_iter().zip(captured));
    }
    Ok(Some(seen))
}

/// What a decision looks up: the record (opened on the first question) and the closing
/// locks.
struct OnDisk<'a> {
    home: &'a Path,
    store: &'a mut Option<Store>,
}

impl decide::Lookups for OnDisk<'_> {
    fn started_since_busy(&mut self, session: &str) -> Result<bool, StateError> {
        opened(self.store, self.home)?.started_since_busy(session)
    }

    fn is_closing(&self, session: &str) -> bool {
        crate::lock::is_closing(self.home, session)
    }
}

/// Carries out what a tick decided: the screens kept, the words recorded, the badges
/// and budget marks written where they differ, a person told, the cache saved; and
/// what the tick comes to (summary, rows) from the record as written.
#[allow(clippy::too_many_arguments)]
fn apply(
    home: &Path,
    key: &str,
    tmux: &Tmux,
    seen: decide::Observation,
    decided: decide::Decisions,
    mut cache: Cache,
    mut store: Option<Store>,
    now_us: i64,
) -> Result<Outcome, HealthError> {
    let now_s = now_us / 1_000_000;
    let decide::Observation {
        snap,
        mut sessions,
        fingerprint,
        sessions_cached,
    } = seen;
    let mut outcome = Outcome {
        captured: snap.screens.len(),
        ..Outcome::default()
    };
    for d in decided.disagreements {
        let release = releases::recorded(home, &d.session);
        disagreements::keep(home, disagreements::Disagreement { release, ..d });
    }
    cache.panes = decided.panes;

    let wrote = !decided.changes.is_empty();
    outcome.transitions = record(home, &mut store, &mut sessions, decided.changes, now_us)?;

    let ours: Vec<&Pane> = decide::agent_panes(&snap.panes, &sessions).collect();
    // Window badges: write only what differs.
    let sets: Vec<(WindowId, String, String)> = ours
        .iter()
        .filter_map(|pane| {
            let state = sessions[&pane.orchestra_id].badge();
            (pane.orchestra_state != state).then(|| {
                (
                    pane.window.clone(),
                    crate::tmux::options::WINDOW_STATE.to_string(),
                    state.to_string(),
                )
            })
        })
        .collect();
    if !sets.is_empty() {
        tmux.set_window_options(&sets)?;
    }

    let fallback = Fallback {
        command: snap
            .option(crate::tmux::options::NOTIFY_CMD)
            .map(str::to_string),
        tmux_socket: Some(snap.socket_path.clone()),
    };
    for t in &outcome.transitions {
        let ask = decided.asks.get(&t.session.id).map(String::as_str);
        crate::tell::transition(t, ask, Some(tmux), &fallback);
    }

    outcome.blocked = sessions
        .values()
        .filter(|s| s.status == Status::Blocked)
        .count();
    outcome.summary = summary(&snap, ours.iter().map(|p| &sessions[&p.orchestra_id]));
    // Costs only when asked for (`@orchestra-status-cost on`, `@orchestra-budget`): reading
    // the agents' logs opens the record on every tick.
    let status_cost = snap.option(crate::tmux::options::STATUS_COST) == Some("on");
    let mut levels = std::collections::HashMap::new();
    let budget = snap
        .option(crate::tmux::options::BUDGET)
        .and_then(crate::cost::parse_budget);
    if status_cost || budget.is_some() {
        let live: Vec<Session> = ours
            .iter()
            .map(|p| sessions[&p.orchestra_id].clone())
            .collect();
        // A status tick has nowhere to say a broken prices.toml (`cost` does): built-in.
        let prices =
            crate::cost::Prices::load(home).unwrap_or_else(|_| crate::cost::Prices::built_in());
        let w = crate::cost::watch(opened(&mut store, home)?, &prices, &live, budget)?;
        for crossed in &w.crossed {
            crate::tell::budget_crossed(crossed, &fallback);
        }
        levels = w.levels;
        if status_cost && w.total.tokens.total() > 0 {
            outcome.summary = [outcome.summary.clone(), crate::cost::status_text(&w.total)]
                .into_iter()
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    // Budget marks on the badges, written only where they differ: none without a budget.
    let marks: Vec<(WindowId, String, String)> = ours
        .iter()
        .filter_map(|pane| {
            let mark = budget_mark(levels.get(&pane.orchestra_id).copied().unwrap_or(0));
            (pane.orchestra_budget != mark).then(|| {
                (
                    pane.window.clone(),
                    crate::tmux::options::WINDOW_BUDGET.to_string(),
                    mark.to_string(),
                )
            })
        })
        .collect();
    if !marks.is_empty() {
        tmux.set_window_options(&marks)?;
    }
    outcome.rows = ours
        .iter()
        .map(|pane| {
            let s = &sessions[&pane.orchestra_id];
            let seen = cache.panes.get(&pane.pane);
            HealthRow {
                idle_for: now_s - pane.window_activity,
                screen: seen.map(|p| p.screen_state.clone()),
                rule: seen.and_then(|p| p.rule.clone()),
                window: pane.window.to_string(),
                pane: pane.pane.to_string(),
                ..HealthRow::recorded(s, now_us)
            }
        })
        .collect();
    outcome.radar_every = radar_every(&snap, sessions.values());
    outcome.pr_every = pr_every(&snap);
    cache.refreshed_ms = now_us / 1000;
    cache.summary = outcome.summary.clone();
    cache.radar_every = outcome.radar_every;
    cache.pr_every = outcome.pr_every;
    cache.socket_path = snap.socket_path.clone();
    // After a write of ours the next tick reads the record again: another process may
    // have written in between.
    cache.db_fingerprint = if wrote { String::new() } else { fingerprint };
    cache.sessions = sessions.into_values().collect();
    // Sessions taken from the cache and not written to are the ones it holds.
    save_cache(home, key, &cache, wrote || !sessions_cached);
    Ok(outcome)
}

/// Records `changes` in order, `sessions` kept as the record then holds them: the
/// transitions they made.
fn record(
    home: &Path,
    store: &mut Option<Store>,
    sessions: &mut HashMap<String, Session>,
    changes: Vec<decide::Decision>,
    now_us: i64,
) -> Result<Vec<Transition>, HealthError> {
    let mut transitions = Vec::new();
    for change in changes {
        match change {
            decide::Decision::State {
                session,
                state,
                source,
                detail,
            } => {
                let store = opened(store, home)?;
                if let Some(t) = store.apply_state(&session, state, now_us, source, &detail)? {
                    sessions.insert(session, t.session.clone());
                    transitions.push(t);
                }
            }
            decide::Decision::Status {
                session,
                status,
                detail,
            } => {
                let s = sessions[&session].clone();
                if let Some(t) = opened(store, home)?.change_status(&s, status, &detail)? {
                    sessions.insert(session, t.session.clone());
                    transitions.push(t);
                }
            }
            decide::Decision::Gone { session, status } => {
                let s = sessions[&session].clone();
                let store = opened(store, home)?;
                if let Some(t) = store.apply_state(
                    &session,
                    AgentState::Exited,
                    now_us,
                    StateSource::Tmux,
                    "the pane is gone",
                )? {
                    transitions.push(t);
                }
                if let Some(t) = store.change_status(&s, status, "the pane is gone")? {
                    sessions.insert(session, t.session.clone());
                    transitions.push(t);
                }
            }
        }
    }
    Ok(transitions)
}

/// Seconds between conflict radar passes: `@orchestra-radar-interval` (default 10 s), 0
/// when `@orchestra-radar` is off or no session is one the radar watches.
fn radar_every<'a>(snap: &Snapshot, mut sessions: impl Iterator<Item = &'a Session>) -> i64 {
    if snap.option(crate::tmux::options::RADAR) == Some("off")
        || !sessions.any(crate::radar::watched)
    {
        return 0;
    }
    snap.option(crate::tmux::options::RADAR_INTERVAL)
        .and_then(crate::duration::parse_secs)
        .filter(|s| *s > 0)
        .unwrap_or(crate::radar::DEFAULT_EVERY_SECS)
}

/// Seconds between background reads of pull requests: `@orchestra-pr-interval` (default
/// 60 s; 0 or `off`: none).
fn pr_every(snap: &Snapshot) -> i64 {
    match snap.option(crate::tmux::options::PR_INTERVAL) {
        Some("off") => 0,
        Some(v) => crate::duration::parse_secs(v)
            .map(|s| s.max(0))
            .unwrap_or(crate::pr::refresh::DEFAULT_EVERY_SECS),
        None => crate::pr::refresh::DEFAULT_EVERY_SECS,
    }
}

/// Kinds whose screens the built-in rules do not read: only these are judged by output
/// activity, and only when agents.toml gives them no rules either.
fn may_lack_rules(kind: AgentKind) -> bool {
    kind == AgentKind::Generic
}

/// Whether a word that outranks the screen for a while was said lately: a hook's, or
/// orchestra's own after it answered a menu (screens lag behind both).
fn said_lately(s: &Session, now_us: i64) -> bool {
    s.state_source.outranks_screen()
        && believable_at(s.state_at, now_us).is_some_and(|at| now_us - at < HOOK_GRACE_MICROS)
}

/// Output activity is weak evidence: against a word that outranks the screen (a hook's,
/// `orchestra event`'s) it speaks only of what came after the word, output printed since
/// (busy) or silence as long as output counts (idle), never of output the word already
/// knew (a shell's prompt drawn just before `orchestra event waiting`).
fn activity_speaks_since_the_word(
    s: &Session,
    state: AgentState,
    window_activity_s: i64,
    now_us: i64,
) -> bool {
    if !s.state_source.outranks_screen() {
        return true;
    }
    let Some(said_at) = believable_at(s.state_at, now_us) else {
        return true;
    };
    match state {
        AgentState::Busy => window_activity_s.saturating_mul(1_000_000) > said_at,
        _ => now_us - said_at >= ACTIVE_OUTPUT_SECS * 1_000_000,
    }
}

/// The screen rules, loaded at most once per refresh and only when needed.
struct Lazy<F> {
    load: F,
    rules: Option<Rules>,
}

impl<F: Fn() -> Result<Rules, RulesError>> Lazy<F> {
    fn new(load: F) -> Lazy<F> {
        Lazy { load, rules: None }
    }

    fn get(&mut self) -> Result<&Rules, RulesError> {
        let rules = match self.rules.take() {
            Some(rules) => rules,
            None => (self.load)()?,
        };
        Ok(self.rules.insert(rules))
    }
}

/// Whether a session whose pane is gone has been recorded so already: dead, merged, or a
/// failed setup whose exit was recorded.
fn settled_gone(s: &Session) -> bool {
    match s.status {
        Status::Dead | Status::Merged => true,
        Status::SetupFailed => s.state == AgentState::Exited,
        _ => false,
    }
}

fn opened<'a>(slot: &'a mut Option<Store>, home: &Path) -> Result<&'a Store, StateError> {
    if slot.is_none() {
        *slot = Some(Store::open(home)?);
    }
    Ok(slot.as_ref().expect("just opened"))
}

fn agent_replaced_by_shell(s: &Session, pane: &Pane) -> bool {
    let is_shell = |name: &str| SHELLS.contains(&name.trim_start_matches('-'));
    let program = s
        .agent_argv
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    is_shell(&pane.current_command) && !is_shell(&program)
}

/// "⚙2 ✋1 ✓3" with the configured symbols and styles; empty when there is nothing.
fn summary<'a>(snap: &Snapshot, sessions: impl Iterator<Item = &'a Session>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for s in sessions {
        *counts.entry(s.state.as_str()).or_default() += 1;
        if s.status == Status::Stalled {
            *counts.entry("stalled").or_default() += 1;
        }
    }
    let mut parts = Vec::new();
    for (state, symbol, style) in SUMMARY {
        let Some(n) = counts.get(state).filter(|n| **n > 0) else {
            continue;
        };
        let symbol = snap
            .option(&crate::tmux::options::symbol(state))
            .unwrap_or(symbol);
        let style = snap
            .option(&crate::tmux::options::style(state))
            .unwrap_or(style);
        parts.push(format!("#[{style}]{symbol}{n}#[default]"));
    }
    parts.join(" ")
}

/// A group's part of the status line, its members' states counted ("api ⚙2 ✓1"); empty
/// when none of them is among `sessions`.
pub fn group_part<'a>(label: &str, sessions: impl Iterator<Item = &'a Session>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for s in sessions {
        *counts.entry(s.state.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = SUMMARY
        .iter()
        .filter_map(|(state, symbol, _)| {
            counts
                .get(state)
                .filter(|n| **n > 0)
                .map(|n| format!("{symbol}{n}"))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("{} {}", crate::tmux::format_literal(label), parts.join(" "))
    }
}

/// The badge's mark for a session at `level` % of `@orchestra-budget`: a person sees a
/// session getting dear before it is, and one past its budget plainly; it never stops it.
pub fn budget_mark(level: u8) -> &'static str {
    match level {
        100.. => "$!",
        80.. => "$",
        _ => "",
    }
}

/// What the status line prints of the local sessions, and how often the conflict radar
/// runs (0: not at all).
pub struct StatusLine {
    pub summary: String,
    pub radar_every: i64,
    pub pr_every: i64,
}

impl From<Cache> for StatusLine {
    fn from(cache: Cache) -> StatusLine {
        StatusLine {
            summary: cache.summary,
            radar_every: cache.radar_every,
            pr_every: cache.pr_every,
        }
    }
}

/// What the status line prints: the cached summary when fresh (no tmux call, no database),
/// else a refresh by whichever process gets the lock first; the others print the cache.
pub fn status_line(
    home: &Path,
    key: &str,
    refresh_now: impl FnOnce() -> Result<Outcome, HealthError>,
) -> Result<StatusLine, HealthError> {
    let cache = load_cache(home, key);
    let now_ms = now_micros() / 1000;
    if now_ms - cache.refreshed_ms < STATUS_EVERY_MS {
        return Ok(cache.into());
    }
    let lock_path = home.join("cache").join(format!("status-{key}.lock"));
    let Ok(Some(_lock)) = crate::lock::try_exclusive(&lock_path) else {
        return Ok(cache.into());
    };
    // Someone may have refreshed between our read and our lock.
    let cache = load_cache(home, key);
    if now_micros() / 1000 - cache.refreshed_ms < STATUS_EVERY_MS {
        return Ok(cache.into());
    }
    let outcome = match refresh_now() {
        // The record is busy (another process holds its write lock): the last line stands,
        // as tmux waits for no status job.
        Err(HealthError::State(e)) if e.is_busy() => return Ok(cache.into()),
        other => other?,
    };
    Ok(StatusLine {
        summary: outcome.summary,
        radar_every: outcome.radar_every,
        pr_every: outcome.pr_every,
    })
}

/// What the last remote refresh saw, per host: the status line shows it with its age and
/// never waits for a host itself.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RemoteCache {
    pub refreshed_ms: i64,
    /// Seconds between remote refreshes (the smallest poll_interval of the manifests).
    #[serde(default)]
    pub poll_secs: u64,
    pub hosts: Vec<HostSeen>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostSeen {
    pub name: String,
    pub reachable: bool,
    /// Why it could not be refreshed (unreachable, key refused, tmux failed).
    pub error: Option<String>,
    /// An openssh host whose master connection is gone: `error` says what to run.
    #[serde(default)]
    pub not_connected: bool,
    /// When it last answered (ms since the epoch); 0 never.
    pub answered_ms: i64,
    /// Round trip of the refresh call.
    pub latency_ms: i64,
    pub counts: BTreeMap<String, usize>,
    pub rows: Vec<HealthRow>,
    /// What a person should know though the host answered: its orchestra
    /// (`hosts install`) is another version than this one.
    #[serde(default)]
    pub note: Option<String>,
}

fn remote_cache_path(home: &Path) -> PathBuf {
    home.join("cache").join("remote.json")
}

/// The lock a remote refresh holds while it runs (one at a time).
pub fn remote_lock_path(home: &Path) -> PathBuf {
    home.join("cache").join("remote.lock")
}

pub fn load_remote_cache(home: &Path) -> Option<RemoteCache> {
    let bytes = std::fs::read(remote_cache_path(home)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn save_remote_cache(home: &Path, cache: &RemoteCache) {
    save_json(&remote_cache_path(home), cache);
}

/// What one host's refresh learned.
#[derive(Debug, Default)]
pub struct HostOutcome {
    pub rows: Vec<HealthRow>,
    pub transitions: Vec<Transition>,
    pub counts: BTreeMap<String, usize>,
    /// What a session that began to wait asks ("run: npm test"), by session id: from its
    /// hook's word, else from its screen — its notification names it.
    pub asks: HashMap<String, String>,
}

/// Refreshes the sessions of one remote host through `tmux` (an SSH transport): ONE
/// exec lists the panes and captures every session's screen (`if-shell` inside the same
/// call); screens are classified and what changed is recorded. `words` gives, once that
/// exec has answered, the hook words of the sessions whose hooks call the host's own
/// orchestra (`hosts install`, read by the same exec), on this machine's clock: those
/// are recorded as the hook's,
/// and their screens speak as a local session's do — once the window printed since the
/// word and the word's grace is over. For the others the screen is the word.
pub fn refresh_host(
    home: &Path,
    host: &str,
    tmux: &Tmux,
    sessions: &[Session],
    rules: &Rules,
    words: impl FnOnce() -> crate::remote_hooks::HostWords,
) -> Result<HostOutcome, HealthError> {
    let now_us = now_micros();
    let now_s = now_us / 1_000_000;
    let recapture: Vec<(PaneId, i64)> = sessions
        .iter()
        .filter_map(|s| s.pane.clone())
        .map(|p| (p, 0))
        .collect();
    let snap = tmux.snapshot(&[], &recapture)?;
    let crate::remote_hooks::HostWords { words, offset_secs } = words();
    let panes: Vec<Pane> = snap.as_ref().map(|s| s.panes.clone()).unwrap_or_default();
    let screens: HashMap<PaneId, String> = snap
        .map(|s| s.screens.into_iter().collect())
        .unwrap_or_default();
    let mut outcome = HostOutcome::default();
    let mut store: Option<Store> = None;
    let mut badges: Vec<(WindowId, String, String)> = Vec::new();
    for s in sessions {
        let pane = panes
            .iter()
            .find(|p| Some(&p.pane) == s.pane.as_ref() && p.orchestra_id == s.id);
        let (verdict, screen_state, rule) = match pane {
            None => (
                Some((
                    AgentState::Exited,
                    StateSource::Tmux,
                    "the pane is gone".to_string(),
                )),
                None,
                None,
            ),
            Some(p) if p.dead => (
                Some((
                    AgentState::Exited,
                    StateSource::Tmux,
                    "the pane's program ended".to_string(),
                )),
                None,
                None,
            ),
            Some(p) => match screens.get(&p.pane) {
                Some(screen) => {
                    let v = rules.classify(s.agent_kind.as_str(), screen)?;
                    let state = v.state;
                    let rule = v.rule.clone();
                    (
                        (state != AgentState::Unknown).then(|| {
                            (state, StateSource::Screen, rule.clone().unwrap_or_default())
                        }),
                        Some(state.to_string()),
                        rule,
                    )
                }
                None => (None, None, None),
            },
        };
        let mut current = s.clone();
        // The hook's word first, at its own time: newer than what is recorded, it wins.
        let word = words
            .get(&s.id)
            .and_then(|w| Some((w, w.agent_state()?)))
            .filter(|(w, _)| believable_at(w.at, now_us).is_some())
            .filter(|_| pane.is_some_and(|p| !p.dead));
        let recorded_at = believable_at(current.state_at, now_us).unwrap_or(0);
        if let Some((w, state)) = word.filter(|(w, _)| w.at > recorded_at) {
            if let Some(t) = opened(&mut store, home)?.apply_state(
                &s.id,
                state,
                w.at,
                StateSource::Hook,
                &w.event,
            )? {
                outcome.transitions.push(t);
            }
            if let Some(now) = opened(&mut store, home)?.session_by_id(&s.id)? {
                current = now;
            }
        }
        // `/clear` or `/resume` there moved it to another conversation: a restart resumes
        // that one.
        let moved_to = word
            .and_then(|(w, _)| w.conversation.as_deref())
            .filter(|c| crate::agent::is_conversation_id(c))
            .filter(|c| {
                s.agent_kind == AgentKind::Claude && current.agent_uuid.as_deref() != Some(*c)
            });
        if let Some(conversation) = moved_to {
            opened(&mut store, home)?.set_agent_uuid(&current, conversation)?;
            current.agent_uuid = Some(conversation.to_string());
        }
        // A hooked session's screen speaks only about what the window printed after the
        // recorded word, once a fresh word's grace is over (as a local one's).
        let verdict = verdict.filter(|(_, source, _)| {
            word.is_none()
                || *source != StateSource::Screen
                || (!said_lately(&current, now_us)
                    && pane.is_some_and(|p| {
                        p.window_activity.saturating_add(offset_secs)
                            >= believable_at(current.state_at, now_us).unwrap_or(0) / 1_000_000
                    }))
        });
        if let Some((state, source, detail)) = verdict {
            if state != current.state {
                if let Some(t) =
                    opened(&mut store, home)?.apply_state(&s.id, state, now_us, source, &detail)?
                {
                    current = t.session.clone();
                    outcome.transitions.push(t);
                }
            }
        }
        if pane.is_none() && current.status != Status::Dead {
            if let Some(t) = opened(&mut store, home)?.change_status(
                &current,
                Status::Dead,
                "the pane is gone",
            )? {
                current = t.session.clone();
                outcome.transitions.push(t);
            }
        }
        let began_waiting = outcome.transitions.iter().any(|t| {
            t.session.id == s.id
                && t.kind == TransitionKind::State
                && t.new == AgentState::Waiting.as_str()
        });
        if began_waiting {
            let from_hook = word
                .and_then(|(w, _)| w.asks.clone())
                .filter(|_| current.state_source == StateSource::Hook);
            let from_screen = || -> Result<Option<String>, HealthError> {
                let screen = pane.and_then(|p| screens.get(&p.pane));
                let Some(screen) = screen else {
                    return Ok(None);
                };
                let asked = rules.asked(s.agent_kind.as_str(), screen)?;
                Ok(asked.and_then(|a| a.relative_to(Path::new(&s.worktree)).phrase()))
            };
            let ask = match from_hook {
                Some(ask) => Some(ask),
                None => from_screen()?,
            };
            if let Some(ask) = ask {
                outcome.asks.insert(s.id.clone(), ask);
            }
        }
        if let Some(p) = pane.filter(|p| p.orchestra_state != current.badge()) {
            badges.push((
                p.window.clone(),
                crate::tmux::options::WINDOW_STATE.into(),
                current.badge().to_string(),
            ));
        }
        *outcome.counts.entry(current.state.to_string()).or_default() += 1;
        outcome.rows.push(HealthRow {
            idle_for: pane.map_or(0, |p| now_s - p.window_activity),
            screen: screen_state,
            rule,
            window: pane.map(|p| p.window.to_string()).unwrap_or_default(),
            pane: pane.map(|p| p.pane.to_string()).unwrap_or_default(),
            host: Some(host.to_string()),
            ..HealthRow::recorded(&current, now_us)
        });
    }
    // The host's window badges, all in one more exec, only when one changed.
    if !badges.is_empty() {
        tmux.set_window_options(&badges)?;
    }
    Ok(outcome)
}

/// The remote part of the status line: `gpu ⚙1 ✋1`, an unreachable host in red, and the
/// age of what is shown once it is older than three refreshes.
pub fn remote_summary(cache: &RemoteCache, now_ms: i64) -> String {
    let poll_ms = cache.poll_secs.max(1) as i64 * 1000;
    let mut parts = Vec::new();
    for host in &cache.hosts {
        let mut text = String::new();
        if host.not_connected {
            text.push_str(&format!(
                "#[fg=red,bold]{} {}#[default]",
                host.name,
                host.error.as_deref().unwrap_or("not connected")
            ));
        } else if host.reachable {
            text.push_str(&format!("#[fg=cyan]{}#[default]", host.name));
            for (state, symbol, style) in SUMMARY {
                if let Some(n) = host.counts.get(*state).filter(|n| **n > 0) {
                    text.push_str(&format!(" #[{style}]{symbol}{n}#[default]"));
                }
            }
        } else {
            text.push_str(&format!(
                "#[fg=red,bold]{} unreachable#[default]",
                host.name
            ));
        }
        if host.reachable && host.error.is_some() {
            text.push_str(" #[fg=red,bold]error#[default]");
        }
        let age_ms = now_ms - host.answered_ms.max(0);
        if host.answered_ms > 0 && age_ms > 3 * poll_ms {
            text.push_str(&format!(" ({} ago)", crate::duration::age(age_ms / 1000)));
        }
        parts.push(text);
    }
    parts.join(" · ")
}

/// Whether the remote cache is old enough for a new refresh to start.
pub fn remote_is_stale(cache: &RemoteCache, now_ms: i64) -> bool {
    now_ms - cache.refreshed_ms >= cache.poll_secs.max(1) as i64 * 1000
}

#[cfg(test)]
mod tests;
