//! The dependency graph on its own: artifact kinds, cycles, notified, concurrency.

use crate::harness::{git_in, Env};

fn sessions(env: &Env, labels: &[&str]) {
    for l in labels {
        env.dispatch_shell(l).ok();
    }
}

#[test]
fn every_artifact_kind_present_and_absent() {
    let env = Env::new();
    env.start_server(&[]);
    sessions(&env, &["up", "down"]);
    let wt = env.worktree_path("up");
    let check = |artifact: &str| env.orchestra(&["deps", "check", "up", artifact]);
    // A file in the worktree, not committed.
    assert_eq!(check("out/data.csv").code, 1);
    std::fs::create_dir_all(wt.join("out")).unwrap();
    std::fs::write(wt.join("out/data.csv"), "1,2\n").unwrap();
    let ok = check("out/data.csv");
    assert_eq!(ok.code, 0);
    assert!(
        ok.stdout.is_empty() && ok.stderr.is_empty(),
        "check prints nothing"
    );
    // A file committed on the branch, gone from the worktree.
    std::fs::write(wt.join("report.md"), "r\n").unwrap();
    git_in(&wt, &["add", "report.md"]);
    git_in(&wt, &["commit", "-q", "-m", "report"]);
    git_in(&wt, &["rm", "-q", "--cached", "report.md"]);
    std::fs::remove_file(wt.join("report.md")).unwrap();
    assert_eq!(check("report.md").code, 0);
    // A branch.
    assert_eq!(check("feature/api").code, 1);
    env.git(&["branch", "feature/api"]);
    assert_eq!(check("feature/api").code, 0);
    assert_eq!(check("branch:feature/api").code, 0);
    assert_eq!(
        check("file:feature/api").code,
        1,
        "the prefix forces the kind"
    );
    // A commit: reachable from the upstream's branch, or not.
    let on_branch = git_in(&wt, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(check(&on_branch).code, 0);
    assert_eq!(check(&format!("commit:{}", &on_branch[..12])).code, 0);
    let other = env.worktree_path("down");
    std::fs::write(other.join("x.txt"), "x\n").unwrap();
    git_in(&other, &["add", "."]);
    git_in(&other, &["commit", "-q", "-m", "elsewhere"]);
    let elsewhere = git_in(&other, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        check(&elsewhere).code,
        1,
        "not reachable from up's branch or main"
    );
    assert_eq!(check("deadbeefdeadbeef").code, 1);
    // Hostile locators are bad input.
    env.cli(&["deps", "check", "up", "../../etc/passwd"])
        .status(2)
        .stderr_line("orchestra: artifact \"../../etc/passwd\" leaves the session's folder (`..`)")
        .run();
    env.cli(&["deps", "add", "down", "up", "../x"])
        .status(2)
        .stderr_line("orchestra: artifact \"../x\" leaves the session's folder (`..`)")
        .run();
    env.cli(&["deps", "check", "nobody", "x"])
        .status(2)
        .stderr_line(format!(
            "orchestra: no session labelled \"nobody\" in {} (see `orchestra list`)",
            env.repo.display()
        ))
        .run();
}

#[test]
fn cycles_of_one_two_and_five_are_refused_with_the_cycle() {
    let env = Env::new();
    env.start_server(&[]);
    sessions(&env, &["a", "b", "c", "d", "e"]);
    env.cli(&["deps", "add", "a", "a", "x"])
        .status(2)
        .stderr_line("orchestra: a cannot wait for itself")
        .run();
    env.orchestra(&["deps", "add", "a", "b", "x"]).ok();
    env.cli(&["deps", "add", "b", "a", "y"])
        .status(2)
        .stderr_line("orchestra: that would make a cycle: b → a → b")
        .run();
    for (d, u) in [("b", "c"), ("c", "d"), ("d", "e")] {
        env.orchestra(&["deps", "add", d, u, "x"]).ok();
    }
    env.cli(&["deps", "add", "e", "a", "x"])
        .status(2)
        .stderr_line("orchestra: that would make a cycle: e → a → b → c → d → e")
        .run();
    env.cli(&["deps", "add", "a", "b", "x"])
        .status(2)
        .stderr_line("orchestra: a already waits for b: x")
        .run();
    env.cli(&["deps", "add", "a", "nobody", "x"])
        .status(2)
        .stderr_line(format!(
            "orchestra: no session labelled \"nobody\" in {} (see `orchestra list`)",
            env.repo.display()
        ))
        .run();
    let graph: serde_json::Value =
        serde_json::from_str(&env.orchestra(&["deps", "graph", "--json"]).ok().stdout).unwrap();
    assert_eq!(
        graph["edges"].as_array().unwrap().len(),
        4,
        "refused edges left nothing: {graph}"
    );
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 5);
    let dot = env.orchestra(&["deps", "graph", "--dot"]).ok().stdout;
    assert!(
        dot.starts_with("digraph") && dot.contains("\"a\" -> \"b\""),
        "{dot}"
    );
}

#[test]
fn notified_is_idempotent_and_pending_follows_it() {
    let env = Env::new();
    env.start_server(&[]);
    sessions(&env, &["up", "d1", "d2"]);
    env.orchestra(&["deps", "add", "d1", "up", "a.txt"]).ok();
    env.orchestra(&["deps", "add", "d2", "up", "b.txt"]).ok();
    assert_eq!(
        env.orchestra(&["deps", "pending", "up"]).ok().stdout,
        "d1\nd2\n"
    );
    env.orchestra(&["deps", "notified", "d1", "up"]).ok();
    env.orchestra(&["deps", "notified", "d1", "up"]).ok();
    assert_eq!(
        env.orchestra(&["deps", "pending", "up"]).ok().stdout,
        "d2\n"
    );
    let graph: serde_json::Value =
        serde_json::from_str(&env.orchestra(&["deps", "graph", "--json"]).ok().stdout).unwrap();
    let told: Vec<bool> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["notified"].as_bool().unwrap())
        .collect();
    assert_eq!(told, [true, false]);
    env.orchestra(&["deps", "notified", "up", "d1"])
        .fails_with(2);
}

#[test]
fn sixteen_processes_adding_edges_at_once_lose_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    let labels: Vec<String> = (0..17).map(|i| format!("s{i}")).collect();
    for l in &labels {
        env.dispatch_shell(l).ok();
    }
    let children: Vec<_> = (1..17)
        .map(|i| {
            env.orchestra_command(
                &env.repo,
                &[
                    "deps",
                    "add",
                    &format!("s{i}"),
                    "s0",
                    &format!("part{i}.txt"),
                ],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let graph: serde_json::Value =
        serde_json::from_str(&env.orchestra(&["deps", "graph", "--json"]).ok().stdout).unwrap();
    assert_eq!(graph["edges"].as_array().unwrap().len(), 16);
}
