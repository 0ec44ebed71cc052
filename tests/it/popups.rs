//! Popups and menus as a person uses them, through an outer tmux (the person harness):
//! what each shows when it works and when it does not, a menu left open, Ctrl-C in a
//! popup, and a merge whose popup goes with the window it merged.

use std::time::Duration;

use crate::harness::{commit_file, wait_until, Env, Person};
use crate::plugin::{cd_person_pane, choose, choose_session, load_plugin, wait_popup_closed};

/// The messages tmux showed the person, oldest first, as they read them.
fn messages(env: &Env) -> Vec<String> {
    // show-messages lists the newest first.
    let mut shown: Vec<String> = env
        .tmux(&["show-messages"])
        .lines()
        .filter_map(|l| l.split_once(" message: ").map(|(_, m)| m.to_string()))
        .collect();
    shown.reverse();
    shown
}

/// Waits until tmux showed `message`, exactly, after the first `seen` messages.
#[track_caller]
fn wait_message(env: &Env, seen: usize, message: &str) {
    assert!(
        wait_until(Duration::from_secs(30), || messages(env)
            .iter()
            .skip(seen)
            .any(|m| m == message)),
        "never shown {message:?}; shown: {:#?}",
        messages(env)
    );
}

/// Whether the person's pane in the server under test is in a mode (view mode shows a
/// run-shell's output over the shell).
fn pane_in_mode(env: &Env) -> bool {
    env.tmux(&[
        "display-message",
        "-p",
        "-t",
        "harness:0",
        "#{pane_in_mode}",
    ])
    .trim()
        == "1"
}

/// A server with the plugin loaded, the person's pane in the repo, and the person.
fn world() -> (Env, Person) {
    world_with(&[])
}

/// [`world`], the server's environment holding `vars` too.
fn world_with(vars: &[(&str, &str)]) -> (Env, Person) {
    let env = Env::new();
    let mut server_env = vec![(
        "ORCHESTRA_HOME".to_string(),
        env.home.to_string_lossy().into_owned(),
    )];
    server_env.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env.start_server(&server_env);
    cd_person_pane(&env, &env.repo);
    load_plugin(&env);
    let person = Person::attach(&env);
    (env, person)
}

