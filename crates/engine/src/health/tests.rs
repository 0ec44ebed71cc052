//! The refresh engine's decisions over a fake tmux. The fake stands in for tmux because
//! these are unit tests of parsing and deciding (what a tick asks, what it captures, what
//! it records and writes back); the integration tests (tests/it/health.rs, status.rs) run
//! the same paths against a real tmux server.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::process::ProcessError;
use crate::state::StateSource;
use crate::tmux::printed;
use crate::tmux::{TmuxError, Transport};

const SOCKET: &str = "/fake/tmux.sock";
const BUSY: &str =
    include_str!("../../../../tests/fixtures/screens/claude/2.1.332/busy-streaming.txt");
const IDLE: &str =
    include_str!("../../../../tests/fixtures/screens/claude/2.1.332/idle-after-turn.txt");

/// One pane of the fake server.
#[derive(Clone)]
struct FakePane {
    pane: String,
    window: String,
    orchestra_id: String,
    /// The window option `@orchestra_state`.
    badge: String,
    command: String,
    activity: i64,
    dead: bool,
    screen: String,
}

/// What the fake server holds, and what it was asked.
#[derive(Default)]
struct World {
    panes: Vec<FakePane>,
    /// Global options (`@orchestra-symbol-busy`…).
    options: BTreeMap<String, String>,
    /// Every call, as the words tmux would get.
    calls: Vec<Vec<String>>,
    /// Panes whose screen was sent back (by `capture-pane`, plain or inside `if-shell`).
    captured: Vec<String>,
    /// Panes whose listing carried the command condition.
    asked_commands: RefCell<Vec<String>>,
    /// The answer to every call instead of the world (no server, a stalled server).
    fail: Option<fn() -> TmuxError>,
}

/// A tmux that understands the few commands a refresh sends, joined by `;` as
/// [`Tmux::batch`] joins them.
struct Fake(Rc<RefCell<World>>);

impl Transport for Fake {
    fn tmux(&self, args: &[String]) -> Result<String, TmuxError> {
        self.tmux_with_input(args, None)
    }

    fn tmux_with_input(&self, args: &[String], _input: Option<&[u8]>) -> Result<String, TmuxError> {
        let mut world = self.0.borrow_mut();
        world.calls.push(args.to_vec());
        if let Some(fail) = world.fail {
            return Err(fail());
        }
        let mut out = String::new();
        for command in args.split(|w| w == ";") {
            out.push_str(&world.run(command));
        }
        Ok(out)
    }

    fn command_prefix(&self) -> Vec<String> {
        vec!["tmux".into()]
    }
}

