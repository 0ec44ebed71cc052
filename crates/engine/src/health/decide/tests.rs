//! [`decide`] against every captured screen and against cases that try to break its
//! rules, with no tmux, no record and a fixed clock. What each case decides is kept as
//! text in tests/fixtures/decide/ (`ORCHESTRA_BLESS=1 cargo test -p orchestra-engine --
//! health::decide` rewrites the files), so a change of what a tick would do shows up in
//! review, screen by screen.

use std::path::PathBuf;

use super::*;

/// The tick's clock: fixed, so the snapshots are.
const NOW_US: i64 = 1_800_000_000_000_000;
const NOW_S: i64 = NOW_US / 1_000_000;
const SOCKET: &str = "/fake/tmux.sock";

fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf()
}

fn screen(path: &str) -> String {
    let file = root().join("tests/fixtures/screens").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// A running session `id` of `kind` in pane `%n`, whose state `source` said `secs_ago`.
fn session(n: u32, id: &str, kind: &str, state: AgentState, source: StateSource) -> Session {
    Session {
        id: id.into(),
        repo: "/work/repo".into(),
        label: format!("s{n}"),
        branch: format!("orchestra/s{n}"),
        base_commit: "0".repeat(40),
        base_branch: Some("main".into()),
        worktree: "/work/wt".into(),
        host: None,
        tmux_socket: Some(SOCKET.into()),
        tmux_session: Some("work".into()),
        window: Some(format!("@{n}").parse().expect("a window id")),
        pane: Some(PaneId::parse(&format!("%{n}")).expect("a pane id")),
        agent_kind: crate::agent::AgentKind::parse(kind).expect("a kind"),
        agent_argv: vec![kind.into()],
        agent_uuid: None,
        port: None,
        prompt: None,
        status: Status::Running,
        state,
        retry_count: 0,
        created_at: NOW_S - 3600,
        updated_at: NOW_S - 60,
        state_at: NOW_US - 60_000_000,
        state_source: source,
        manifest: None,
        owns_tmux_session: false,
        sandbox: None,
        yolo: false,
    }
}

fn said(mut s: Session, secs_ago: f64) -> Session {
    s.state_at = NOW_US - (secs_ago * 1_000_000.0) as i64;
    s
}

/// `s`'s pane, its window last printing at `activity`.
fn pane(s: &Session, activity: i64) -> Pane {
    Pane {
        pane: s.pane.clone().expect("a pane"),
        window: s.window.clone().expect("a window"),
        session_name: String::new(),
        dead: false,
        current_command: s.agent_kind.as_str().into(),
        window_activity: activity,
        orchestra_id: s.id.clone(),
        orchestra_state: s.state.to_string(),
        orchestra_budget: String::new(),
    }
}

/// The record as a test tells it: what [`Lookups`] answer, and what was asked.
#[derive(Default)]
struct Record {
    /// Sessions that have run no turn since they started.
    fresh_start: HashSet<String>,
    /// Sessions orchestra is closing itself.
    closing: HashSet<String>,
    asked: Vec<String>,
}

impl Lookups for Record {
    fn started_since_busy(&mut self, session: &str) -> Result<bool, StateError> {
        self.asked.push(format!("started_since_busy({session})"));
        Ok(self.fresh_start.contains(session))
    }

    fn is_closing(&self, session: &str) -> bool {
        self.closing.contains(session)
    }
}

/// One tick to decide: what it saw, what the panes remembered, what the record says.
#[derive(Default)]
struct Case {
    sessions: Vec<Session>,
    panes: Vec<Pane>,
    screens: Vec<(PaneId, String)>,
    memory: BTreeMap<PaneId, PaneSeen>,
    options: Vec<(String, String)>,
    record: Record,
}

impl Case {
    /// One session in its pane, its screen read this tick (`None`: not read).
    fn one(s: Session, activity: i64, screen: Option<String>) -> Case {
        let pane = pane(&s, activity);
        Case {
            screens: screen
                .map(|text| (pane.pane.clone(), text))
                .into_iter()
                .collect(),
            panes: vec![pane],
            sessions: vec![s],
            ..Case::default()
        }
    }

    fn decide(&mut self) -> Decisions {
        let seen = Observation {
            snap: Snapshot {
                socket_path: SOCKET.into(),
                options: self.options.clone(),
                panes: self.panes.clone(),
                screens: self.screens.clone(),
            },
            sessions: self
                .sessions
                .iter()
                .map(|s| (s.id.clone(), s.clone()))
                .collect(),
            fingerprint: String::new(),
            sessions_cached: false,
        };
        let mut rules = Lazy::new(|| Ok(Rules::built_in()));
        decide(&seen, &self.memory, &mut rules, &mut self.record, NOW_US).expect("decided")
    }
}

/// A time as the snapshots show it: relative to the tick.
fn ago(at_us: i64) -> String {
    let ms = (NOW_US - at_us) / 1000;
    if ms % 1000 == 0 {
        format!("{}s ago", ms / 1000)
    } else {
        format!("{}.{:03}s ago", ms / 1000, ms % 1000)
    }
}

fn remembered(seen: &PaneSeen) -> String {
    let mut text = format!(
        "screen {} ({})",
        seen.screen_state,
        seen.rule.as_deref().unwrap_or("no rule")
    );
    text.push_str(match seen.captured_at {
        0 => ", read again next tick",
        at if at == NOW_S => ", captured now",
        _ => ", captured before",
    });
    if let Some(run) = &seen.against {
        text.push_str(&format!(
            ", against the word said {}: {} tick(s) since {}",
            ago(run.word_at),
            run.ticks,
            ago(run.since)
        ));
    }
    text
}

fn kept(d: &Disagreement) -> String {
    format!(
        "{}: the hook's {} (said {}) against the screen's {} ({})",
        d.session,
        d.hook_state,
        ago(d.hook_at),
        d.screen_state,
        d.rule.as_deref().unwrap_or("no rule")
    )
}

/// Everything a case decided, a part a line.
fn render(case: &Case, d: &Decisions) -> String {
    let mut out = String::new();
    let mut part = |title: &str, lines: Vec<String>| {
        out.push_str(title);
        out.push_str(":\n");
        if lines.is_empty() {
            out.push_str("  (none)\n");
        }
        for line in lines {
            out.push_str(&format!("  {line}\n"));
        }
    };
    part(
        "recorded",
        d.changes.iter().map(ToString::to_string).collect(),
    );
    let mut asks: Vec<String> = d.asks.iter().map(|(s, a)| format!("{s}: {a}")).collect();
    asks.sort();
    part("asks", asks);
    part("kept", d.disagreements.iter().map(kept).collect());
    part(
        "remembered",
        d.panes
            .iter()
            .map(|(p, seen)| format!("{p}: {}", remembered(seen)))
            .collect(),
    );
    part("looked up", case.record.asked.clone());
    out
}

/// Compares each (file name, text) with its snapshot in tests/fixtures/decide/`folder`,
/// or writes them all under `ORCHESTRA_BLESS=1` (dropping files no case makes any more).
fn check_snapshots(folder: &str, made: &BTreeMap<String, String>) {
    let dir = root().join("tests/fixtures/decide").join(folder);
    let bless = std::env::var_os("ORCHESTRA_BLESS").is_some_and(|v| v == "1");
    let mut problems = Vec::new();
    if bless {
        std::fs::create_dir_all(&dir).expect("make the snapshot folder");
    }
    for (name, text) in made {
        let file = dir.join(name);
        let kept = std::fs::read_to_string(&file).ok();
        if kept.as_deref() == Some(text.as_str()) {
            continue;
        }
        if bless {
            std::fs::write(&file, text).expect("write a snapshot");
            continue;
        }
        let Some(kept) = kept else {
            problems.push(format!("{folder}/{name}: no snapshot"));
            continue;
        };
        let (line, was, now) = kept
            .lines()
            .map(Some)
            .chain(std::iter::repeat(None))
            .zip(text.lines().map(Some).chain(std::iter::repeat(None)))
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map_or((0, "(same lines, other line ends)", ""), |(i, (a, b))| {
                (i + 1, a.unwrap_or("(end)"), b.unwrap_or("(end)"))
            });
        problems.push(format!(
            "{folder}/{name} differs at line {line}:\n      kept: {was}\n      now:  {now}"
        ));
    }
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".txt") && !made.contains_key(&name) {
            if bless {
                std::fs::remove_file(entry.path()).expect("remove a stale snapshot");
            } else {
                problems.push(format!("{folder}/{name}: no case makes it any more"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "decide's snapshots are out of date (review the change, then `ORCHESTRA_BLESS=1 cargo test -p orchestra-engine -- health::decide` rewrites them):\n  {}",
        problems.join("\n  ")
    );
}

/// The records every captured screen is decided against.
const RECORDS: &[(&str, &str)] = &[
    (
        "no-word",
        "recorded unknown by its screen a minute ago (no hook word): the screen says",
    ),
    (
        "hook-said-busy-10s-ago",
        "a hook said busy 10 s ago (past its grace), first tick of a screen saying otherwise",
    ),
];

fn record_for(name: &str, n: u32, id: &str, kind: &str) -> Session {
    match name {
        "no-word" => said(
            session(n, id, kind, AgentState::Unknown, StateSource::Screen),
            60.0,
        ),
        _ => said(
            session(n, id, kind, AgentState::Busy, StateSource::Hook),
            10.0,
        ),
    }
}

/// Every plain capture under tests/fixtures/screens/<agent>/<release>/ (what a refresh
/// reads: `capture-pane -p`), each in a pane of its own printing a second ago, decided in
/// one tick per record: a line per screen, what it read and what was decided.
#[test]
fn every_captured_screen_is_decided_as_its_snapshot_says() {
    let screens = root().join("tests/fixtures/screens");
    let mut made: BTreeMap<String, String> = BTreeMap::new();
    let mut agents: Vec<PathBuf> = std::fs::read_dir(&screens)
        .expect("the screens")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    agents.sort();
    for agent in agents {
        let kind = agent.file_name().unwrap().to_string_lossy().into_owned();
        let mut releases: Vec<PathBuf> = std::fs::read_dir(&agent)
            .expect("an agent's releases")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        releases.sort();
        for release in releases {
            let version = release.file_name().unwrap().to_string_lossy().into_owned();
            let mut files: Vec<String> = std::fs::read_dir(&release)
                .expect("a release's screens")
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".txt"))
                .collect();
            files.sort();
            assert!(!files.is_empty(), "{kind}/{version} has no screens");
            for (record, about) in RECORDS {
                let mut case = Case::default();
                for (i, name) in files.iter().enumerate() {
                    let n = i as u32 + 1;
                    let s = record_for(record, n, name, &kind);
                    let p = pane(&s, NOW_S - 1);
                    case.screens.push((
                        p.pane.clone(),
                        std::fs::read_to_string(release.join(name)).expect("a screen"),
                    ));
                    case.panes.push(p);
                    case.sessions.push(s);
                }
                let d = case.decide();
                let mut text = format!("{kind} {version}, each screen {about}\n\n");
                for (s, (pane, _)) in case.sessions.iter().zip(&case.screens) {
                    let seen = d.panes.get(pane).map_or("not read".into(), remembered);
                    let mut words: Vec<String> = d
                        .changes
                        .iter()
                        .filter(|c| c.session() == s.id)
                        .map(|c| {
                            let line = c.to_string();
                            line[s.id.len() + 2..].to_string()
                        })
                        .collect();
                    if let Some(ask) = d.asks.get(&s.id) {
                        words.push(format!("asks {ask:?}"));
                    }
                    if d.disagreements.iter().any(|k| k.session == s.id) {
                        words.push("kept for a person".into());
                    }
                    let decided = if words.is_empty() {
                        "nothing".to_string()
                    } else {
                        words.join("; ")
                    };
                    text.push_str(&format!("{}: {seen}\n  → {decided}\n", s.id));
                }
                text.push_str(&format!(
                    "\nlooked up: {}\n",
                    if case.record.asked.is_empty() {
                        "nothing".to_string()
                    } else {
                        case.record.asked.len().to_string()
                    }
                ));
                made.insert(format!("{kind}-{version}-{record}.txt"), text);
            }
        }
    }
    check_snapshots("screens", &made);
}

fn claude(n: u32, state: AgentState, source: StateSource, secs_ago: f64) -> Session {
    said(
        session(n, &format!("id-{n}"), "claude", state, source),
        secs_ago,
    )
}

/// A hook said busy 10 s ago, the screen shows the prompt, and the pane's memory holds
/// the run of `ticks` the screen disputed a word said at `word_at` (the hook's, without
/// one), begun `since_secs_ago`.
fn disputed(ticks: u32, since_secs_ago: f64, word_at: Option<i64>) -> Case {
    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 10.0),
        NOW_S,
        Some(screen("claude/2.1.332/idle-after-turn.txt")),
    );
    let s = &case.sessions[0];
    let pane = s.pane.clone().expect("a pane");
    let run = Against {
        word_at: word_at.unwrap_or(s.state_at),
        ticks,
        since: NOW_US - (since_secs_ago * 1_000_000.0) as i64,
    };
    case.memory.insert(
        pane,
        PaneSeen {
            captured_at: 0,
            activity: NOW_S - 1,
            screen_state: "idle".into(),
            rule: None,
            against: Some(run),
        },
    );
    case
}