#[test]
fn popups_and_menus_say_what_happened_wait_for_the_person_and_leave_on_ctrl_c() {
    let (env, person) = world_with(&[("ORCHESTRA_AGENT", "bash --norc --noprofile")]);
    env.dispatch_shell("tidy").ok();
    let worktree = env.worktree_path("tidy");
    commit_file(&worktree, "tidy.txt", "tidy\n", "tidy: a file");
    std::fs::write(worktree.join("dirty.txt"), "not committed\n").unwrap();
    let no_timeout = |env: &Env| {
        let shown = messages(env);
        assert!(
            !shown.iter().any(|m| m.contains("did not finish")),
            "a menu was timed out: {shown:#?}"
        );
        assert!(
            !pane_in_mode(env),
            "output over the pane:\n{}",
            person.sees()
        );
    };

    // Next waiting with nothing waiting: a message, no view mode.
    let seen = messages(&env).len();
    choose(&person, "Next waiting", "j");
    wait_message(&env, seen, "orchestra: no window is waiting for you");
    assert!(!pane_in_mode(&env), "{}", person.sees());

    // The top menu left open 10 s, then left with Escape: no timeout, nothing over the pane.
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Dispatch");
    std::thread::sleep(Duration::from_secs(10));
    person.wait_to_see("Dispatch");
    person.keys(&["Escape"]);
    no_timeout(&env);

    // A session picker left open 10 s still acts on the choice: the merge refused for the
    // uncommitted file says so, word for word, after its popup closed.
    let seen = messages(&env).len();
    choose(&person, "Merge", "m");
    person.wait_to_see("tidy (");
    std::thread::sleep(Duration::from_secs(10));
    no_timeout(&env);
    choose_session(&person, "tidy");
    wait_message(
        &env,
        seen,
        "orchestra: session tidy has uncommitted changes (dirty.txt): commit them, or pass --include-uncommitted to commit them as a WIP commit first",
    );
    std::fs::remove_file(worktree.join("dirty.txt")).unwrap();

    // n to the question: the popup closes, the message says nothing merged.
    let seen = messages(&env).len();
    choose(&person, "Merge", "m");
    choose_session(&person, "tidy");
    person.wait_to_see("Merge session/tidy into main? [y/N]");
    person.keys(&["n", "Enter"]);
    wait_message(
        &env,
        seen,
        "orchestra: not merged: session/tidy stays as it is",
    );

    // `merge --popup` from a shell: the popup's answer is the command's own.
    let client = env.tmux(&["list-clients", "-F", "#{client_name}"]);
    let run = std::thread::scope(|scope| {
        let merge =
            scope.spawn(|| env.orchestra(&["merge", "tidy", "--popup", "--client", client.trim()]));
        person.wait_to_see("Merge session/tidy into main? [y/N]");
        person.keys(&["n", "Enter"]);
        merge.join().unwrap()
    });
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr.trim(),
        "orchestra: not merged: session/tidy stays as it is"
    );

    // Kill…'s confirmation left open 10 s, then yes: refused for the uncommitted file,
    // said exactly; No leaves everything as it is and says nothing.
    std::fs::write(worktree.join("dirty.txt"), "not committed\n").unwrap();
    let seen = messages(&env).len();
    choose(&person, "Kill", "k");
    choose_session(&person, "tidy");
    person.wait_to_see("kill tidy?");
    std::thread::sleep(Duration::from_secs(10));
    no_timeout(&env);
    person.keys(&["y"]);
    wait_message(
        &env,
        seen,
        "orchestra: session tidy has uncommitted changes (dirty.txt): commit them, or run `orchestra kill tidy --force` to save them as a WIP commit on session/tidy",
    );
    std::fs::remove_file(worktree.join("dirty.txt")).unwrap();
    choose(&person, "Kill", "k");
    choose_session(&person, "tidy");
    person.wait_to_see("kill tidy?");
    person.keys(&["n"]);
    wait_popup_closed(&person, "kill tidy?");

    // Ctrl-C in every popup leaves it: no message, nothing over the pane, nothing changed.
    let seen = messages(&env).len();
    for (entry, key, shows) in [
        ("Dashboard", "w", "SAID BY"),
        ("Status", "s", "HOST OK"),
        ("Conflicts", "c", "(Enter closes)"),
        ("Dispatch", "d", "title:"),
    ] {
        choose(&person, entry, key);
        person.wait_to_see(shows);
        person.keys(&["C-c"]);
        wait_popup_closed(&person, shows);
    }
    choose(&person, "Merge", "m");
    choose_session(&person, "tidy");
    person.wait_to_see("Merge session/tidy into main? [y/N]");
    person.keys(&["C-c"]);
    wait_popup_closed(&person, "[y/N]");
    choose(&person, "Brief", "b");
    choose_session(&person, "tidy");
    person.wait_to_see("brief tidy");
    person.keys(&["C-c"]);
    wait_popup_closed(&person, "brief tidy");
    // Time for a message that should not come.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        messages(&env)[seen..],
        [] as [String; 0],
        "{}",
        person.sees()
    );
    no_timeout(&env);
    assert!(env.branches().contains(&"session/tidy".to_string()));
    assert_eq!(env.list_json().len(), 1, "Ctrl-C dispatched nothing");
    assert!(std::fs::read_dir(env.home.join("popups")).map_or(true, |d| d.count() == 0));
}

#[test]
fn a_merge_from_the_popup_of_the_sessions_only_window_finishes_when_the_popup_goes() {
    let (env, person) = world();
    env.dispatch_shell("only").ok();
    let worktree = env.worktree_path("only");
    commit_file(&worktree, "only.txt", "only\n", "only: a file");
    // The person looks at the tmux session orchestra made, whose one window is the agent's:
    // closing it ends the session, and the popup on it.
    let window = env.session("only")["window"].as_str().unwrap().to_string();
    let tmux_session = env
        .tmux(&["display-message", "-p", "-t", &window, "#{session_name}"])
        .trim()
        .to_string();
    assert_ne!(
        tmux_session, "harness",
        "dispatched outside tmux: a session of its own"
    );
    env.tmux(&["switch-client", "-t", &format!("={tmux_session}:")]);
    assert_eq!(
        env.tmux(&[
            "list-windows",
            "-t",
            &format!("={tmux_session}:"),
            "-F",
            "x"
        ])
        .lines()
        .count(),
        1
    );
    person.wait_to_see("only");

    choose(&person, "Merge", "m");
    choose_session(&person, "only");
    person.wait_to_see("Merge session/only into main? [y/N]");
    person.keys(&["y", "Enter"]);

    let merged = || {
        env.orchestra(&["events", "only", "--json"])
            .stdout
            .contains("\"new\": \"merged\"")
    };
    assert!(
        wait_until(Duration::from_secs(30), merged),
        "not recorded merged: {}\nbranches: {:?}\nmain: {}\nworktree there: {}\nevents: {}",
        env.orchestra(&["list", "--json"]).stdout,
        env.branches(),
        env.git(&["log", "--oneline", "main"]),
        worktree.exists(),
        env.orchestra(&["events", "--json"]).stdout
    );
    assert_eq!(env.git(&["show", "main:only.txt"]), "only\n");
    assert!(!worktree.exists(), "the worktree stayed");
    assert_eq!(env.branches(), ["main"]);
    assert!(
        env.tmux_try(&["has-session", "-t", &format!("={tmux_session}")])
            .code
            != 0
    );
    // The window orchestra closed is no agent that exited: no exited, no dead, no notice.
    let events = env.orchestra(&["events", "only", "--json"]).ok().stdout;
    let events: Vec<serde_json::Value> = serde_json::from_str(&events).unwrap();
    let changes: Vec<String> = events
        .iter()
        .map(|e| format!("{} {} > {}", e["kind"], e["old"], e["new"]))
        .collect();
    assert!(
        !changes
            .iter()
            .any(|c| c.contains("\"exited\"") || c.contains("\"dead\"")),
        "{changes:#?}"
    );
    assert!(
        changes.iter().any(|c| c.ends_with("> \"merged\"")),
        "{changes:#?}"
    );
}

