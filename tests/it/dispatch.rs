//! dispatch end to end: branch, worktree, window, options, the agent's environment and
//! prompt; and rollback when a part is missing.

use std::path::Path;
use std::time::Duration;

use crate::harness::{wait_until, which, ClaudeWorld, Env, Run};

/// A base branch may track, where the main worktree keeps an ignored file of the person's,
/// a link leading out of the repository: `.worktreeinclude` copies never write through it
/// (nor through a linked folder on the way), and the copy a branch does not ignore is not
/// made (it would become the session's change and its WIP commit).
#[test]
fn worktreeinclude_never_writes_through_a_link_the_base_branch_tracks() {
    let env = Env::new();
    env.start_server(&[]);
    std::fs::write(env.repo.join(".gitignore"), ".env\nconfig/\n").unwrap();
    std::fs::write(env.repo.join(".worktreeinclude"), ".env\nconfig/\n").unwrap();
    env.git(&["add", ".gitignore", ".worktreeinclude"]);
    env.git(&["commit", "-q", "-m", "ignore"]);
    std::fs::write(env.repo.join(".env"), "SECRET=1\n").unwrap();
    std::fs::create_dir_all(env.repo.join("config")).unwrap();
    std::fs::write(env.repo.join("config/local.env"), "TOKEN=2\n").unwrap();
    // Outside the repository: a file and a folder the hostile branch's links name.
    let outside = env.root.join("outside");
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(outside.join("target.txt"), "untouched\n").unwrap();
    // The hostile branch, made in a worktree of its own (the person's files stay put).
    let evil = env.root.join("evil");
    env.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "evil",
        &evil.to_string_lossy(),
    ]);
    std::os::unix::fs::symlink(outside.join("target.txt"), evil.join(".env")).unwrap();
    std::os::unix::fs::symlink(outside.join("dir"), evil.join("config")).unwrap();
    crate::harness::git_in(&evil, &["add", "-f", ".env", "config"]);
    crate::harness::git_in(&evil, &["commit", "-q", "-m", "links out"]);
    env.git(&["worktree", "remove", &evil.to_string_lossy()]);

    let run = env
        .orchestra(&[
            "dispatch",
            "linked",
            "--base",
            "evil",
            "--agent",
            "bash --norc --noprofile",
            "--kind",
            "generic",
        ])
        .ok();
    assert_eq!(
        std::fs::read_to_string(outside.join("target.txt")).unwrap(),
        "untouched\n",
        "the secrets went through the tracked link: {}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_dir(outside.join("dir")).unwrap().count(),
        0,
        "a file went through the linked folder"
    );
    let worktree = env.worktree_path("linked");
    assert!(
        worktree.join(".env").is_symlink(),
        "the checkout's own link stays"
    );
    for said in [".env is tracked", "config/local.env not copied"] {
        assert!(run.stderr.contains(said), "{said}: {}", run.stderr);
    }
    assert_eq!(
        crate::harness::git_in(&worktree, &["status", "--porcelain"]),
        "",
        "nothing shows as the session's work"
    );

    // On a base that tracks neither, both are copied as before.
    env.dispatch_shell("plain").ok();
    let plain = env.worktree_path("plain");
    assert_eq!(
        std::fs::read_to_string(plain.join("config/local.env")).unwrap(),
        "TOKEN=2\n"
    );
    assert_eq!(
        std::fs::read_to_string(plain.join(".env")).unwrap(),
        "SECRET=1\n"
    );
}

