//! Notifications on a real D-Bus session bus (a private `dbus-daemon`, with a small
//! python3-dbus stand-in owning org.freedesktop.Notifications), the fallbacks, and the
//! event endpoint's own rules.

use std::process::Stdio;
use std::time::Duration;

use crate::harness::{wait_until, write_script, AgentCli, Bus, ClaudeWorld, Env};

fn session_id(env: &Env, label: &str) -> String {
    env.session(label)["id"].as_str().unwrap().to_string()
}

#[test]
fn a_transition_sends_one_notification_on_the_bus() {
    let mut env = Env::new();
    let Some(bus) = Bus::start(&env.root) else {
        return;
    };
    env.start_server(&[]);
    env.dispatch_shell("notified").ok();
    let id = session_id(&env, "notified");
    env.env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));

    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || !bus.notes().is_empty()),
        "no Notify call reached the bus"
    );
    let notes = bus.notes();
    assert_eq!(notes[0]["app"], "orchestra");
    // This server shows no actions: none are offered.
    assert_eq!(notes[0]["actions"], serde_json::json!([]), "{notes:?}");
    assert!(
        notes[0]["summary"].as_str().unwrap().contains("notified"),
        "{notes:?}"
    );
    assert!(
        notes[0]["body"].as_str().unwrap().contains("repo"),
        "names the repo: {notes:?}"
    );

    // The same state again is no transition; idle needs no person.
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    env.orchestra(&["event", "--session", &id, "idle"]).ok();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(bus.notes().len(), 1, "{:?}", bus.notes());

    env.orchestra(&["event", "--session", &id, "error"]).ok();
    assert!(wait_until(Duration::from_secs(10), || bus.notes().len() == 2));
    assert!(bus.notes()[1]["summary"]
        .as_str()
        .unwrap()
        .contains("error"));
    // The window badge followed each event.
    let window = env.session("notified")["window"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        env.tmux(&[
            "show-options",
            "-w",
            "-v",
            "-t",
            &window,
            "@orchestra_state"
        ])
        .trim(),
        "error"
    );
}

#[test]
fn without_a_bus_the_fallback_command_runs_and_nothing_fails() {
    let mut env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("quiet").ok();
    let id = session_id(&env, "quiet");
    env.without_bus();

    // No bus, no command, no client: silent success.
    let run = env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // @orchestra-notify-cmd gets title and body as arguments.
    let out = env.notes_to_file();
    env.orchestra(&["event", "--session", &id, "exited"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || out.exists()),
        "the fallback command did not run"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("quiet") && text.contains("exited"), "{text}");
}

/// The way a machine with no D-Bus notifies (macOS has none): a waiting session's note goes
/// through the command path at once, offering no actions and waiting for none. The
/// command gets exactly its own words, then the title and the body, each one argument
/// whatever it holds (macOS's osascript gets them the same way: `notify::tests`).
#[test]
fn without_a_bus_a_waiting_note_runs_the_command_with_exactly_its_words_and_waits_for_none() {
    let mut env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("plain").ok();
    let id = session_id(&env, "plain");
    env.without_bus();
    let log = env.root.join("argv.log");
    let script = env.root.join("record notes.sh");
    write_script(
        &script,
        &format!("#!/bin/sh\nprintf '<%s>\\n' \"$@\" > '{}'\n", log.display()),
    );
    let command = format!(
        "{} --app 'orchestra notes'",
        shell_words::quote(&script.to_string_lossy())
    );
    let note = serde_json::json!({
        "title": "orchestra: plain is waiting for you",
        "body": "plain wants to run: make \"a b\" && echo $HOME; `x` (in repo)",
        "asks": "run: make",
    });
    let started = std::time::Instant::now();
    let run = env
        .orchestra_stdin(
            &[
                "notify",
                "--stdin",
                "--session",
                &id,
                "--event",
                "1",
                "--fallback-cmd",
                &command,
            ],
            note.to_string().as_bytes(),
        )
        .ok();
    assert_eq!(run.stdout, "sent via command\n", "{}", run.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the sender waited: {:?}",
        started.elapsed()
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "<--app>\n<orchestra notes>\n<orchestra: plain is waiting for you>\n\
         <plain wants to run: make \"a b\" && echo $HOME; `x` (in repo)>\n"
    );
}

