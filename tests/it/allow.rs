//! A cloned repository's commands run only once allowed: the setup and teardown of a
//! committed orchestra.toml are refused by dispatch and restart (exit 2, nothing made) and
//! skipped by kill and merge until `orchestra allow`, which binds what it allows to the
//! commands' text; `up` of a manifest's sessions is the person's own command. Real tmux
//! and git; the agents are shells (what they run is not the point, their setup is).

use std::path::Path;
use std::time::Duration;

use crate::harness::{git_in, wait_until, ClaudeWorld, Env, Person};
use crate::plugin::{cd_person_pane, choose, load_plugin, wait_popup_closed};

/// Commits `toml` as the repo's orchestra.toml: the repo as a fresh clone has it, with
/// nothing allowed in this test's home.
fn commit_manifest(env: &Env, toml: &str) {
    std::fs::write(env.repo.join("orchestra.toml"), toml).unwrap();
    env.git(&["add", "orchestra.toml"]);
    env.git(&["commit", "-q", "-m", "orchestra.toml"]);
}

/// `sh -c SCRIPT` as a TOML array.
fn sh(script: &str) -> String {
    format!("[\"sh\", \"-c\", {}]", toml_string(script))
}

fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.into()).to_string()
}

fn session_dirs(env: &Env) -> usize {
    std::fs::read_dir(env.home.join("sessions")).map_or(0, std::iter::Iterator::count)
}

/// Everything a dispatch could make, to check it made none of it.
fn made(env: &Env) -> (Vec<String>, Vec<String>, usize, usize) {
    (
        env.branches(),
        env.windows(),
        env.list_json().len(),
        session_dirs(env),
    )
}

#[track_caller]
fn refused_until_allowed(env: &Env, label: &str, setup_line: &str) {
    let before = made(env);
    let run = env.dispatch_shell(label).fails_with(2);
    let line = run.stderr.trim_end();
    assert!(
        !line.contains('\n')
            && line.contains(&format!("worktree.setup `{setup_line}`"))
            && line.contains("not allowed")
            && line.contains("`orchestra allow`"),
        "one line naming the commands and `orchestra allow`: {}",
        run.stderr
    );
    assert_eq!(made(env), before, "nothing was made");
    assert!(!env.worktree_path(label).exists());
}

#[test]
fn a_fresh_clones_setup_runs_only_once_allowed_and_again_after_a_change() {
    let env = Env::new();
    env.start_server(&[]);
    let ran = env.root.join("setup-ran");
    let first = format!("echo first >> '{}'", ran.display());
    commit_manifest(
        &env,
        &format!("[worktree]\nsetup = {}\nteardown = \"true\"\n", sh(&first)),
    );
    let first_line = shell_words::join(["sh", "-c", first.as_str()]);
    refused_until_allowed(&env, "api", &first_line);
    assert!(!ran.exists(), "the setup ran before it was allowed");

    // --show reads it out, allowing nothing.
    let show = env.orchestra(&["allow", "--show"]).ok();
    assert!(
        show.stdout.contains("commands not allowed")
            && show
                .stdout
                .contains(&format!("worktree.setup: {first_line}"))
            && show.stdout.contains("worktree.teardown: true"),
        "{}",
        show.stdout
    );
    refused_until_allowed(&env, "api", &first_line);

    let allowed = env.orchestra(&["allow"]).ok();
    assert!(
        allowed
            .stdout
            .contains(&format!("worktree.setup: {first_line}")),
        "{}",
        allowed.stdout
    );
    env.dispatch_shell("api").ok();
    assert!(
        wait_until(Duration::from_secs(20), || env.session("api")["status"]
            == "running"),
        "{}",
        env.session("api")
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "first\n");

    // A changed setup (a pull brought it) needs allowing again.
    let second = format!("echo second >> '{}'", ran.display());
    commit_manifest(&env, &format!("[worktree]\nsetup = {}\n", sh(&second)));
    let second_line = shell_words::join(["sh", "-c", second.as_str()]);
    refused_until_allowed(&env, "web", &second_line);
    env.orchestra(&["allow"]).ok();
    env.dispatch_shell("web").ok();
    assert!(wait_until(
        Duration::from_secs(20),
        || std::fs::read_to_string(&ran).unwrap_or_default() == "first\nsecond\n"
    ));

    // Revoked: refused again.
    let revoked = env.orchestra(&["allow", "--revoke"]).ok();
    assert!(revoked.stdout.contains("revoked"), "{}", revoked.stdout);
    refused_until_allowed(&env, "db", &second_line);
    let again = env.orchestra(&["allow", "--revoke"]).ok();
    assert!(
        again.stdout.contains("nothing was allowed"),
        "{}",
        again.stdout
    );
}

