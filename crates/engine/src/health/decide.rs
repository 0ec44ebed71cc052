//! What a refresh decides from what it saw, and nothing else: [`decide`] takes the tick's
//! [`Observation`], the panes' memory from the tick before, the screen rules and the time,
//! and gives back [`Decisions`] — the words to record, in order, and what to remember,
//! keep and tell with them. It reads no tmux, writes nothing, and asks the two things it
//! cannot be handed up front ([`Lookups`]) only when a decision turns on them, so a test
//! feeds it a screen and a record and reads what it would do (decide/tests.rs, against
//! every captured screen).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::Path;

use super::disagreements::Disagreement;
use super::{
    activity_speaks_since_the_word, agent_replaced_by_shell, disputes, may_lack_rules, said_lately,
    settled_gone, Against, HealthError, Lazy, PaneSeen, ACTIVE_OUTPUT_SECS, CONTRADICTED_MICROS,
    CONTRADICTED_TICKS, DEFAULT_STALL_AFTER_SECS,
};
use crate::agent::rules::{Rules, RulesError};
use crate::state::{AgentState, Session, StateError, StateSource, Status};
use crate::tmux::{Pane, PaneId, Snapshot};

/// What one tick saw of its server and its record.
pub(super) struct Observation {
    /// The listing: every orchestra pane (programs a quiet window was not asked filled in
    /// from the tick before), the options, and every screen read this tick, in the
    /// listing call or the capture after it.
    pub(super) snap: Snapshot,
    /// The local sessions, by id, as the record (or the cache of it) holds them.
    pub(super) sessions: HashMap<String, Session>,
    /// The record's fingerprint the sessions were read at.
    pub(super) fingerprint: String,
    /// Whether the sessions came from the cache (the record's files unchanged).
    pub(super) sessions_cached: bool,
}

impl Observation {
    /// The agents' own panes, in the listing's order: a pane a person split off in the
    /// same window carries the same window option, and is neither the agent nor a second
    /// session.
    pub(super) fn ours(&self) -> impl Iterator<Item = &Pane> {
        agent_panes(&self.snap.panes, &self.sessions)
    }
}

/// The panes of `panes` that are their session's agent pane.
pub(super) fn agent_panes<'a>(
    panes: &'a [Pane],
    sessions: &'a HashMap<String, Session>,
) -> impl Iterator<Item = &'a Pane> {
    panes.iter().filter(|p| {
        sessions
            .get(&p.orchestra_id)
            .is_some_and(|s| s.pane.as_ref().is_none_or(|recorded| *recorded == p.pane))
    })
}

/// What a decision may need beyond the observation, looked up only when it does: on a
/// quiet tick neither is asked, and the first opens the record.
pub(super) trait Lookups {
    /// Whether no turn has run since the agent last started
    /// ([`crate::state::Store::started_since_busy`]): asked only of a screen showing an
    /// error the record does not.
    fn started_since_busy(&mut self, session: &str) -> Result<bool, StateError>;
    /// Whether orchestra is closing the session's window itself (merge, kill): asked only
    /// of a session whose pane is gone.
    fn is_closing(&self, session: &str) -> bool;
}

/// One word to record, in the order they are written.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    /// The agent's state, as a screen, its output activity or tmux says it.
    State {
        session: String,
        state: AgentState,
        source: StateSource,
        detail: String,
    },
    /// The session's status moves on (stalled, running again, a setup that failed).
    Status {
        session: String,
        status: Status,
        detail: String,
    },
    /// The session's pane is gone: its agent exited, and the session is `status` (dead,
    /// or a setup that failed).
    Gone { session: String, status: Status },
}

impl Decision {
    pub(super) fn session(&self) -> &str {
        match self {
            Decision::State { session, .. }
            | Decision::Status { session, .. }
            | Decision::Gone { session, .. } => session,
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::State {
                session,
                state,
                source,
                detail,
            } => write!(f, "{session}: {state} by {source} ({detail})"),
            Decision::Status {
                session,
                status,
                detail,
            } => write!(f, "{session}: status {status} ({detail})"),
            Decision::Gone { session, status } => {
                write!(f, "{session}: pane gone, exited, status {status}")
            }
        }
    }
}

