//! opencode, for real: the pinned release from the test cache, in real tmux, talking to
//! the scripted Anthropic stand-in (tests/fake-api/anthropic.py) in a sandboxed HOME
//! (opencode_home.py, offline). States come from its plugin (written into the session's
//! own config folder) and its screens.

use std::time::Duration;

use crate::harness::{wait_until, AgentCli, AgentWorld};

fn start() -> Option<AgentWorld> {
    let mut world = AgentWorld::start(AgentCli::opencode(), |_| Vec::new(), None)?;
    // A cold start takes 10–90 s on a loaded machine, and the plugin loads only once
    // opencode's install of its plugin package into the session's config folder gave up.
    world.patience = Duration::from_secs(240);
    // orchestra copies the plugin install from the person's config folder: the sandboxed one.
    // And its database, where `cost` reads its usage, is in the sandboxed data folder.
    for name in ["HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
        world.share(name);
    }
    // Bash and edits ask first, as the capture did.
    let config = world.home.join(".config/opencode/opencode.json");
    let text = std::fs::read_to_string(&config).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["permission"] = serde_json::json!({"bash": "ask", "edit": "ask"});
    std::fs::write(&config, json.to_string()).unwrap();
    Some(world)
}

#[test]
fn a_dispatched_opencode_walks_busy_waiting_idle_error_exited_by_its_plugin() {
    let Some(o) = start() else { return };
    let wt = o.env.worktree_path("oc");
    o.dispatch("oc", "[[bash: touch approved.txt]] [[after: it ran]]");
    let id = o.env.session("oc")["id"].as_str().unwrap().to_string();
    let config = o.env.home.join("sessions").join(&id).join("opencode");
    assert!(config.join("plugins/orchestra.js").is_file());
    o.wait_screen("oc", "Allow once");
    // The permission dialog: the plugin's permission.asked says waiting, with no tick.
    o.said_without_ticks("oc", "waiting", Duration::from_secs(240));
    assert!(!wt.join("approved.txt").exists());
    o.tmux(&["send-keys", "-t", &o.pane("oc"), "Enter"]);
    assert!(
        wait_until(Duration::from_secs(60), || wt.join("approved.txt").exists()),
        "the approval did not run the command:\n{}",
        o.screen("oc")
    );
    o.wait_screen("oc", "it ran");
    o.said_without_ticks("oc", "idle", Duration::from_secs(60));
    let events = o.changes_text("oc");
    assert!(
        events.contains(">waiting:opencode-permission.asked"),
        "{events}"
    );
    assert!(events.contains(">idle:opencode-session"), "{events}");
    // Its session id, from session.created, is what a restart resumes.
    let uuid = o.env.session("oc")["conversation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(uuid.starts_with("ses_"), "{uuid}");

    // An API error: the plugin says error, and the screen's idle does not undo it.
    o.brief("oc", "[[error: 400]]");
    o.wait_screen("oc", "scripted error 400");
    o.said_without_ticks("oc", "error", Duration::from_secs(60));
    o.reaches("oc", "error", Duration::from_secs(5));

    // Ctrl+C at an empty prompt exits: the screen (or the pane) says exited.
    o.tmux(&["send-keys", "-t", &o.pane("oc"), "C-c"]);
    o.reaches("oc", "exited", Duration::from_secs(60));
    // Nothing of opencode's in the worktree.
    assert!(!wt.join(".opencode").exists());
}

#[test]
fn opencode_approve_runs_the_command_deny_rejects_it_and_always_confirms() {
    let Some(o) = start() else { return };
    let wt = o.env.worktree_path("ask");
    o.dispatch("ask", "[[bash: touch approved.txt]] [[after: it ran]]");
    o.wait_screen("ask", "Allow once");
    o.said_without_ticks("ask", "waiting", Duration::from_secs(240));
    // A briefing would land in the dialog: refused, though only its colours show it.
    let refused = o.env.orchestra(&["brief", "ask", "hello"]).fails_with(1);
    assert!(
        refused.stderr.contains("menu or question is open"),
        "{}",
        refused.stderr
    );
    // The cursor on "Allow once" already: Enter alone.
    let run = o.env.orchestra(&["approve", "ask"]).ok();
    assert!(run.stdout.contains("\"Allow once\""), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(60), || wt.join("approved.txt").exists()),
        "the approval did not run the command:\n{}",
        o.screen("ask")
    );
    o.wait_screen("ask", "it ran");
    o.reaches("ask", "idle", Duration::from_secs(60));

    // No dialog: refused, nothing sent.
    o.env.orchestra(&["approve", "ask"]).fails_with(1);

    // Deny: Right Right to "Reject", Enter; the command never runs and the turn ends.
    o.brief("ask", "[[bash: touch denied.txt]]");
    o.wait_screen("ask", "Allow once");
    o.reaches("ask", "waiting", Duration::from_secs(60));
    let run = o.env.orchestra(&["deny", "ask"]).ok();
    assert!(run.stdout.contains("\"Reject\""), "{}", run.stdout);
    o.reaches("ask", "idle", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    assert!(!wt.join("denied.txt").exists(), "{}", o.screen("ask"));
    let events = o.changes_text("ask");
    assert!(
        events.contains(">idle:opencode-session"),
        "the reject ended the turn: {events}"
    );

    // --always: Right to "Allow always", Enter, then its "Confirm" (the cursor there).
    o.brief("ask", "[[bash: touch always.txt]] [[after: always ran]]");
    o.wait_screen("ask", "Allow once");
    o.reaches("ask", "waiting", Duration::from_secs(60));
    let run = o.env.orchestra(&["approve", "ask", "--always"]).ok();
    assert!(run.stdout.contains("\"Allow always\""), "{}", run.stdout);
    assert!(
        wait_until(Duration::from_secs(60), || wt.join("always.txt").exists()),
        "the approval did not run the command:\n{}",
        o.screen("ask")
    );
    o.wait_screen("ask", "always ran");
    o.reaches("ask", "idle", Duration::from_secs(60));

    // Its usage, from its database: each step of the stand-in 10 tokens in and 5 out
    // (two steps for each command run, one for the rejected one), read once however
    // often `cost` asks; the stand-in's model has no price.
    let cost = || {
        let run = o.env.orchestra(&["cost", "--json"]).ok();
        let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"] == "ask")
            .cloned()
            .unwrap_or_else(|| panic!("no cost of ask: {rows}"))
    };
    let first = cost();
    assert_eq!(first["tokens"]["input"], 50, "{first}");
    assert_eq!(first["tokens"]["output"], 25, "{first}");
    assert_eq!(first["cost_usd"], serde_json::Value::Null, "{first}");
    assert_eq!(first["models"][0]["model"], "claude-stand-in", "{first}");
    assert_eq!(cost()["tokens"], first["tokens"]);
}