#[test]
fn restart_runs_a_failed_setup_again_only_while_it_is_allowed() {
    let env = Env::new();
    env.start_server(&[]);
    let ready = env.root.join("ready");
    let script = format!("test -f '{}'", ready.display());
    commit_manifest(&env, &format!("[worktree]\nsetup = {}\n", sh(&script)));
    env.orchestra(&["allow"]).ok();
    env.dispatch_shell("api").ok();
    assert!(wait_until(Duration::from_secs(20), || env.session("api")
        ["status"]
        == "setup-failed"));

    env.orchestra(&["allow", "--revoke"]).ok();
    std::fs::write(&ready, "").unwrap();
    let run = env.orchestra(&["restart", "api"]).fails_with(2);
    assert!(
        run.stderr.contains("not allowed") && run.stderr.contains("`orchestra allow`"),
        "{}",
        run.stderr
    );
    env.orchestra(&["restart", "all"]).fails_with(2);
    assert_eq!(
        env.session("api")["status"],
        "setup-failed",
        "left as it was"
    );

    env.orchestra(&["allow"]).ok();
    env.orchestra(&["restart", "api"]).ok();
    assert!(
        wait_until(Duration::from_secs(20), || env.session("api")["status"]
            == "running"),
        "{}",
        env.session("api")
    );
}

#[test]
fn kill_and_merge_skip_a_teardown_that_is_not_allowed_and_say_so() {
    let env = Env::new();
    env.start_server(&[]);
    let log = env.root.join("teardown.log");
    let torn = |what: &str| format!("echo {what} >> '{}'", log.display());
    commit_manifest(
        &env,
        &format!("[worktree]\nteardown = {}\n", sh(&torn("allowed"))),
    );
    env.orchestra(&["allow"]).ok();
    env.dispatch_shell("k").ok();
    env.dispatch_shell("m").ok();

    // kill after a revoke: the worktree goes, the teardown does not run, and it is said.
    env.orchestra(&["allow", "--revoke"]).ok();
    let run = env.orchestra(&["kill", "k"]).ok();
    assert!(
        run.stderr.contains("teardown of k not run")
            && run.stderr.contains("`orchestra allow`")
            && run.stderr.contains("removed without it"),
        "{}",
        run.stderr
    );
    assert!(!env.worktree_path("k").exists());
    assert!(!log.exists(), "the teardown ran unallowed");

    // merge after the teardown changed (allowed before, not in this form).
    env.orchestra(&["allow"]).ok();
    commit_manifest(
        &env,
        &format!(
            "[orchestrator]\nwrap_up_cmd = \"echo wrapping\"\n[worktree]\nteardown = {}\n",
            sh(&torn("changed"))
        ),
    );
    let wt = env.worktree_path("m");
    std::fs::write(wt.join("m.txt"), "m\n").unwrap();
    git_in(&wt, &["add", "m.txt"]);
    git_in(&wt, &["commit", "-q", "-m", "m"]);
    let run = env.orchestra(&["merge", "m", "--yes"]).ok();
    assert!(
        run.stderr.contains("teardown of m not run") && run.stderr.contains("wrap-up not sent"),
        "{}",
        run.stderr
    );
    assert!(!wt.exists());
    assert!(!log.exists(), "the changed teardown ran unallowed");
    assert!(env.repo.join("m.txt").exists(), "merged all the same");
}

#[test]
fn up_runs_a_manifests_sessions_without_allow() {
    let env = Env::new();
    env.start_server(&[]);
    let folder = env.root.join("notes-folder");
    std::fs::create_dir_all(&folder).unwrap();
    commit_manifest(
        &env,
        &format!(
            "[orchestrator]\nagent = \"cat\"\n[worktree]\nsetup = \"true\"\n\n[sessions.notes]\npath = {}\n",
            toml_string(&folder.to_string_lossy())
        ),
    );
    let up = env.orchestra(&["up", "notes"]).ok();
    assert!(up.stdout.contains("notes: up here"), "{}", up.stdout);
    assert_eq!(env.list_json().len(), 1);
    // The setup is still a dispatch's, and not allowed.
    refused_until_allowed(&env, "api", "true");
}

#[test]
fn the_menu_shows_the_commands_and_allows_them_on_a_yes() {
    let env = Env::new();
    env.start_server(&[(
        "ORCHESTRA_HOME".into(),
        env.home.to_string_lossy().into_owned(),
    )]);
    // An escape sequence in the command would clear the popup and hide what runs: it is
    // shown spelled out.
    commit_manifest(
        &env,
        &format!("[worktree]\nsetup = {}\n", sh("echo \u{1b}[2J cleared")),
    );
    cd_person_pane(&env, &env.repo);
    load_plugin(&env);
    let person = Person::attach(&env);

    choose(&person, "Allow…", "A");
    person.wait_to_see("allow these? [y/N]");
    let shown = person.sees();
    assert!(
        shown.contains("worktree.setup: sh -c") && shown.contains("\\u{1b}[2J cleared"),
        "{shown}"
    );
    person.keys(&["n", "Enter"]);
    wait_popup_closed(&person, "allow these?");
    env.dispatch_shell("api").fails_with(2);

    choose(&person, "Allow…", "A");
    person.wait_to_see("allow these? [y/N]");
    person.keys(&["y", "Enter"]);
    wait_popup_closed(&person, "allow these?");
    env.dispatch_shell("api").ok();
    assert!(Path::new(&env.worktree_path("api")).exists());
}