/// Everything one tick decided.
#[derive(Debug, Default)]
pub(super) struct Decisions {
    /// The words to record, in order: the panes' states (ended programs, screens, then
    /// output activity), their statuses, then the sessions whose panes are gone.
    pub(super) changes: Vec<Decision>,
    /// What a waiting screen asks ("run: npm test"), by session: its notification names it.
    pub(super) asks: HashMap<String, String>,
    /// Screens that overruled a hook's word, to keep for a person (the release is the
    /// keeper's to look up).
    pub(super) disagreements: Vec<Disagreement>,
    /// What the next tick remembers of each live pane.
    pub(super) panes: BTreeMap<PaneId, PaneSeen>,
}

/// Decides one tick: see the module's comment. `memory` is the panes as the tick before
/// left them; `rules` are loaded only when a screen is read or an agent may have none.
pub(super) fn decide<F: Fn() -> Result<Rules, RulesError>>(
    seen: &Observation,
    memory: &BTreeMap<PaneId, PaneSeen>,
    rules: &mut Lazy<F>,
    lookups: &mut impl Lookups,
    now_us: i64,
) -> Result<Decisions, HealthError> {
    let ours: Vec<&Pane> = seen.ours().collect();
    let mut out = Decisions {
        changes: programs_ended(seen, &ours),
        panes: memory.clone(),
        ..Decisions::default()
    };
    if !seen.snap.screens.is_empty() {
        let rules = rules.get()?;
        let by_pane: HashMap<&str, &Pane> = ours.iter().map(|p| (p.pane.as_str(), *p)).collect();
        for (pane_id, screen) in &seen.snap.screens {
            let Some(pane) = by_pane.get(pane_id.as_str()) else {
                continue;
            };
            let s = &seen.sessions[&pane.orchestra_id];
            if pane.dead || s.status.in_setup() {
                continue;
            }
            let read = read_screen(s, pane, screen, memory.get(pane_id), rules, lookups, now_us)?;
            out.panes.insert(pane_id.clone(), read.seen);
            out.disagreements.extend(read.kept);
            if let Some(ask) = read.ask {
                out.asks.insert(s.id.clone(), ask);
            }
            out.changes.extend(read.decided);
        }
    }
    for pane in &ours {
        if let Some(seen) = out.panes.get_mut(&pane.pane) {
            seen.activity = pane.window_activity;
        }
    }
    let by_activity = read_activity(seen, &ours, &out.changes, rules, now_us)?;
    out.changes.extend(by_activity);
    // Forget panes that are gone.
    let live: HashSet<&str> = seen.snap.panes.iter().map(|p| p.pane.as_str()).collect();
    out.panes.retain(|pane, _| live.contains(pane.as_str()));
    let statuses = statuses(seen, &ours, &out.changes, now_us);
    out.changes.extend(statuses);
    out.changes.extend(gone(seen, &ours, lookups));
    Ok(out)
}

/// Agents whose program ended: the pane's, or the agent's under a shell left in its place.
/// A window still in setup shows the setup, not an agent.
fn programs_ended(seen: &Observation, ours: &[&Pane]) -> Vec<Decision> {
    let mut ended = Vec::new();
    for pane in ours {
        let s = &seen.sessions[&pane.orchestra_id];
        if s.status.in_setup() {
            continue;
        }
        let detail = if pane.dead {
            "the pane's program ended".to_string()
        } else if agent_replaced_by_shell(s, pane) {
            format!("{} runs instead of the agent", pane.current_command)
        } else {
            continue;
        };
        ended.push(Decision::State {
            session: s.id.clone(),
            state: AgentState::Exited,
            source: StateSource::Tmux,
            detail,
        });
    }
    ended
}

/// What one screen read comes to.
struct Read {
    /// What the next tick remembers of the pane.
    seen: PaneSeen,
    /// The screen's state, when it wins.
    decided: Option<Decision>,
    /// The screen, when it overruled a hook's word.
    kept: Option<Disagreement>,
    /// What the screen asks, when it wins saying waiting.
    ask: Option<String>,
}

