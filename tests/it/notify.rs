//! Notifications on a real D-Bus session bus (a private `dbus-daemon`, with a small
//! python3-dbus stand-in owning org.freedesktop.Notifications), the fallbacks, and the
//! event endpoint's own rules.

use std::process::Stdio;
use std::time::Duration;

use crate::harness::{wait_until, Bus, Env};

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
    env.env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), String::new()));
    env.env.push((
        "XDG_RUNTIME_DIR".into(),
        env.root.join("no-runtime").to_string_lossy().into_owned(),
    ));

    // No bus, no command, no client: silent success.
    let run = env.orchestra(&["event", "--session", &id, "waiting"]).ok();
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // @orchestra-notify-cmd gets title and body as arguments.
    let script = env.root.join("notify.sh");
    let out = env.root.join("notify.out");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|%s\\n' \"$1\" \"$2\" >> {}\n",
            out.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-notify-cmd",
        script.to_str().unwrap(),
    ]);
    env.orchestra(&["event", "--session", &id, "exited"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || out.exists()),
        "the fallback command did not run"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("quiet") && text.contains("exited"), "{text}");
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
