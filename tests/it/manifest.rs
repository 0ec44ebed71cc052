//! Sessions from orchestra.toml on this machine: up in blocked_by order, seen and briefed
//! like dispatched ones, refused by the branch commands, restarted, and their
//! `[[dependencies]]` run once when their `when` comes true.

use std::time::Duration;

use crate::harness::{wait_until, Env};

fn folder(env: &Env, name: &str) -> std::path::PathBuf {
    let p = env.root.join(name);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn manifest(env: &Env, extra: &str) {
    let a = folder(env, "a-folder");
    let b = folder(env, "b-folder");
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = \"cat\"\n\n\
             [sessions.analysis]\npath = '{}'\nblocked_by = [\"pipeline\"]\n\n\
             [sessions.pipeline]\npath = '{}'\n\n{extra}",
            b.display(),
            a.display()
        ),
    )
    .unwrap();
}

fn tail(env: &Env, label: &str) -> String {
    env.orchestra(&["tail", label, "20"]).stdout
}

#[test]
fn local_manifest_sessions_come_up_in_order_and_act_like_sessions() {
    let env = Env::new();
    env.start_server(&[]);
    manifest(&env, "");
    let up = env.orchestra(&["up", "analysis"]).ok();
    let pipeline_at = up.stdout.find("pipeline: up here").expect(&up.stdout);
    let analysis_at = up.stdout.find("analysis: up here").expect(&up.stdout);
    assert!(
        pipeline_at < analysis_at,
        "blocked_by upstream first: {}",
        up.stdout
    );
    let again = env.orchestra(&["up"]).ok();
    assert!(
        again.stdout.contains("pipeline: already up"),
        "{}",
        again.stdout
    );

    let list = env.list_json();
    assert_eq!(list.len(), 2);
    env.orchestra(&["brief", "pipeline", "hello pipeline"]).ok();
    assert!(wait_until(Duration::from_secs(10), || tail(
        &env, "pipeline"
    )
    .contains("hello pipeline")));
    for verb in ["review", "merge", "kill"] {
        let run = env.orchestra(&[verb, "pipeline"]).fails_with(2);
        assert!(run.stderr.contains("no branch"), "{verb}: {}", run.stderr);
    }
    let status = env.orchestra(&["status"]).ok().stdout;
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("pipeline") && l.contains("local")),
        "{status}"
    );
    // restart: down, then up again.
    let old_pane = env.session("pipeline")["pane"]
        .as_str()
        .unwrap()
        .to_string();
    let restarted = env.orchestra(&["restart", "pipeline"]).ok();
    assert!(
        restarted.stdout.contains("pipeline: down"),
        "{}",
        restarted.stdout
    );
    assert!(
        restarted.stdout.contains("pipeline: up here"),
        "{}",
        restarted.stdout
    );
    assert_ne!(env.session("pipeline")["pane"].as_str().unwrap(), old_pane);

    let down = env.orchestra(&["down"]).ok();
    let analysis_at = down.stdout.find("analysis: down").expect(&down.stdout);
    let pipeline_at = down.stdout.find("pipeline: down").expect(&down.stdout);
    assert!(
        analysis_at < pipeline_at,
        "dependents stop first: {}",
        down.stdout
    );
    assert!(env.list_json().is_empty());
    // The detached tmux sessions up made are gone; the harness session stays.
    let sessions = env.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert_eq!(sessions.trim(), "harness", "{sessions}");
}

#[test]
fn dependencies_run_once_when_their_upstream_is_done_or_has_its_artifact() {
    let env = Env::new();
    env.start_server(&[]);
    manifest(
        &env,
        "[[dependencies]]\nwhen = \"pipeline done\"\nthen = 'brief analysis \"Data ready at /share/output\"'\n\n\
         [[dependencies]]\nwhen = \"pipeline has out/result.csv\"\nthen = 'brief analysis \"result file is there\"'\n",
    );
    env.orchestra(&["up"]).ok();
    let done = env.orchestra(&["done", "pipeline"]).ok();
    assert!(done.stdout.contains("ran pipeline done"), "{}", done.stdout);
    assert!(
        wait_until(Duration::from_secs(10), || tail(&env, "analysis")
            .contains("Data ready at /share/output")),
        "{}",
        tail(&env, "analysis")
    );
    // Once only.
    let again = env.orchestra(&["done", "pipeline"]).ok();
    assert!(!again.stdout.contains("ran"), "{}", again.stdout);

    let out_dir = env.root.join("a-folder/out");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join("result.csv"), "x\n").unwrap();
    env.orchestra(&["status"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || tail(&env, "analysis")
            .contains("result file is there")),
        "{}",
        tail(&env, "analysis")
    );
    std::thread::sleep(Duration::from_millis(500));
    let screen = tail(&env, "analysis");
    assert_eq!(
        screen.matches("Data ready at /share/output").count(),
        2,
        "typed once, echoed once by cat: {screen}"
    );
    env.orchestra(&["down"]).ok();
}

#[test]
fn dispatch_puts_worktrees_where_the_manifest_says() {
    let env = Env::new();
    env.start_server(&[]);
    std::fs::write(
        env.repo.join("orchestra.toml"),
        "[orchestrator]\nworktree_dir = \"../wt-{repo}\"\n",
    )
    .unwrap();
    env.dispatch_shell("placed").ok();
    let worktree = env.session("placed")["worktree"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        std::path::PathBuf::from(&worktree),
        env.root.join("wt-repo").join("placed")
    );
    assert!(std::path::Path::new(&worktree).join("README.md").exists());
    env.orchestra(&["kill", "placed"]).ok();
}