/// A blocked session runs its setup only when unblocked, in its window's `prepare`: a
/// setup changed meanwhile (a pull) is not the one allowed, and does not run there either.
#[test]
fn a_setup_changed_while_its_session_waited_does_not_run_when_it_starts() {
    let env = Env::new();
    env.start_server(&[]);
    let log = env.root.join("setup.log");
    let setup = |what: &str| sh(&format!("echo {what} >> '{}'", log.display()));
    commit_manifest(&env, &format!("[worktree]\nsetup = {}\n", setup("allowed")));
    env.orchestra(&["allow"]).ok();
    env.dispatch_shell("api").ok();
    assert!(wait_until(Duration::from_secs(20), || env.session("api")
        ["status"]
        == "running"));
    let mut waiting = crate::harness::shell_dispatch("consumer").to_vec();
    waiting.extend(["--after", "api:out.txt"]);
    env.orchestra(&waiting).ok();
    assert_eq!(env.session("consumer")["status"], "blocked");

    commit_manifest(&env, &format!("[worktree]\nsetup = {}\n", setup("changed")));
    std::fs::write(env.worktree_path("api").join("out.txt"), "ready\n").unwrap();
    env.orchestra(&["refresh"]).ok();
    assert!(
        wait_until(Duration::from_secs(20), || env.session("consumer")
            ["status"]
            == "setup-failed"),
        "{}",
        env.session("consumer")
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "allowed\n");
    let events = env.orchestra(&["events", "consumer", "--json"]).ok().stdout;
    assert!(events.contains("not allowed"), "{events}");

    env.orchestra(&["restart", "consumer"]).fails_with(2);
    env.orchestra(&["allow"]).ok();
    env.orchestra(&["restart", "consumer"]).ok();
    assert!(
        wait_until(Duration::from_secs(20), || env.session("consumer")
            ["status"]
            == "running"),
        "{}",
        env.session("consumer")
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "allowed\nchanged\n");
}

fn screen(env: &Env, label: &str) -> String {
    let pane = env.session(label)["pane"].as_str().unwrap().to_string();
    env.tmux(&["capture-pane", "-p", "-J", "-t", &pane])
}

/// orchestra answers claude's "trust this folder?" for the person only when the
/// worktree's agent settings (the repo's `.claude/settings.json`, whose hooks claude runs
/// once it trusts the folder) are allowed; until then the dialog is the person's. The
/// real claude CLI against the stand-in API.
#[test]
fn claude_is_told_to_trust_a_worktree_only_once_its_agent_settings_are_allowed() {
    let env = Env::new();
    // Nothing trusted beforehand: each worktree gets claude's trust dialog.
    let Some(world) = ClaudeWorld::start(&env, &[]) else {
        return;
    };
    env.start_server(&world.env);
    let ran = env.root.join("project-hook-ran");
    let hook =
        serde_json::json!({"type": "command", "command": format!("touch '{}'", ran.display())});
    let settings = serde_json::json!({"hooks": {"SessionStart": [{"hooks": [hook]}]}});
    std::fs::create_dir_all(env.repo.join(".claude")).unwrap();
    std::fs::write(env.repo.join(".claude/settings.json"), settings.to_string()).unwrap();
    env.git(&["add", ".claude/settings.json"]);
    env.git(&["commit", "-q", "-m", "the author's claude settings"]);
    let agent = format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    );
    let dispatch = |label: &str| {
        env.orchestra(&[
            "dispatch",
            label,
            "--agent",
            &agent,
            "--prompt",
            "[[say: hello]]",
        ])
        .ok()
    };

    let first = dispatch("first");
    assert!(
        first.stderr.contains("does not answer") && first.stderr.contains("`orchestra allow`"),
        "{}",
        first.stderr
    );
    assert!(
        wait_until(Duration::from_secs(30), || screen(&env, "first")
            .contains("Yes, I trust this folder")),
        "{}",
        screen(&env, "first")
    );
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        screen(&env, "first").contains("Yes, I trust this folder"),
        "the dialog was answered for the person:\n{}",
        screen(&env, "first")
    );
    assert!(
        !ran.exists(),
        "the repo's hook ran before anyone trusted it"
    );

    let allowed = env.orchestra(&["allow"]).ok();
    assert!(
        allowed.stdout.contains(".claude/settings.json"),
        "{}",
        allowed.stdout
    );
    let second = dispatch("second");
    assert!(
        second.stdout.contains("trusted"),
        "{}\n{}",
        second.stdout,
        second.stderr
    );
    assert!(
        wait_until(Duration::from_secs(30), || ran.exists()),
        "the allowed hook never ran:\n{}",
        screen(&env, "second")
    );
}
