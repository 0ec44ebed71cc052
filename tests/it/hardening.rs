//! Issue 11's edges, each tried for real: pane ids reused after a tmux restart, a person's
//! split pane, long and multi-line prompts, a killed upstream, agents no screen rule reads,
//! and a repo folder whose name tmux would expand.

use std::path::Path;
use std::time::Duration;

use crate::harness::{git_in, wait_until, Env};

/// Restarts the test's tmux server on the same socket, then opens windows running
/// `program` until one of them holds pane id `pane` (tmux counts ids from %0 again).
/// Returns that pane's pid.
fn restart_and_take_pane(env: &Env, pane: &str, program: &str) -> String {
    env.stop_server();
    env.start_server(&[]);
    let wanted: u32 = pane.trim_start_matches('%').parse().expect("a pane id");
    for _ in 0..=wanted {
        let got = env
            .tmux(&[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id} #{pane_pid}",
                "-t",
                "harness:",
                program,
            ])
            .trim()
            .to_string();
        let (id, pid) = got.split_once(' ').expect("id and pid");
        if id == pane {
            // The shell tmux starts the program with execs it a moment later.
            let name = program.split_whitespace().next().unwrap_or_default();
            assert!(wait_until(Duration::from_secs(5), || env
                .tmux(&[
                    "display-message",
                    "-p",
                    "-t",
                    pane,
                    "#{pane_current_command}"
                ])
                .trim()
                == name));
            return pid.to_string();
        }
    }
    panic!("no window of the restarted server took pane id {pane}");
}

fn pane_facts(env: &Env, pane: &str) -> String {
    env.tmux(&[
        "display-message",
        "-p",
        "-t",
        pane,
        "#{pane_pid} #{pane_dead} #{pane_current_command}",
    ])
    .trim()
    .to_string()
}

#[test]
fn a_blocked_session_never_starts_in_a_pane_a_restarted_tmux_gave_to_another_program() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("api").ok();
    env.orchestra(&[
        "dispatch",
        "consumer",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--prompt",
        "echo typed-by-orchestra",
        "--after",
        "api:out.txt",
    ])
    .ok();
    let pane = env.session("consumer")["pane"]
        .as_str()
        .expect("a pane")
        .to_string();

    // tmux restarts; an unrelated `sleep` takes the consumer's old pane id.
    let pid = restart_and_take_pane(&env, &pane, "sleep 1000");
    let before = pane_facts(&env, &pane);
    assert_eq!(before, format!("{pid} 0 sleep"));

    // The artifact appears; a status tick notices.
    std::fs::write(env.worktree_path("api").join("out.txt"), "done\n").unwrap();
    env.orchestra(&["refresh"]).ok();
    env.orchestra(&["refresh"]).ok();

    assert_eq!(
        pane_facts(&env, &pane),
        before,
        "the sleep was not respawned"
    );
    let screen = env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(!screen.contains("typed-by-orchestra"), "{screen}");
    let consumer = env.session("consumer");
    assert_eq!(consumer["status"], "dead", "{consumer}");

    // Nothing else types into it either: brief is refused and sends nothing.
    let run = env
        .orchestra(&["brief", "consumer", "--force", "hello-from-brief"])
        .fails_with(1);
    assert!(run.stderr.contains("no longer"), "{}", run.stderr);
    std::thread::sleep(Duration::from_millis(300));
    let screen = env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(!screen.contains("hello-from-brief"), "{screen}");
    assert_eq!(pane_facts(&env, &pane), before);
}

