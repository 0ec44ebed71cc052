//! Background tasks (issue 12, part 3) on the real claude CLI of each matrix release, with
//! hooks and status ticks both running, as in use.
//!
//! What the real CLI does (measured on 2.0.77, 2.1.100 and 2.1.332 against the stand-in):
//! a Bash call with `run_in_background: true` returns at once ("Command running in
//! background with ID: …"); the turn goes on (PreToolUse/PostToolUse for each look at the
//! output: TaskOutput in 2.0.77 and 2.1.100, Read of the output file in 2.1.332) and ends
//! with a Stop hook although the shell still runs (2.1.332's Stop lists it in
//! `background_tasks`, status "running"). The CLI is then at its prompt with the shell
//! counted in its footer ("1 background task · ↓ to view" in 2.0.77, "1 shell · ↓ to
//! manage" in 2.1.x): it waits for the person, who may type, and a shell such as a dev
//! server may never end — so the truth is idle. When the shell ends, the CLI wakes the
//! model itself with a `<task-notification>`: a UserPromptSubmit hook (the notification as
//! its prompt), the spinner, then Stop — busy, then idle again. A shell that ends while its
//! turn still runs is told inside that turn (2.1.332: a UserPromptSubmit hook mid-turn;
//! 2.1.100: the look at its output takes it) or, in 2.0.77, in a turn of its own right
//! after the Stop (idle for 0.3 to 1.6 s between the two turns: a real turn boundary, with
//! the prompt free). No hook or screen of a turn that is still working says idle.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{wait_until, ClaudeWorld, Env};
use crate::matrix::{claude_release, CLAUDE_RELEASES};

/// The turn: start a shell that runs 25 s in the background, look at its output twice,
/// then answer; every step after the call takes about 3 s, so the turn ends (about 10 s
/// after the approval) well before the shell does. When the shell ends, the model's answer
/// to the CLI's notification takes 3 s too.
const PROMPT: &str = "[[background: sleep 25 && touch bg-done.txt]] [[poll: 2]] [[slow: 3]] \
                      [[after: the turn is over]] [[notified: the shell has ended]]";

/// The turn of the second case: the shell ends (after 4 s) while the turn still looks at
/// its output (at about 3 s and 6 s after the approval) and then answers.
const ENDS_WITHIN: &str = "[[background: sleep 4 && touch bg-done.txt]] [[poll: 2]] [[slow: 3]] \
                           [[after: the turn is over]] [[notified: the shell has ended]]";

/// A claude session `bg` of one release, dispatched with a prompt whose backgrounded
/// command has been approved through orchestra.
struct Session {
    env: Env,
    world: ClaudeWorld,
    pane: String,
    done: std::path::PathBuf,
}

impl Session {
    fn start(version: &str, prompt: &str) -> Option<Session> {
        let claude = claude_release(version)?;
        let env = Env::new();
        let worktree = env.worktree_path("bg");
        let mut world = ClaudeWorld::start(&env, &[&worktree])?;
        world.claude = claude;
        env.start_server(&world.env);
        let agent = format!(
            "{} --permission-mode default",
            shell_words::quote(&world.claude.to_string_lossy())
        );
        env.orchestra(&["dispatch", "bg", "--agent", &agent, "--prompt", prompt])
            .ok();
        let pane = env.session("bg")["pane"].as_str().unwrap().to_string();
        let s = Session {
            env,
            world,
            pane,
            done: worktree.join("bg-done.txt"),
        };
        // The backgrounded command asks first, as any command that writes does.
        s.ticks_until("waiting", Duration::from_secs(60));
        assert!(
            wait_until(Duration::from_secs(10), || s
                .screen()
                .contains("Do you want to proceed?")),
            "{}",
            s.screen()
        );
        // The CLI ignores keys for a moment after it draws a menu (against stray presses).
        std::thread::sleep(Duration::from_millis(800));
        s.env.orchestra(&["approve", "bg"]).ok();
        Some(s)
    }

    fn screen(&self) -> String {
        self.env.tmux(&["capture-pane", "-p", "-t", &self.pane])
    }

