//! Sessions that wait for each other, restart with their conversation, and the
//! orchestrator: with the real claude CLI against the fake API.

use std::time::Duration;

use crate::harness::{bin, wait_until, ClaudeWorld, Env};

fn claude_agent(world: &ClaudeWorld) -> String {
    format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    )
}

#[test]
fn a_blocked_session_starts_when_its_upstream_writes_the_artifact() {
    let env = Env::new();
    let consumer_wt = env.worktree_path("consumer");
    let Some(world) = ClaudeWorld::start(&env, &[&consumer_wt]) else {
        return;
    };
    env.start_server(&world.env);
    env.dispatch_shell("producer").ok();
    let run = env
        .orchestra(&[
            "dispatch",
            "consumer",
            "--agent",
            &claude_agent(&world),
            "--prompt",
            "[[say: consuming now]] summarize the data",
            "--after",
            "producer:out/data.csv",
        ])
        .ok();
    assert!(run.stdout.contains("blocked"), "{}", run.stdout);
    let consumer = env.session("consumer");
    assert_eq!(consumer["status"], "blocked");
    assert!(consumer_wt.exists(), "the worktree is ready");
    let pane = consumer["pane"].as_str().unwrap().to_string();
    assert!(wait_until(Duration::from_secs(5), || env
        .tmux(&["capture-pane", "-p", "-t", &pane])
        .contains("waits for producer: out/data.csv")));
    // Ticks before the artifact exists change nothing.
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("consumer")["status"], "blocked");
    assert!(!world.api.requests().contains("summarize the data"));
    assert_eq!(
        env.orchestra(&["deps", "pending", "producer"]).ok().stdout,
        "consumer\n"
    );

    // The upstream writes the file; the next status tick starts the consumer.
    let out = env.worktree_path("producer").join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("data.csv"), "a,b\n").unwrap();
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("consumer")["status"], "running");
    assert!(
        wait_until(Duration::from_secs(30), || world
            .api
            .requests()
            .contains("Ready for you now: out/data.csv (from producer)")),
        "{}",
        env.tmux(&["capture-pane", "-p", "-t", &pane])
    );
    assert!(world.api.requests().contains("summarize the data"));
    assert_eq!(
        env.orchestra(&["deps", "pending", "producer"]).ok().stdout,
        "",
        "marked notified"
    );
    let events = env.orchestra(&["events", "consumer", "--json"]).ok().stdout;
    assert!(
        events.contains("\"blocked\"") && events.contains("artifacts are ready"),
        "{events}"
    );
}

#[test]
fn done_and_upstream_events_unblock_dependents_and_bad_after_is_refused() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("up").ok();
    let marker = env.root.join("started.txt");
    env.orchestra(&[
        "dispatch",
        "after-done",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--prompt",
        &format!("echo started > {}", marker.display()),
        "--after",
        "up:branch:release",
    ])
    .ok();
    assert_eq!(env.session("after-done")["status"], "blocked");
    // The branch appears; the upstream says it is done: the dependent starts at once.
    env.git(&["branch", "release"]);
    let up_id = env.session("up")["id"].as_str().unwrap().to_string();
    let mut cmd = env.orchestra_command(&env.repo, &["done"]);
    cmd.env("ORCHESTRA_SESSION", &up_id);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("after-done was waiting"));
    assert_eq!(env.session("up")["status"], "done");
    assert!(
        wait_until(Duration::from_secs(10), || marker.exists()),
        "the dependent's prompt ran"
    );

    // Bad --after: unknown upstream, no colon, a path leaving the worktree; nothing made.
    let windows = env.windows();
    env.orchestra(&[
        "dispatch",
        "x1",
        "--agent",
        "bash",
        "--after",
        "nobody:file",
    ])
    .fails_with(2);
    env.orchestra(&["dispatch", "x2", "--agent", "bash", "--after", "up"])
        .fails_with(2);
    env.orchestra(&[
        "dispatch",
        "x3",
        "--agent",
        "bash",
        "--after",
        "up:../../etc/passwd",
    ])
    .fails_with(2);
    assert_eq!(env.windows(), windows);
    assert!(!env.branches().iter().any(|b| b.starts_with("session/x")));
}