#[test]
fn brief_approve_and_restart_never_act_on_a_reused_pane_id() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("worker").ok();
    let pane = env.session("worker")["pane"]
        .as_str()
        .expect("a pane")
        .to_string();
    // `cat` would echo anything typed into it.
    let pid = restart_and_take_pane(&env, &pane, "cat");
    let before = pane_facts(&env, &pane);
    assert_eq!(before, format!("{pid} 0 cat"));

    let run = env
        .orchestra(&["brief", "worker", "--force", "typed-into-a-stranger"])
        .fails_with(1);
    assert!(
        run.stderr.contains("no longer its own") && run.stderr.contains("recorded dead"),
        "{}",
        run.stderr
    );
    assert_eq!(env.session("worker")["status"], "dead");
    env.orchestra(&["deny", "worker"]).fails_with(1);
    std::thread::sleep(Duration::from_millis(300));
    let screen = env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(!screen.contains("typed-into-a-stranger"), "{screen}");
    assert_eq!(pane_facts(&env, &pane), before, "no key, no respawn");

    // restart makes a new window instead of respawning the stranger's pane.
    env.orchestra(&["restart", "worker"]).ok();
    assert_eq!(pane_facts(&env, &pane), before);
    let worker = env.session("worker");
    assert_ne!(worker["pane"].as_str(), Some(pane.as_str()), "{worker}");
    assert_eq!(worker["status"], "running");
}

#[test]
fn a_split_pane_in_an_agent_window_is_neither_the_agent_nor_a_second_session() {
    let env = Env::new();
    env.start_server(&[]);
    env.orchestra(&["dispatch", "solo", "--agent", "cat", "--kind", "generic"])
        .ok();
    let window = env.session("solo")["window"]
        .as_str()
        .expect("a window")
        .to_string();
    // A person splits the window and works in a shell beside the agent.
    env.tmux(&[
        "split-window",
        "-d",
        "-t",
        &window,
        "bash --norc --noprofile",
    ]);
    for _ in 0..3 {
        env.orchestra(&["refresh"]).ok();
        std::thread::sleep(Duration::from_millis(200));
    }
    let health: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["health", "--json"]).ok().stdout).unwrap();
    let rows: Vec<_> = health.iter().filter(|r| r["label"] == "solo").collect();
    assert_eq!(rows.len(), 1, "counted once: {health:?}");
    assert_ne!(rows[0]["state"], "exited", "{:?}", rows[0]);
    let solo = env.session("solo");
    assert_eq!(solo["status"], "running");
    let events = env.orchestra(&["events", "solo", "--json"]).ok().stdout;
    assert!(!events.contains("exited"), "{events}");
}

/// A generic agent that writes its last argument to `file`, then waits.
fn argv_recorder(file: &Path) -> String {
    format!(
        "python3 -c {} {}",
        shell_words::quote(
            "import sys, time; open(sys.argv[1], 'w', encoding='utf-8').write(sys.argv[-1]); time.sleep(1000)"
        ),
        shell_words::quote(&file.to_string_lossy())
    )
}

#[test]
fn a_30_kb_prompt_reaches_an_agent_that_takes_it_on_its_command_line() {
    let env = Env::new();
    env.start_server(&[]);
    let mut prompt = String::from("Start: quotes ' \" $HOME #{pane_id} #(touch x) %% ;\n");
    while prompt.len() < 30 * 1024 {
        prompt.push_str("a line of the long task, with ümlauts and a tab\there;\n");
    }
    prompt.push_str("\n\n");
    let prompt_file = env.root.join("task.md");
    std::fs::write(&prompt_file, &prompt).unwrap();
    let got = env.root.join("got.txt");
    env.orchestra(&[
        "dispatch",
        "long",
        "--agent",
        &argv_recorder(&got),
        "--kind",
        "codex",
        "--prompt-file",
        prompt_file.to_str().unwrap(),
    ])
    .ok();
    assert!(wait_until(Duration::from_secs(10), || got.exists()
        && std::fs::read_to_string(&got)
            .is_ok_and(|t| t.len() == prompt.len())));
    assert_eq!(std::fs::read_to_string(&got).unwrap(), prompt);
    // Launched through sh, the agent still is what runs in the pane.
    let pane = env.session("long")["pane"].as_str().unwrap().to_string();
    assert!(wait_until(Duration::from_secs(5), || env
        .tmux(&[
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}"
        ])
        .trim()
        .starts_with("python")));
}