#[test]
fn the_event_endpoint_never_fails_a_hook_and_ignores_sub_agents() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("parent").ok();
    let id = session_id(&env, "parent");
    let run_hook = |event: &str, json: &str, session: &str| {
        let mut cmd = env.orchestra_command(&env.repo, &["event", "--from-hook", event]);
        cmd.env("ORCHESTRA_SESSION", session)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(json.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run_hook(
        "UserPromptSubmit",
        r#"{"hook_event_name":"UserPromptSubmit","prompt":"hi"}"#,
        &id,
    );
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "a UserPromptSubmit hook's stdout becomes context: it must stay empty"
    );
    assert_eq!(env.session("parent")["state"], "busy");
    // A sub-agent's Stop leaves the parent busy.
    run_hook(
        "Stop",
        r#"{"hook_event_name":"SubagentStop","agent_id":"a1b2c3","stop_hook_active":false}"#,
        &id,
    );
    assert_eq!(env.session("parent")["state"], "busy");
    run_hook(
        "Stop",
        r#"{"hook_event_name":"Stop","stop_hook_active":false}"#,
        &id,
    );
    assert_eq!(env.session("parent")["state"], "idle");
    // An idle_prompt notification changes nothing; a permission prompt means waiting.
    run_hook(
        "Notification",
        r#"{"notification_type":"idle_prompt","message":"Claude is waiting for your input"}"#,
        &id,
    );
    assert_eq!(env.session("parent")["state"], "idle");
    run_hook(
        "Notification",
        r#"{"notification_type":"permission_prompt","message":"Claude needs your permission"}"#,
        &id,
    );
    assert_eq!(env.session("parent")["state"], "waiting");

    // As a hook it never fails (exit 2 would block the agent): problems are logged.
    let out = run_hook("Stop", "{}", "no-such-session");
    assert!(out.status.success());
    assert!(out.stderr.is_empty());
    let log = std::fs::read_to_string(env.home.join("logs/hooks.log")).unwrap();
    assert!(log.contains("no-such-session"), "{log}");
    // Called by hand, bad input is exit 2.
    env.orchestra(&["event", "--session", &id, "bogus"])
        .fails_with(2);
    env.orchestra(&["event", "waiting"]).fails_with(2);
    assert_eq!(env.session("parent")["state"], "waiting", "nothing changed");
}

/// A real claude (against the stand-in) in manual-approval mode on a private bus: the
/// tmux server, so every hook, talks to `bus`.
fn claude_on_bus(label: &str) -> Option<(Env, ClaudeWorld, Bus)> {
    claude_on(label, Bus::start)
}

/// [`claude_on_bus`] whose notification server shows actions.
fn claude_on_actions_bus(label: &str) -> Option<(Env, ClaudeWorld, Bus)> {
    claude_on(label, Bus::with_actions)
}

fn claude_on(
    label: &str,
    bus: fn(&std::path::Path) -> Option<Bus>,
) -> Option<(Env, ClaudeWorld, Bus)> {
    let env = Env::new();
    let wt = env.worktree_path(label);
    let world = ClaudeWorld::start(&env, &[&wt])?;
    let bus = bus(&env.root)?;
    let mut vars = world.env.clone();
    vars.push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    env.start_server(&vars);
    Some((env, world, bus))
}

fn dispatch_claude(env: &Env, world: &ClaudeWorld, label: &str, prompt: &str) {
    let agent = AgentCli::claude("--permission-mode default").command(&world.claude);
    env.orchestra(&["dispatch", label, "--agent", &agent, "--prompt", prompt])
        .ok();
}

fn waits_for_approval(env: &Env, label: &str) {
    env.wait_screen(label, "Do you want to proceed?", Duration::from_secs(40));
    env.said_without_ticks(label, "waiting", Duration::from_secs(10));
}

