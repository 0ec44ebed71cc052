//! The Gemini CLI, for real: the pinned release from the test cache, in real tmux, talking
//! to the scripted Gemini API stand-in (tests/fake-api/gemini.py) in a sandboxed HOME
//! (gemini_home.py). States come from its hooks (a Gemini home of the session's own) and
//! its screens; approve/deny answer its real menus.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::{
    agent_cli, agent_home, bin, fake_api_dir, require, wait_until, which, Bus, Env, StandIn,
};

pub const GEMINI_VERSION: &str = "0.61.0";

/// The real `gemini` CLI: `$ORCHESTRA_TEST_GEMINI`, else the pinned release in the test
/// cache that tests/run.sh fills (its `gemini` link: the name tells orchestra the kind).
pub fn gemini_bin() -> Option<PathBuf> {
    agent_cli(
        "ORCHESTRA_TEST_GEMINI",
        &format!("gemini-{GEMINI_VERSION}/node_modules/.bin/gemini"),
    )
}

/// A test's world with gemini in it: the CLI, the stand-in, a sandboxed HOME, and a tmux
/// server whose environment reaches them.
struct Gemini {
    env: Env,
    api: StandIn,
    gemini: PathBuf,
    home: PathBuf,
    /// A notification bus its tmux server and orchestra reach, where a test asked for one.
    bus: Option<Bus>,
}

fn start() -> Option<Gemini> {
    start_world(None)
}

/// [`start`] with a notification bus whose server says it has `capabilities`.
fn start_on_bus(capabilities: &[&str]) -> Option<Gemini> {
    start_world(Some(capabilities))
}

fn start_world(bus_capabilities: Option<&[&str]>) -> Option<Gemini> {
    let gemini = gemini_bin();
    if !require(
        &format!("the gemini CLI {GEMINI_VERSION}"),
        gemini.is_some(),
    ) || !require("python3", which("python3").is_some())
        || !require("node", which("node").is_some())
    {
        return None;
    }
    let mut env = Env::new();
    let bus = match bus_capabilities {
        Some(capabilities) => Some(Bus::start_with(&env.root, capabilities)?),
        None => None,
    };
    let api = StandIn::start(&env.root, "gemini.py");
    let home = env.root.join("gemini-home");
    let mut vars = agent_home(&env, "gemini_home.py", &home, api.port, &[]);
    if let Some(bus) = &bus {
        let on_bus = ("DBUS_SESSION_BUS_ADDRESS".to_string(), bus.address.clone());
        vars.push(on_bus.clone());
        env.env.push(on_bus);
    }
    env.start_server(&vars);
    // orchestra builds each session's Gemini home from the person's: the sandboxed one.
    env.env
        .push(("HOME".into(), home.to_string_lossy().into_owned()));
    Some(Gemini {
        env,
        api,
        gemini: gemini.expect("checked above"),
        home,
        bus,
    })
}

impl Gemini {
    fn dispatch(&self, label: &str, prompt: &str) {
        self.env
            .orchestra(&[
                "dispatch",
                label,
                "--agent",
                &shell_words::quote(&self.gemini.to_string_lossy()),
                "--prompt",
                prompt,
            ])
            .ok();
    }