#[test]
fn a_multi_line_prompt_is_typed_into_a_generic_agent_as_one_paste() {
    let env = Env::new();
    env.start_server(&[]);
    let got = env.root.join("typed.bin");
    // Asks for bracketed paste like an editor or a REPL does, then records raw input up to
    // the Enter that follows the paste.
    let script = format!(
        "import os, sys, tty\n\
         sys.stdout.write('\\x1b[?2004hready> '); sys.stdout.flush()\n\
         tty.setraw(0)\n\
         data = b''\n\
         while not (b'\\x1b[201~' in data and data.endswith(b'\\r')):\n\
         \x20   data += os.read(0, 4096)\n\
         open({:?}, 'wb').write(data)\n\
         import time; time.sleep(1000)\n",
        got.to_string_lossy()
    );
    let script_file = env.root.join("reader.py");
    std::fs::write(&script_file, script).unwrap();
    env.orchestra(&[
        "dispatch",
        "typed",
        "--agent",
        &format!("python3 {}", script_file.display()),
        "--kind",
        "generic",
        "--prompt",
        "first line\nsecond line",
    ])
    .ok();
    // The reader writes its file once, when the Enter after the paste arrived.
    assert!(
        wait_until(Duration::from_secs(10), || std::fs::read(&got)
            .is_ok_and(|d| !d.is_empty())),
        "{}",
        env.tmux(&["capture-pane", "-p", "-t", "=orchestra-repo:typed"])
    );
    let data = std::fs::read(&got).unwrap();
    assert_eq!(
        data,
        b"\x1b[200~first line\rsecond line\x1b[201~\r".to_vec(),
        "{:?}",
        String::from_utf8_lossy(&data)
    );
}

#[test]
fn a_killed_upstream_leaves_its_dependent_blocked_and_says_why() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("api").ok();
    env.orchestra(&[
        "dispatch",
        "auth",
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--after",
        "api:out/schema.json",
    ])
    .ok();
    let pane = env.session("auth")["pane"].as_str().unwrap().to_string();
    let killed = env.orchestra(&["kill", "api"]).ok();
    assert!(
        killed
            .stdout
            .contains("auth waits for api: out/schema.json, but api was killed"),
        "{}",
        killed.stdout
    );
    // Ticks do not start it: no edge came true.
    env.orchestra(&["refresh"]).ok();
    env.orchestra(&["refresh"]).ok();
    let auth = env.session("auth");
    assert_eq!(auth["status"], "blocked", "{auth}");
    assert_eq!(auth["stranded"], "api killed", "{auth}");
    let table = env.orchestra(&["list"]).ok().stdout;
    assert!(table.contains("blocked (api killed)"), "{table}");
    assert!(wait_until(Duration::from_secs(5), || env
        .tmux(&["capture-pane", "-p", "-t", &pane])
        .contains("api was killed")));
    let graph = env.orchestra(&["deps", "graph"]).ok().stdout;
    assert!(graph.contains("auth waits for api (killed)"), "{graph}");
    let health = env.orchestra(&["health"]).ok().stdout;
    assert!(health.contains("blocked (api killed)"), "{health}");
}

#[test]
fn deps_add_on_a_running_session_says_it_does_not_stop_it_and_the_graph_marks_merged() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("a").ok();
    env.dispatch_shell("b").ok();
    let run = env.orchestra(&["deps", "add", "b", "a", "notes.md"]).ok();
    assert!(
        run.stdout.contains("b is already running") && run.stdout.contains("not paused or told"),
        "{}",
        run.stdout
    );
    let wt = env.worktree_path("a");
    std::fs::write(wt.join("notes.md"), "n\n").unwrap();
    git_in(&wt, &["add", "notes.md"]);
    git_in(&wt, &["commit", "-q", "-m", "notes"]);
    env.orchestra(&["merge", "a", "--yes"]).ok();
    let graph = env.orchestra(&["deps", "graph"]).ok().stdout;
    assert!(
        graph.contains("b waits for a (merged): notes.md"),
        "{graph}"
    );
    let json = env.orchestra(&["deps", "graph", "--json"]).ok().stdout;
    assert!(json.contains("\"a (merged)\""), "{json}");
}