#[test]
fn a_waiting_claude_notification_names_the_command_it_asks_to_run() {
    let Some((env, world, bus)) = claude_on_bus("asker") else {
        return;
    };
    dispatch_claude(&env, &world, "asker", "[[bash: touch asked-by-name]]");
    waits_for_approval(&env, "asker");
    assert!(
        wait_until(Duration::from_secs(10), || !bus.notes().is_empty()),
        "no Notify call reached the bus"
    );
    let notes = bus.notes();
    let body = notes[0]["body"].as_str().unwrap();
    assert!(
        body.contains("asker wants to run: touch asked-by-name"),
        "{notes:?}"
    );
    assert!(
        notes[0]["summary"]
            .as_str()
            .unwrap()
            .contains("asker is waiting"),
        "{notes:?}"
    );
}

#[test]
fn a_person_looking_at_the_window_gets_a_tmux_message_not_a_notification() {
    let Some((env, world, bus)) = claude_on_bus("seen") else {
        return;
    };
    let person = crate::harness::Person::attach(&env);
    dispatch_claude(&env, &world, "seen", "[[bash: touch seen#{session_name}]]");
    let window = env.session("seen")["window"].as_str().unwrap().to_string();
    // The client's current session shows the agent's window.
    show_on_client(&env, &window);
    waits_for_approval(&env, "seen");
    // `#{…}` shown as typed: the message is never a tmux format.
    person.wait_to_see("seen wants to run: touch seen#{session_name}");
    // The hook's detached sender would have reached the bus by now.
    std::thread::sleep(Duration::from_secs(3));
    assert!(bus.notes().is_empty(), "{:?}", bus.notes());
}

#[test]
fn a_person_looking_at_another_window_gets_the_notification() {
    let Some((env, world, bus)) = claude_on_bus("unseen") else {
        return;
    };
    let _person = crate::harness::Person::attach(&env);
    dispatch_claude(&env, &world, "unseen", "[[bash: touch unseen-by-hand]]");
    let window = env.session("unseen")["window"]
        .as_str()
        .unwrap()
        .to_string();
    let other = other_window(&env, &window);
    show_on_client(&env, &other);
    waits_for_approval(&env, "unseen");
    assert!(
        wait_until(Duration::from_secs(10), || !bus.notes().is_empty()),
        "the person was on another window: the notification should go out"
    );
    assert!(bus.notes()[0]["body"]
        .as_str()
        .unwrap()
        .contains("unseen wants to run: touch unseen-by-hand"));
}

/// A state the refresh read off the screen goes out through the same door as a hook's: a
/// person looking at the window gets a tmux message and the desktop nothing, while a session
/// nobody looks at gets its notification.
#[test]
fn a_state_the_screen_found_is_quiet_when_seen_too() {
    let mut env = Env::new();
    let Some(bus) = Bus::start(&env.root) else {
        return;
    };
    let on_bus = ("DBUS_SESSION_BUS_ADDRESS".to_string(), bus.address.clone());
    env.start_server(std::slice::from_ref(&on_bus));
    env.env.push(on_bus);
    let person = crate::harness::Person::attach(&env);
    // Agents replaced by a shell at once: the next refresh reads them exited.
    for label in ["looked-at", "elsewhere"] {
        env.orchestra(&[
            "dispatch",
            label,
            "--agent",
            "env bash --norc --noprofile",
            "--kind",
            "generic",
        ])
        .ok();
    }
    let window = env.session("looked-at")["window"]
        .as_str()
        .unwrap()
        .to_string();
    show_on_client(&env, &window);
    std::thread::sleep(Duration::from_millis(300));
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("looked-at")["state"], "exited");
    person.wait_to_see("orchestra: looked-at exited");
    assert!(
        wait_until(Duration::from_secs(10), || !bus.notes().is_empty()),
        "the session nobody looks at got no notification"
    );
    // The detached sender of a notification for looked-at would have reached the bus too.
    std::thread::sleep(Duration::from_secs(2));
    let notes = bus.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0]["summary"].as_str().unwrap().contains("elsewhere"),
        "{notes:?}"
    );
}

/// The notification telling that `label` waits, once it reached the bus.
#[track_caller]
fn waiting_note(bus: &Bus, label: &str) -> serde_json::Value {
    bus.wait_note(&format!("{label} is waiting"), Duration::from_secs(15))
}

const ALL_ACTIONS: [&str; 6] = ["approve", "Approve", "deny", "Deny", "open", "Open"];