impl World {
    fn run(&mut self, command: &[String]) -> String {
        let words: Vec<&str> = command.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["list-panes", "-a", "-f", _, "-F", format] => self
                .panes
                .iter()
                .filter(|p| !p.orchestra_id.is_empty())
                .map(|p| format!("{}\n", self.expand(format, Some(p))))
                .collect(),
            ["display-message", "-p", format] => format!("{}\n", self.expand(format, None)),
            ["if-shell", "-F", "-t", pane, condition, then] => {
                let since: i64 = condition
                    .trim_start_matches("#{e|>=:#{window_activity},")
                    .trim_end_matches('}')
                    .parse()
                    .expect("the condition's second");
                let activity = self.pane(pane).activity;
                if activity < since {
                    return String::new();
                }
                let inner: Vec<String> = then.split_whitespace().map(str::to_string).collect();
                let mut out = String::new();
                for command in inner.split(|w| w == ";") {
                    out.push_str(&self.run(command));
                }
                out
            }
            ["capture-pane", "-p", "-J", "-t", pane] => {
                self.captured.push(pane.to_string());
                let screen = self.pane(pane).screen.clone();
                if screen.ends_with('\n') {
                    screen
                } else {
                    format!("{screen}\n")
                }
            }
            ["set-option", "-w", "-t", window, "@orchestra_state", value] => {
                for p in self.panes.iter_mut().filter(|p| p.window == *window) {
                    p.badge = value.to_string();
                }
                String::new()
            }
            // No client is attached to the fake server: nobody looks at any window.
            ["list-clients", "-F", _] => String::new(),
            other => panic!("the fake tmux does not know {other:?}"),
        }
    }

    fn pane(&self, id: &str) -> &FakePane {
        self.panes
            .iter()
            .find(|p| p.pane == id)
            .unwrap_or_else(|| panic!("no pane {id}"))
    }

    /// Expands the `#{name}` of a format for `pane` (or the server, without one).
    fn expand(&self, format: &str, pane: Option<&FakePane>) -> String {
        // The one conditional a listing uses: the command of a window active since.
        const ASKED_SINCE: &str = "#{?#{e|>=:#{window_activity},";
        let mut out = String::new();
        let mut rest = format;
        while let Some(start) = rest.find("#{") {
            if rest[start..].starts_with(ASKED_SINCE) {
                out.push_str(&rest[..start]);
                let tail = &rest[start + ASKED_SINCE.len()..];
                let (since, tail) = tail.split_once('}').expect("the condition's end");
                let tail = tail
                    .strip_prefix(&format!(",{},}}", printed::field("pane_current_command")))
                    .expect("the command, or nothing");
                let p = pane.expect("a pane's format");
                if p.activity >= since.parse::<i64>().expect("a second") {
                    out.push_str(&printed::escaped(&p.command));
                }
                self.asked_commands.borrow_mut().push(p.pane.clone());
                rest = tail;
                continue;
            }
            out.push_str(&rest[..start]);
            // A value asked escaped (every text field).
            if let Some((name, len)) = printed::field_at(&rest[start..]) {
                out.push_str(&printed::escaped(&self.value(name, pane)));
                rest = &rest[start + len..];
                continue;
            }
            let end = rest[start..].find('}').expect("a closed format") + start;
            out.push_str(&self.value(&rest[start + 2..end], pane));
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out
    }

    fn value(&self, name: &str, pane: Option<&FakePane>) -> String {
        if name == "socket_path" {
            return SOCKET.into();
        }
        if let Some(value) = self.options.get(name) {
            return value.clone();
        }
        let Some(p) = pane else {
            return String::new();
        };
        match name {
            "pane_id" => p.pane.clone(),
            "window_id" => p.window.clone(),
            "pane_dead" => if p.dead { "1" } else { "0" }.into(),
            "window_activity" => p.activity.to_string(),
            "@orchestra_id" => p.orchestra_id.clone(),
            "@orchestra_state" => p.badge.clone(),
            "@orchestra_budget" => String::new(),
            "pane_current_command" => p.command.clone(),
            _ => String::new(),
        }
    }
}

/// A home with a record, and a tmux made of a fake server.
struct Bench {
    home: tempfile::TempDir,
    world: Rc<RefCell<World>>,
    tmux: Tmux,
}

const KEY: &str = "fake";