    /// One status tick, then the recorded state.
    fn tick(&self) -> String {
        self.env.orchestra(&["refresh"]).ok();
        self.env.session("bg")["state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[track_caller]
    fn ticks_until(&self, state: &str, limit: Duration) {
        let mut last = String::new();
        let reached = wait_until(limit, || {
            last = self.tick();
            last == state
        });
        assert!(reached, "never {state} (last {last}):\n{}", self.screen());
    }

    /// Ticks until the turn's last text shows, each one busy; how many there were.
    #[track_caller]
    fn busy_until_the_turn_is_over(&self, shell_may_end: bool) -> usize {
        let started = Instant::now();
        let mut ticks = 0;
        loop {
            let state = self.tick();
            let screen = self.screen();
            if screen.contains("● the turn is over") {
                return ticks;
            }
            assert!(
                shell_may_end || !self.done.exists(),
                "the shell ended before the turn did"
            );
            assert_eq!(
                state, "busy",
                "tick {ticks}, the turn still runs:\n{screen}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(40),
                "the turn never ended:\n{screen}"
            );
            ticks += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn busy_while_it_works_idle_once_the_turn_ends(version: &str) {
    let Some(s) = Session::start(version, PROMPT) else {
        return;
    };
    let done = &s.done;
    let world = &s.world;

    // The turn goes on while the shell runs: busy at every tick until its last text shows.
    let ticks = s.busy_until_the_turn_is_over(false);
    assert!(ticks >= 10, "only {ticks} ticks inside the turn");
    assert_requests(world, &["tool-result"], 3);

    // The turn is over and the shell still runs: the CLI waits for the person (its Stop
    // hook fired; its footer counts the shell). Idle, and it stays idle while the shell runs.
    s.ticks_until("idle", Duration::from_secs(10));
    let screen = s.screen();
    assert!(
        screen.contains("1 shell") || screen.contains("1 background task"),
        "the footer does not count the running shell:\n{screen}"
    );
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(s.tick(), "idle", "{}", s.screen());
    }
    assert!(!done.exists(), "the shell ended too soon to prove anything");

    // The shell ends: the CLI wakes the model on its own. Busy while it answers, then idle.
    assert!(
        wait_until(Duration::from_secs(30), || done.exists()),
        "the background shell never ended"
    );
    s.ticks_until("busy", Duration::from_secs(10));
    assert!(
        wait_until(Duration::from_secs(20), || s
            .screen()
            .contains("● the shell has ended")),
        "{}",
        s.screen()
    );
    s.ticks_until("idle", Duration::from_secs(10));
    assert_requests(world, &["notification"], 1);
}

/// The shell ends while its turn still looks at its output: busy at every tick until the
/// turn's last text, then idle once the CLI is done — whether it told the model inside the
/// turn (2.1.100's look at the output takes the news, 2.1.332 adds it to the turn with a
/// UserPromptSubmit hook mid-turn) or in a turn of its own right after the Stop (2.0.77:
/// idle for a moment between the two turns, which is a real turn boundary).
fn busy_while_its_shell_ends_within_the_turn(version: &str) {
    let Some(s) = Session::start(version, ENDS_WITHIN) else {
        return;
    };
    let ticks = s.busy_until_the_turn_is_over(true);
    assert!(ticks >= 10, "only {ticks} ticks inside the turn");
    assert!(
        s.done.exists(),
        "the shell should have ended within the turn"
    );
    // Whatever the CLI does with the news after the turn takes one short turn at most
    // (2.0.77: it starts within 2 s of the Stop and answers in 3 s).
    std::thread::sleep(Duration::from_secs(8));
    s.ticks_until("idle", Duration::from_secs(15));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(s.tick(), "idle", "{}", s.screen());
}

/// At least `count` requests the stand-in read as one of `turns`.
#[track_caller]
fn assert_requests(world: &ClaudeWorld, turns: &[&str], count: usize) {
    let log = world.api.requests();
    let found = log
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|r| turns.contains(&r["turn"].as_str().unwrap_or_default()))
        .count();
    assert!(
        found >= count,
        "{found} of {turns:?} in {}",
        Path::new(&world.api.log).display()
    );
}

#[test]
fn a_background_shell_on_claude_2_0_77() {
    busy_while_it_works_idle_once_the_turn_ends(CLAUDE_RELEASES[0]);
}

#[test]
fn a_background_shell_on_claude_2_1_100() {
    busy_while_it_works_idle_once_the_turn_ends(CLAUDE_RELEASES[1]);
}

#[test]
fn a_background_shell_on_claude_2_1_332() {
    busy_while_it_works_idle_once_the_turn_ends(CLAUDE_RELEASES[2]);
}

#[test]
fn a_background_shell_ending_within_its_turn_on_claude_2_0_77() {
    busy_while_its_shell_ends_within_the_turn(CLAUDE_RELEASES[0]);
}

#[test]
fn a_background_shell_ending_within_its_turn_on_claude_2_1_100() {
    busy_while_its_shell_ends_within_the_turn(CLAUDE_RELEASES[1]);
}

#[test]
fn a_background_shell_ending_within_its_turn_on_claude_2_1_332() {
    busy_while_its_shell_ends_within_the_turn(CLAUDE_RELEASES[2]);
}
