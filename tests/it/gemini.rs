//! The Gemini CLI, for real: the pinned release from the test cache, in real tmux, talking
//! to the scripted Gemini API stand-in (tests/fake-api/gemini.py) in a sandboxed HOME
//! (gemini_home.py). States come from its hooks (a Gemini home of the session's own) and
//! its screens; approve/deny answer its real menus.

use std::path::Path;
use std::time::Duration;

use crate::harness::{
    screen_fixture, screen_fixtures, stand_in_passes_its_own_tests, wait_until, AgentCli,
    AgentWorld, Env, GEMINI_VERSION,
};

fn start() -> Option<AgentWorld> {
    start_world(None)
}

/// [`start`] with a notification bus whose server says it has `capabilities`.
fn start_on_bus(capabilities: &[&str]) -> Option<AgentWorld> {
    start_world(Some(capabilities))
}

fn start_world(bus_capabilities: Option<&[&str]>) -> Option<AgentWorld> {
    let mut world = AgentWorld::start(AgentCli::gemini(), |_| Vec::new(), bus_capabilities)?;
    world.patience = Duration::from_secs(60);
    // orchestra builds each session's Gemini home from the person's: the sandboxed one.
    world.share("HOME");
    Some(world)
}

/// With no tick in between, `label` reads busy then idle: its BeforeAgent and AfterAgent
/// hooks said so.
#[track_caller]
fn busy_then_idle_by_its_hooks(g: &AgentWorld, label: &str) {
    g.said_without_ticks(label, "busy", Duration::from_secs(60));
    g.said_without_ticks(label, "idle", Duration::from_secs(60));
    let events = g.changes_text(label);
    assert!(events.contains(">busy:BeforeAgent"), "{events}");
    assert!(events.contains("busy>idle:AfterAgent"), "{events}");
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
    busy_then_idle_by_its_hooks(&g, "gem");
    g.wait_screen("gem", "one two three four five six seven eight nine ten");
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

/// A dispatched gemini that exited is restarted into the chat it was in (`--resume
/// latest`: its worktree is a project of its own), so the model hears the earlier turn;
/// one that never saved a chat starts plainly (the CLI would exit on `--resume`).
#[test]
fn a_restarted_gemini_resumes_the_chat_it_was_in() {
    let Some(g) = start() else { return };
    g.dispatch("again", "[[say: the word is MARIGOLD-42]]");
    g.wait_screen("again", "MARIGOLD-42");
    g.reaches("again", "idle", Duration::from_secs(30));
    g.brief("again", "/quit");
    g.reaches("again", "exited", Duration::from_secs(30));
    g.env.orchestra(&["restart", "again"]).ok();
    let cmdline = g.env.pane_process("again", "cmdline");
    assert!(cmdline.contains("--resume\nlatest\n"), "{cmdline}");
    g.reaches("again", "idle", Duration::from_secs(60));
    // The resumed CLI draws its input box, then redraws with the chat it loaded, and text
    // typed between the two is lost (seen under load: the briefing never showed). A
    // person briefs once the earlier turn is back on screen; so does this test.
    g.wait_screen("again", "MARIGOLD-42");
    std::thread::sleep(Duration::from_secs(1));
    let before = g.api.requests_json().len();
    g.brief("again", "[[say: and again]]");
    g.wait_screen("again", "and again");
    // The request goes out a moment after the typed text shows.
    let heard = wait_until(Duration::from_secs(30), || {
        g.api.heard_since(before, "MARIGOLD-42")
    });
    assert!(
        heard,
        "the resumed chat did not reach the model: {}",
        g.api.requests()
    );

    // No chat saved (it exited before its first turn): a plain start.
    g.env
        .orchestra(&["dispatch", "fresh", "--agent", &g.agent])
        .ok();
    // Its SessionStart hook has run (text typed while it runs can stay in the box).
    g.said_without_ticks("fresh", "idle", Duration::from_secs(60));
    g.wait_screen("fresh", "Type your message");
    g.brief("fresh", "/quit");
    g.reaches("fresh", "exited", Duration::from_secs(30));
    g.env.orchestra(&["restart", "fresh"]).ok();
    let cmdline = g.env.pane_process("fresh", "cmdline");
    assert!(!cmdline.contains("--resume"), "{cmdline}");
    g.reaches("fresh", "idle", Duration::from_secs(60));
}

/// Gemini's ToolPermission hook says it waits, with what it asks in its details: the
/// notification names the file, said from the worktree.
#[test]
fn a_waiting_gemini_notification_names_the_file_it_asks_to_write() {
    let Some(g) = start_on_bus(&["body"]) else {
        return;
    };
    let wt = g.env.worktree_path("files");
    let file = wt.join("notes").join("new.txt");
    g.dispatch(
        "files",
        &format!("[[write: {} | hello]]", file.to_string_lossy()),
    );
    g.wait_screen("files", "Apply this change?");
    g.reaches("files", "waiting", Duration::from_secs(10));
    let body = g.waiting_note("files");
    assert!(
        body.starts_with("files wants to write notes/new.txt (in "),
        "{body:?}\nevents: {}",
        g.changes_text("files")
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
    let events = g.changes_text("tools");
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
    let events = g.changes_text("broken");
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
            &g.agent,
            "--prompt",
            "[[say: no hooks here]]",
        ])
        .ok();
    g.wait_screen("plain", "no hooks here");
    // Its screen alone tells its state.
    g.reaches("plain", "idle", Duration::from_secs(30));
    let events = g.changes_text("plain");
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
    g.env.write_agent_manifest(
        &g.agent,
        "gem",
        &folder,
        "export ORCHESTRA_TEST_SNIPPET=reached",
    );
    g.env.orchestra(&["up"]).ok();
    let id = g.env.session("gem")["id"].as_str().unwrap().to_string();
    let session_home = g.env.home.join("sessions").join(&id).join("gemini-home");
    let environ = g.env.pane_process_once("gem", "environ", |e| {
        e.lines().any(|l| l == "ORCHESTRA_TEST_SNIPPET=reached")
    });
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
    g.said_without_ticks("gem", "idle", Duration::from_secs(30));
    g.brief(
        "gem",
        "[[slow: 8]] [[say: one two three four five six seven eight nine ten]]",
    );
    // No tick in between: the hooks alone say busy, then idle.
    busy_then_idle_by_its_hooks(&g, "gem");
    let settings = std::fs::read_to_string(g.home.join(".gemini/settings.json")).unwrap();
    assert!(!settings.contains("orchestra"), "{settings}");

    g.env.orchestra(&["restart", "gem"]).ok();
    let new_id = g.env.session("gem")["id"].as_str().unwrap().to_string();
    assert!(!session_home.exists(), "the old session's home stays");
    let new_home = g
        .env
        .home
        .join("sessions")
        .join(&new_id)
        .join("gemini-home");
    let environ = g.env.pane_process_once("gem", "environ", |e| {
        e.lines()
            .any(|l| l == format!("GEMINI_CLI_HOME={}", new_home.display()))
    });
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

fn classify(env: &Env, screen: &[u8]) -> String {
    env.classify("gemini", screen).0
}

#[test]
fn every_gemini_screen_is_classified_as_its_name_says() {
    let env = Env::new();
    let files = screen_fixtures("gemini", GEMINI_VERSION);
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
    let fixture = |name: &str| screen_fixture("gemini", GEMINI_VERSION, name);
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
    stand_in_passes_its_own_tests("test_gemini.py");
}