impl Bench {
    fn new() -> Bench {
        let world = Rc::new(RefCell::new(World::default()));
        let tmux = Tmux::with_transport(Box::new(Fake(world.clone())), false);
        Bench {
            home: tempfile::tempdir().unwrap(),
            world,
            tmux,
        }
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    fn store(&self) -> Store {
        Store::open(self.home()).unwrap()
    }

    /// A running session of `kind` in pane `%N` of window `@N`, recorded as `state`.
    fn session(&self, n: u32, kind: &str, state: AgentState) -> Session {
        let now_us = now_micros();
        let s = Session {
            id: format!("id-{n}"),
            repo: "/work/repo".into(),
            label: format!("s{n}"),
            branch: format!("orchestra/s{n}"),
            base_commit: "0".repeat(40),
            base_branch: Some("main".into()),
            worktree: format!("/work/wt/s{n}"),
            host: None,
            tmux_socket: Some(SOCKET.into()),
            tmux_session: Some("work".into()),
            window: Some(format!("@{n}").parse().unwrap()),
            pane: Some(pane_id(&format!("%{n}"))),
            agent_kind: crate::agent::AgentKind::parse(kind).unwrap(),
            agent_argv: vec![kind.into()],
            agent_uuid: None,
            port: None,
            prompt: None,
            status: Status::Running,
            state,
            retry_count: 0,
            created_at: now_us / 1_000_000 - 60,
            updated_at: now_us / 1_000_000 - 60,
            state_at: now_us - 60_000_000,
            state_source: StateSource::Screen,
            manifest: None,
            owns_tmux_session: false,
            sandbox: None,
            yolo: false,
        };
        self.store().insert_session(&s).unwrap();
        s
    }

    /// The session's pane on the fake server.
    fn pane(&self, s: &Session, screen: &str, activity: i64) {
        self.world.borrow_mut().panes.push(FakePane {
            pane: s.pane.clone().unwrap().to_string(),
            window: s.window.clone().unwrap().to_string(),
            orchestra_id: s.id.clone(),
            badge: s.state.to_string(),
            command: s.agent_kind.as_str().into(),
            activity,
            dead: false,
            screen: screen.into(),
        });
    }

    fn refresh(&self) -> Result<Outcome, HealthError> {
        let home = self.home().to_path_buf();
        refresh(self.home(), KEY, &self.tmux, move || Rules::load(&home))
    }

    fn calls(&self) -> usize {
        self.world.borrow().calls.len()
    }

    /// Forgets what was asked so far.
    fn reset(&self) {
        let mut world = self.world.borrow_mut();
        world.calls.clear();
        world.captured.clear();
        world.asked_commands.borrow_mut().clear();
    }

    fn recorded(&self, s: &Session) -> Session {
        self.store().session_by_id(&s.id).unwrap().unwrap()
    }
}

fn now_s() -> i64 {
    now_micros() / 1_000_000
}

fn pane_id(text: &str) -> PaneId {
    PaneId::parse(text).unwrap()
}

#[test]
fn a_changed_screen_is_classified_recorded_and_badged_then_the_quiet_tick_is_one_call() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Idle);
    bench.pane(&s, BUSY, now_s());

    // Never seen: listed (1), captured (2), its badge written (3).
    let outcome = bench.refresh().unwrap();
    assert_eq!(outcome.tmux_calls, 3);
    assert_eq!(bench.calls(), 3);
    assert_eq!(outcome.captured, 1);
    let moves: Vec<(&str, &str, &str)> = outcome
        .transitions
        .iter()
        .map(|t| (t.kind.as_str(), t.old.as_str(), t.new.as_str()))
        .collect();
    assert_eq!(moves, [("state", "idle", "busy")]);
    let recorded = bench.recorded(&s);
    assert_eq!(recorded.state, AgentState::Busy);
    assert_eq!(recorded.state_source, StateSource::Screen);
    assert_eq!(bench.world.borrow().panes[0].badge, "busy");
    assert_eq!(outcome.rows.len(), 1);
    assert_eq!(outcome.rows[0].screen.as_deref(), Some("busy"));
    assert_eq!(outcome.summary, "#[fg=yellow]⚙1#[default]");

    // The screen is the same, the window still printing lately: recaptured inside the
    // listing call, nothing to write. ONE call.
    bench.world.borrow_mut().panes[0].activity = now_s() + 1;
    bench.reset();
    let outcome = bench.refresh().unwrap();
    assert_eq!((outcome.tmux_calls, bench.calls()), (1, 1));
    assert!(outcome.transitions.is_empty());
    assert_eq!(bench.world.borrow().captured, ["%1"]);

    // Output stopped long ago: nothing is captured, nothing written, still one call.
    bench.world.borrow_mut().panes[0].activity = now_s() - 60;
    bench.refresh().unwrap();
    bench.reset();
    let outcome = bench.refresh().unwrap();
    assert_eq!((outcome.tmux_calls, bench.calls()), (1, 1));
    assert_eq!(outcome.captured, 0);
    assert!(bench.world.borrow().captured.is_empty());
    assert!(outcome.transitions.is_empty());
    assert_eq!(outcome.summary, "#[fg=yellow]⚙1#[default]");
}