#[test]
fn an_agent_without_screen_rules_is_busy_while_it_prints_and_idle_when_quiet() {
    let env = Env::new();
    env.start_server(&[]);
    env.orchestra(&[
        "dispatch",
        "printer",
        "--agent",
        "sh -c 'for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.5; done; exec sleep 1000'",
        "--kind",
        "generic",
    ])
    .ok();
    std::thread::sleep(Duration::from_millis(800));
    env.orchestra(&["refresh"]).ok();
    let health: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra(&["health", "--json"]).ok().stdout).unwrap();
    assert_eq!(health[0]["state"], "busy", "{health:?}");
    assert_eq!(health[0]["source"], "activity", "{health:?}");
    // Quiet for longer than the activity window: idle.
    assert!(
        wait_until(Duration::from_secs(20), || {
            env.orchestra(&["refresh"]).ok();
            env.session("printer")["state"] == "idle"
        }),
        "{}",
        env.orchestra(&["health"]).ok().stdout
    );
    let line = env.orchestra(&["status-line"]).ok().stdout;
    assert!(!line.trim().is_empty(), "the status line counts it");
}

#[test]
fn a_repo_folder_named_like_a_tmux_format_is_used_as_it_is() {
    let env = Env::new();
    env.start_server(&[]);
    let repo = env.root.join("proj #(touch pwned) $HOME #{session_name}");
    std::fs::create_dir_all(&repo).unwrap();
    git_in(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "r\n").unwrap();
    git_in(&repo, &["add", "."]);
    git_in(&repo, &["commit", "-q", "-m", "init"]);
    let run = env
        .orchestra_in(
            &repo,
            &[
                "dispatch",
                "odd",
                "--agent",
                "bash --norc --noprofile",
                "--kind",
                "generic",
                "--prompt",
                "pwd > where.txt",
            ],
        )
        .ok();
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&env.orchestra_in(&repo, &["list", "--json"]).ok().stdout).unwrap();
    let worktree = listed[0]["worktree"].as_str().unwrap().to_string();
    assert!(
        worktree.contains("#(touch pwned) $HOME #{session_name}"),
        "{}",
        run.stdout
    );
    let where_file = Path::new(&worktree).join("where.txt");
    assert!(wait_until(Duration::from_secs(10), || where_file.exists()));
    assert!(wait_until(Duration::from_secs(2), || {
        std::fs::read_to_string(&where_file).is_ok_and(|t| t.trim() == worktree)
    }));
    env.orchestra_in(&repo, &["brief", "odd", "echo briefed > briefed.txt"])
        .ok();
    assert!(wait_until(Duration::from_secs(10), || Path::new(&worktree)
        .join("briefed.txt")
        .exists()));
    env.orchestra_in(&repo, &["kill", "odd", "--force"]).ok();
    let pwned = std::process::Command::new("find")
        .arg(&env.root)
        .args(["-name", "pwned"])
        .output()
        .unwrap();
    assert!(pwned.stdout.is_empty(), "{pwned:?}");
    assert!(!Path::new("pwned").exists() && !repo.join("pwned").exists());
}