#[test]
fn completions_into_a_closed_pipe_end_quietly() {
    let env = Env::new();
    let script = format!(
        "{} completions bash | head -1 >/dev/null; echo \"status ${{PIPESTATUS[0]}}\"",
        shell_words::quote(crate::harness::bin())
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("ORCHESTRA_HOME", &env.home)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "status 0",
        "{stderr}"
    );
    assert_eq!(stderr, "");
}

#[test]
fn a_window_orchestra_is_closing_is_no_agent_that_exited() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("closing").ok();
    let session = env.session("closing");
    let id = session["id"].as_str().unwrap().to_string();
    let window = session["window"].as_str().unwrap().to_string();
    let state = || env.session("closing")["state"].clone();
    let before = state();
    // What merge and kill hold from before the window goes until the record says what
    // became of the session.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(env.home.join("sessions").join(&id).join("closing.lock"))
        .unwrap();
    lock.lock().unwrap();
    env.tmux(&["kill-window", "-t", &window]);
    let hook = |event: &str| {
        env.orchestra(&["event", "--from-hook", &format!("--session={id}"), event])
            .ok();
    };
    hook("pane-exited");
    hook("SessionEnd");
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("closing")["status"], "running");
    assert_eq!(state(), before);
    assert!(!env.changes_text("closing").contains("exited"));

    // Nobody closing it: the same gone window is an agent that went.
    drop(lock);
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("closing")["status"], "dead");
    assert_eq!(state(), "exited");
}

#[test]
fn a_blocked_sessions_badge_says_blocked_and_its_start_is_said_once() {
    let mut env = Env::new();
    env.without_bus();
    env.start_server(&[]);
    let person = Person::attach(&env);
    env.dispatch_shell("pipeline").ok();
    env.orchestra(&[
        "dispatch",
        "report",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--after",
        "pipeline:out/data.csv",
    ])
    .ok();
    let window = env.session("report")["window"]
        .as_str()
        .unwrap()
        .to_string();
    let badge = || env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_state"]);
    assert_eq!(env.session("report")["status"], "blocked");
    assert_eq!(badge().trim(), "blocked", "as made");
    env.orchestra(&["refresh"]).ok();
    assert_eq!(badge().trim(), "blocked", "after a refresh");

    let seen = messages(&env).len();
    let out = env.worktree_path("pipeline").join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("data.csv"), "a,b\n").unwrap();
    env.orchestra(&["refresh"]).ok();
    wait_message(
        &env,
        seen,
        "orchestra: report started: out/data.csv (from pipeline) ready",
    );
    drop(person);
}