#[test]
fn approve_on_a_waiting_notification_runs_the_tool() {
    let Some((env, world, bus)) = claude_on_actions_bus("approved") else {
        return;
    };
    dispatch_claude(
        &env,
        &world,
        "approved",
        "[[bash: touch approved-by-action]]",
    );
    waits_for_approval(&env, "approved");
    let note = waiting_note(&bus, "approved");
    assert_eq!(note["actions"], serde_json::json!(ALL_ACTIONS), "{note}");
    assert!(note["body"]
        .as_str()
        .unwrap()
        .contains("approved wants to run: touch approved-by-action"));
    let made = env.worktree_path("approved").join("approved-by-action");
    assert!(!made.exists(), "nothing ran before the person said so");

    bus.press(note["id"].as_u64().unwrap(), "approve");
    assert!(
        wait_until(Duration::from_secs(30), || made.exists()),
        "the approved command did not run:\n{}",
        env.screen("approved")
    );
    // An approval needs no follow-up: the one notification is all the bus got.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(bus.notes().len(), 1, "{:?}", bus.notes());
}

#[test]
fn deny_on_a_waiting_notification_does_not_run_the_tool() {
    let Some((env, world, bus)) = claude_on_actions_bus("denied") else {
        return;
    };
    dispatch_claude(&env, &world, "denied", "[[bash: touch denied-by-action]]");
    waits_for_approval(&env, "denied");
    let note = waiting_note(&bus, "denied");
    bus.press(note["id"].as_u64().unwrap(), "deny");
    assert!(
        wait_until(Duration::from_secs(20), || !env
            .screen("denied")
            .contains("Do you want to proceed?")),
        "the menu stayed:\n{}",
        env.screen("denied")
    );
    // Long enough for an approved `touch` to have run.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !env.worktree_path("denied")
            .join("denied-by-action")
            .exists(),
        "a denied command ran:\n{}",
        env.screen("denied")
    );
}

