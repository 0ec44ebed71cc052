//! list: the JSON interface and the table.

use crate::harness::Env;

#[test]
fn list_json_has_exactly_the_documented_fields() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("one").ok();
    env.dispatch_shell("two").ok();
    let rows = env.list_json();
    assert_eq!(rows.len(), 2);
    let mut keys: Vec<&str> = rows[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "age",
            "branch",
            "check",
            "conflicts_with",
            "conversation",
            "cost_usd",
            "group",
            "host",
            "id",
            "label",
            "pane",
            "pull_request",
            "repo",
            "requested_by",
            "retry_count",
            "sandbox",
            "state",
            "state_source",
            "status",
            "task",
            "tokens",
            "window",
            "worktree",
            "yolo"
        ]
    );
    // A shell agent writes no usage orchestra reads: no tokens, no cost.
    assert_eq!(rows[0]["tokens"], serde_json::Value::Null);
    assert_eq!(rows[0]["cost_usd"], serde_json::Value::Null);
    let one = &rows[0];
    assert_eq!(one["label"], "one");
    assert_eq!(one["branch"], "session/one");
    assert_eq!(one["status"], "running");
    assert_eq!(one["retry_count"], 0);
    assert_eq!(
        one["task"],
        serde_json::Value::Null,
        "not dispatched from a task"
    );
    assert_eq!(
        one["requested_by"],
        serde_json::Value::Null,
        "a person dispatched it"
    );
    assert_eq!(one["repo"], env.repo.to_str().unwrap());
    assert_eq!(one["worktree"], env.worktree_path("one").to_str().unwrap());
    assert!(one["age"].as_i64().unwrap() >= 0);
    // id, window and pane are what tmux itself knows.
    let window = one["window"].as_str().unwrap();
    assert_eq!(
        env.tmux(&[
            "display-message",
            "-p",
            "-t",
            one["pane"].as_str().unwrap(),
            "#{window_id} #{@orchestra_id}"
        ])
        .trim(),
        format!("{window} {}", one["id"].as_str().unwrap())
    );

    let table = env.orchestra(&["list"]).ok().stdout;
    assert!(table.starts_with("LABEL"), "{table}");
    assert!(table.contains("session/two"), "{table}");
}

#[test]
fn list_all_spans_repos_and_a_worktree_counts_as_its_repo() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("here").ok();
    let other = env.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    crate::harness::git_in(&other, &["init", "-q", "-b", "main"]);
    crate::harness::git_in(&other, &["commit", "-q", "--allow-empty", "-m", "init"]);
    env.orchestra_in(
        &other,
        &["dispatch", "there", "--agent", "bash", "--kind", "generic"],
    )
    .ok();

    let here = env.orchestra(&["list", "--json"]).ok().stdout;
    assert!(
        here.contains("\"here\"") && !here.contains("\"there\""),
        "{here}"
    );
    // From inside a session's worktree, list shows that repo's sessions.
    let inside = env
        .orchestra_in(&env.worktree_path("here"), &["list", "--json"])
        .ok()
        .stdout;
    assert!(inside.contains("\"here\""), "{inside}");
    let all: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["list", "--json", "--all"]).ok().stdout).unwrap();
    assert_eq!(all.len(), 2);
}

#[test]
fn the_store_is_created_on_first_use_by_concurrent_processes() {
    let env = Env::new();
    let children: Vec<_> = (0..8)
        .map(|_| {
            env.orchestra_command(&env.repo, &["list", "--json"])
                .output()
        })
        .collect();
    for child in children {
        let out = child.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(env.home.join("state.db").exists());
}
