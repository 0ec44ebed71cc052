//! aider (issue 12, part 2) on its real CLI, the pinned release from PyPI, against the Chat
//! Completions stand-in (tests/fake-api/openai_chat.py): its states from its notifications
//! command and its screens, its questions answered by approve and deny, and the classifier
//! on every screen captured from it (tests/capture-aider-screens.sh).

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::{
    agent_cli, agent_home, bin, fake_api_dir, require, wait_until, which, Bus, Env, StandIn,
};

pub const AIDER_VERSION: &str = "0.86.2";

/// The real `aider`: `$ORCHESTRA_TEST_AIDER`, else the pinned release in the venv that
/// tests/run.sh makes in the test cache.
pub fn aider_bin() -> Option<PathBuf> {
    agent_cli(
        "ORCHESTRA_TEST_AIDER",
        &format!("aider-{AIDER_VERSION}/bin/aider"),
    )
}

/// A tmux server whose sessions run the real aider in a sandboxed HOME that points it at
/// the stand-in (tests/fake-api/aider_home.py): nothing leaves the machine.
struct Aider {
    env: Env,
    api: StandIn,
    aider: PathBuf,
    /// A notification bus its tmux server and orchestra reach, where a test asked for one.
    bus: Option<Bus>,
}

fn start() -> Option<Aider> {
    start_world(None)
}

/// [`start`] with a notification bus whose server says it has `capabilities`.
fn start_on_bus(capabilities: &[&str]) -> Option<Aider> {
    start_world(Some(capabilities))
}

fn start_world(bus_capabilities: Option<&[&str]>) -> Option<Aider> {
    let mut env = Env::new();
    let aider = aider_bin();
    if !require(
        &format!("aider {AIDER_VERSION} (aider-chat from PyPI, in a venv)"),
        aider.is_some(),
    ) || !require("python3", which("python3").is_some())
    {
        return None;
    }
    let bus = match bus_capabilities {
        Some(capabilities) => Some(Bus::start_with(&env.root, capabilities)?),
        None => None,
    };
    let api = StandIn::start(&env.root, "openai_chat.py");
    let mut vars = agent_home(
        &env,
        "aider_home.py",
        &env.root.join("aider-home"),
        api.port,
        &[],
    );
    if let Some(bus) = &bus {
        let on_bus = ("DBUS_SESSION_BUS_ADDRESS".to_string(), bus.address.clone());
        vars.push(on_bus.clone());
        env.env.push(on_bus);
    }
    env.start_server(&vars);
    Some(Aider {
        env,
        api,
        aider: aider.expect("checked above"),
        bus,
    })
}

/// aider starts in seconds, but a busy machine makes that a minute.
const SLOW: Duration = Duration::from_secs(120);

impl Aider {
    fn dispatch(&self, label: &str, prompt: &str) {
        let agent = shell_words::quote(&self.aider.to_string_lossy()).into_owned();
        self.env
            .orchestra(&["dispatch", label, "--agent", &agent, "--prompt", prompt])
            .ok();
    }

    fn screen(&self, label: &str) -> String {
        let pane = self.env.session(label)["pane"]
            .as_str()
            .expect("a pane")
            .to_string();
        self.env.tmux(&["capture-pane", "-p", "-t", &pane])
    }

    #[track_caller]
    fn wait_screen(&self, label: &str, text: &str) {
        assert!(
            wait_until(SLOW, || self.screen(label).contains(text)),
            "{text:?} never showed:\n{}",
            self.screen(label)
        );
    }