/// Reads `screen`, `s`'s agent pane's, against what is recorded and what the pane's
/// screen said on the ticks before (`before`).
fn read_screen(
    s: &Session,
    pane: &Pane,
    screen: &str,
    before: Option<&PaneSeen>,
    rules: &Rules,
    lookups: &mut impl Lookups,
    now_us: i64,
) -> Result<Read, HealthError> {
    let mut verdict = rules.classify(s.agent_kind.as_str(), screen)?;
    // An error on screen is news only of a turn run since the agent started (its hooks
    // said so): a resumed conversation redraws the last one's, error included.
    if verdict.state == AgentState::Error
        && s.state != AgentState::Error
        && lookups.started_since_busy(&s.id)?
    {
        verdict = rules.classify_except(s.agent_kind.as_str(), screen, Some(AgentState::Error))?;
    }
    // An error the screen cannot show (opencode's): its prompt under the error is no word
    // against the hook's.
    if verdict.state == AgentState::Idle
        && s.state_source == StateSource::Hook
        && crate::agent::of(s.agent_kind)
            .screen_cannot_show()
            .contains(&s.state)
    {
        verdict.state = AgentState::Unknown;
    }
    let hook_is_fresh = said_lately(s, now_us);
    let differs = verdict.state != AgentState::Unknown && verdict.state != s.state;
    // A screen disputing a hook's word counts its ticks against that word; it wins after
    // a few, and the screen is kept for a person to judge.
    let against =
        disputes(s, verdict.state).then(|| match before.and_then(|p| p.against.clone()) {
            Some(run) if run.word_at == s.state_at => Against {
                ticks: run.ticks + 1,
                ..run
            },
            _ => Against {
                word_at: s.state_at,
                ticks: 1,
                since: now_us,
            },
        });
    let screen_wins = match &against {
        Some(run) => run.ticks >= CONTRADICTED_TICKS && now_us - run.since >= CONTRADICTED_MICROS,
        None => differs && !hook_is_fresh,
    };
    let held = differs && !screen_wins;
    let mut read = Read {
        seen: PaneSeen {
            // A verdict a word holds back is read again next tick: the screen may not
            // change again (aider back at its prompt after an approved command with no
            // hook to say so; an API error on screen while the Stop hook of a release
            // without StopFailure said idle; a turn going on quietly after a wrong `idle`).
            captured_at: if held { 0 } else { now_us / 1_000_000 },
            activity: pane.window_activity,
            screen_state: verdict.state.to_string(),
            rule: verdict.rule.clone(),
            against: against.clone().filter(|_| !screen_wins),
        },
        decided: None,
        kept: None,
        ask: None,
    };
    if !screen_wins {
        return Ok(read);
    }
    if against.is_some() {
        read.kept = Some(Disagreement {
            session: s.id.clone(),
            label: s.label.clone(),
            agent: s.agent_kind.as_str().to_string(),
            release: None,
            at: now_us,
            hook_state: s.state.to_string(),
            hook_at: s.state_at,
            screen_state: verdict.state.to_string(),
            rule: verdict.rule.clone(),
            screen: screen.to_string(),
        });
    }
    if verdict.state == AgentState::Waiting {
        read.ask = rules
            .asked(s.agent_kind.as_str(), screen)?
            .and_then(|ask| ask.relative_to(Path::new(&s.worktree)).phrase());
    }
    read.decided = Some(Decision::State {
        session: s.id.clone(),
        state: verdict.state,
        source: StateSource::Screen,
        detail: verdict.rule.unwrap_or_default(),
    });
    Ok(read)
}

