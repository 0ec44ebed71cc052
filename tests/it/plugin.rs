//! The tmux plugin loaded the way TPM loads it: a real tmux server runs a config that runs
//! orchestra.tmux; bindings, status segment, badges and hooks are checked, twice.

use std::path::Path;
use std::time::Duration;

use crate::harness::{bin, wait_until, Env, Person};

pub(crate) fn load_plugin(env: &Env) {
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
    assert!(
        fmt.contains("@orchestra_state") && fmt.contains("@orchestra_conflicts"),
        "{fmt}"
    );
    let current = env.tmux(&["show-options", "-gwv", "window-status-current-format"]);
    assert!(
        current.contains("@orchestra_state") && current.contains("@orchestra_conflicts"),
        "{current}"
    );
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
        hooks.contains("event --from-hook --session=#{q:@orchestra_id}"),
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

    // The pane hook reports each agent that died, with no refresh.
    let mut panes = Vec::new();
    for label in ["hooked-1", "hooked-2", "hooked-3"] {
        env.dispatch_shell(label).ok();
        panes.push((
            label,
            env.session(label)["pane"].as_str().unwrap().to_string(),
        ));
    }
    for (_, pane) in &panes {
        env.kill_pane_process(pane);
    }
    let exited = || {
        panes
            .iter()
            .filter(|(label, _)| env.session(label)["state"] == "exited")
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(10), || exited() == 3),
        "{} of 3 deaths reported by the hook; hooks.log: {:?}",
        exited(),
        std::fs::read_to_string(env.home.join("logs/hooks.log"))
    );
    let events = env.orchestra(&["events", "--json"]).ok().stdout;
    assert_eq!(
        events.matches("pane-died").count(),
        3,
        "said by the hook: {events}"
    );
}

/// Option values that each tmux release prints differently (3.4 and 3.5 strvis command
/// output: `\ooo` for control characters, `\$` before a name in 3.4, `\` left as is).
const PRINTED_DIFFERENTLY: &str =
    "a\\b \\037 \x1f \x07 $HOME ${x} \\$y \\\\ ## #{x} \u{e9} \u{2713}\ttab\nline";

/// Whether the global option `option` holds exactly `value`, asked of tmux itself (a
/// print of it could not tell `\037` from 0x1f on 3.4).
fn option_is(env: &Env, option: &str, value: &str) -> bool {
    env.tmux(&["set-option", "-g", "@expected", value]);
    env.tmux(&[
        "display-message",
        "-p",
        &format!("#{{==:#{{{option}}},#{{@expected}}}}"),
    ])
    .trim()
        == "1"
}

#[test]
fn values_read_back_from_tmux_arrive_exactly_on_every_release() {
    let mut env = Env::new();
    env.start_server(&[]);
    let hostile = PRINTED_DIFFERENTLY;
    env.tmux(&["set-option", "-g", "status-left", hostile]);
    let right = format!("#{{orchestra_status}}{hostile}");
    env.tmux(&["set-option", "-g", "status-right", &right]);
    env.tmux(&["set-option", "-gw", "window-status-format", hostile]);
    env.tmux(&["set-option", "-g", "@orchestra-key", "F5"]);
    env.tmux(&["set-option", "-g", "@orchestra-key-next", "F6"]);
    load_plugin(&env);

    assert!(
        option_is(&env, "status-left", hostile),
        "status-left changed"
    );
    let status = format!("#(#{{@orchestra-exe}} status-line){hostile}");
    assert!(
        option_is(&env, "status-right", &status),
        "{}",
        env.tmux(&["show-options", "-gv", "status-right"])
    );
    let badges = "#{?@orchestra_state, #{@orchestra_state},}\
                  #{?@orchestra_sandbox, [#{@orchestra_sandbox}],}\
                  #{?@orchestra_conflicts, #{@orchestra_conflicts},}\
                  #{?@orchestra_pr, #{@orchestra_pr},}\
                  #{?@orchestra_budget, #{@orchestra_budget},}";
    assert!(
        option_is(&env, "window-status-format", &format!("{hostile}{badges}")),
        "{}",
        env.tmux(&["show-options", "-gwv", "window-status-format"])
    );
    let keys = env.tmux(&["list-keys", "-T", "prefix"]);
    assert!(
        keys.lines()
            .any(|l| l.contains(" F5 ") && l.contains("tmux menu")),
        "{keys}"
    );
    assert!(
        keys.lines()
            .any(|l| l.contains(" F6 ") && l.contains("next-waiting")),
        "{keys}"
    );

    // Loaded again, nothing doubles; nor from a shell whose locale is not UTF-8 (tmux
    // prints non-ASCII to such a client as `_` unless told -u).
    load_plugin(&env);
    env.env.push(("LC_ALL".into(), "C".into()));
    env.env.push(("LANG".into(), "C".into()));
    env.orchestra(&["tmux", "init"]).ok();
    env.env.clear();
    assert!(option_is(&env, "status-left", hostile));
    assert!(option_is(&env, "status-right", &status));
    assert!(option_is(
        &env,
        "window-status-format",
        &format!("{hostile}{badges}")
    ));
}

