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
