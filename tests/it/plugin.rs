//! The tmux plugin loaded the way TPM loads it: a real tmux server runs a config that runs
//! orchestra.tmux; bindings, status segment, badges and hooks are checked, twice.

use std::path::Path;
use std::time::Duration;

use crate::harness::{bin, wait_until, Env};

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
    assert!(hooks.contains("event --session"), "{hooks}");

    // Loading twice doubles nothing.
    load_plugin(&env);
    assert_eq!(env.tmux(&["show-options", "-gv", "status-right"]), status);
    assert_eq!(
        env.tmux(&["show-options", "-gwv", "window-status-format"]),
        fmt
    );
    assert_eq!(env.tmux(&["show-hooks", "-gw"]), hooks);
    assert_eq!(env.tmux(&["list-keys", "-T", "prefix"]), keys);

    // The status job works as tmux runs it, and the hook marks a dead pane exited.
    env.dispatch_shell("hooked").ok();
    let id = env.session("hooked")["id"].as_str().unwrap().to_string();
    let pane = env.session("hooked")["pane"].as_str().unwrap().to_string();
    env.tmux(&["send-keys", "-t", &pane, "-l", "exit"]);
    env.tmux(&["send-keys", "-t", &pane, "Enter"]);
    assert!(
        wait_until(Duration::from_secs(10), || env.session("hooked")["state"]
            == "exited"),
        "the pane-died hook did not report {id}"
    );
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