#[test]
fn the_menus_dispatch_names_the_option_that_chooses_its_agent_and_runs_it() {
    let (env, person) = world_with(&[("ORCHESTRA_AGENT", "no-such-agent")]);
    let seen = messages(&env).len();
    choose(&person, "Dispatch", "d");
    wait_message(
        &env,
        seen,
        "orchestra: agent program \"no-such-agent\" not found (not on PATH or not executable): install it or set the menu's agent: tmux set -g @orchestra-agent 'COMMAND'",
    );
    wait_popup_closed(&person, "Dispatch an agent");
    assert!(env.list_json().is_empty());

    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-agent",
        "bash --norc --noprofile",
    ]);
    choose(&person, "Dispatch", "d");
    person.wait_to_see("title:");
    person.type_text("Chosen agent");
    person.keys(&["Enter"]);
    person.wait_to_see("task:");
    person.keys(&["Enter"]);
    assert!(
        wait_until(Duration::from_secs(30), || env
            .list_json()
            .iter()
            .any(|s| s["label"] == "chosen-agent")),
        "not dispatched:\n{}\nmessages: {:?}",
        person.sees(),
        messages(&env)
    );
    let pane = env.session("chosen-agent")["pane"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        wait_until(Duration::from_secs(10), || env
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                &pane,
                "#{pane_current_command}"
            ])
            .trim()
            == "bash"),
        "{}",
        env.tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}"
        ])
    );
}

/// The entries the other walks do not reach, as a person uses them: Approve and Deny on a
/// session that asks nothing, Review's pager (the diff, then Ctrl-C leaves it, saying
/// nothing), and a session that went while its picker was open, each with the exact
/// message the person sees.
#[test]
fn approve_deny_and_review_from_the_menu_say_exactly_what_happened() {
    let (env, person) = world_with(&[("ORCHESTRA_AGENT", "bash --norc --noprofile")]);
    env.dispatch_shell("tidy").ok();
    let worktree = env.worktree_path("tidy");
    commit_file(&worktree, "tidy.txt", "tidy-line\n", "tidy: a file");

    for (entry, key) in [("Approve", "a"), ("Deny", "n")] {
        let seen = messages(&env).len();
        choose(&person, entry, key);
        choose_session(&person, "tidy");
        wait_message(
            &env,
            seen,
            "orchestra: no menu or question on tidy's screen: nothing sent",
        );
        assert!(!pane_in_mode(&env), "{}", person.sees());
    }

    // Review: the diff in the pager; Ctrl-C leaves it and says nothing.
    let seen = messages(&env).len();
    choose(&person, "Review", "r");
    choose_session(&person, "tidy");
    person.wait_to_see("+tidy-line");
    person.keys(&["C-c"]);
    wait_popup_closed(&person, "+tidy-line");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        messages(&env)[seen..],
        [] as [String; 0],
        "{}",
        person.sees()
    );
    assert!(!pane_in_mode(&env), "{}", person.sees());

    // A session killed while its picker is open: the choice says it went.
    let seen = messages(&env).len();
    choose(&person, "Review", "r");
    person.wait_to_see("tidy (");
    env.orchestra(&["kill", "tidy", "--force"]).ok();
    person.keys(&["1"]);
    wait_message(
        &env,
        seen,
        "orchestra: that session is gone (killed or merged since the menu was drawn)",
    );
    assert!(!pane_in_mode(&env), "{}", person.sees());
}

/// Allow…'s popup left with Ctrl-C: it closes, says nothing, and allows nothing (a
/// dispatch is still refused for the repo's unallowed setup).
#[test]
fn ctrl_c_in_allow_allows_nothing_and_says_nothing() {
    let (env, person) = world();
    std::fs::write(
        env.repo.join("orchestra.toml"),
        "[worktree]\nsetup = [\"sh\", \"-c\", \"echo set up\"]\n",
    )
    .unwrap();
    env.git(&["add", "orchestra.toml"]);
    env.git(&["commit", "-q", "-m", "orchestra.toml"]);
    let seen = messages(&env).len();
    choose(&person, "Allow…", "A");
    person.wait_to_see("allow these? [y/N]");
    person.keys(&["C-c"]);
    wait_popup_closed(&person, "allow these?");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        messages(&env)[seen..],
        [] as [String; 0],
        "{}",
        person.sees()
    );
    assert!(!pane_in_mode(&env), "{}", person.sees());
    env.dispatch_shell("api").fails_with(2);
}