#[test]
fn a_screen_that_changed_again_is_recorded_and_a_fresh_hook_word_holds_against_it_a_few_ticks() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Busy);
    bench.pane(&s, BUSY, now_s() - 30);
    bench.refresh().unwrap();

    // The hook said busy a moment ago; the screen already shows the prompt. The hook's
    // word stands (screens lag behind hooks), and the screen is read again next tick.
    bench
        .store()
        .apply_state(&s.id, AgentState::Busy, now_micros(), StateSource::Hook, "")
        .unwrap();
    {
        let mut world = bench.world.borrow_mut();
        world.panes[0].screen = IDLE.into();
        world.panes[0].activity = now_s();
    }
    let outcome = bench.refresh().unwrap();
    assert!(outcome.transitions.is_empty(), "{:?}", outcome.transitions);
    assert_eq!(bench.recorded(&s).state, AgentState::Busy);
    let cache = load_cache(bench.home(), KEY);
    assert_eq!(
        cache.panes[&pane_id("%1")].captured_at,
        0,
        "read again next tick"
    );
    assert_eq!(cache.panes[&pane_id("%1")].screen_state, "idle");

    // Past the hook's grace the screen has said so on two ticks: a third wins (the hook's
    // busy is one its hooks say exactly, and so is the screen's idle).
    std::thread::sleep(std::time::Duration::from_micros(
        HOOK_GRACE_MICROS as u64 + 100_000,
    ));
    let outcome = bench.refresh().unwrap();
    assert!(outcome.transitions.is_empty(), "{:?}", outcome.transitions);
    let outcome = bench.refresh().unwrap();
    let moves: Vec<(&str, &str)> = outcome
        .transitions
        .iter()
        .map(|t| (t.old.as_str(), t.new.as_str()))
        .collect();
    assert_eq!(moves, [("busy", "idle")]);
    assert_eq!(bench.recorded(&s).state_source, StateSource::Screen);
}

#[test]
fn a_pane_split_off_the_agents_window_is_neither_the_agent_nor_a_second_session() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Idle);
    bench.pane(&s, IDLE, now_s() - 30);
    // A person splits the window: the new pane carries the window's `@orchestra_id`.
    bench.world.borrow_mut().panes.push(FakePane {
        pane: "%9".into(),
        window: "@1".into(),
        orchestra_id: s.id.clone(),
        badge: "idle".into(),
        command: "bash".into(),
        activity: now_s(),
        dead: false,
        screen: BUSY.into(),
    });
    let outcome = bench.refresh().unwrap();
    assert_eq!(outcome.rows.len(), 1);
    assert_eq!(outcome.rows[0].pane, "%1");
    assert_eq!(bench.world.borrow().captured, ["%1"]);
    assert!(outcome.transitions.is_empty(), "{:?}", outcome.transitions);
    assert_eq!(bench.recorded(&s).state, AgentState::Idle);
}

#[test]
fn an_agent_no_rule_reads_is_busy_while_it_prints_and_idle_after() {
    let bench = Bench::new();
    let s = bench.session(1, "generic", AgentState::Idle);
    bench.pane(&s, "anything at all", now_s());
    let outcome = bench.refresh().unwrap();
    let moves: Vec<(&str, &str)> = outcome
        .transitions
        .iter()
        .map(|t| (t.old.as_str(), t.new.as_str()))
        .collect();
    assert_eq!(moves, [("idle", "busy")]);
    assert_eq!(bench.recorded(&s).state_source, StateSource::Activity);

    bench.world.borrow_mut().panes[0].activity = now_s() - ACTIVE_OUTPUT_SECS - 2;
    let outcome = bench.refresh().unwrap();
    let moves: Vec<(&str, &str)> = outcome
        .transitions
        .iter()
        .map(|t| (t.old.as_str(), t.new.as_str()))
        .collect();
    assert_eq!(moves, [("busy", "idle")]);
}

/// `orchestra event waiting` on a shell that drew its prompt a moment before: the prompt's
/// output is older than the word, so it does not make the session busy once the hook's
/// grace is over (a status line under load read `⚙1` for a waiting session); output
/// printed after the word does, and so does silence as long as output counts.
#[test]
fn activity_overrules_a_hook_word_only_with_what_came_after_it() {
    let bench = Bench::new();
    let s = bench.session(1, "generic", AgentState::Idle);
    let said_at = now_micros() - 3_000_000;
    bench
        .store()
        .apply_state(
            &s.id,
            AgentState::Waiting,
            said_at,
            StateSource::Hook,
            "test",
        )
        .unwrap();
    bench.pane(&s, "$ ", said_at / 1_000_000 - 1);
    let outcome = bench.refresh().unwrap();
    assert!(outcome.transitions.is_empty(), "{:?}", outcome.transitions);
    assert_eq!(bench.recorded(&s).state, AgentState::Waiting);

    bench.world.borrow_mut().panes[0].activity = now_s();
    let outcome = bench.refresh().unwrap();
    let moves: Vec<(&str, &str)> = outcome
        .transitions
        .iter()
        .map(|t| (t.old.as_str(), t.new.as_str()))
        .collect();
    assert_eq!(moves, [("waiting", "busy")]);
}