/// next-waiting goes on from the window the client shows (tmux 3.2 cannot name a client
/// to `display-message -c`: there it started from the first waiting window every time).
#[test]
fn next_waiting_goes_round_the_waiting_windows_from_the_one_the_client_shows() {
    let env = Env::new();
    env.start_server(&[]);
    let mut windows = Vec::new();
    for label in ["wait-a", "wait-b", "wait-c"] {
        env.dispatch_shell(label).ok();
        let window = env.session(label)["window"].as_str().unwrap().to_string();
        // The badge the hooks would set when the agent asks for the person.
        env.tmux(&[
            "set-option",
            "-w",
            "-t",
            &window,
            "@orchestra_state",
            "waiting",
        ]);
        windows.push(window);
    }
    let _person = Person::attach(&env);
    let client = env.tmux(&["list-clients", "-F", "#{client_name}"]);
    let client = client.trim();
    let shown = || {
        env.tmux(&["list-clients", "-F", "#{window_id}"])
            .trim()
            .to_string()
    };
    env.tmux(&["switch-client", "-c", client, "-t", &windows[0]]);
    for expected in [&windows[1], &windows[2], &windows[0]] {
        env.orchestra(&["tmux", "next-waiting", "--client", client])
            .ok();
        assert!(
            wait_until(Duration::from_secs(5), || shown() == *expected),
            "showed {} instead of {expected} ({windows:?})",
            shown()
        );
    }
}