/// The cases that try to break the rules, each with what it is about.
fn cases() -> Vec<(&'static str, &'static str, Case)> {
    let idle = || Some(screen("claude/2.1.332/idle-after-turn.txt"));
    let busy = || Some(screen("claude/2.1.332/busy-streaming.txt"));
    let mut cases = Vec::new();
    let mut add = |name, about, case| cases.push((name, about, case));

    add(
        "fresh-hook-word-holds-against-the-screen",
        "a hook said busy 1 s ago; the screen already shows the prompt",
        Case::one(
            claude(1, AgentState::Busy, StateSource::Hook, 1.0),
            NOW_S,
            idle(),
        ),
    );
    add(
        "disputed-second-tick-holds",
        "the screen disputed the hook's busy on one tick 3 s ago: a second is not enough",
        disputed(1, 3.0, None),
    );
    add(
        "disputed-third-tick-within-the-grace-holds",
        "a third tick disputing the hook's busy, but the run began only 1 s ago",
        disputed(2, 1.0, None),
    );
    add(
        "disputed-third-tick-after-the-grace-screen-wins",
        "a third tick disputing the hook's busy, the run begun 2.5 s ago: the screen wins and is kept",
        disputed(2, 2.5, None),
    );
    add(
        "a-new-word-starts-a-new-run",
        "the screen disputed an older word five ticks; the hook's busy since starts again at one",
        disputed(5, 30.0, Some(NOW_US - 40_000_000)),
    );
    add(
        "hook-word-the-screen-agrees-with",
        "a hook said busy 10 s ago and the screen shows the turn going on",
        Case::one(
            claude(1, AgentState::Busy, StateSource::Hook, 10.0),
            NOW_S,
            busy(),
        ),
    );

    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 1.0),
        NOW_S - 5,
        busy(),
    );
    case.panes[0].dead = true;
    add(
        "dead-pane",
        "the pane's program ended (its last screen still read): exited, whatever the hook said",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Idle, StateSource::Hook, 30.0),
        NOW_S,
        None,
    );
    case.panes[0].current_command = "bash".into();
    add(
        "a-shell-replaces-the-agent",
        "bash is the pane's program where claude ran",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Idle, StateSource::Hook, 30.0),
        NOW_S,
        None,
    );
    case.panes[0].current_command = "-zsh".into();
    add(
        "a-login-shell-replaces-the-agent",
        "a login shell (-zsh) is the pane's program where claude ran",
        case,
    );
    let mut s = claude(1, AgentState::Idle, StateSource::Screen, 30.0);
    s.agent_argv = vec!["/bin/bash".into(), "-lc".into(), "claude".into()];
    let mut case = Case::one(s, NOW_S - 30, None);
    case.panes[0].current_command = "bash".into();
    add(
        "an-agent-started-by-a-shell-is-no-shell-replacing-it",
        "the session's program is bash itself, and bash runs",
        case,
    );

    let generic =
        |state, source, secs_ago| said(session(1, "id-1", "generic", state, source), secs_ago);
    add(
        "a-generic-agent-printing-is-busy",
        "a generic agent, recorded idle by its activity, printed a second ago",
        Case::one(
            generic(AgentState::Idle, StateSource::Activity, 60.0),
            NOW_S - 1,
            Some("compiling…".into()),
        ),
    );
    add(
        "a-generic-agent-quiet-is-idle",
        "a generic agent, recorded busy by its activity, silent for 10 s",
        Case::one(
            generic(AgentState::Busy, StateSource::Activity, 60.0),
            NOW_S - 10,
            None,
        ),
    );
    add(
        "a-generic-agents-output-older-than-the-word-is-no-word",
        "`orchestra event waiting` 3 s ago; the shell's prompt drawn just before it",
        Case::one(
            generic(AgentState::Waiting, StateSource::Hook, 3.0),
            NOW_S - 4,
            None,
        ),
    );
    add(
        "a-generic-agent-printing-after-the-word-is-busy",
        "`orchestra event waiting` 3 s ago; output since",
        Case::one(
            generic(AgentState::Waiting, StateSource::Hook, 3.0),
            NOW_S,
            None,
        ),
    );
    let mut s = generic(AgentState::Unknown, StateSource::Tmux, 60.0);
    s.status = Status::Blocked;
    add(
        "a-blocked-generic-agent-is-not-read-by-activity",
        "a generic session waiting for its upstreams, its window printing",
        Case::one(s, NOW_S, None),
    );

    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 30.0),
        NOW_S,
        None,
    );
    case.panes.clear();
    add(
        "a-gone-pane",
        "the session's pane is not on its server any more",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 30.0),
        NOW_S,
        None,
    );
    case.panes.clear();
    case.record.closing.insert("id-1".into());
    add(
        "a-gone-pane-orchestra-is-closing",
        "the pane is gone while merge or kill holds the session's closing lock",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 30.0),
        NOW_S,
        None,
    );
    case.panes.clear();
    case.sessions[0].tmux_socket = Some("/another/server".into());
    add(
        "a-pane-on-another-server-is-not-gone",
        "the session lives on another tmux server than the one listed",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Unknown, StateSource::Tmux, 30.0),
        NOW_S,
        None,
    );
    case.panes.clear();
    case.sessions[0].status = Status::Setup;
    add(
        "a-gone-pane-in-setup-fails-the-setup",
        "the pane of a session still in its setup is gone",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Unknown, StateSource::Tmux, 30.0),
        NOW_S,
        busy(),
    );
    case.sessions[0].status = Status::Setup;
    case.panes[0].dead = true;
    add(
        "a-setup-window-that-ended-fails-the-setup",
        "the window of a session in setup shows a dead program (its screen is the setup's)",
        case,
    );
    let mut case = Case::one(
        claude(1, AgentState::Idle, StateSource::Screen, 30.0),
        NOW_S - 30,
        idle(),
    );
    let mut split = pane(&case.sessions[0], NOW_S);
    split.pane = PaneId::parse("%9").expect("a pane id");
    split.current_command = "bash".into();
    case.screens
        .push((split.pane.clone(), busy().unwrap_or_default()));
    case.panes.push(split);
    add(
        "a-pane-split-off-the-agents-window",
        "a person split the window: %9 carries the session's id and prints a busy screen",
        case,
    );

    add(
        "busy-and-silent-stalls",
        "a hook said busy 20 minutes ago and the window has printed nothing for 11",
        Case::one(
            claude(1, AgentState::Busy, StateSource::Hook, 1200.0),
            NOW_S - 660,
            None,
        ),
    );
    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 1200.0),
        NOW_S,
        None,
    );
    case.sessions[0].status = Status::Stalled;
    add(
        "a-stalled-session-that-prints-runs-again",
        "a stalled session's window printed a moment ago",
        case,
    );
    add(
        "a-screen-that-ends-the-turn-of-a-silent-session-stalls-nothing",
        "recorded busy by its screen 20 minutes ago, silent for 11, the screen now idle",
        Case::one(
            claude(1, AgentState::Busy, StateSource::Screen, 1200.0),
            NOW_S - 660,
            idle(),
        ),
    );
    let mut case = Case::one(
        claude(1, AgentState::Busy, StateSource::Hook, 1200.0),
        NOW_S - 100,
        None,
    );
    case.options
        .push(("@orchestra-stall-after".into(), "90s".into()));
    add(
        "the-stall-after-option",
        "@orchestra-stall-after 90s, a hook's busy, 100 s of silence",
        case,
    );

    let error = || Some(screen("claude/2.1.332/error-api-400.txt"));
    let mut case = Case::one(
        claude(1, AgentState::Idle, StateSource::Hook, 30.0),
        NOW_S,
        error(),
    );
    case.record.fresh_start.insert("id-1".into());
    add(
        "a-resumed-conversations-old-error-is-no-news",
        "claude resumed (no turn since its SessionStart) and redraws an API error",
        case,
    );
    add(
        "an-error-of-a-turn-of-this-run",
        "an API error on screen after a turn of this run",
        Case::one(
            claude(1, AgentState::Idle, StateSource::Hook, 30.0),
            NOW_S,
            error(),
        ),
    );
    add(
        "an-error-the-record-knows-asks-nothing",
        "recorded error already; the error still on screen",
        Case::one(
            claude(1, AgentState::Error, StateSource::Hook, 30.0),
            NOW_S,
            error(),
        ),
    );
    add(
        "a-waiting-screen-says-what-it-asks",
        "recorded busy by its screen; a permission menu for a command is on screen",
        Case::one(
            claude(1, AgentState::Busy, StateSource::Screen, 30.0),
            NOW_S,
            Some(screen("claude/2.1.332/waiting-bash-menu.txt")),
        ),
    );
    add(
        "an-error-opencodes-screen-cannot-show",
        "opencode's hook said error; its screen shows the prompt under it",
        Case::one(
            said(
                session(1, "id-1", "opencode", AgentState::Error, StateSource::Hook),
                10.0,
            ),
            NOW_S,
            Some(screen("opencode/1.18.33/idle-after-api-error@120x40.txt")),
        ),
    );
    add(
        "a-word-orchestra-said-after-an-answer-holds",
        "orchestra answered a menu 1 s ago (busy, by approve); the menu is still drawn",
        Case::one(
            claude(1, AgentState::Busy, StateSource::Approve, 1.0),
            NOW_S,
            Some(screen("claude/2.1.332/waiting-bash-menu.txt")),
        ),
    );
    add(
        "a-word-from-the-far-future-is-no-fresh-word",
        "a hook's idle stamped an hour ahead (the clock stepped back); the screen shows a turn",
        Case::one(
            claude(1, AgentState::Idle, StateSource::Hook, -3600.0),
            NOW_S,
            busy(),
        ),
    );
    cases
}