#[test]
fn restart_brings_an_exited_agent_back_with_its_conversation() {
    let env = Env::new();
    let wt = env.worktree_path("again");
    let Some(world) = ClaudeWorld::start(&env, &[&wt]) else {
        return;
    };
    env.start_server(&world.env);
    env.orchestra(&[
        "dispatch",
        "again",
        "--agent",
        &claude_agent(&world),
        "--prompt",
        "[[say: first answer 4471]]",
    ])
    .ok();
    let session = env.session("again");
    let pane = session["pane"].as_str().unwrap().to_string();
    let uuid_screen = || env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(wait_until(Duration::from_secs(30), || uuid_screen()
        .contains("● first answer 4471")));
    // The worker prompt was appended to the system prompt.
    let requests = world.api.requests();
    assert!(
        requests.contains("You are an orchestra worker"),
        "{}",
        requests
            .lines()
            .map(|l| l.chars().take(1500).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    );
    env.orchestra(&["restart", "again"]).fails_with(1);

    let pid = env.tmux(&["display-message", "-p", "-t", &pane, "#{pane_pid}"]);
    std::process::Command::new("kill")
        .arg(pid.trim())
        .status()
        .unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        env.orchestra(&["refresh"]).ok();
        env.session("again")["state"] == "exited"
    }));
    let run = env.orchestra(&["restart", "again"]).ok();
    assert!(
        run.stdout.contains("conversation resumed"),
        "{}",
        run.stdout
    );
    let restarted = env.session("again");
    assert_eq!(restarted["retry_count"], 1);
    assert_eq!(restarted["status"], "running");
    // The agent runs with --resume <its uuid>.
    assert!(wait_until(Duration::from_secs(10), || env
        .tmux(&["display-message", "-p", "-t", &pane, "#{pane_dead}"])
        .trim()
        == "0"));
    let argv: Vec<String> = env
        .pane_proc(&pane, "cmdline")
        .lines()
        .map(str::to_string)
        .collect();
    assert!(argv.iter().any(|a| a == "--resume"), "{argv:?}");
    // A new prompt continues the same conversation: the API sees the first answer again.
    let before = world.api.requests().lines().count();
    assert!(wait_until(Duration::from_secs(30), || uuid_screen()
        .lines()
        .any(|l| l.trim_end() == "❯")));
    env.orchestra(&["brief", "again", "[[say: second answer]] go on"])
        .ok();
    assert!(
        wait_until(Duration::from_secs(30), || {
            world
                .api
                .requests()
                .lines()
                .skip(before)
                .any(|l| l.contains("go on") && l.contains("first answer 4471"))
        }),
        "{}",
        uuid_screen()
    );
}

#[test]
fn launch_starts_the_orchestrator_with_its_prompt_and_promote_registers_a_pane() {
    let env = Env::new();
    let Some(world) = ClaudeWorld::start(&env, &[&env.repo]) else {
        return;
    };
    env.start_server(&world.env);
    let run = env
        .orchestra(&["launch", "--agent", &claude_agent(&world)])
        .ok();
    assert!(run.stdout.contains("orchestrator for"), "{}", run.stdout);
    let windows = env.windows();
    assert!(
        windows.iter().any(|w| w.contains(" orchestrator")),
        "{windows:?}"
    );
    let pane = env
        .tmux(&["list-panes", "-a", "-F", "#{pane_id} #{window_name}"])
        .lines()
        .find(|l| l.ends_with(" orchestrator"))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(wait_until(Duration::from_secs(30), || env
        .tmux(&["capture-pane", "-p", "-t", &pane])
        .lines()
        .any(|l| l.trim_end() == "❯")));
    env.tmux(&["send-keys", "-t", &pane, "-l", "[[say: at your service]]"]);
    std::thread::sleep(Duration::from_millis(300));
    env.tmux(&["send-keys", "-t", &pane, "Enter"]);
    assert!(wait_until(Duration::from_secs(30), || world
        .api
        .requests()
        .contains("You are the orchestra orchestrator")));

    // --resume continues that conversation: the new agent runs with --resume <its uuid>.
    let argv_of = |pane: &str| -> Vec<String> {
        env.pane_proc(pane, "cmdline")
            .lines()
            .map(str::to_string)
            .collect()
    };
    let first = argv_of(&pane);
    let uuid = first
        .iter()
        .skip_while(|a| *a != "--session-id")
        .nth(1)
        .expect("--session-id")
        .clone();
    env.orchestra(&["launch", "--resume", "--agent", &claude_agent(&world)])
        .ok();
    let newest = env
        .tmux(&["list-panes", "-a", "-F", "#{pane_id} #{window_name}"])
        .lines()
        .filter(|l| l.ends_with(" orchestrator"))
        .filter_map(|l| l.split(' ').next().map(str::to_string))
        .max_by_key(|p| p.trim_start_matches('%').parse::<u32>().unwrap_or(0))
        .unwrap();
    let resumed = argv_of(&newest);
    assert!(
        resumed
            .windows(2)
            .any(|w| w[0] == "--resume" && w[1] == uuid),
        "{resumed:?}"
    );

    // --new makes a repository to start from.
    let mut env2 = Env::new();
    let projects = env2.root.join("projects");
    env2.env.push((
        "ORCHESTRA_PROJECTS_DIR".into(),
        projects.to_string_lossy().into_owned(),
    ));
    env2.start_server(&[]);
    env2.orchestra(&["launch", "--new", "fresh-app", "--agent", "bash"])
        .ok();
    assert!(projects.join("fresh-app/.git").exists());
    assert_eq!(
        crate::harness::git_in(
            &projects.join("fresh-app"),
            &["rev-list", "--count", "HEAD"]
        )
        .trim(),
        "1"
    );
    env2.orchestra(&["launch", "--new", "fresh-app", "--agent", "bash"])
        .fails_with(2);
    env2.orchestra(&["launch", "--new", "Bad Name", "--agent", "bash"])
        .fails_with(2);

    // promote: only inside tmux; registers the pane it runs in.
    env.orchestra(&["promote"]).fails_with(2);
    let marker = env.root.join("promoted.txt");
    env.run_in_window(&format!("{} promote > {} 2>&1", bin(), marker.display()));
    assert!(wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .contains("not applied")
    }));
    assert!(std::fs::read_to_string(&marker)
        .unwrap()
        .contains("is now the orchestrator"));
}
