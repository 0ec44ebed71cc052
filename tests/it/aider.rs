//! aider (issue 12, part 2) on its real CLI, the pinned release from PyPI, against the Chat
//! Completions stand-in (tests/fake-api/openai_chat.py): its states from its notifications
//! command and its screens, its questions answered by approve and deny, and the classifier
//! on every screen captured from it (tests/capture-aider-screens.sh).

use std::time::Duration;

use crate::harness::{
    git_in, screen_fixture, screen_fixtures, stand_in_passes_its_own_tests, wait_until, AgentCli,
    AgentWorld, Env, AIDER_VERSION,
};

/// aider starts in seconds, but a busy machine makes that a minute.
const SLOW: Duration = Duration::from_secs(120);

/// A tmux server whose sessions run the real aider in a sandboxed HOME that points it at
/// the stand-in (tests/fake-api/aider_home.py): nothing leaves the machine.
fn start() -> Option<AgentWorld> {
    start_world(None)
}

/// [`start`] with a notification bus whose server says it has `capabilities`.
fn start_on_bus(capabilities: &[&str]) -> Option<AgentWorld> {
    start_world(Some(capabilities))
}

fn start_world(bus_capabilities: Option<&[&str]>) -> Option<AgentWorld> {
    let mut world = AgentWorld::start(AgentCli::aider(), |_| Vec::new(), bus_capabilities)?;
    world.patience = SLOW;
    Some(world)
}

/// `label`'s turn under way (aider's spinner on screen) reads busy; its end comes from
/// aider's notifications command, not from a tick.
#[track_caller]
fn busy_then_idle_by_its_notification(a: &AgentWorld, label: &str) {
    a.wait_screen(label, "Waiting for");
    a.reaches(label, "busy", SLOW);
    a.said_without_ticks(label, "idle", SLOW);
    let changes = a.state_changes(label);
    assert!(
        changes
            .last()
            .is_some_and(|c| c.new == "idle" && c.detail == "aider-notification: prompt"),
        "{changes:?}"
    );
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
    busy_then_idle_by_its_notification(&a, "talk");
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
    let status = git_in(&wt, &["status", "--porcelain", "--ignored"]);
    assert_eq!(status, "", "aider left files in the worktree");
}

/// aider's notification says only that it waits; the question on screen, read by its
/// settling half, names the command in the notification.
#[test]
fn a_waiting_aider_notification_names_the_command_on_its_screen() {
    let Some(a) = start_on_bus(&["body"]) else {
        return;
    };
    a.dispatch("ask", "[[bash: touch asked.txt]] [[say: Making it.]]");
    a.wait_screen("ask", "Run shell command?");
    a.said_without_ticks("ask", "waiting", SLOW);
    let body = a.waiting_note("ask");
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
    a.said_without_ticks("cmd", "waiting", SLOW);
    let run = a.env.orchestra(&["approve", "cmd"]).ok();
    assert!(run.stdout.contains("chose \"Yes\""), "{}", run.stdout);
    assert_eq!(a.state("cmd"), "busy", "said by approve at its key press");
    assert!(
        wait_until(SLOW, || wt.join("approved.txt").exists()),
        "approve did not run the command:\n{}",
        a.screen("cmd")
    );
    a.reaches("cmd", "idle", SLOW);

    a.brief("cmd", "[[bash: touch denied.txt]] [[say: Making another.]]");
    a.wait_screen("cmd", "touch denied.txt");
    a.said_without_ticks("cmd", "waiting", SLOW);
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
    a.reaches("cmd", "idle", SLOW);
    assert!(!wt.join("denied.txt").exists(), "deny ran the command");

    // A new file: aider asks before creating it.
    a.brief(
        "cmd",
        "[[write: notes/new.txt | written by aider]] [[say: Writing it.]]",
    );
    a.wait_screen("cmd", "Create new file?");
    a.said_without_ticks("cmd", "waiting", SLOW);
    a.env.orchestra(&["approve", "cmd"]).ok();
    assert!(
        wait_until(SLOW, || std::fs::read_to_string(wt.join("notes/new.txt"))
            .is_ok_and(|t| t == "written by aider\n")),
        "approve did not create the file:\n{}",
        a.screen("cmd")
    );
    a.reaches("cmd", "idle", SLOW);
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
    a.said_without_ticks("err", "error", SLOW);
    assert!(
        a.screen("err").contains("litellm.BadRequestError"),
        "{}",
        a.screen("err")
    );
    a.brief("err", "[[say: Fine again.]]");
    a.wait_screen("err", "Fine again.");
    a.said_without_ticks("err", "idle", SLOW);
    a.brief("err", "/exit");
    a.reaches("err", "exited", SLOW);
    // Its chat history is in the session's folder: a restart reads it back.
    a.env.orchestra(&["restart", "err"]).ok();
    a.reaches("err", "idle", SLOW);
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
    git_in(&folder, &["init", "-q"]);
    a.env.write_agent_manifest(
        &a.agent,
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
    let environ = a.env.pane_process_once("helper", "environ", |e| {
        e.lines().any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached")
    });
    assert!(
        environ
            .lines()
            .any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached"),
        "{environ}"
    );
    a.reaches("helper", "idle", SLOW);
    a.brief(
        "helper",
        "[[slow: 6]] [[say: one two three four five six seven eight]]",
    );
    busy_then_idle_by_its_notification(&a, "helper");
    // Its history files went to the session's folder, not the person's.
    let status = git_in(&folder, &["status", "--porcelain", "--ignored"]);
    assert_eq!(status, "", "aider left files in the folder");

    a.env.orchestra(&["restart", "helper"]).ok();
    let id = a.env.session("helper")["id"].as_str().unwrap().to_string();
    let cmdline = a.env.pane_process("helper", "cmdline");
    assert!(
        cmdline.contains("event --from-hook aider-notification")
            && cmdline.contains(&format!("sessions/{id}/aider.chat.history.md"))
            && cmdline.contains("--restore-chat-history"),
        "{cmdline}"
    );
    // The chat came along into the new session's folder, and aider took it back up: the
    // model hears the earlier turn with the next prompt.
    let history = a
        .env
        .home
        .join(format!("sessions/{id}/aider.chat.history.md"));
    let text = std::fs::read_to_string(&history).unwrap_or_default();
    assert!(text.contains("one two three four"), "{text:?}");
    a.reaches("helper", "idle", SLOW);
    let before = a.api.requests_json().len();
    a.brief("helper", "[[slow: 6]] [[say: after the restart]]");
    busy_then_idle_by_its_notification(&a, "helper");
    // The request goes out a moment after the typed text shows.
    let heard = wait_until(Duration::from_secs(30), || {
        a.api.heard_since(before, "one two three four")
    });
    assert!(heard, "{}", a.api.requests());
    a.env.orchestra(&["down"]).ok();
}

#[test]
fn every_aider_screen_is_classified_as_its_name_says() {
    let env = Env::new();
    let files = screen_fixtures("aider", AIDER_VERSION);
    assert!(files.len() >= 30, "fixtures missing: {files:?}");
    let mut wrong = Vec::new();
    for file in &files {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let expected = name.split('-').next().unwrap_or_default();
        let (got, rule) = env.classify("aider", &std::fs::read(file).expect("read"));
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
    let read = |name: &str| screen_fixture("aider", AIDER_VERSION, name);
    let check = |screen: &str, want: &str, why: &str| {
        assert_eq!(
            env.classify("aider", screen.as_bytes()).0,
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
    stand_in_passes_its_own_tests("test_openai_chat.py");
}
