//! The tmux plugin loaded the way TPM loads it: a real tmux server runs a config that runs
//! orchestra.tmux; bindings, status segment, badges and hooks are checked, twice.

use std::path::Path;
use std::time::Duration;

use crate::harness::{bin, wait_until, Env, Person};

fn load_plugin(env: &Env) {
    // As TPM does: its script runs in the background (`run -b`) and executes each
    // plugin's *.tmux; the binary is found on PATH.
    let dir = Path::new(bin()).parent().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("orchestra.tmux");
    let done = env.root.join("loaded");
    let _ = std::fs::remove_file(&done);
    env.tmux(&[
        "run-shell",
        "-b",
        &format!(
            "PATH={}:$PATH ORCHESTRA_HOME={} {} ; touch {}",
            dir.display(),
            env.home.display(),
            script.display(),
            done.display()
        ),
    ]);
    assert!(wait_until(Duration::from_secs(20), || done.exists()));
}

#[test]
fn the_plugin_binds_keys_interpolates_status_badges_windows_and_hooks_panes_idempotently() {
    let env = Env::new();
    env.start_server(&[]);
    env.tmux(&[
        "set-option",
        "-g",
        "status-right",
        "#{orchestra_status} | %H:%M",
    ]);
    env.tmux(&["set-option", "-g", "@orchestra-key-next", "N"]);
    load_plugin(&env);

    let status = env.tmux(&["show-options", "-gv", "status-right"]);
    assert!(
        status.contains("status-line)") && status.contains("| %H:%M"),
        "{status}"
    );
    assert!(!status.contains("#{orchestra_status}"));
    let fmt = env.tmux(&["show-options", "-gwv", "window-status-format"]);
    assert!(fmt.contains("@orchestra_state"), "{fmt}");
    let current = env.tmux(&["show-options", "-gwv", "window-status-current-format"]);
    assert!(current.contains("@orchestra_state"), "{current}");
    let keys = env.tmux(&["list-keys", "-T", "prefix"]);
    let menu_key = keys
        .lines()
        .find(|l| l.contains(" O "))
        .unwrap_or_else(|| panic!("no prefix O binding:\n{keys}"));
    assert!(menu_key.contains("tmux menu"), "{menu_key}");
    assert!(
        keys.lines()
            .any(|l| l.contains(" N ") && l.contains("next-waiting")),
        "{keys}"
    );
    let hooks = env.tmux(&["show-hooks", "-gw"]);
    assert!(
        hooks.contains("pane-died[4242]") && hooks.contains("pane-exited[4242]"),
        "{hooks}"
    );
    assert!(
        hooks.contains("event --from-hook --session '#{@orchestra_id}'"),
        "{hooks}"
    );

    // Loading twice doubles nothing.
    load_plugin(&env);
    assert_eq!(env.tmux(&["show-options", "-gv", "status-right"]), status);
    assert_eq!(
        env.tmux(&["show-options", "-gwv", "window-status-format"]),
        fmt
    );
    assert_eq!(env.tmux(&["show-hooks", "-gw"]), hooks);
    assert_eq!(env.tmux(&["list-keys", "-T", "prefix"]), keys);

    // The pane hook reports agents that died. tmux itself sometimes skips pane-died for a
    // pane killed right after it started (seen here, about 1 in 8 under load): the status
    // tick is the backstop. So: three agents die; the hook reports at least one; after a
    // refresh all three are exited.
    let mut panes = Vec::new();
    for label in ["hooked-1", "hooked-2", "hooked-3"] {
        env.dispatch_shell(label).ok();
        panes.push((
            label,
            env.session(label)["pane"].as_str().unwrap().to_string(),
        ));
    }
    for (_, pane) in &panes {
        let pid = env.tmux(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
        std::process::Command::new("kill")
            .arg("-9")
            .arg(pid.trim())
            .status()
            .unwrap();
    }
    let exited = || {
        panes
            .iter()
            .filter(|(label, _)| env.session(label)["state"] == "exited")
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(10), || exited() >= 1),
        "no pane-died hook reported; hooks.log: {:?}",
        std::fs::read_to_string(env.home.join("logs/hooks.log"))
    );
    let events = env.orchestra(&["events", "--json"]).ok().stdout;
    assert!(events.contains("pane-died"), "said by the hook: {events}");
    env.orchestra(&["refresh"]).ok();
    assert_eq!(exited(), 3);
}