#[test]
fn the_summary_takes_the_symbols_and_styles_tmux_options_set() {
    let bench = Bench::new();
    let a = bench.session(1, "claude", AgentState::Busy);
    let b = bench.session(2, "claude", AgentState::Busy);
    bench.pane(&a, BUSY, now_s() - 30);
    bench.pane(&b, BUSY, now_s() - 30);
    bench.world.borrow_mut().options.extend([
        ("@orchestra-symbol-busy".to_string(), "B".to_string()),
        ("@orchestra-style-busy".to_string(), "fg=blue".to_string()),
    ]);
    let outcome = bench.refresh().unwrap();
    assert_eq!(outcome.summary, "#[fg=blue]B2#[default]");
    assert_eq!(load_cache(bench.home(), KEY).summary, outcome.summary);
}

#[test]
fn no_server_is_an_empty_line_not_an_error() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Busy);
    bench.pane(&s, BUSY, now_s() - 30);
    bench.refresh().unwrap();
    assert!(!load_cache(bench.home(), KEY).summary.is_empty());

    bench.world.borrow_mut().fail = Some(|| TmuxError::Failed {
        command: "list-panes".into(),
        message: format!("no server running on {SOCKET}"),
    });
    let outcome = bench.refresh().unwrap();
    assert_eq!(outcome.summary, "");
    assert!(outcome.rows.is_empty());
    let cache = load_cache(bench.home(), KEY);
    assert_eq!(cache.summary, "");
    assert!(cache.panes.is_empty());
    // Nothing is decided about sessions of a server that is not there.
    assert_eq!(bench.recorded(&s).state, AgentState::Busy);
}

#[test]
fn a_tmux_that_does_not_answer_fails_the_tick_and_leaves_the_cache_as_it_was() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Busy);
    bench.pane(&s, BUSY, now_s() - 30);
    bench.refresh().unwrap();
    let before = std::fs::read(cache_path(bench.home(), KEY)).unwrap();

    bench.world.borrow_mut().fail = Some(|| {
        TmuxError::Process(ProcessError::TimedOut {
            program: "tmux".into(),
            after: std::time::Duration::from_secs(5),
        })
    });
    let err = bench.refresh().unwrap_err();
    assert_eq!(
        err.to_string(),
        "tmux did not finish within 5s: it was killed"
    );
    assert_eq!(
        std::fs::read(cache_path(bench.home(), KEY)).unwrap(),
        before
    );
    assert_eq!(bench.recorded(&s).state, AgentState::Busy);

    // The status line within its second prints the cache and asks nobody.
    let line = status_line(bench.home(), KEY, || panic!("a fresh cache needs no tick")).unwrap();
    assert_eq!(line.summary, "#[fg=yellow]⚙1#[default]");
}

#[test]
fn a_window_still_in_setup_is_not_classified() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Unknown);
    let store = bench.store();
    let s = store
        .change_status(&s, Status::Setup, "setup runs")
        .unwrap()
        .map(|t| t.session)
        .unwrap_or(s);
    bench.pane(&s, BUSY, now_s());
    let outcome = bench.refresh().unwrap();
    assert!(bench.world.borrow().captured.is_empty());
    assert!(outcome.transitions.is_empty());
    assert_eq!(bench.recorded(&s).state, AgentState::Unknown);
    // (Its window's end, recorded setup-failed, is in tests/it/setup.rs: that transition
    // notifies, and a notification here would start this test binary as `orchestra`.)
}