/// Fork… picks a session and asks the new label in a popup (a taken label or a bad one is
/// asked again there), then forks as `orchestra fork LABEL NEW` does: the work carried, the
/// two in one group. Compare…, shown once the repo has that group, opens the two side by
/// side and merges nothing on an empty answer.
#[test]
fn fork_from_the_menu_asks_the_new_label_and_compare_shows_the_pair() {
    let (env, person) = world();
    env.dispatch_shell("orig").ok();
    let orig = env.worktree_path("orig");
    std::fs::write(orig.join("work.txt"), "carried\n").unwrap();
    let main_before = env.git(&["rev-parse", "main"]);

    // No group yet: the menu has Fork… and no Compare….
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Fork…");
    assert!(!person.sees().contains("Compare…"), "{}", person.sees());
    person.keys(&["Escape"]);
    assert!(wait_until(Duration::from_secs(10), || !person
        .sees()
        .contains("Fork…")));

    // Esc in the popup forks nothing.
    choose(&person, "Fork…", "f");
    choose_session(&person, "orig");
    person.wait_to_see("new label:");
    person.keys(&["Escape"]);
    wait_popup_closed(&person, "new label:");
    assert_eq!(env.list_json().len(), 1);

    let seen = messages(&env).len();
    choose(&person, "Fork…", "f");
    choose_session(&person, "orig");
    person.wait_to_see("Fork orig: a new session from where it stands");
    person.wait_to_see("new label:");
    person.type_text("orig");
    person.keys(&["Enter"]);
    person.wait_to_see("orig is already a session's or a branch's label: try another");
    person.type_text("Not A Label");
    person.keys(&["Enter"]);
    person.wait_to_see("try another label");
    person.type_text("orig-b");
    person.keys(&["Enter"]);
    wait_popup_closed(&person, "new label:");
    wait_message(&env, seen, "orchestra: forked orig into orig-b");
    assert_eq!(
        env.git(&["show", "session/orig-b:work.txt"]),
        "carried\n",
        "the uncommitted work is a commit on the fork's branch"
    );
    assert_eq!(env.session("orig-b")["group"], "orig");
    assert_eq!(env.session("orig")["group"], "orig");
    assert_eq!(
        std::fs::read_to_string(orig.join("work.txt")).unwrap(),
        "carried\n"
    );

    // A group of two: Compare… is offered, and shows both in a popup.
    choose(&person, "Compare…", "C");
    choose_session(&person, "orig");
    person.wait_to_see("Merge which candidate");
    assert!(person.sees().contains("orig-b"), "{}", person.sees());
    person.keys(&["Enter"]);
    wait_popup_closed(&person, "Merge which candidate");
    assert_eq!(
        env.git(&["rev-parse", "main"]),
        main_before,
        "nothing merged"
    );
    assert_eq!(env.list_json().len(), 2);
}

/// Pull request… picks a session and runs `orchestra pr` in a popup: the drafted title
/// and body open in $EDITOR on the popup's terminal, and what the person saved there is
/// what GitHub (our stand-in) receives; the outcome is the message.
#[test]
fn a_pull_request_from_the_menu_is_edited_in_the_popup_then_sent() {
    // The editor: asks the title on its terminal, writes it over the draft's first line.
    let editor =
        std::env::temp_dir().join(format!("orchestra-pr-editor-{}.sh", std::process::id()));
    crate::harness::write_script(
        &editor,
        "#!/bin/sh\ngrep -q '## Commits' \"$1\" || exit 3\nprintf 'the title, please: '\nread title\nsed -i \"1s/.*/$title/\" \"$1\"\n",
    );
    let editor_path = editor.to_string_lossy().into_owned();
    let Some(world) = crate::pr::World::start_serving(&[("EDITOR", &editor_path), ("VISUAL", "")])
    else {
        return;
    };
    let world = world.with_origin();
    let env = &world.env;
    cd_person_pane(env, &env.repo);
    load_plugin(env);
    let person = Person::attach(env);

    let seen = messages(env).len();
    choose(&person, "Pull request…", "p");
    choose_session(&person, "login");
    person.wait_to_see("the title, please:");
    assert!(
        world
            .api
            .requests_json()
            .iter()
            .all(|r| r["method"] == "GET"),
        "sent before the person saved"
    );
    person.type_text("Login: edited in the popup");
    person.keys(&["Enter"]);
    wait_popup_closed(&person, "the title, please:");
    let url_start = "orchestra: opened draft pull request #1: http";
    assert!(
        wait_until(Duration::from_secs(30), || messages(env)
            .iter()
            .skip(seen)
            .any(|m| m.starts_with(url_start))),
        "{:#?}",
        messages(env)
    );
    let post = world
        .api
        .requests_json()
        .into_iter()
        .find(|r| r["method"] == "POST")
        .expect("a pull request was asked for");
    assert_eq!(post["body"]["title"], "Login: edited in the popup");
    assert!(post["body"]["body"]
        .as_str()
        .unwrap()
        .contains("Test the redirect"));
    assert_eq!(env.session("login")["pull_request"]["number"], 1);
    let _ = std::fs::remove_file(&editor);
}