/// The wait a notification offered buttons for ended elsewhere (here `orchestra approve`;
/// a person at the pane, or a later question, alike): its sender takes it down within
/// seconds, so no button is left that could only be refused, and says nothing more.
#[test]
fn a_notification_whose_wait_ended_elsewhere_is_taken_down() {
    let Some((env, world, bus)) = claude_on_actions_bus("elsewhere") else {
        return;
    };
    dispatch_claude(
        &env,
        &world,
        "elsewhere",
        "[[bash: touch approved-elsewhere]]",
    );
    waits_for_approval(&env, "elsewhere");
    let note = waiting_note(&bus, "elsewhere");
    let id = note["id"].as_u64().expect("id");
    std::thread::sleep(Duration::from_secs(3));
    assert!(!bus.closed().contains(&id), "taken down while still asked");
    env.orchestra(&["approve", "elsewhere"]).ok();
    let made = env.worktree_path("elsewhere").join("approved-elsewhere");
    assert!(
        wait_until(Duration::from_secs(30), || made.exists()),
        "{}",
        env.screen("elsewhere")
    );
    assert!(
        wait_until(Duration::from_secs(10), || bus.closed().contains(&id)),
        "the notification stayed up after its wait ended: closed {:?}",
        bus.closed()
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(bus.notes().len(), 1, "{:?}", bus.notes());
}

/// The menu was answered by hand before the person got to the notification: its Approve
/// finds nothing it was offered for, sends nothing, and a follow-up notification says so.
#[test]
fn a_late_action_after_the_menu_closed_sends_nothing_and_says_so() {
    let Some((env, world, bus)) = claude_on_actions_bus("late") else {
        return;
    };
    dispatch_claude(&env, &world, "late", "[[bash: touch late-by-action]]");
    waits_for_approval(&env, "late");
    let note = waiting_note(&bus, "late");
    env.orchestra(&["deny", "late"]).ok();
    assert!(wait_until(Duration::from_secs(20), || !env
        .screen("late")
        .contains("Do you want to proceed?")));
    // What a key would change: the conversation (the notices below it come and go on
    // their own), the input line, the requests the model got.
    let conversation = |screen: &str| {
        let lines: Vec<&str> = screen.lines().collect();
        let end = lines
            .iter()
            .position(|l| l.contains("Interrupted"))
            .expect("the denied call's line");
        lines[..=end].join("\n")
    };
    let input_line = |screen: &str| {
        screen
            .lines()
            .skip_while(|l| !l.starts_with('─'))
            .nth(1)
            .map(|l| l.trim_end().to_string())
    };
    assert!(wait_until(Duration::from_secs(20), || env
        .screen("late")
        .contains("Interrupted")));
    let before = env.screen("late");
    let requests = world.api.requests_json().len();
    bus.press(note["id"].as_u64().unwrap(), "approve");
    let said = bus.wait_note("late Approve: not done", Duration::from_secs(15));
    assert!(
        said["body"].as_str().unwrap().contains("nothing sent"),
        "{said}"
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(!env.worktree_path("late").join("late-by-action").exists());
    let after = env.screen("late");
    assert_eq!(
        conversation(&after),
        conversation(&before),
        "a key reached the pane"
    );
    assert_eq!(
        input_line(&after),
        input_line(&before),
        "a key reached the pane"
    );
    assert_eq!(
        world.api.requests_json().len(),
        requests,
        "the model heard from the pane"
    );
}

/// A waiting session on a bus that shows actions, and a person attached, looking at
/// another window.
/// A menu as claude draws one, left on screen in `pane` by a program that reads keys.
fn draw_a_menu(env: &Env, pane: &str) {
    env.tmux(&[
        "send-keys",
        "-t",
        pane,
        "-l",
        "clear; printf 'Do you want to proceed?\\n❯ 1. Yes\\n  2. No\\n\\nEsc to cancel\\n'; cat >/dev/null",
    ]);
    env.tmux(&["send-keys", "-t", pane, "Enter"]);
    assert!(wait_until(Duration::from_secs(10), || env
        .tmux(&["capture-pane", "-p", "-t", pane])
        .trim_end()
        .ends_with("Esc to cancel")));
}

fn shell_waiting_on_actions_bus(label: &str) -> Option<(Env, Bus, crate::harness::Person)> {
    let mut env = Env::new();
    let bus = Bus::with_actions(&env.root)?;
    env.start_server(&[]);
    env.dispatch_shell(label).ok();
    env.env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    let person = crate::harness::Person::attach(&env);
    Some((env, bus, person))
}

/// A window of the server other than `window`.
fn other_window(env: &Env, window: &str) -> String {
    env.tmux(&["list-windows", "-a", "-F", "#{window_id}"])
        .lines()
        .find(|w| *w != window)
        .expect("the server's first window")
        .to_string()
}

/// The attached client shows `window`.
fn show_on_client(env: &Env, window: &str) {
    let client = env.tmux(&["list-clients", "-F", "#{client_name}"]);
    env.tmux(&["switch-client", "-c", client.trim(), "-t", window]);
}

/// The window the one client shows (list-clients: tmux 3.2's `display-message -c` takes
/// no client).
fn client_window(env: &Env) -> String {
    env.tmux(&["list-clients", "-F", "#{window_id}"])
        .trim()
        .to_string()
}

#[test]
fn open_on_a_waiting_notification_shows_the_window_on_the_client() {
    let Some((env, bus, _person)) = shell_waiting_on_actions_bus("opened") else {
        return;
    };
    let window = env.session("opened")["window"]
        .as_str()
        .unwrap()
        .to_string();
    let other = other_window(&env, &window);
    show_on_client(&env, &other);
    assert_eq!(client_window(&env), other);

    let id = session_id(&env, "opened");
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    let note = waiting_note(&bus, "opened");
    assert_eq!(note["actions"], serde_json::json!(ALL_ACTIONS), "{note}");
    bus.press(note["id"].as_u64().unwrap(), "open");
    assert!(
        wait_until(Duration::from_secs(10), || client_window(&env) == window),
        "the client still shows {}",
        client_window(&env)
    );
}

/// The sender waits for an action no longer than `@orchestra-notify-wait`, then closes its
/// notification; `off` offers no actions at all.
#[test]
fn an_unanswered_notification_is_closed_at_the_bound() {
    let Some((env, bus, _person)) = shell_waiting_on_actions_bus("bounded") else {
        return;
    };
    let first = env
        .tmux(&["list-windows", "-a", "-F", "#{window_id}"])
        .lines()
        .next()
        .unwrap()
        .to_string();
    show_on_client(&env, &first);
    env.tmux(&["set-option", "-g", "@orchestra-notify-wait", "3s"]);
    let id = session_id(&env, "bounded");
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    let note = waiting_note(&bus, "bounded");
    let nid = note["id"].as_u64().unwrap();
    assert_eq!(note["actions"], serde_json::json!(ALL_ACTIONS), "{note}");
    std::thread::sleep(Duration::from_secs(1));
    assert!(!bus.closed().contains(&nid), "closed before its bound");
    assert!(
        wait_until(Duration::from_secs(10), || bus.closed().contains(&nid)),
        "the notification was never closed"
    );

    env.tmux(&["set-option", "-g", "@orchestra-notify-wait", "off"]);
    env.orchestra(&["event", "--session", &id, "idle"]).ok();
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    assert!(wait_until(Duration::from_secs(10), || bus.notes().len() == 2));
    assert_eq!(bus.notes()[1]["actions"], serde_json::json!([]));
}

/// A later question on screen is not the one a notification was offered for: the
/// session waited again since (a newer change of state), so the earlier notification is
/// taken down, and a press that reaches it anyway presses nothing, though a menu is on
/// screen right then (`act` refuses what `a_late_action_…` shows, for the same reason).
#[test]
fn an_action_for_an_earlier_wait_presses_nothing_on_a_later_menu() {
    let Some((env, bus, _person)) = shell_waiting_on_actions_bus("moved-on") else {
        return;
    };
    let pane = env.session("moved-on")["pane"]
        .as_str()
        .unwrap()
        .to_string();
    draw_a_menu(&env, &pane);
    let before = env.tmux(&["capture-pane", "-p", "-t", &pane]);
    let id = session_id(&env, "moved-on");
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    let first = waiting_note(&bus, "moved-on");
    env.orchestra(&["event", "--session", &id, "busy"]).ok();
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    assert!(wait_until(Duration::from_secs(10), || bus.notes().len() == 2));
    let first_id = first["id"].as_u64().unwrap();
    let second_id = bus.notes()[1]["id"].as_u64().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || bus.closed().contains(&first_id)),
        "the earlier wait's notification stayed up: closed {:?}",
        bus.closed()
    );
    assert!(!bus.closed().contains(&second_id), "{:?}", bus.closed());

    bus.press(first_id, "approve");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(bus.notes().len(), 2, "{:?}", bus.notes());
    assert_eq!(
        env.tmux(&["capture-pane", "-p", "-t", &pane]),
        before,
        "a key reached the pane"
    );
}