#[test]
fn badge_off_and_completions_and_man() {
    let env = Env::new();
    env.start_server(&[]);
    env.tmux(&["set-option", "-g", "@orchestra-badge", "off"]);
    load_plugin(&env);
    assert!(!env
        .tmux(&["show-options", "-gwv", "window-status-format"])
        .contains("@orchestra_state"));
    for shell in ["bash", "zsh", "fish"] {
        let run = env.orchestra(&["completions", shell]).ok();
        assert!(run.stdout.contains("dispatch"), "{shell}");
    }
    assert_eq!(env.orchestra(&["completions", "tcsh"]).code, 2);
    let man = env.orchestra(&["man"]).ok().stdout;
    assert!(
        man.contains(".TH") && man.contains("dispatch"),
        "{}",
        &man[..man.len().min(300)]
    );
}

#[test]
fn a_person_dispatches_approves_reviews_and_merges_from_the_menu() {
    let env = Env::new();
    let wt = env.worktree_path("add-a-menu-file");
    let Some(world) = crate::harness::ClaudeWorld::start(&env, &[&wt]) else {
        return;
    };
    let mut server_env = world.env.clone();
    let agent = format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    );
    server_env.push(("ORCHESTRA_AGENT".into(), agent));
    server_env.push((
        "ORCHESTRA_HOME".into(),
        env.home.to_string_lossy().into_owned(),
    ));
    env.start_server(&server_env);
    // The person's pane is in the repo.
    env.tmux(&[
        "send-keys",
        "-t",
        "harness:0",
        "-l",
        &format!("cd {}", env.repo.display()),
    ]);
    env.tmux(&["send-keys", "-t", "harness:0", "Enter"]);
    load_plugin(&env);
    let person = Person::attach(&env);

    // prefix + O opens the menu; Dispatch… asks for a title and a task.
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Dispatch");
    person.wait_to_see("Next waiting");
    person.keys(&["d"]);
    person.wait_to_see("title:");
    person.type_text("Add a menu file");
    person.keys(&["Enter"]);
    person.wait_to_see("task:");
    person.type_text(
        "[[bash: echo from-the-menu > menu.txt && git add menu.txt && git commit -qm 'menu file']]",
    );
    person.keys(&["Enter"]);
    assert!(
        wait_until(Duration::from_secs(30), || env
            .orchestra(&["list", "--json"])
            .stdout
            .contains("add-a-menu-file")),
        "no session dispatched:\n{}\nmessages:\n{}\noptions: {}",
        person.sees(),
        env.orchestra(&["events", "--json"]).stdout,
        env.tmux(&["show-options", "-g", "@orchestra-input-title"])
    );
    // Its badge changes as it works and then waits for a person.
    person.wait_for_badge("add-a-menu-file", "waiting");

    // Approve from the menu: the sub-menu lists the session.
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Approve");
    person.keys(&["a"]);
    person.wait_to_see("add-a-menu-file (waiting)");
    person.keys(&["1"]);
    assert!(
        wait_until(Duration::from_secs(30), || env
            .git(&[
                "branch",
                "--list",
                "session/add-a-menu-file",
                "--format=%(refname)"
            ])
            .contains("session")
            && env
                .git(&["log", "-1", "--format=%s", "session/add-a-menu-file"])
                .contains("menu file")),
        "the approved command did not run:\n{}",
        person.sees()
    );
    person.wait_for_badge("add-a-menu-file", "idle");

    // Review from the menu: a popup with the diff; q closes it.
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Review");
    person.keys(&["r"]);
    person.wait_to_see("add-a-menu-file (idle)");
    person.keys(&["1"]);
    person.wait_to_see("+from-the-menu");
    person.keys(&["q"]);
    assert!(wait_until(Duration::from_secs(10), || !person
        .sees()
        .contains("+from-the-menu")));

    // Merge from the menu: the question in a popup, answered y.
    person.keys(&["C-b", "O"]);
    person.wait_to_see("Merge");
    person.keys(&["m"]);
    person.wait_to_see("add-a-menu-file (idle)");
    person.keys(&["1"]);
    person.wait_to_see("Merge session/add-a-menu-file into main? [y/N]");
    person.keys(&["y", "Enter"]);
    assert!(
        wait_until(Duration::from_secs(30), || env
            .repo
            .join("menu.txt")
            .exists()),
        "not merged:\n{}",
        person.sees()
    );
    assert_eq!(
        std::fs::read_to_string(env.repo.join("menu.txt")).unwrap(),
        "from-the-menu\n"
    );
}