#[test]
fn dispatch_makes_branch_worktree_and_window_and_types_the_prompt() {
    let env = Env::new();
    env.start_server(&[]);
    // A gitignored .env listed in .worktreeinclude is copied; other ignored files are not.
    std::fs::write(env.repo.join(".gitignore"), ".env\n*.log\n").unwrap();
    std::fs::write(env.repo.join(".worktreeinclude"), ".env\n").unwrap();
    env.git(&["add", ".gitignore", ".worktreeinclude"]);
    env.git(&["commit", "-q", "-m", "ignore"]);
    std::fs::write(env.repo.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(env.repo.join("build.log"), "noise\n").unwrap();

    let run = env
        .orchestra(&[
            "dispatch",
            "feature-a",
            "--agent",
            "bash --norc --noprofile",
            "--prompt",
            "echo \"$ORCHESTRA_SESSION $ORCHESTRA_PORT $ORCHESTRA_HOME\" > env.txt",
        ])
        .ok();
    let worktree = env.worktree_path("feature-a");
    assert!(run.stdout.contains("session/feature-a"), "{}", run.stdout);
    assert!(run.stdout.contains("new-session -A -t orchestra-repo -s orchestra-repo-feature-a \\; select-window -t feature-a"), "{}", run.stdout);
    let tmux_path = which("tmux").unwrap();
    assert!(
        run.stdout
            .contains(&format!("attach: {}", tmux_path.display())),
        "absolute tmux path: {}",
        run.stdout
    );

    assert!(env.branches().contains(&"session/feature-a".to_string()));
    assert_eq!(
        crate::harness::git_in(&worktree, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "session/feature-a"
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert!(!worktree.join("build.log").exists());

    let session = env.session("feature-a");
    let id = session["id"].as_str().unwrap().to_string();
    let window = session["window"].as_str().unwrap().to_string();
    let pane = session["pane"].as_str().unwrap().to_string();
    assert!(window.starts_with('@') && pane.starts_with('%'));
    assert_eq!(session["status"], "running");
    assert_eq!(
        env.tmux(&["display-message", "-p", "-t", &window, "#{window_name}|#{@orchestra_id}|#{@orchestra_label}|#{session_name}|#{pane_current_path}"]).trim(),
        format!("feature-a|{id}|feature-a|orchestra-repo|{}", worktree.display())
    );

    // The typed prompt ran in the agent, which saw its own session id, port and home.
    let env_file = worktree.join("env.txt");
    assert!(wait_until(Duration::from_secs(10), || env_file.exists()
        && std::fs::read_to_string(&env_file).unwrap().ends_with('\n')));
    let seen = std::fs::read_to_string(&env_file).unwrap();
    let words: Vec<&str> = seen.split_whitespace().collect();
    assert_eq!(words[0], id);
    let port: u16 = words[1].parse().expect("ORCHESTRA_PORT is a port");
    assert!(port > 0);
    assert_eq!(Path::new(words[2]), env.home);
}

#[test]
fn each_session_gets_its_own_port_and_base() {
    let env = Env::new();
    env.start_server(&[]);
    let first = env.git(&["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(env.repo.join("second.txt"), "2\n").unwrap();
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "second"]);
    env.orchestra(&[
        "dispatch", "old-base", "--agent", "bash", "--kind", "generic", "--base", &first,
    ])
    .ok();
    env.dispatch_shell("new-base").ok();
    assert_eq!(env.git(&["rev-parse", "session/old-base"]).trim(), first);
    assert_eq!(
        env.git(&["rev-parse", "session/new-base"]),
        env.git(&["rev-parse", "HEAD"])
    );
    let bad = env
        .orchestra(&[
            "dispatch",
            "nope",
            "--agent",
            "bash",
            "--base",
            "no-such-rev",
        ])
        .fails_with(2);
    assert!(bad.stderr.contains("no-such-rev"), "{}", bad.stderr);
    assert!(!env.branches().contains(&"session/nope".to_string()));
}

#[test]
fn dispatch_inside_tmux_opens_the_window_in_the_current_session() {
    let env = Env::new();
    env.start_server(&[]);
    let marker = env.root.join("done");
    let command = format!(
        "{} dispatch inner --agent 'sleep 300' > {} 2>&1; touch {}",
        crate::harness::bin(),
        env.root.join("out").display(),
        marker.display()
    );
    env.run_in_window(&command);
    assert!(wait_until(Duration::from_secs(10), || marker.exists()));
    let out = std::fs::read_to_string(env.root.join("out")).unwrap();
    assert!(out.contains("tmux session harness"), "{out}");
    let session = env.session("inner");
    let window = session["window"].as_str().unwrap();
    assert_eq!(
        env.tmux(&["display-message", "-p", "-t", window, "#{session_name}"])
            .trim(),
        "harness"
    );
    assert!(env.tmux_try(&["has-session", "-t", "=orchestra-repo"]).code != 0);
}

/// Nothing of a failed dispatch may remain: branch, worktree, window, row, session files.
fn assert_nothing_left(env: &Env, label: &str, windows_before: &[String]) {
    assert_eq!(env.branches(), ["main"]);
    assert!(!env.worktree_path(label).exists());
    assert!(!env.root.join("repo.worktrees").exists());
    // By the worktree's folder name: the temp folder's random name may hold the label's
    // letters anywhere else.
    assert!(!env
        .git(&["worktree", "list"])
        .contains(&format!("/{label} ")));
    assert_eq!(env.windows(), windows_before);
    assert!(env.list_json().is_empty());
    let sessions = env.home.join("sessions");
    assert!(!sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none());
}

#[test]
fn a_missing_agent_is_bad_input_and_nothing_is_made() {
    let env = Env::new();
    env.start_server(&[]);
    let windows = env.windows();
    env.cli(&[
        "dispatch",
        "ghost",
        "--agent",
        "no-such-agent-program --flag",
    ])
    .status(2)
    .stderr_line(
        "orchestra: agent program \"no-such-agent-program\" not found \
         (not on PATH or not executable): install it or pass --agent",
    )
    .run();
    assert_nothing_left(&env, "ghost", &windows);
    // Unbalanced quotes in the agent command are bad input too.
    env.cli(&["dispatch", "ghost", "--agent", "bash 'unclosed"])
        .status(2)
        .stderr_line(
            "orchestra: cannot split the agent command \"bash 'unclosed\": missing closing quote",
        )
        .run();
    assert_nothing_left(&env, "ghost", &windows);
}

#[test]
fn a_missing_tmux_rolls_everything_back() {
    let env = Env::new();
    env.start_server(&[]);
    let windows = env.windows();
    // A PATH with git and the agent but no tmux.
    let bin = env.root.join("bin-without-tmux");
    std::fs::create_dir_all(&bin).unwrap();
    for program in ["git", "bash"] {
        std::os::unix::fs::symlink(which(program).unwrap(), bin.join(program)).unwrap();
    }
    env.cli(&[
        "dispatch", "no-tmux", "--agent", "bash", "--kind", "generic",
    ])
    .env("PATH", &bin)
    .status(2)
    .stderr_line("orchestra: tmux was not found on PATH: install tmux 3.2 or newer")
    .run();
    assert_nothing_left(&env, "no-tmux", &windows);
}

#[test]
fn a_tmux_failure_after_the_worktree_exists_rolls_it_back() {
    let mut env = Env::new();
    env.start_server(&[]);
    let windows = env.windows();
    // A socket in a folder that does not exist: tmux fails once git has done its part.
    env.env.push((
        "ORCHESTRA_TMUX_SOCKET".into(),
        env.root
            .join("missing/dir/sock")
            .to_string_lossy()
            .into_owned(),
    ));
    let run = env.orchestra(&[
        "dispatch", "mid-way", "--agent", "bash", "--kind", "generic",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("tmux"), "{}", run.stderr);
    env.env.clear();
    assert_nothing_left(&env, "mid-way", &windows);
}

/// A base git cannot resolve: one line saying so, with the hint of what a base may be on
/// the same line, exit 2, and nothing made.
#[test]
fn an_unknown_base_is_one_hinted_line_of_bad_input_and_nothing_is_made() {
    let env = Env::new();
    env.start_server(&[]);
    let windows = env.windows();
    env.cli(&[
        "dispatch",
        "unknown-base",
        "--agent",
        "bash",
        "--base",
        "no-such-rev",
    ])
    .status(2)
    .stderr_line(
        "orchestra: unknown revision \"no-such-rev\" (hint: name a branch, tag or commit \
             of this repository (`git branch` lists the branches))",
    )
    .run();
    assert_nothing_left(&env, "unknown-base", &windows);
}

/// A record that cannot be made (its home is under a file): a failure, not bad input,
/// still one line, and its hint names the setting that moves it; nothing is made.
#[test]
fn a_home_that_cannot_be_made_is_one_hinted_line_and_nothing_is_made() {
    let env = Env::new();
    env.start_server(&[]);
    let windows = env.windows();
    let file = env.root.join("a-file");
    std::fs::write(&file, "").unwrap();
    let home = file.join("home");
    let run = Run::from(
        env.orchestra_command(&env.repo, &["dispatch", "homeless", "--agent", "bash"])
            .env("ORCHESTRA_HOME", &home)
            .output()
            .unwrap(),
    )
    .fails_with(1);
    let line = run.stderr.trim_end();
    // What the OS says of the folder sits between the two.
    assert!(
        line.starts_with(&format!(
            "orchestra: cannot create the state folder or database in {}: ",
            home.display()
        )) && line.ends_with(" (hint: set ORCHESTRA_HOME to a folder you can write)"),
        "{line}"
    );
    assert_eq!(run.stdout, "");
    assert_nothing_left(&env, "homeless", &windows);
}

#[test]
fn outside_a_repo_is_bad_input() {
    let env = Env::new();
    let elsewhere = env.root.join("not-a-repo");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let not_a_repo = format!(
        "orchestra: {} is not inside a git repository",
        elsewhere.display()
    );
    env.cli(&["dispatch", "x", "--agent", "bash"])
        .current_dir(&elsewhere)
        .status(2)
        .stderr_line(&not_a_repo)
        .run();
    env.cli(&["list"])
        .current_dir(&elsewhere)
        .status(2)
        .stderr_line(format!(
            "{not_a_repo} (use --all for the sessions of every repo)"
        ))
        .run();
    env.cli(&[
        "dispatch",
        "x",
        "--agent",
        "bash",
        "--prompt-file",
        "/no/such/file",
    ])
    .status(2)
    .stderr_line(
        "orchestra: cannot read the prompt file /no/such/file: \
         No such file or directory (os error 2)",
    )
    .run();
}

#[test]
fn dispatch_runs_the_real_claude_with_its_session_id_and_the_prompt() {
    let env = Env::new();
    let worktree = env.worktree_path("claude-task");
    let Some(world) = ClaudeWorld::start(&env, &[&worktree]) else {
        return;
    };
    env.start_server(&world.env);
    let claude = world.claude.to_string_lossy().into_owned();
    env.orchestra(&[
        "dispatch",
        "claude-task",
        "--agent",
        &claude,
        "--prompt",
        "[[say: on it]] please build the widget 7f3a",
    ])
    .ok();
    let session = env.session("claude-task");
    assert!(
        wait_until(Duration::from_secs(60), || world
            .api
            .requests()
            .contains("please build the widget 7f3a")),
        "the fake API never received the prompt; screen:\n{}",
        env.tmux(&[
            "capture-pane",
            "-p",
            "-t",
            session["pane"].as_str().unwrap()
        ])
    );
    let pane = session["pane"].as_str().unwrap();
    assert!(wait_until(Duration::from_secs(30), || env
        .tmux(&["capture-pane", "-p", "-t", pane])
        .contains("on it")));
    // The agent runs with the session's uuid and hook settings file.
    let pid = env.tmux(&["display-message", "-p", "-t", pane, "#{pane_pid}"]);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", pid.trim())).unwrap();
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    assert!(argv.iter().any(|a| a == "--session-id"), "{argv:?}");
    let settings = argv
        .iter()
        .skip_while(|a| *a != "--settings")
        .nth(1)
        .expect("--settings FILE");
    assert!(Path::new(settings).is_file(), "{settings}");
}

/// claude takes a first operand that names one of its subcommands for that subcommand, even
/// after `--` (`claude -- mcp` prints the mcp help; 2.0.77 runs its self-updater for
/// `update`), and one starting with `-` for an option: prompts that look like either still
/// reach the model as prompts.
#[test]
fn a_prompt_that_looks_like_a_claude_subcommand_or_option_reaches_the_model() {
    let env = Env::new();
    let (sub, opt) = (env.worktree_path("sub"), env.worktree_path("opt"));
    let Some(world) = ClaudeWorld::start(&env, &[&sub, &opt]) else {
        return;
    };
    env.start_server(&world.env);
    let claude = world.claude.to_string_lossy().into_owned();
    for (label, prompt) in [("sub", "mcp"), ("opt", "--version")] {
        let flag = format!("--prompt={prompt}");
        env.orchestra(&["dispatch", label, "--agent", &claude, &flag])
            .ok();
    }
    let asked = |text: &str| {
        world.api.requests_json().iter().any(|r| {
            r["request"]["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m.to_string().contains(&format!("\"{text}")))
        })
    };
    for (label, prompt) in [("sub", "mcp"), ("opt", "--version")] {
        let pane = env.session(label)["pane"].as_str().unwrap().to_string();
        assert!(
            wait_until(Duration::from_secs(60), || asked(prompt)),
            "the model never got the prompt {prompt:?}; screen:\n{}",
            env.tmux(&["capture-pane", "-p", "-t", &pane])
        );
        let screen = env.tmux(&["capture-pane", "-p", "-t", &pane]);
        assert!(
            !screen.contains("Usage: claude") && !screen.contains("(Claude Code)\n"),
            "{prompt:?} ran as claude's own command:\n{screen}"
        );
    }
}