/// `@orchestra-budget` marks the window's badge: `$` from 80 %, `$!` past the budget,
/// nothing below or without a budget; the agent runs on either way.
#[test]
fn a_session_near_or_over_its_budget_carries_a_mark_on_its_badge() {
    let mut env = Env::new();
    let wt = env.worktree_path("dear");
    let Some(world) = ClaudeWorld::start(&env, &[&wt]) else {
        return;
    };
    env.start_server(&world.env);
    // orchestra finds claude's logs where claude does: $CLAUDE_CONFIG_DIR, else ~/.claude.
    env.env.push((
        "CLAUDE_CONFIG_DIR".into(),
        world.home().join(".claude").to_string_lossy().into(),
    ));
    // No bus: the budget's notifications are not what this test looks at.
    env.without_bus();
    env.orchestra(&["tmux", "init"]).ok();
    let agent = shell_words::quote(&world.claude.to_string_lossy()).into_owned();
    env.orchestra(&[
        "dispatch",
        "dear",
        "--agent",
        &agent,
        "--prompt",
        "[[say: one]]",
    ])
    .ok();
    assert!(wait_until(Duration::from_secs(60), || env.session("dear")
        ["state"]
        == "idle"));
    let model = || {
        let run = env.orchestra(&["cost", "--json"]).ok();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&run.stdout).unwrap();
        rows.first()
            .and_then(|r| r["models"][0]["model"].as_str())
            .map(str::to_string)
    };
    assert!(wait_until(Duration::from_secs(20), || model().is_some()));
    std::fs::write(
        env.home.join("prices.toml"),
        format!(
            "[models.\"{}\"]\ninput = 2.0\noutput = 10.0\ncache_write = 4.0\ncache_read = 1.0\n",
            model().unwrap()
        ),
    )
    .unwrap();
    let usd = env.session("dear")["cost_usd"].as_f64().expect("priced");
    assert!(usd > 0.0);
    let window = env.session("dear")["window"].as_str().unwrap().to_string();
    let after = |budget: Option<f64>| {
        match budget {
            Some(b) => env.tmux(&["set-option", "-g", "@orchestra-budget", &format!("{b}")]),
            None => env.tmux(&["set-option", "-gu", "@orchestra-budget"]),
        };
        env.orchestra(&["refresh"]).ok();
        let mark = env.tmux(&[
            "show-options",
            "-w",
            "-v",
            "-t",
            &window,
            "@orchestra_budget",
        ]);
        let shown = env.tmux(&[
            "display-message",
            "-p",
            "-t",
            &window,
            "#{E:window-status-format}",
        ]);
        (mark.trim().to_string(), shown.trim().to_string())
    };
    let (mark, shown) = after(Some(usd / 0.9));
    assert_eq!(mark, "$");
    assert!(shown.ends_with("idle $"), "{shown}");
    let (mark, shown) = after(Some(usd * 0.5));
    assert_eq!(mark, "$!");
    assert!(shown.ends_with("idle $!"), "{shown}");
    // A budget raised past the cost takes the mark off; so does no budget at all.
    assert_eq!(after(Some(usd * 100.0)).0, "");
    assert_eq!(after(Some(usd * 0.5)).0, "$!");
    let (mark, shown) = after(None);
    assert_eq!(mark, "");
    assert!(shown.ends_with("idle"), "{shown}");
    assert_eq!(env.session("dear")["status"], "running");
}