    fn state(&self, label: &str) -> String {
        self.env.session(label)["state"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits, with no status tick, until `label` is in `state`: only a hook (or orchestra
    /// itself) can have said it.
    #[track_caller]
    fn said_without_ticks(&self, label: &str, state: &str) {
        assert!(
            wait_until(SLOW, || self.state(label) == state),
            "{label} never became {state} without a tick (it is {}):\n{}",
            self.state(label),
            self.screen(label)
        );
    }

    /// Ticks until `label` is in `state`.
    #[track_caller]
    fn ticks_until(&self, label: &str, state: &str) {
        assert!(
            wait_until(SLOW, || {
                self.env.orchestra(&["refresh"]).ok();
                self.state(label) == state
            }),
            "{label} never became {state} (it is {}):\n{}",
            self.state(label),
            self.screen(label)
        );
    }

    /// The details of `label`'s state changes, oldest first ("idle ← aider-notification: prompt").
    fn changes(&self, label: &str) -> Vec<String> {
        let run = self
            .env
            .orchestra(&["events", label, "--json", "-n", "200"])
            .ok();
        let events: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).expect("JSON");
        events
            .iter()
            .filter(|e| e["kind"] == "state")
            .map(|e| {
                format!(
                    "{} ← {}",
                    e["new"].as_str().unwrap_or_default(),
                    e["detail"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }

    fn brief(&self, label: &str, text: &str) {
        self.env.orchestra(&["brief", label, text]).ok();
    }
}

#[test]
fn a_dispatched_aider_is_busy_then_idle_by_its_notification() {
    let Some(a) = start() else { return };
    // Two lines: typed as one message (a bracketed paste), once aider's prompt shows.
    a.dispatch(
        "talk",
        "Tell me about it,\nover several seconds. [[slow: 8]] [[say: one two three four five six seven eight]]",
    );
    let wt = a.env.worktree_path("talk");
    a.wait_screen("talk", "Waiting for");
    a.ticks_until("talk", "busy");
    // The turn's end comes from aider's notifications command, not from a tick.
    a.said_without_ticks("talk", "idle");
    let changes = a.changes("talk");
    assert!(
        changes
            .last()
            .is_some_and(|c| c == "idle ← aider-notification: prompt"),
        "{changes:?}"
    );
    let prompts: Vec<serde_json::Value> = a
        .api
        .requests_json()
        .into_iter()
        .filter(|r| r["turn"] == "prompt")
        .collect();
    assert_eq!(prompts.len(), 1, "one message, not one per line");
    let messages = prompts[0]["request"]["messages"]
        .as_array()
        .expect("messages");
    let last = messages.last().expect("a message")["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        last.starts_with("Tell me about it,\nover several seconds."),
        "{last}"
    );
    // aider's history files live in the session's folder: the worktree is as the branch has it.
    let status = crate::harness::git_in(&wt, &["status", "--porcelain", "--ignored"]);
    assert_eq!(status, "", "aider left files in the worktree");
}

/// aider's notification says only that it waits; the question on screen, read by its
/// settling half, names the command in the notification.
#[test]
fn a_waiting_aider_notification_names_the_command_on_its_screen() {
    let Some(a) = start_on_bus(&["body"]) else {
        return;
    };
    let bus = a.bus.as_ref().expect("started with a bus");
    a.dispatch("ask", "[[bash: touch asked.txt]] [[say: Making it.]]");
    a.wait_screen("ask", "Run shell command?");
    a.said_without_ticks("ask", "waiting");
    let waiting = |n: &serde_json::Value| {
        n["summary"]
            .as_str()
            .is_some_and(|s| s.contains("ask is waiting"))
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
        body.starts_with("ask wants to run: touch asked.txt (in "),
        "{body:?}\n{}",
        a.screen("ask")
    );
}

#[test]
fn aider_asks_before_a_command_and_approve_or_deny_answers_by_label() {
    let Some(a) = start() else { return };
    let wt = a.env.worktree_path("cmd");
    a.dispatch("cmd", "[[bash: touch approved.txt]] [[say: Making it.]]");
    a.wait_screen("cmd", "Run shell command?");
    // aider's notification fires at its first question of the turn.
    a.said_without_ticks("cmd", "waiting");
    let run = a.env.orchestra(&["approve", "cmd"]).ok();
    assert!(run.stdout.contains("chose \"Yes\""), "{}", run.stdout);
    assert_eq!(a.state("cmd"), "busy", "said by approve at its key press");
    assert!(
        wait_until(SLOW, || wt.join("approved.txt").exists()),
        "approve did not run the command:\n{}",
        a.screen("cmd")
    );
    a.ticks_until("cmd", "idle");

    a.brief("cmd", "[[bash: touch denied.txt]] [[say: Making another.]]");
    a.wait_screen("cmd", "touch denied.txt");
    a.said_without_ticks("cmd", "waiting");
    // aider's "(D)on't ask again" means no from then on: never an approval.
    let always = a
        .env
        .orchestra(&["approve", "cmd", "--always"])
        .fails_with(1);
    assert!(
        always.stderr.contains("Yes | No | Don't ask again"),
        "{}",
        always.stderr
    );
    assert!(
        a.screen("cmd")
            .trim_end()
            .ends_with("(Y)es/(N)o/(D)on't ask again [Yes]:"),
        "nothing typed into the question:\n{}",
        a.screen("cmd")
    );
    let run = a.env.orchestra(&["deny", "cmd"]).ok();
    assert!(run.stdout.contains("chose \"No\""), "{}", run.stdout);
    a.ticks_until("cmd", "idle");
    assert!(!wt.join("denied.txt").exists(), "deny ran the command");

    // A new file: aider asks before creating it.
    a.brief(
        "cmd",
        "[[write: notes/new.txt | written by aider]] [[say: Writing it.]]",
    );
    a.wait_screen("cmd", "Create new file?");
    a.said_without_ticks("cmd", "waiting");
    a.env.orchestra(&["approve", "cmd"]).ok();
    assert!(
        wait_until(SLOW, || std::fs::read_to_string(wt.join("notes/new.txt"))
            .is_ok_and(|t| t == "written by aider\n")),
        "approve did not create the file:\n{}",
        a.screen("cmd")
    );
    a.ticks_until("cmd", "idle");
    // Nothing asks any more: approve refuses and sends nothing.
    let none = a.env.orchestra(&["approve", "cmd"]).fails_with(1);
    assert!(
        none.stderr.contains("no menu or question on cmd's screen"),
        "{}",
        none.stderr
    );
}

#[test]
fn an_api_error_is_an_error_exiting_is_exited_and_restart_restores_the_chat() {
    let Some(a) = start() else { return };
    a.dispatch("err", "[[error: 400]]");
    a.said_without_ticks("err", "error");
    assert!(
        a.screen("err").contains("litellm.BadRequestError"),
        "{}",
        a.screen("err")
    );
    a.brief("err", "[[say: Fine again.]]");
    a.wait_screen("err", "Fine again.");
    a.said_without_ticks("err", "idle");
    a.brief("err", "/exit");
    a.ticks_until("err", "exited");
    // Its chat history is in the session's folder: a restart reads it back.
    a.env.orchestra(&["restart", "err"]).ok();
    a.ticks_until("err", "idle");
    a.brief("err", "[[say: Restarted.]]");
    let mut asked = None;
    assert!(
        wait_until(SLOW, || {
            asked =
                a.api.requests_json().into_iter().rfind(|r| {
                    r["turn"] == "prompt" && r.to_string().contains("[[say: Restarted.]]")
                });
            asked.is_some()
        }),
        "the prompt after the restart never reached the stand-in:\n{}",
        a.screen("err")
    );
    let asked = asked.expect("checked above");
    let said_before = asked["request"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .any(|m| {
            m["role"] == "assistant" && m["content"].as_str().map(str::trim) == Some("Fine again.")
        });
    let roles: Vec<String> = asked["request"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            format!(
                "{}: {:.60}",
                m["role"],
                m["content"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert!(said_before, "the earlier turn was not restored: {roles:#?}");
}

/// A session `up` starts from the manifest gets what a dispatched aider gets: its
/// notifications command (the end of a turn is aider's own word) and its history files in
/// the session's folder, through the manifest's `env` snippet and again after a restart.
#[test]
fn a_manifest_aider_is_idle_by_its_notification_after_up_and_restart() {
    let Some(a) = start() else { return };
    let folder = a.env.root.join("aider-folder");
    std::fs::create_dir_all(&folder).unwrap();
    crate::harness::git_in(&folder, &["init", "-q"]);
    let agent = shell_words::quote(&a.aider.to_string_lossy()).into_owned();
    a.env.write_agent_manifest(
        &agent,
        "helper",
        &folder,
        "export ORCHESTRA_TEST_SNIPPET=reached",
    );
    a.env.orchestra(&["up"]).ok();
    let cmdline = a.env.pane_process("helper", "cmdline");
    assert!(
        cmdline.contains("event --from-hook aider-notification"),
        "{cmdline}"
    );
    let environ = a.env.pane_process("helper", "environ");
    assert!(
        environ
            .lines()
            .any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached"),
        "{environ}"
    );
    a.ticks_until("helper", "idle");
    a.brief(
        "helper",
        "[[slow: 6]] [[say: one two three four five six seven eight]]",
    );
    a.wait_screen("helper", "Waiting for");
    a.ticks_until("helper", "busy");
    // The turn's end comes from aider's notifications command, not from a tick.
    a.said_without_ticks("helper", "idle");
    let changes = a.changes("helper");
    assert!(
        changes
            .last()
            .is_some_and(|c| c == "idle ← aider-notification: prompt"),
        "{changes:?}"
    );
    // Its history files went to the session's folder, not the person's.
    let status = crate::harness::git_in(&folder, &["status", "--porcelain", "--ignored"]);
    assert_eq!(status, "", "aider left files in the folder");

    a.env.orchestra(&["restart", "helper"]).ok();
    let id = a.env.session("helper")["id"].as_str().unwrap().to_string();
    let cmdline = a.env.pane_process("helper", "cmdline");
    assert!(
        cmdline.contains("event --from-hook aider-notification")
            && cmdline.contains(&format!("sessions/{id}/aider.chat.history.md")),
        "{cmdline}"
    );
    a.env.orchestra(&["down"]).ok();
}

fn classify(env: &Env, input: &[u8]) -> (String, String) {
    let mut child = Command::new(bin())
        .args(["classify", "--kind", "aider", "--json"])
        .env("ORCHESTRA_HOME", &env.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run orchestra classify");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write the screen");
    let out = child.wait_with_output().expect("classify");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    (
        v["state"].as_str().unwrap_or_default().to_string(),
        v["rule"].as_str().unwrap_or_default().to_string(),
    )
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/screens/aider")
        .join(AIDER_VERSION)
}

#[test]
fn every_aider_screen_is_classified_as_its_name_says() {
    let env = Env::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("the aider fixtures")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 30, "fixtures missing: {files:?}");
    let mut wrong = Vec::new();
    for file in &files {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let expected = name.split('-').next().unwrap_or_default();
        let (got, rule) = classify(&env, &std::fs::read(file).expect("read"));
        if got != expected {
            wrong.push(format!("{name}: {got} ({rule})"));
        }
    }
    assert_eq!(
        wrong,
        Vec::<String>::new(),
        "{} of {} aider screens right",
        files.len() - wrong.len(),
        files.len()
    );
}

#[test]
fn aider_screens_made_by_hand() {
    let env = Env::new();
    let read = |name: &str| std::fs::read_to_string(fixtures_dir().join(name)).expect("fixture");
    let check = |screen: &str, want: &str, why: &str| {
        assert_eq!(
            classify(&env, screen.as_bytes()).0,
            want,
            "{why}:\n{screen}"
        );
    };
    let question = read("waiting-shell-command.txt");
    check(
        &format!("{} y\n", question.trim_end()),
        "waiting",
        "an answer typed, not yet sent",
    );
    let idle = read("idle-after-turn.txt");
    check(
        &format!("{} half a thought\n", idle.trim_end()),
        "idle",
        "a person typing at the prompt",
    );
    check(
        &idle.replace("\n>\n", "\nask>\n"),
        "idle",
        "the prompt of /ask mode",
    );
    // Merge-conflict markers and quoted prompts in the answer are no prompt.
    check(
        &format!(
            "{}\n>>>>>>> REPLACE\n",
            read("busy-streaming.txt").trim_end()
        ),
        "busy",
        "an edit block streaming",
    );
    // An error in an earlier turn does not make the next one an error.
    check(&read("idle-after-error.txt"), "idle", "after the error");
}

#[test]
fn the_chat_stand_in_passes_its_own_tests() {
    if !require("python3", which("python3").is_some()) {
        return;
    }
    // A file, not a pipe: a full pipe would stall the child past its deadline.
    let report = tempfile::tempfile().expect("temp file");
    let mut child = Command::new("python3")
        .arg(fake_api_dir().join("test_openai_chat.py"))
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
        "tests/fake-api/test_openai_chat.py failed (or ran past 120 s):\n{text}"
    );
}