/// A release below 3.2 (Debian 11's 3.1c, built by tests/run.sh into the test cache) is
/// refused with one line naming it, by the binary and by orchestra.tmux, and nothing is
/// set up on its server.
#[test]
fn a_tmux_older_than_3_2_is_refused_at_load_with_one_message_naming_it() {
    let old = crate::harness::test_cache().join("tmux-3.1c/bin/tmux");
    if !crate::harness::require("tmux 3.1c in the test cache", old.is_file()) {
        return;
    }
    let env = Env::new();
    let path = format!(
        "{}:{}",
        old.parent().unwrap().display(),
        std::env::var("PATH").unwrap()
    );
    env.cli(&["tmux", "init"])
        .env("PATH", &path)
        .status(2)
        .stderr_line("orchestra: tmux 3.1c is too old: orchestra needs tmux 3.2 or newer")
        .run();

    // orchestra.tmux on a 3.1c server, as TPM runs it: it stops before the binary.
    let socket = env.root.join("old.sock");
    let old_tmux = |args: &[&str]| {
        std::process::Command::new(&old)
            .arg("-S")
            .arg(&socket)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        old_tmux(&["-f", "/dev/null", "new-session", "-d", "-s", "old"])
            .status
            .success()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("orchestra.tmux");
    let dir = Path::new(bin()).parent().unwrap();
    let loaded = std::process::Command::new(&script)
        .env("PATH", format!("{}:{path}", dir.display()))
        .env("TMUX", format!("{},0,0", socket.display()))
        .env("ORCHESTRA_HOME", &env.home)
        .output()
        .unwrap();
    assert!(loaded.status.success());
    let exe = old_tmux(&["show-options", "-gqv", "@orchestra-exe"]);
    let keys = old_tmux(&["list-keys", "-T", "prefix"]);
    let _ = old_tmux(&["kill-server"]);
    assert!(
        exe.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&exe.stdout)
    );
    assert!(!String::from_utf8_lossy(&keys.stdout).contains("orchestra"));
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
    // The person's pane is in the repo (else the menu would act on the repo the tests run in).
    cd_person_pane(&env, &env.repo);
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
    wait_popup_closed(&person, "dispatching");
    assert!(
        wait_until(Duration::from_secs(30), || env
            .orchestra(&["list", "--json"])
            .stdout
            .contains("add-a-menu-file")),
        "no session dispatched:\n{}\nevents:\n{}\nmessages: {}",
        person.sees(),
        env.orchestra(&["events", "--json"]).stdout,
        env.tmux(&["show-messages"])
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

/// What a person types into the menu's prompts: it must arrive byte for byte, and the
/// `run-shell` in it must never run.
const HOSTILE: &str = r#"a %% b " ; run-shell "touch X" ; ""#;

/// Files named `name` that appeared under the test's folders, the crate, the current
/// folder or $HOME (where a stray `run-shell` or `#()` would run), and were not there before.
fn stray_files(env: &Env, name: &str, before: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, name: &str, found: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name() == name {
                found.push(path.clone());
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, name, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(&env.root, name, &mut found);
    found.extend(shallow_places(name).into_iter().filter(|p| p.exists()));
    found.retain(|p| !before.contains(p));
    found
}

/// The folders outside the test's own where a command run by tmux lands by default.
fn shallow_places(name: &str) -> Vec<std::path::PathBuf> {
    let mut places = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join(name)];
    if let Ok(cwd) = std::env::current_dir() {
        places.push(cwd.join(name));
    }
    if let Some(home) = std::env::var_os("HOME") {
        places.push(Path::new(&home).join(name));
    }
    places.push(Path::new("/").join(name));
    places
}

fn existing(name: &str) -> Vec<std::path::PathBuf> {
    shallow_places(name)
        .into_iter()
        .filter(|p| p.exists())
        .collect()
}

/// A generic agent that appends every line it is given to got.txt in its worktree.
fn recording_agent(env: &Env) -> String {
    let script = env.root.join("recording-agent.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nwhile IFS= read -r line; do printf '%s\\n' \"$line\" >> got.txt; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script.to_string_lossy().into_owned()
}

/// The person's pane: a new shell in `dir` (typing `cd` waits for the shell to be ready,
/// and the menus find the repo from the pane's folder).
pub(crate) fn cd_person_pane(env: &Env, dir: &Path) {
    // -c is a format to tmux: `#` doubled stays itself.
    let dir = dir.to_string_lossy().replace('#', "##");
    env.tmux(&["respawn-pane", "-k", "-t", "harness:0", "-c", &dir]);
}

/// Opens the orchestra menu and chooses the entry `entry` by its `key`.
pub(crate) fn choose(person: &Person, entry: &str, key: &str) {
    person.keys(&["C-b", "O"]);
    person.wait_to_see(entry);
    person.keys(&[key]);
}

/// In a sub-menu of sessions, chooses `label` (listed first).
pub(crate) fn choose_session(person: &Person, label: &str) {
    person.wait_to_see(&format!("{label} ("));
    person.keys(&["1"]);
}

/// Waits for the popup showing `text` to close.
#[track_caller]
pub(crate) fn wait_popup_closed(person: &Person, text: &str) {
    assert!(
        wait_until(Duration::from_secs(30), || !person.sees().contains(text)),
        "the popup stayed open:\n{}",
        person.sees()
    );
}

fn briefings(home: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(home.join("briefings")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect()
}

#[test]
fn text_typed_into_the_menus_prompts_arrives_exactly_and_runs_nothing() {
    let env = Env::new();
    let before = existing("X");
    env.start_server(&[
        ("ORCHESTRA_AGENT".into(), recording_agent(&env)),
        (
            "ORCHESTRA_HOME".into(),
            env.home.to_string_lossy().into_owned(),
        ),
    ]);
    cd_person_pane(&env, &env.repo);
    load_plugin(&env);
    let person = Person::attach(&env);

    // Esc, or Enter on an empty title, cancels: nothing is dispatched.
    for cancel in ["Escape", "Enter"] {
        choose(&person, "Dispatch", "d");
        person.wait_to_see("title:");
        person.keys(&[cancel]);
        assert!(
            wait_until(Duration::from_secs(10), || !person
                .sees()
                .contains("title:")),
            "{cancel} did not close the prompt:\n{}",
            person.sees()
        );
    }
    assert!(env.list_json().is_empty());

    // Dispatch… with the hostile text as title and as task. A title with nothing to make
    // a label from is refused in the popup, which asks again.
    choose(&person, "Dispatch", "d");
    person.wait_to_see("title:");
    person.type_text("%% #");
    person.keys(&["Enter"]);
    person.wait_to_see("try another title");
    person.type_text(HOSTILE);
    person.keys(&["Enter"]);
    person.wait_to_see("task:");
    person.type_text(HOSTILE);
    person.keys(&["Enter"]);
    let label = "a-b-run-shell-touch-x";
    // The popup stays while the dispatch runs (tmux draws no menu over it).
    wait_popup_closed(&person, "dispatching");
    let got = env.root.join("repo.worktrees").join(label).join("got.txt");
    let lines = || {
        std::fs::read_to_string(&got)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(
        wait_until(Duration::from_secs(30), || !lines().is_empty()),
        "the agent never got its prompt:\n{}\nsessions: {:?}",
        person.sees(),
        env.orchestra(&["list", "--json"]).stdout
    );
    assert_eq!(lines(), vec![HOSTILE.to_string()], "the prompt as typed");

    // Brief… with the same text: logged and typed exactly.
    choose(&person, "Brief", "b");
    choose_session(&person, label);
    person.wait_to_see(&format!("brief {label}"));
    person.type_text(HOSTILE);
    person.keys(&["Enter"]);
    wait_popup_closed(&person, &format!("brief {label}"));
    assert!(
        wait_until(Duration::from_secs(20), || lines().len() == 2),
        "the briefing never arrived:\n{}",
        person.sees()
    );
    assert_eq!(lines()[1], HOSTILE);
    assert_eq!(briefings(&env.home), vec![HOSTILE.to_string()]);

    // A refused action says why in a message: there is no menu to approve.
    choose(&person, "Approve", "a");
    choose_session(&person, label);
    person.wait_to_see(&format!("no menu or question on {label}'s screen"));

    assert_eq!(
        stray_files(&env, "X", &before),
        Vec::<std::path::PathBuf>::new()
    );
}

#[test]
fn the_menu_works_in_a_repo_home_and_install_folder_whose_names_tmux_would_expand() {
    let mut env = Env::new();
    let before = existing("pwned");
    // tmux expands #() and $VAR in command strings; quotes and spaces end words.
    let hostile = "#(touch pwned) $HOME 'q\" ;x";
    // `\037` and `${x}` too: tmux 3.4 and 3.5 print them back escaped.
    env.repo = env
        .root
        .join("proj #(touch pwned) $HOME ${x} a\\037 \u{e9}");
    env.home = env.root.join(format!("home {hostile}"));
    let install = env.root.join(format!("bin {hostile}"));
    std::fs::create_dir_all(&install).unwrap();
    let exe = install.join("orchestra");
    std::fs::copy(bin(), &exe).unwrap();
    std::fs::create_dir_all(&env.repo).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", "Test"],
        &["config", "user.email", "test@example.com"],
        &["commit", "-q", "--allow-empty", "-m", "initial"],
    ] {
        env.git(args);
    }
    env.start_server(&[]);
    env.tmux(&["set-option", "-g", "status-right", "#{orchestra_status}"]);
    // What orchestra.tmux does, with the binary from the hostile folder.
    let init = std::process::Command::new(&exe)
        .args(["tmux", "init"])
        .env("ORCHESTRA_HOME", &env.home)
        .env("ORCHESTRA_TMUX_SOCKET", &env.socket)
        .env("TMUX_TMPDIR", &env.tmux_tmpdir)
        .env_remove("TMUX")
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    env.dispatch_shell("lab").ok();
    let worktree = env
        .root
        .join("proj #(touch pwned) $HOME ${x} a\\037 \u{e9}.worktrees/lab");
    std::fs::write(worktree.join("menu.txt"), "reviewed\n").unwrap();
    crate::harness::git_in(&worktree, &["add", "menu.txt"]);
    crate::harness::git_in(&worktree, &["commit", "-q", "-m", "a commit to review"]);
    // The pane hook runs the hostile binary too: an agent's death is reported by it.
    // (Before a client is attached: then no status-line tick can see the death first.)
    env.dispatch_shell("hooked").ok();
    let pane = env.session("hooked")["pane"].as_str().unwrap().to_string();
    env.kill_pane_process(&pane);
    assert!(
        wait_until(Duration::from_secs(10), || env
            .orchestra(&["events", "--json"])
            .stdout
            .contains("pane-died")),
        "no pane-died hook reported; hooks.log: {:?}",
        std::fs::read_to_string(env.home.join("logs/hooks.log"))
    );
    env.orchestra(&["kill", "hooked"]).ok();

    cd_person_pane(&env, &env.repo);
    let person = Person::attach(&env);

    // The status-line job ran the hostile binary with the hostile home.
    assert!(
        wait_until(Duration::from_secs(20), || std::fs::read_dir(
            env.home.join("cache")
        )
        .is_ok_and(|d| d
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("status-")))),
        "the status line never ran orchestra:\n{}",
        env.tmux(&["show-options", "-gv", "status-right"])
    );

    // Status: `orchestra status` of the pane's repo in a popup; Enter closes it.
    choose(&person, "Status", "s");
    person.wait_to_see("HOST OK");
    person.wait_to_see("lab");
    person.keys(&["Enter"]);
    wait_popup_closed(&person, "HOST OK");

    // Dashboard: `orchestra watch` in a popup; Ctrl-C ends it.
    choose(&person, "Dashboard", "w");
    person.wait_to_see("SAID BY");
    person.keys(&["C-c"]);
    wait_popup_closed(&person, "SAID BY");

    // Review: the session's commit in a popup.
    choose(&person, "Review", "r");
    choose_session(&person, "lab");
    person.wait_to_see("+reviewed");
    person.keys(&["q"]);
    wait_popup_closed(&person, "+reviewed");

    // Brief: typed into the agent and logged in the hostile home.
    choose(&person, "Brief", "b");
    choose_session(&person, "lab");
    person.wait_to_see("brief lab");
    person.type_text("echo briefed-from-the-menu");
    person.keys(&["Enter"]);
    wait_popup_closed(&person, "brief lab");
    assert!(
        wait_until(Duration::from_secs(20), || briefings(&env.home)
            == vec!["echo briefed-from-the-menu".to_string()]),
        "no briefing logged:\n{}",
        person.sees()
    );

    // Kill, confirmed: the session and its worktree go, its unmerged branch is kept.
    choose(&person, "Kill", "k");
    choose_session(&person, "lab");
    person.wait_to_see("kill lab?");
    person.keys(&["y"]);
    assert!(
        wait_until(Duration::from_secs(20), || env.list_json().is_empty()),
        "not killed:\n{}",
        person.sees()
    );
    assert!(!worktree.exists());
    assert!(env.branches().iter().any(|b| b.starts_with("archive/lab-")));

    assert_eq!(
        stray_files(&env, "pwned", &before),
        Vec::<std::path::PathBuf>::new()
    );
}

/// Values no print of a release may change (control characters, `$`, `#{`, newlines,
/// tabs, backslashes) read back exactly by the window-option and session-owner reads,
/// on the release under test (tests/run.sh runs this group on each).
#[test]
fn a_window_option_and_a_sessions_owner_are_read_exactly_on_every_release() {
    let env = Env::new();
    env.start_server(&[]);
    let tmux = orchestra::tmux::Tmux::new(&orchestra::tmux::Server::at(Some(
        env.socket.to_str().unwrap(),
    )));
    let window = env.tmux(&["display-message", "-p", "-t", "harness:0", "#{window_id}"]);
    let window = orchestra::tmux::WindowId::parse(window.trim()).unwrap();
    for value in [
        PRINTED_DIFFERENTLY,
        "\x01\x1b[31m\r\x7f end\\",
        "$HOME ${HOME} \\$HOME #{session_name} #(touch pwned)",
        "trailing newline\n",
    ] {
        env.tmux(&["set-option", "-w", "-t", &window, "@orchestra_probe", value]);
        assert_eq!(
            tmux.window_option(&window, "@orchestra_probe")
                .unwrap()
                .as_deref(),
            Some(value),
            "{value:?}"
        );
    }
    assert_eq!(
        tmux.window_option(&window, "@orchestra_unset").unwrap(),
        None
    );
    let gone = orchestra::tmux::WindowId::parse("@9999").unwrap();
    assert_eq!(tmux.window_option(&gone, "@orchestra_probe").unwrap(), None);

    // A session is ended only when its owner is exactly the id: owners that print like
    // it, or hold it with more around it, leave it alone.
    let id = "0123abcd";
    for (n, owner) in [
        format!("{id}\n"),
        format!("{id}\x1f"),
        format!("${id}"),
        format!("#{{{id}}}"),
        format!("{id} "),
        "0123ABCD".to_string(),
    ]
    .iter()
    .enumerate()
    {
        let name = format!("owned {n} by-orchestra");
        env.tmux(&["new-session", "-d", "-s", &name]);
        env.tmux(&[
            "set-option",
            "-t",
            &format!("={name}:"),
            "@orchestra_owner",
            owner,
        ]);
        assert!(!tmux.kill_session_if_ours(&name, id).unwrap(), "{owner:?}");
        assert_eq!(
            env.tmux_try(&["has-session", "-t", &format!("={name}")])
                .code,
            0
        );
    }
    let name = "owned by-orchestra";
    env.tmux(&["new-session", "-d", "-s", name]);
    tmux.mark_session(name, id).unwrap();
    assert!(tmux.kill_session_if_ours(name, id).unwrap());
    assert_ne!(
        env.tmux_try(&["has-session", "-t", &format!("={name}")])
            .code,
        0
    );
    assert!(
        !tmux.kill_session_if_ours(name, id).unwrap(),
        "gone: not ours"
    );
    assert!(!tmux.kill_session_if_ours("no such session", id).unwrap());
}

/// tmux 3.7 refuses a command of more than 1000 words, whatever their size ("command too
/// long", `cmd_unpack_argv`): the word limit batches keep to (`orchestra::tmux::WORDS_MAX`)
/// is that release's own, and a refresh batch of many short commands goes in calls cut
/// under it, none refused. Run on 3.7c from the test cache: it is built by hand (README),
/// so its absence is a skip, on CI too.
#[test]
fn tmux_3_7s_word_limit_is_the_one_batches_keep_to() {
    let release = crate::harness::test_cache().join("tmux-3.7c/bin/tmux");
    if !release.is_file() {
        eprintln!("SKIP: tmux 3.7c is not in the test cache (built by hand: README \"Tested on\")");
        return;
    }
    let env = Env::new();
    let socket = env.root.join("3.7c.sock");
    let run = |args: &[String]| {
        std::process::Command::new(&release)
            .arg("-S")
            .arg(&socket)
            .args(args)
            .output()
            .unwrap()
    };
    let start = ["-f", "/dev/null", "new-session", "-d", "-s", "w"].map(String::from);
    assert!(run(&start).status.success());
    let limit = orchestra::tmux::WORDS_MAX;
    // `total` words of short commands joined by `;` (a word each): a few KB, far under
    // the byte limit.
    let words = |total: usize| {
        let mut args = vec!["has-session".to_string()];
        if total.is_multiple_of(2) {
            args.push("-tw".to_string());
        }
        while args.len() < total {
            args.extend([";".to_string(), "has-session".to_string()]);
        }
        args
    };
    let fits = run(&words(limit));
    assert!(
        fits.status.success(),
        "{}",
        String::from_utf8_lossy(&fits.stderr)
    );
    let over = run(&words(limit + 1));
    assert!(!over.status.success());
    assert_eq!(
        String::from_utf8_lossy(&over.stderr).trim(),
        "command too long"
    );

    // 300 options set in one batch through orchestra's tmux (the transport names the
    // 3.7c binary: the PATH's tmux is another release): every one arrives.
    let tmux = orchestra::tmux::Tmux::with_transport(
        Box::new(FixedTmux {
            program: release.clone(),
            socket: socket.clone(),
        }),
        false,
    );
    let sets: Vec<Vec<String>> = (0..300)
        .map(|n| {
            ["set-option", "-g", &format!("@w{n}"), &n.to_string()]
                .map(String::from)
                .to_vec()
        })
        .collect();
    let outputs = tmux.batch(&sets).unwrap();
    assert_eq!(outputs.len(), 300);
    // About 10 words a command with the batch's marker: 100 a call. Cut by bytes alone
    // they went 150 a call, were refused and halved: 6 calls.
    assert_eq!(tmux.calls(), 3, "calls refused and halved");
    let shown = run(&["display-message", "-p", "#{@w0} #{@w299}"].map(String::from));
    assert_eq!(String::from_utf8_lossy(&shown.stdout).trim(), "0 299");
    let _ = run(&["kill-server".to_string()]);
}

/// One tmux binary on one socket (the release under test here is not the PATH's).
struct FixedTmux {
    program: std::path::PathBuf,
    socket: std::path::PathBuf,
}

impl orchestra::tmux::Transport for FixedTmux {
    fn tmux(&self, args: &[String]) -> Result<String, orchestra::tmux::TmuxError> {
        self.tmux_with_input(args, None)
    }

    fn tmux_with_input(
        &self,
        args: &[String],
        _input: Option<&[u8]>,
    ) -> Result<String, orchestra::tmux::TmuxError> {
        let out = std::process::Command::new(&self.program)
            .arg("-u")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(orchestra::tmux::TmuxError::Failed {
                command: args[0].clone(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    fn command_prefix(&self) -> Vec<String> {
        vec![self.program.to_string_lossy().into_owned()]
    }
}