/// The processes running this very orchestra binary, with their command lines.
fn orchestra_processes() -> Vec<(u32, Vec<u8>)> {
    let ours = std::fs::canonicalize(crate::harness::bin()).expect("the binary");
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == ours))
        .filter_map(|pid| Some((pid, std::fs::read(format!("/proc/{pid}/cmdline")).ok()?)))
        .collect()
}

/// What a waiting agent asks may hold a secret (a token in a command): its notification's
/// sender, alive for as long as it waits for a press, and every other orchestra process
/// got it on stdin, not on a command line every local user can read.
#[test]
fn the_asked_text_is_on_no_orchestra_command_line_while_its_sender_waits() {
    let Some((env, world, bus)) = claude_on_actions_bus("secret") else {
        return;
    };
    let token = "sk-fake-token-4242";
    dispatch_claude(&env, &world, "secret", "[[bash: touch sk-fake-token-4242]]");
    waits_for_approval(&env, "secret");
    let note = waiting_note(&bus, "secret");
    assert!(
        note["body"].as_str().unwrap_or_default().contains(token),
        "the note names the command: {note}"
    );
    let id = session_id(&env, "secret");
    let senders: Vec<(u32, Vec<u8>)> = orchestra_processes()
        .into_iter()
        .filter(|(_, argv)| {
            let argv = String::from_utf8_lossy(argv);
            argv.contains("\0notify\0") && argv.contains(&id)
        })
        .collect();
    assert!(
        !senders.is_empty(),
        "the sender is not waiting for a press: {:?}",
        orchestra_processes()
    );
    for (pid, argv) in orchestra_processes() {
        assert!(
            !String::from_utf8_lossy(&argv).contains(token),
            "process {pid} has the asked text on its command line: {:?}",
            String::from_utf8_lossy(&argv)
        );
    }
    bus.press(note["id"].as_u64().unwrap(), "deny");
}