/// Writes orchestra.toml, runs `up`, and expects exit 2 with one stderr line naming
/// the file, line and column, and `why`.
fn refused(env: &Env, text: &str, at: &str, why: &str) {
    std::fs::write(env.repo.join("orchestra.toml"), text).unwrap();
    let run = env.orchestra(&["up"]).fails_with(2);
    assert!(
        run.stderr.contains(&format!("orchestra.toml:{at}: ")),
        "{text}\n{}",
        run.stderr
    );
    assert!(run.stderr.contains(why), "{text}\n{}", run.stderr);
}

#[test]
fn hostile_ssh_addresses_and_tmux_targets_are_refused_at_parse_time() {
    let env = Env::new();
    env.start_server(&[]);
    let folder = folder(&env, "a-folder");
    let sessions_before = env.tmux(&["list-sessions", "-F", "#{session_name}"]);
    let on_host = |address: &str| {
        format!(
            "[hosts.gpu]\naddress = '{address}'\n\n[sessions.a]\nhost = \"gpu\"\npath = '{}'\n",
            folder.display()
        )
    };
    for (address, why) in [
        (
            "-oProxyCommand=touch@box",
            "the user part \"-oProxyCommand=touch\"",
        ),
        ("-oProxyCommand=touch /tmp/x@box", "is not a user name"),
        ("a b@box", "is not a user name"),
        ("$(touch x)@box", "is not a user name"),
        ("me@-oProxyCommand=x", "the host part \"-oProxyCommand=x\""),
    ] {
        refused(&env, &on_host(address), "2:1", why);
    }
    // A terminal escape, written as TOML's own escape.
    refused(
        &env,
        &on_host("x").replace("'x'", "\"me\\u001b[2J@box\""),
        "2:1",
        "is not a user name",
    );
    for tmux in ["work.1", "work:1", "a:b.c"] {
        refused(
            &env,
            &format!(
                "[orchestrator]\nagent = \"cat\"\n\n[sessions.a]\npath = '{}'\ntmux = '{tmux}'\n",
                folder.display()
            ),
            "6:1",
            "which tmux reads as window and pane separators",
        );
    }
    // Nothing was made or recorded.
    assert!(env.list_json().is_empty());
    assert_eq!(
        env.tmux(&["list-sessions", "-F", "#{session_name}"]),
        sessions_before
    );
    // A plain user and a plain tmux name still come up.
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = \"cat\"\n\n[sessions.a]\npath = '{}'\ntmux = 'work_1-a'\n",
            folder.display()
        ),
    )
    .unwrap();
    let up = env.orchestra(&["up"]).ok();
    assert!(up.stdout.contains("tmux session work_1-a"), "{}", up.stdout);
    env.orchestra(&["down"]).ok();
}

#[test]
fn artifacts_outside_the_folder_are_refused_by_dispatch_deps_and_the_manifest_alike() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("up").ok();
    env.dispatch_shell("down-stream").ok();
    let windows = env.windows();
    let branches = env.branches();
    let hostile = [
        "/etc/hostname",
        "file:/etc/hostname",
        "..",
        "a/../../b",
        "../../etc/hostname",
    ];
    for artifact in hostile {
        let run = env
            .orchestra(&[
                "dispatch",
                "x",
                "--agent",
                "bash",
                "--after",
                &format!("up:{artifact}"),
            ])
            .fails_with(2);
        assert!(
            run.stderr.contains("absolute path")
                || run.stderr.contains("leaves the session's folder"),
            "{artifact}: {}",
            run.stderr
        );
        // /etc/hostname exists: before the shared validator `deps check` said yes (exit 0).
        env.orchestra(&["deps", "check", "up", artifact])
            .fails_with(2);
        env.orchestra(&["deps", "add", "down-stream", "up", artifact])
            .fails_with(2);
    }
    assert_eq!(env.windows(), windows);
    assert_eq!(env.branches(), branches);
    let graph = env.orchestra(&["deps", "graph"]).ok().stdout;
    assert!(graph.trim().is_empty(), "no edge was added: {graph}");
    // Branch and commit artifacts keep working.
    env.git(&["branch", "release"]);
    env.orchestra(&["deps", "check", "up", "branch:release"])
        .ok();
    let head = env.git(&["rev-parse", "HEAD"]);
    env.orchestra(&["deps", "check", "up", &format!("commit:{}", head.trim())])
        .ok();
    env.orchestra(&["deps", "add", "down-stream", "up", "branch:release"])
        .ok();

    // The manifest's `has`: the same validator, with file:line:column.
    let folder = folder(&env, "a-folder");
    for (artifact, why) in [
        ("/etc/hostname", "is an absolute path"),
        ("a/../../b", "leaves the session's folder"),
        ("..", "leaves the session's folder"),
        ("branch:main", "has no branch"),
    ] {
        refused(
            &env,
            &format!(
                "[sessions.a]\npath = '{}'\n\n[[dependencies]]\nwhen = 'a has {artifact}'\nthen = 'brief a hi'\n",
                folder.display()
            ),
            "5:9",
            why,
        );
    }
    env.orchestra(&["kill", "up", "--force"]).ok();
    env.orchestra(&["kill", "down-stream", "--force"]).ok();
}