#[test]
fn down_and_the_wrap_up_never_press_keys_in_a_reused_pane_id() {
    let env = Env::new();
    env.start_server(&[]);
    let folder = env.root.join("plain-folder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!(
            "[orchestrator]\nagent = \"cat\"\n\n[sessions.pipeline]\npath = '{}'\n",
            folder.display()
        ),
    )
    .unwrap();
    env.git(&["add", "orchestra.toml"]);
    env.git(&["commit", "-q", "-m", "manifest"]);
    env.orchestra(&["up", "pipeline"]).ok();
    env.dispatch_shell("worker").ok();
    let wt = env.worktree_path("worker");
    std::fs::write(wt.join("w.txt"), "w\n").unwrap();
    git_in(&wt, &["add", "w.txt"]);
    git_in(&wt, &["commit", "-q", "-m", "work"]);
    let down_pane = env.session("pipeline")["pane"]
        .as_str()
        .unwrap()
        .to_string();
    let merge_pane = env.session("worker")["pane"].as_str().unwrap().to_string();

    // After a tmux restart two strangers hold those pane ids: a `cat` that C-c would
    // end, and a `cat` that would echo a wrap-up command.
    env.stop_server();
    env.start_server(&[]);
    let mut strangers = Vec::new();
    for _ in 0..8 {
        let got = env.tmux(&[
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-t",
            "harness:",
            "cat",
        ]);
        strangers.push(got.trim().to_string());
    }
    assert!(strangers.contains(&down_pane) && strangers.contains(&merge_pane));
    for pane in [&down_pane, &merge_pane] {
        // The shell tmux starts `cat` with execs it a moment later.
        assert!(wait_until(Duration::from_secs(5), || pane_facts(
            &env, pane
        )
        .ends_with(" cat")));
    }
    let before_down = pane_facts(&env, &down_pane);
    let before_merge = pane_facts(&env, &merge_pane);
    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-wrap-up-cmd",
        "echo wrap-up-typed",
    ]);
    env.tmux(&["set-option", "-g", "@orchestra-wrap-up-timeout", "1"]);

    env.orchestra(&["down", "pipeline", "--wait", "1"]).ok();
    env.orchestra(&["merge", "worker", "--yes"]).ok();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(pane_facts(&env, &down_pane), before_down, "no C-c, no kill");
    assert_eq!(pane_facts(&env, &merge_pane), before_merge);
    let screen = env.tmux(&["capture-pane", "-p", "-t", &merge_pane]);
    assert!(!screen.contains("wrap-up-typed"), "{screen}");
    // Their windows were not closed either: no window of theirs carries our id.
    assert_eq!(
        env.tmux(&["list-panes", "-a", "-F", "#{pane_id}"])
            .lines()
            .count(),
        9
    );
}

#[test]
fn text_a_terminal_would_read_as_keys_is_refused_before_anything_is_made() {
    let env = Env::new();
    env.start_server(&[]);
    env.orchestra(&["dispatch", "cat", "--agent", "cat", "--kind", "generic"])
        .ok();
    let pane = env.session("cat")["pane"].as_str().unwrap().to_string();
    let windows = env.windows();
    let branches = env.branches();
    // An end-of-paste marker would type the rest as keys; ESC is Escape; DEL is Backspace.
    for hostile in ["before\x1b[201~\nrm -rf ~\n", "stop\x1b", "undo\x7f\x7f"] {
        let run = env.orchestra(&["brief", "cat", hostile]).fails_with(2);
        assert!(run.stderr.contains("control character"), "{}", run.stderr);
        let run = env
            .orchestra(&[
                "dispatch", "evil", "--agent", "cat", "--kind", "generic", "--prompt", hostile,
            ])
            .fails_with(2);
        assert!(run.stderr.contains("control character"), "{}", run.stderr);
    }
    let nul = env.root.join("nul.md");
    std::fs::write(&nul, b"task\0more").unwrap();
    env.orchestra(&[
        "dispatch",
        "evil",
        "--agent",
        "cat",
        "--kind",
        "generic",
        "--prompt-file",
        nul.to_str().unwrap(),
    ])
    .fails_with(2);
    std::thread::sleep(Duration::from_millis(300));
    let screen = env.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(screen.trim().is_empty(), "nothing typed: {screen:?}");
    assert_eq!(env.windows(), windows);
    assert_eq!(env.branches(), branches);
    assert_eq!(env.list_json().len(), 1);
    assert!(!env.worktree_path("evil").exists());
}

#[test]
fn a_prompt_ending_in_a_semicolon_reaches_the_agent_whole() {
    let env = Env::new();
    env.start_server(&[]);
    for (label, prompt) in [
        ("semi", "run the tests;"),
        ("lone", ";"),
        ("escaped", "keep this \\;"),
    ] {
        let got = env.root.join(format!("{label}.txt"));
        env.orchestra(&[
            "dispatch",
            label,
            "--agent",
            &argv_recorder(&got),
            "--kind",
            "codex",
            "--prompt",
            prompt,
        ])
        .ok();
        assert!(wait_until(Duration::from_secs(10), || got.exists()));
        assert!(
            wait_until(Duration::from_secs(2), || std::fs::read_to_string(&got)
                .is_ok_and(|t| t == prompt)),
            "{:?}",
            std::fs::read_to_string(&got)
        );
    }
}
