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
//! after the Stop. No hook or screen of a turn that is still working says idle.

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

struct Session<'a> {
    env: &'a Env,
    pane: String,
}

impl Session<'_> {
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
}

fn busy_while_it_works_idle_once_the_turn_ends(version: &str) {
    let Some(claude) = claude_release(version) else {
        return;
    };
    let env = Env::new();
    let worktree = env.worktree_path("bg");
    let Some(mut world) = ClaudeWorld::start(&env, &[&worktree]) else {
        return;
    };
    world.claude = claude;
    env.start_server(&world.env);
    let agent = format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    );
    env.orchestra(&["dispatch", "bg", "--agent", &agent, "--prompt", PROMPT])
        .ok();
    let s = Session {
        env: &env,
        pane: env.session("bg")["pane"].as_str().unwrap().to_string(),
    };
    let done = worktree.join("bg-done.txt");

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
    env.orchestra(&["approve", "bg"]).ok();

    // The turn goes on while the shell runs: busy at every tick until its last text shows.
    let started = Instant::now();
    let mut ticks = 0;
    loop {
        let state = s.tick();
        let screen = s.screen();
        if screen.contains("● the turn is over") {
            break;
        }
        assert!(!done.exists(), "the shell ended before the turn did");
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
    assert!(ticks >= 10, "only {ticks} ticks inside the turn");
    assert_requests(&world, &["tool-result"], 3);

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
    assert_requests(&world, &["notification"], 1);
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