#[test]
fn a_program_is_asked_only_of_windows_that_printed_since_the_tick_before() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Idle);
    bench.pane(&s, IDLE, now_s() - 30);
    // The first tick knows no tick before: it asks every window.
    bench.refresh().unwrap();
    assert!(bench.world.borrow().asked_commands.borrow().is_empty());
    assert_eq!(
        load_cache(bench.home(), KEY).commands[&pane_id("%1")],
        "claude"
    );

    // The agent ends and leaves a shell that printed nothing: a quiet window is not
    // asked, and what was asked last stands.
    bench.world.borrow_mut().panes[0].command = "bash".into();
    bench.reset();
    let outcome = bench.refresh().unwrap();
    assert_eq!(*bench.world.borrow().asked_commands.borrow(), ["%1"]);
    assert!(outcome.transitions.is_empty(), "{:?}", outcome.transitions);
    assert_eq!(
        load_cache(bench.home(), KEY).commands[&pane_id("%1")],
        "claude"
    );

    // The shell shows its prompt: the window printed, its program is asked, and the
    // agent is recorded as ended.
    bench.world.borrow_mut().panes[0].activity = now_s();
    let outcome = bench.refresh().unwrap();
    let moves: Vec<(&str, &str)> = outcome
        .transitions
        .iter()
        .map(|t| (t.old.as_str(), t.new.as_str()))
        .collect();
    assert_eq!(moves, [("idle", "exited")]);
    assert_eq!(bench.recorded(&s).state_source, StateSource::Tmux);
    assert_eq!(
        load_cache(bench.home(), KEY).commands[&pane_id("%1")],
        "bash"
    );
}

/// Issue 25: a hook's `idle` said while the turn goes on, on a pane that prints nothing
/// more (the turn's screen captured before the word): the pane is read again at every tick
/// although its window is quiet, the word stands two ticks, and the third, 2 s after the
/// first, gives the screen the state and keeps the screen; a later word wins again.
#[test]
fn a_hook_word_a_quiet_screen_disputes_is_read_again_and_gives_way_after_three_ticks() {
    let bench = Bench::new();
    let s = bench.session(1, "claude", AgentState::Busy);
    bench.pane(&s, BUSY, now_s() - 30);
    bench.refresh().unwrap();
    assert_eq!(bench.recorded(&s).state, AgentState::Busy);
    bench
        .store()
        .apply_state(
            &s.id,
            AgentState::Idle,
            now_micros(),
            StateSource::Hook,
            "Stop",
        )
        .unwrap();
    for tick in 1..=2 {
        bench.reset();
        bench.refresh().unwrap();
        assert_eq!(
            bench.world.borrow().captured,
            ["%1"],
            "tick {tick} reads the quiet pane again"
        );
        assert_eq!(bench.recorded(&s).state, AgentState::Idle, "tick {tick}");
    }
    assert!(disagreements::list(bench.home()).is_empty());
    std::thread::sleep(std::time::Duration::from_millis(2100));
    bench.refresh().unwrap();
    let recorded = bench.recorded(&s);
    assert_eq!(recorded.state, AgentState::Busy);
    assert_eq!(recorded.state_source, StateSource::Screen);
    let kept = disagreements::list(bench.home());
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (kept[0].hook_state.as_str(), kept[0].screen_state.as_str()),
        ("idle", "busy")
    );
    assert_eq!(kept[0].screen, BUSY);
    // A later word wins again, and stands its own ticks.
    bench
        .store()
        .apply_state(
            &s.id,
            AgentState::Idle,
            now_micros(),
            StateSource::Hook,
            "Stop",
        )
        .unwrap();
    bench.refresh().unwrap();
    assert_eq!(bench.recorded(&s).state, AgentState::Idle);
}

/// A screen saying what the kind's hooks never say (codex busy after its turn-end idle)
/// is no disputed word: it follows the hook's grace alone and keeps nothing.
#[test]
fn a_screen_state_no_hook_says_waits_only_the_grace() {
    let bench = Bench::new();
    let s = bench.session(1, "codex", AgentState::Busy);
    let busy =
        include_str!("../../../../tests/fixtures/screens/codex/0.171.0/busy-running-command.txt");
    bench.pane(&s, busy, now_s() - 30);
    bench.refresh().unwrap();
    bench
        .store()
        .apply_state(
            &s.id,
            AgentState::Idle,
            now_micros() - 3_000_000,
            StateSource::Hook,
            "codex-notify",
        )
        .unwrap();
    bench.refresh().unwrap();
    assert_eq!(bench.recorded(&s).state, AgentState::Busy);
    assert!(disagreements::list(bench.home()).is_empty());
}