/// A notification named one question; the screen now asks another under the same change
/// of state (a menu answered in the pane, then another asked with no change recorded in
/// between: here the earlier sender is stood in for by one started for the current wait,
/// naming `npm test`). Its Approve reads the screen at the press, refuses, says so, and
/// presses nothing; `approve --expect` keeps the same rule.
#[test]
fn approve_approves_only_the_question_the_notification_named() {
    let Some((env, world, bus)) = claude_on_actions_bus("moved") else {
        return;
    };
    dispatch_claude(&env, &world, "moved", "[[bash: touch rm-important]]");
    waits_for_approval(&env, "moved");
    let real = waiting_note(&bus, "moved");
    let id = session_id(&env, "moved");
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["events", "moved", "--json"]).ok().stdout)
            .expect("events --json");
    let event = events
        .iter()
        .filter(|e| e["kind"] == "state")
        .filter_map(|e| e["seq"].as_i64())
        .max()
        .expect("the wait's event");
    let mut sender = env.orchestra_command(
        &env.repo,
        &[
            "notify",
            "--stdin",
            "--session",
            &id,
            "--event",
            &event.to_string(),
        ],
    );
    sender
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut sender = sender.spawn().expect("start the sender");
    {
        use std::io::Write;
        let note = serde_json::json!({
            "title": "orchestra: moved is waiting for you (earlier)",
            "body": "moved wants to run: npm test (in repo)",
            "asks": "run: npm test",
        });
        let mut stdin = sender.stdin.take().expect("stdin");
        stdin.write_all(note.to_string().as_bytes()).unwrap();
    }
    let stale = bus.wait_note("(earlier)", Duration::from_secs(15));
    let requests = world.api.requests_json().len();
    let before = env.screen("moved");
    bus.press(stale["id"].as_u64().unwrap(), "approve");
    let said = bus.wait_note("moved Approve: not done", Duration::from_secs(20));
    let body = said["body"].as_str().unwrap_or_default();
    assert!(
        body.contains("touch rm-important") && body.contains("npm test"),
        "the refusal names both questions: {said}"
    );
    assert!(body.contains("nothing sent"), "{said}");
    let finished = sender.wait_with_output().expect("the sender ends");
    assert!(!finished.status.success(), "{finished:?}");
    std::thread::sleep(Duration::from_secs(3));
    let made = env.worktree_path("moved").join("rm-important");
    assert!(!made.exists(), "the other question was approved");
    assert_eq!(
        world.api.requests_json().len(),
        requests,
        "the model heard of a tool run"
    );
    assert!(env.screen("moved").contains("Do you want to proceed?"));
    assert_eq!(
        env.screen("moved")
            .lines()
            .filter(|l| l.contains("rm-important"))
            .count(),
        before
            .lines()
            .filter(|l| l.contains("rm-important"))
            .count()
    );

    // `approve --expect` keeps the same rule; then the question it names is approved.
    let refused = env
        .orchestra(&["approve", "moved", "--expect", "npm test"])
        .fails_with(1);
    assert!(
        refused
            .stderr
            .contains("now asks to run: touch rm-important, not to npm test"),
        "{}",
        refused.stderr
    );
    assert!(!made.exists());
    env.orchestra(&["approve", "moved", "--expect", "run: touch rm-important"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || made.exists()),
        "{}",
        env.screen("moved")
    );
    let _ = real;
}

/// Any program on the session bus can send `ActionInvoked` naming a notification's id (a
/// small sequential number): the sender takes a press only from the notification server
/// that showed it. A forged Approve does nothing; the server's own press still acts.
#[test]
fn a_forged_press_from_another_bus_connection_is_ignored() {
    let Some((env, bus, _person)) = shell_waiting_on_actions_bus("forged") else {
        return;
    };
    let pane = env.session("forged")["pane"].as_str().unwrap().to_string();
    draw_a_menu(&env, &pane);
    let id = session_id(&env, "forged");
    env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    let note = waiting_note(&bus, "forged");
    let note_id = note["id"].as_u64().unwrap();
    for _ in 0..3 {
        bus.forge_press(note_id, "approve");
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !bus.closed().contains(&note_id),
        "a forged press was taken: closed {:?}",
        bus.closed()
    );
    assert_eq!(
        env.session("forged")["state"],
        "waiting",
        "nothing approved"
    );
    // The server's own press is heard: approved (busy as of the key), then closed.
    bus.press(note_id, "approve");
    assert!(
        wait_until(Duration::from_secs(10), || env.session("forged")["state"]
            == "busy"),
        "the real press did not approve: {}",
        env.session("forged")
    );
}