/// Agents no screen rule can read (a generic program): their state is their output
/// activity, said as such ("activity"), so they are neither "unknown" nor invisible.
/// Not one whose state `decided` holds already.
fn read_activity<F: Fn() -> Result<Rules, RulesError>>(
    seen: &Observation,
    ours: &[&Pane],
    decided: &[Decision],
    rules: &mut Lazy<F>,
    now_us: i64,
) -> Result<Vec<Decision>, HealthError> {
    let now_s = now_us / 1_000_000;
    let mut by_activity = Vec::new();
    for pane in ours {
        let s = &seen.sessions[&pane.orchestra_id];
        if pane.dead
            || s.status == Status::Blocked
            || s.status.in_setup()
            || !may_lack_rules(s.agent_kind)
        {
            continue;
        }
        if rules.get()?.has_rules(s.agent_kind.as_str()) {
            continue;
        }
        let state = if now_s - pane.window_activity <= ACTIVE_OUTPUT_SECS {
            AgentState::Busy
        } else {
            AgentState::Idle
        };
        if state != s.state
            && !said_lately(s, now_us)
            && !decided.iter().any(|d| d.session() == s.id)
            && activity_speaks_since_the_word(s, state, pane.window_activity, now_us)
        {
            by_activity.push(Decision::State {
                session: s.id.clone(),
                state,
                source: StateSource::Activity,
                detail: format!(
                    "output {} ago",
                    crate::duration::age(now_s - pane.window_activity)
                ),
            });
        }
    }
    Ok(by_activity)
}

/// The statuses the panes' sessions move to once `decided` is recorded: stalled while
/// busy and silent too long (running again after), a setup failed when its window's
/// program ended.
fn statuses(
    seen: &Observation,
    ours: &[&Pane],
    decided: &[Decision],
    now_us: i64,
) -> Vec<Decision> {
    let now_s = now_us / 1_000_000;
    let stall_after = seen
        .snap
        .option(crate::tmux::options::STALL_AFTER)
        .and_then(crate::duration::parse_secs)
        .unwrap_or(DEFAULT_STALL_AFTER_SECS);
    let mut statuses = Vec::new();
    for pane in ours {
        let s = &seen.sessions[&pane.orchestra_id];
        let state = decided_state(decided, s);
        let silent = now_s - pane.window_activity > stall_after;
        let next = match s.status {
            Status::Running if state == AgentState::Busy && silent => Some(Status::Stalled),
            Status::Stalled if !(state == AgentState::Busy && silent) => Some(Status::Running),
            _ => None,
        };
        if let Some(status) = next {
            statuses.push(Decision::Status {
                session: s.id.clone(),
                status,
                detail: format!(
                    "no output for {}",
                    crate::duration::age(now_s - pane.window_activity)
                ),
            });
        }
    }
    // The setup's window process died.
    for pane in ours {
        let s = &seen.sessions[&pane.orchestra_id];
        if pane.dead && s.status == Status::Setup {
            statuses.push(Decision::Status {
                session: s.id.clone(),
                status: Status::SetupFailed,
                detail: "the setup's window process ended before the agent started".into(),
            });
        }
    }
    statuses
}

/// The sessions of this server whose pane is gone and not recorded so yet, by id.
fn gone(seen: &Observation, ours: &[&Pane], lookups: &impl Lookups) -> Vec<Decision> {
    let present: HashSet<&str> = ours.iter().map(|p| p.orchestra_id.as_str()).collect();
    let mut gone: Vec<&Session> = seen
        .sessions
        .values()
        .filter(|s| s.tmux_socket.as_deref() == Some(seen.snap.socket_path.as_str()))
        .filter(|s| !present.contains(s.id.as_str()) && !settled_gone(s))
        // A window orchestra closes itself (merge, kill) is no agent that exited.
        .filter(|s| !lookups.is_closing(&s.id))
        .collect();
    gone.sort_by(|a, b| a.id.cmp(&b.id));
    gone.into_iter()
        .map(|s| Decision::Gone {
            session: s.id.clone(),
            // A session that never got past its setup has no agent to be dead: its setup
            // failed, and `restart` runs it again (in a new window).
            status: if s.status.in_setup() {
                Status::SetupFailed
            } else {
                Status::Dead
            },
        })
        .collect()
}

/// `s`'s state once `changes` are recorded: the last state decided for it, else its own.
fn decided_state(changes: &[Decision], s: &Session) -> AgentState {
    changes
        .iter()
        .rev()
        .find_map(|d| match d {
            Decision::State { session, state, .. } if *session == s.id => Some(*state),
            _ => None,
        })
        .unwrap_or(s.state)
}

#[cfg(test)]
mod tests;