    fn pane(&self, label: &str) -> String {
        self.env.session(label)["pane"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn screen(&self, label: &str) -> String {
        self.env
            .tmux(&["capture-pane", "-p", "-t", &self.pane(label)])
    }

    fn state(&self, label: &str) -> String {
        self.env.session(label)["state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Ticks until `label` is in `state`; says what it saw if it never got there.
    #[track_caller]
    fn reaches(&self, label: &str, state: &str, limit: Duration) {
        let reached = wait_until(limit, || {
            self.env.orchestra(&["refresh"]).ok();
            self.state(label) == state
        });
        assert!(
            reached,
            "{label} never became {state} (it is {}):\n{}\nevents: {}",
            self.state(label),
            self.screen(label),
            self.events(label)
        );
    }

    /// The state changes recorded for `label`: `old>new:detail` (the detail names the hook
    /// event, or the screen rule, that said it).
    fn events(&self, label: &str) -> String {
        let run = self.env.orchestra(&["events", label, "--json"]).ok();
        let events: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
        events
            .iter()
            .filter(|e| e["kind"] == "state")
            .map(|e| format!("{}>{}:{}", e["old"], e["new"], e["detail"]).replace('"', ""))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[track_caller]
    fn wait_screen(&self, label: &str, text: &str) {
        assert!(
            wait_until(Duration::from_secs(60), || self
                .screen(label)
                .contains(text)),
            "{text:?} never showed:\n{}",
            self.screen(label)
        );
    }

    fn brief(&self, label: &str, text: &str) {
        self.env.orchestra(&["brief", label, text]).ok();
    }
}

#[test]
fn a_dispatched_gemini_is_busy_then_idle_by_its_hooks_then_exited() {
    let Some(g) = start() else { return };
    // The person's own Gemini files: a global memory the CLI reads, a folder it writes in.
    std::fs::write(
        g.home.join(".gemini/GEMINI.md"),
        "Remember the word PERSONAL-MEMORY-7.\n",
    )
    .unwrap();
    std::fs::create_dir_all(g.home.join(".gemini/tmp")).unwrap();
    g.dispatch(
        "gem",
        "[[slow: 10]] [[say: one two three four five six seven eight nine ten]]",
    );
    // No tick in between: the hooks alone say busy, then idle.
    assert!(
        wait_until(Duration::from_secs(60), || g.state("gem") == "busy"),
        "never busy:\n{}\nevents: {}",
        g.screen("gem"),
        g.events("gem")
    );
    assert!(
        wait_until(Duration::from_secs(60), || g.state("gem") == "idle"),
        "never idle:\n{}",
        g.screen("gem")
    );
    g.wait_screen("gem", "one two three four five six seven eight nine ten");
    let events = g.events("gem");
    assert!(events.contains(">busy:BeforeAgent"), "{events}");
    assert!(events.contains("busy>idle:AfterAgent"), "{events}");
    let requests = g.api.requests();
    assert!(requests.contains("\"turn\": \"prompt\""), "{requests}");
    // The hooks live in the session's own Gemini home, which reads the person's files
    // through its links; the person's settings are untouched.
    assert!(requests.contains("PERSONAL-MEMORY-7"), "{requests}");
    let settings = std::fs::read_to_string(g.home.join(".gemini/settings.json")).unwrap();
    assert!(!settings.contains("orchestra"), "{settings}");
    // A tick agrees with the hooks.
    g.reaches("gem", "idle", Duration::from_secs(5));
    // Its SessionStart names a conversation restart could not resume: none is recorded.
    assert!(g.env.session("gem")["conversation"].is_null());
    g.brief("gem", "/quit");
    g.reaches("gem", "exited", Duration::from_secs(30));
    // The conversation was saved where the person's CLI keeps them.
    let chats = |home: &Path| {
        let mut found = Vec::new();
        for project in std::fs::read_dir(home.join(".gemini/tmp")).unwrap() {
            let dir = project.unwrap().path().join("chats");
            found.extend(std::fs::read_dir(dir).into_iter().flatten().flatten());
        }
        found.len()
    };
    assert!(chats(&g.home) >= 1);
    // Killing the session removes its Gemini home, links and all, not what they point to.
    let id = g.env.session("gem")["id"].as_str().unwrap().to_string();
    let session_home = g.env.home.join("sessions").join(&id).join("gemini-home");
    assert!(session_home.join(".gemini/tmp").is_symlink());
    g.env.orchestra(&["kill", "gem", "--force"]).ok();
    assert!(!session_home.exists());
    assert!(chats(&g.home) >= 1);
    assert!(g.home.join(".gemini/GEMINI.md").is_file());
}

/// Gemini's ToolPermission hook says it waits, with what it asks in its details: the
/// notification names the file, said from the worktree.
#[test]
fn a_waiting_gemini_notification_names_the_file_it_asks_to_write() {
    let Some(g) = start_on_bus(&["body"]) else {
        return;
    };
    let bus = g.bus.as_ref().expect("started with a bus");
    let wt = g.env.worktree_path("files");
    let file = wt.join("notes").join("new.txt");
    g.dispatch(
        "files",
        &format!("[[write: {} | hello]]", file.to_string_lossy()),
    );
    g.wait_screen("files", "Apply this change?");
    g.reaches("files", "waiting", Duration::from_secs(10));
    let waiting = |n: &serde_json::Value| {
        n["summary"]
            .as_str()
            .is_some_and(|s| s.contains("files is waiting"))
    };
    assert!(
        wait_until(Duration::from_secs(10), || bus.notes().iter().any(waiting)),
        "no waiting notification: {:?}",
        bus.notes()
    );
    let notes = bus.notes();
    let body = notes.iter().find(|n| waiting(n)).expect("found above")["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        body.starts_with("files wants to write notes/new.txt (in "),
        "{body:?}\nevents: {}",
        g.events("files")
    );
}

#[test]
fn gemini_approvals_wait_and_approve_runs_the_command_deny_does_not() {
    let Some(g) = start() else { return };
    let wt = g.env.worktree_path("tools");
    g.dispatch("tools", "[[bash: touch approved.txt]] [[after: it ran]]");
    g.wait_screen("tools", "Allow execution of");
    g.reaches("tools", "waiting", Duration::from_secs(10));
    assert!(!wt.join("approved.txt").exists());
    let run = g.env.orchestra(&["approve", "tools"]).ok();
    assert!(run.stdout.contains("Allow once"), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(30), || wt.join("approved.txt").exists()),
        "approve did not run the command:\n{}",
        g.screen("tools")
    );
    g.wait_screen("tools", "it ran");
    g.reaches("tools", "idle", Duration::from_secs(30));
    let events = g.events("tools");
    assert!(events.contains(">waiting:Notification"), "{events}");

    g.brief("tools", "[[bash: touch denied.txt]]");
    g.wait_screen("tools", "touch denied.txt");
    g.reaches("tools", "waiting", Duration::from_secs(30));
    let run = g.env.orchestra(&["deny", "tools"]).ok();
    assert!(run.stdout.contains("No, suggest changes"), "{}", run.stdout);
    g.wait_screen("tools", "Request cancelled");
    // No hook follows a denial: the screen says idle after the hook's grace.
    g.reaches("tools", "idle", Duration::from_secs(30));
    assert!(!wt.join("denied.txt").exists());

    // A file write asks too ("Apply this change?"); approving writes it.
    g.brief(
        "tools",
        "[[write: notes/from-gemini.txt | written by gemini]]",
    );
    g.wait_screen("tools", "Apply this change?");
    g.reaches("tools", "waiting", Duration::from_secs(30));
    g.env.orchestra(&["approve", "tools"]).ok();
    let written = wt.join("notes/from-gemini.txt");
    assert!(
        wait_until(Duration::from_secs(30), || written.exists()),
        "{}",
        g.screen("tools")
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "written by gemini\n"
    );
    g.reaches("tools", "idle", Duration::from_secs(30));
}

#[test]
fn a_gemini_api_error_reads_as_error() {
    let Some(g) = start() else { return };
    g.dispatch("broken", "[[error: 400]]");
    g.wait_screen("broken", "API Error");
    // AfterAgent said idle; the screen's API error wins after the hook's grace.
    g.reaches("broken", "error", Duration::from_secs(30));
    let events = g.events("broken");
    assert!(events.contains(">error:api-error"), "{events}");
}

#[test]
fn with_no_hooks_gemini_is_read_from_its_screen() {
    let Some(g) = start() else { return };
    g.env
        .orchestra(&[
            "dispatch",
            "plain",
            "--no-hooks",
            "--agent",
            &shell_words::quote(&g.gemini.to_string_lossy()),
            "--prompt",
            "[[say: no hooks here]]",
        ])
        .ok();
    g.wait_screen("plain", "no hooks here");
    // Its screen alone tells its state.
    g.reaches("plain", "idle", Duration::from_secs(30));
    let events = g.events("plain");
    assert!(!events.contains("AfterAgent"), "{events}");
    let id = g.env.session("plain")["id"].as_str().unwrap().to_string();
    assert!(!g
        .env
        .home
        .join("sessions")
        .join(id)
        .join("gemini-home")
        .exists());
}

/// A session `up` starts from the manifest gets what a dispatched gemini gets: a Gemini
/// home of its own with the hooks, so its states are the CLI's own word, through the
/// manifest's `env` snippet and again after a restart; `down` removes that home.
#[test]
fn a_gemini_manifest_session_is_busy_then_idle_by_its_hooks_after_up_and_restart() {
    let Some(g) = start() else { return };
    let folder = g.env.root.join("gemini-folder");
    std::fs::create_dir_all(&folder).unwrap();
    // orchestra trusts only the worktrees it makes: this folder the person trusted once.
    std::fs::write(
        g.home.join(".gemini/trustedFolders.json"),
        serde_json::json!({ folder.to_string_lossy(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    let agent = shell_words::quote(&g.gemini.to_string_lossy()).into_owned();
    g.env.write_agent_manifest(
        &agent,
        "gem",
        &folder,
        "export ORCHESTRA_TEST_SNIPPET=reached",
    );
    g.env.orchestra(&["up"]).ok();
    let id = g.env.session("gem")["id"].as_str().unwrap().to_string();
    let session_home = g.env.home.join("sessions").join(&id).join("gemini-home");
    let environ = g.env.pane_process("gem", "environ");
    assert!(
        environ
            .lines()
            .any(|l| l == format!("GEMINI_CLI_HOME={}", session_home.display())),
        "{environ}"
    );
    assert!(
        environ
            .lines()
            .any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached"),
        "{environ}"
    );
    g.wait_screen("gem", "Type your message");
    // Text typed while gemini still runs its SessionStart hook can stay in the input box
    // (seen under load): brief once that hook has said idle.
    assert!(
        wait_until(Duration::from_secs(30), || g.state("gem") == "idle"),
        "SessionStart never said idle: {}",
        g.events("gem")
    );
    g.brief(
        "gem",
        "[[slow: 8]] [[say: one two three four five six seven eight nine ten]]",
    );
    // No tick in between: the hooks alone say busy, then idle.
    assert!(
        wait_until(Duration::from_secs(60), || g.state("gem") == "busy"),
        "never busy:\n{}\nevents: {}",
        g.screen("gem"),
        g.events("gem")
    );
    assert!(
        wait_until(Duration::from_secs(60), || g.state("gem") == "idle"),
        "never idle:\n{}\nevents: {}",
        g.screen("gem"),
        g.events("gem")
    );
    let events = g.events("gem");
    assert!(events.contains(">busy:BeforeAgent"), "{events}");
    assert!(events.contains("busy>idle:AfterAgent"), "{events}");
    let settings = std::fs::read_to_string(g.home.join(".gemini/settings.json")).unwrap();
    assert!(!settings.contains("orchestra"), "{settings}");

    g.env.orchestra(&["restart", "gem"]).ok();
    let new_id = g.env.session("gem")["id"].as_str().unwrap().to_string();
    assert!(!session_home.exists(), "the old session's home stays");
    let environ = g.env.pane_process("gem", "environ");
    let new_home = g
        .env
        .home
        .join("sessions")
        .join(&new_id)
        .join("gemini-home");
    assert!(
        environ
            .lines()
            .any(|l| l == format!("GEMINI_CLI_HOME={}", new_home.display())),
        "{environ}"
    );
    assert!(new_home.join(".gemini/settings.json").is_file());
    g.env.orchestra(&["down"]).ok();
    assert!(!new_home.exists());
    assert!(g.home.join(".gemini/trustedFolders.json").is_file());
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/screens/gemini")
        .join(GEMINI_VERSION);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("txt" | "ansi")))
        .collect();
    files.sort();
    files
}

fn classify(env: &Env, screen: &[u8]) -> String {
    let mut child = Command::new(bin())
        .args(["classify", "--kind", "gemini"])
        .env("ORCHESTRA_HOME", &env.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(screen).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn every_gemini_screen_is_classified_as_its_name_says() {
    let env = Env::new();
    let files = fixtures();
    assert!(files.len() >= 30, "fixtures missing: {files:?}");
    let mut wrong = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let expected = name.split('-').next().unwrap();
        let got = classify(&env, &std::fs::read(file).unwrap());
        if got != expected {
            wrong.push(format!("{name}: {got}"));
        }
    }
    assert!(wrong.is_empty(), "misread screens: {wrong:?}");
}

#[test]
fn gemini_busy_lines_read_without_their_spinner_or_cut_short() {
    let env = Env::new();
    let fixture = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/screens/gemini")
                .join(GEMINI_VERSION)
                .join(name),
        )
        .unwrap()
    };
    let busy = fixture("busy-streaming.txt");
    let spinner = busy
        .lines()
        .find(|l| l.contains("(esc to cancel"))
        .expect("a spinner line")
        .to_string();
    // ui.showSpinner off: the same line with no glyph.
    let bare = busy.replace(
        &spinner,
        "  Thinking... (esc to cancel, 4s)      ? for shortcuts",
    );
    assert_eq!(classify(&env, bare.as_bytes()), "busy");
    // Neither: the turn ended.
    let ended = busy.replace(
        &spinner,
        "                                        ? for shortcuts",
    );
    assert_eq!(classify(&env, ended.as_bytes()), "idle");
    // A menu quoted in the answer is not a menu: the input line is there.
    assert_eq!(
        classify(&env, fixture("idle-quoted-menu.txt").as_bytes()),
        "idle"
    );
}

#[test]
fn the_gemini_api_stand_in_passes_its_own_tests() {
    if !require("python3", which("python3").is_some()) {
        return;
    }
    // A file, not a pipe: a full pipe would stall the child past its deadline.
    let report = tempfile::tempfile().expect("temp file");
    let mut child = Command::new("python3")
        .arg(fake_api_dir().join("test_gemini.py"))
        .stdout(report.try_clone().expect("temp file"))
        .stderr(report.try_clone().expect("temp file"))
        .spawn()
        .expect("run python3");
    let mut status = None;
    let finished = wait_until(Duration::from_secs(120), || {
        status = child.try_wait().expect("wait for python3");
        status.is_some()
    });
    if !finished {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut text = String::new();
    let mut report = report;
    report.rewind().expect("rewind");
    report.read_to_string(&mut text).expect("read the report");
    assert!(
        status.is_some_and(|s| s.success()),
        "tests/fake-api/test_gemini.py failed (or ran past 120 s):\n{text}"
    );
}