/// Each case that tries to break a rule, decided: kept in tests/fixtures/decide/cases/.
#[test]
fn the_rules_hold_against_the_cases_that_try_to_break_them() {
    let mut made = BTreeMap::new();
    for (name, about, mut case) in cases() {
        let d = case.decide();
        made.insert(
            format!("{name}.txt"),
            format!("{about}\n\n{}", render(&case, &d)),
        );
    }
    check_snapshots("cases", &made);
}

/// The snapshots are read by a person; these few say in code what they must show, so a
/// blessed snapshot of a broken rule still fails.
#[test]
fn the_cases_decide_what_the_rules_say() {
    let decided: BTreeMap<&str, Decisions> = cases()
        .into_iter()
        .map(|(name, _, mut case)| (name, case.decide()))
        .collect();
    let states = |name: &str| -> Vec<(AgentState, StateSource)> {
        decided[name]
            .changes
            .iter()
            .filter_map(|d| match d {
                Decision::State { state, source, .. } => Some((*state, *source)),
                _ => None,
            })
            .collect()
    };
    assert!(states("fresh-hook-word-holds-against-the-screen").is_empty());
    assert!(states("disputed-second-tick-holds").is_empty());
    assert!(states("disputed-third-tick-within-the-grace-holds").is_empty());
    assert_eq!(
        states("disputed-third-tick-after-the-grace-screen-wins"),
        [(AgentState::Idle, StateSource::Screen)]
    );
    assert_eq!(
        decided["disputed-third-tick-after-the-grace-screen-wins"]
            .disagreements
            .len(),
        1
    );
    assert_eq!(
        states("dead-pane"),
        [(AgentState::Exited, StateSource::Tmux)]
    );
    assert_eq!(
        states("a-shell-replaces-the-agent"),
        [(AgentState::Exited, StateSource::Tmux)]
    );
    assert_eq!(
        states("a-generic-agent-printing-is-busy"),
        [(AgentState::Busy, StateSource::Activity)]
    );
    assert!(states("a-generic-agents-output-older-than-the-word-is-no-word").is_empty());
    assert_eq!(
        decided["a-gone-pane"].changes,
        [Decision::Gone {
            session: "id-1".into(),
            status: Status::Dead
        }]
    );
    assert!(decided["a-gone-pane-orchestra-is-closing"]
        .changes
        .is_empty());
    assert!(matches!(
        decided["busy-and-silent-stalls"].changes.as_slice(),
        [Decision::Status {
            status: Status::Stalled,
            ..
        }]
    ));
    assert_eq!(
        states("a-screen-that-ends-the-turn-of-a-silent-session-stalls-nothing"),
        [(AgentState::Idle, StateSource::Screen)]
    );
    assert!(states("a-resumed-conversations-old-error-is-no-news").is_empty());
    assert_eq!(
        states("an-error-of-a-turn-of-this-run"),
        [(AgentState::Error, StateSource::Screen)]
    );
    assert!(decided["a-waiting-screen-says-what-it-asks"]
        .asks
        .contains_key("id-1"));
    assert!(states("an-error-opencodes-screen-cannot-show").is_empty());
    assert!(states("a-word-orchestra-said-after-an-answer-holds").is_empty());
}
