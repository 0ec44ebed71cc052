//! Agent health end to end: the real claude CLI against the fake API, driven through its
//! real states, seen through hooks and through the screen alone.

use std::path::PathBuf;
use std::time::Duration;

use crate::harness::{bin, wait_until, ClaudeWorld, Env};

struct Agent<'a> {
    env: &'a Env,
    pane: String,
    window: String,
    /// Whether to run `orchestra refresh` while waiting (the screen path).
    refresh: bool,
}

impl Agent<'_> {
    fn state(&self) -> String {
        if self.refresh {
            self.env.orchestra(&["refresh"]).ok();
        }
        self.env.session("agent")["state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[track_caller]
    fn wait_for(&self, want: &str) {
        let mut last = String::new();
        let ok = wait_until(Duration::from_secs(40), || {
            last = self.state();
            last == want
        });
        assert!(
            ok,
            "state stayed {last:?}, wanted {want:?}; screen:\n{}\nevents:\n{}",
            self.screen(),
            self.env.orchestra(&["events", "agent"]).stdout
        );
        // The hook writes the record, then the badge (one more tmux call): allow it the
        // moment in between, which on a loaded machine (two cores, four live agents) has
        // been longer than 2 s.
        let badge = || {
            self.env
                .tmux(&[
                    "show-options",
                    "-w",
                    "-v",
                    "-t",
                    &self.window,
                    "@orchestra_state",
                ])
                .trim()
                .to_string()
        };
        assert!(
            wait_until(Duration::from_secs(8), || badge() == want),
            "the window badge says {:?}, the record {want:?}",
            badge()
        );
    }

    fn screen(&self) -> String {
        self.env.tmux(&["capture-pane", "-p", "-t", &self.pane])
    }

    /// What the screen rules read on the pane now (`orchestra classify`).
    fn screen_says(&self) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new(bin())
            .args(["classify", "--kind", "claude"])
            .env("ORCHESTRA_HOME", &self.env.home)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("orchestra classify");
        let screen = self.screen();
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(screen.as_bytes())
            .expect("write the screen");
        let out = child.wait_with_output().expect("orchestra classify");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The live screen reads as `want` too (whoever said the state).
    #[track_caller]
    fn screen_reads(&self, want: &str) {
        let mut last = String::new();
        assert!(
            wait_until(Duration::from_secs(15), || {
                last = self.screen_says();
                last == want
            }),
            "the screen reads {last:?}, wanted {want:?}:\n{}",
            self.screen()
        );
    }

    /// Types `text` once the input box is back, and submits it once it shows there.
    fn type_prompt(&self, text: &str) {
        let input_ready = |screen: &str| {
            let lines: Vec<&str> = screen.lines().filter(|l| !l.trim().is_empty()).collect();
            lines.iter().rev().take(6).any(|l| l.trim_end() == "❯")
        };
        assert!(
            wait_until(Duration::from_secs(20), || input_ready(&self.screen())),
            "no empty input box:\n{}",
            self.screen()
        );
        self.env.tmux(&["send-keys", "-t", &self.pane, "-l", text]);
        let shown = wait_until(Duration::from_secs(5), || self.screen().contains(text));
        assert!(shown, "the typed text did not show:\n{}", self.screen());
        std::thread::sleep(Duration::from_millis(200));
        self.env.tmux(&["send-keys", "-t", &self.pane, "Enter"]);
    }
}

/// How a walk through the states runs.
pub(crate) struct Walk {
    /// The CLI to run; `None`: the pinned release.
    pub claude: Option<PathBuf>,
    /// Hooks installed (else dispatch `--no-hooks`).
    pub hooks: bool,
    /// `orchestra refresh` ticks while waiting for a state (the status line's work).
    pub ticks: bool,
    /// Menus answered by `orchestra approve`/`deny` (by label), not by keys; each state
    /// is also checked on the live screen with `orchestra classify`.
    pub by_orchestra: bool,
}

/// busy → idle → waiting (Bash) → approved → idle → waiting (Write) → denied → idle →
/// error → exited, on the real CLI against the fake API.
pub(crate) fn drive_through_states(walk: Walk) {
    let env = Env::new();
    let worktree = env.worktree_path("agent");
    let Some(mut world) = ClaudeWorld::start(&env, &[&worktree]) else {
        return;
    };
    if let Some(claude) = walk.claude {
        world.claude = claude;
    }
    let hooks = walk.hooks;
    env.start_server(&world.env);
    let agent_cmd = format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    );
    let mut args = vec![
        "dispatch",
        "agent",
        "--agent",
        &agent_cmd,
        "--prompt",
        "[[slow: 8]] [[say: alpha beta gamma delta epsilon]]",
    ];
    if !hooks {
        args.push("--no-hooks");
    }
    env.orchestra(&args).ok();
    let session = env.session("agent");
    let agent = Agent {
        env: &env,
        pane: session["pane"].as_str().unwrap().to_string(),
        window: session["window"].as_str().unwrap().to_string(),
        refresh: walk.ticks,
    };
    let reads = |agent: &Agent, state: &str| {
        if walk.by_orchestra {
            agent.screen_reads(state);
        }
    };

    agent.wait_for("busy");
    reads(&agent, "busy");
    agent.wait_for("idle");
    reads(&agent, "idle");
    assert!(agent.screen().contains("epsilon"));

    // A permission menu, approved by choosing "Yes".
    agent.type_prompt("[[bash: touch approved.txt]]");
    agent.wait_for("waiting");
    assert!(wait_until(Duration::from_secs(10), || agent
        .screen()
        .contains("Do you want to proceed?")));
    reads(&agent, "waiting");
    // The CLI ignores keys for a moment after it draws a menu (against stray presses).
    std::thread::sleep(Duration::from_millis(800));
    if walk.by_orchestra {
        let run = env.orchestra(&["approve", "agent"]).ok();
        assert!(run.stdout.contains("\"Yes\""), "{}", run.stdout);
    } else {
        env.tmux(&["send-keys", "-t", &agent.pane, "Enter"]);
    }
    assert!(
        wait_until(Duration::from_secs(20), || worktree
            .join("approved.txt")
            .exists()),
        "the approved command did not run; screen:\n{}",
        agent.screen()
    );
    agent.wait_for("idle");
    reads(&agent, "idle");

    // A denied menu fires no hook: only the screen can tell it is over.
    agent.type_prompt("[[write: denied.txt | no]]");
    agent.wait_for("waiting");
    assert!(wait_until(Duration::from_secs(10), || agent
        .screen()
        .contains("Do you want to create")));
    reads(&agent, "waiting");
    std::thread::sleep(Duration::from_millis(800));
    if walk.by_orchestra {
        env.orchestra(&["deny", "agent"]).ok();
    } else {
        env.tmux(&["send-keys", "-t", &agent.pane, "Escape"]);
    }
    let screen_path = Agent {
        refresh: true,
        ..agent
    };
    // Past the grace a hook's word has over the screen.
    std::thread::sleep(Duration::from_millis(2100));
    screen_path.wait_for("idle");
    reads(&screen_path, "idle");
    assert!(!worktree.join("denied.txt").exists());
    let agent = Agent {
        refresh: walk.ticks,
        ..screen_path
    };

    agent.type_prompt("[[error: 400]]");
    agent.wait_for("error");
    reads(&agent, "error");

    // The agent killed: its pane dies (remain-on-exit keeps it), a refresh sees it.
    let pid = env.tmux(&["display-message", "-p", "-t", &agent.pane, "#{pane_pid}"]);
    std::process::Command::new("kill")
        .arg(pid.trim())
        .status()
        .unwrap();
    let exited = Agent {
        refresh: true,
        ..agent
    };
    exited.wait_for("exited");

    // The event log holds every transition, said by hooks or by the screen.
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["events", "agent", "--json"]).ok().stdout).unwrap();
    let states: Vec<&str> = events
        .iter()
        .filter(|e| e["kind"] == "state")
        .map(|e| e["new"].as_str().unwrap())
        .collect();
    for want in ["busy", "idle", "waiting", "error", "exited"] {
        assert!(
            states.contains(&want),
            "no transition into {want}: {states:?}"
        );
    }
    let into_waiting = events
        .iter()
        .find(|e| e["kind"] == "state" && e["new"] == "waiting")
        .unwrap();
    // With both ways of knowing running, whichever saw the menu first said it.
    let said_by = match (hooks, walk.ticks) {
        (true, false) => Some("PermissionRequest"),
        (false, _) => Some("menu-or-dialog"),
        (true, true) => None,
    };
    if let Some(said_by) = said_by {
        assert_eq!(into_waiting["detail"], said_by, "{into_waiting}");
    }
    assert!(
        env.home.join("logs/hooks.log").metadata().is_err(),
        "a hook failed: {:?}",
        std::fs::read_to_string(env.home.join("logs/hooks.log"))
    );
}

#[test]
fn hooks_report_the_real_agents_states() {
    drive_through_states(Walk {
        claude: None,
        hooks: true,
        ticks: false,
        by_orchestra: false,
    });
}

#[test]
fn screens_alone_report_the_real_agents_states() {
    drive_through_states(Walk {
        claude: None,
        hooks: false,
        ticks: true,
        by_orchestra: false,
    });
}
