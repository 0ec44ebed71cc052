//! Worktrees that are ready to work: orchestra.toml's `[worktree]` setup (run visibly in
//! the session's window before the agent), teardown (before kill and merge remove the
//! worktree), copy and symlink, and blocked sessions that start on top of the work they
//! waited for. Real tmux and git; the first test runs the real claude CLI against the
//! stand-in API.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{git_in, wait_until, ClaudeWorld, Env, Run};

/// Writes the repo's orchestra.toml (and .gitignore, when given), commits them (the main
/// worktree stays clean for merges), and allows its commands as the person would
/// (`orchestra allow`: a repo's setup and teardown run only once allowed; tests/it/allow.rs
/// checks the refusals).
fn configure(env: &Env, toml: &str, gitignore: Option<&str>) {
    std::fs::write(env.repo.join("orchestra.toml"), toml).unwrap();
    env.git(&["add", "orchestra.toml"]);
    if let Some(ignore) = gitignore {
        std::fs::write(env.repo.join(".gitignore"), ignore).unwrap();
        env.git(&["add", ".gitignore"]);
    }
    env.git(&["commit", "-q", "-m", "orchestra.toml"]);
    env.orchestra(&["allow"]).ok();
}

/// A tmux server whose notifications go to a file (no bus here): the lines the
/// `@orchestra-notify-cmd` script got, as `title|body`.
fn server_with_notify_log(env: &Env) -> std::path::PathBuf {
    env.start_server(&[
        (
            "XDG_RUNTIME_DIR".into(),
            env.root.join("no-runtime").to_string_lossy().into_owned(),
        ),
        ("DBUS_SESSION_BUS_ADDRESS".into(), String::new()),
    ]);
    env.notes_to_file()
}

fn shell_agent(env: &Env, label: &str, prompt: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "dispatch",
        label,
        "--agent",
        "bash --norc --noprofile",
        "--kind",
        "generic",
        "--prompt",
        prompt,
    ];
    args.extend_from_slice(extra);
    env.orchestra(&args)
}

fn screen(env: &Env, label: &str) -> String {
    let pane = env.session(label)["pane"].as_str().unwrap().to_string();
    env.tmux(&["capture-pane", "-p", "-J", "-S", "-200", "-t", &pane])
}

fn badge(env: &Env, label: &str) -> String {
    let window = env.session(label)["window"].as_str().unwrap().to_string();
    env.tmux(&["show-options", "-wv", "-t", &window, "@orchestra_state"])
        .trim()
        .to_string()
}

#[track_caller]
fn wait_for_status(env: &Env, label: &str, status: &str, within: Duration) {
    assert!(
        wait_until(within, || env.session(label)["status"] == status),
        "{label} never became {status}: {}\n{}",
        env.session(label),
        screen(env, label)
    );
}

fn session_dirs(env: &Env) -> usize {
    std::fs::read_dir(env.home.join("sessions")).map_or(0, std::iter::Iterator::count)
}

#[test]
fn setup_runs_in_the_window_before_claude_which_reads_what_it_made() {
    let env = Env::new();
    // Not trusted beforehand: the trust dialog comes after the setup, and is answered then.
    let Some(world) = ClaudeWorld::start(&env, &[]) else {
        return;
    };
    env.start_server(&world.env);
    // The setup waits for the test to open a gate (a minute at most): whatever the load,
    // "still setting up" is a fact the test controls, not a race against a sleep.
    let gate = env.root.join("setup-gate");
    let script = format!(
        "echo preparing the worktree; i=0; while [ ! -e {gate} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; printf 'made-by-setup session=%s port=%s wt=%s repo=%s\\n' \"$ORCHESTRA_SESSION\" \"$ORCHESTRA_PORT\" \"$ORCHESTRA_WORKTREE\" \"$ORCHESTRA_REPO\" > marker.txt",
        gate = shell_words::quote(&gate.to_string_lossy())
    );
    configure(
        &env,
        &format!(
            "[worktree]\nsetup = [\"sh\", \"-c\", {}]\n",
            toml::Value::String(script)
        ),
        None,
    );
    let agent = format!(
        "{} --permission-mode default",
        shell_words::quote(&world.claude.to_string_lossy())
    );
    let run = env
        .orchestra(&[
            "dispatch",
            "marked",
            "--agent",
            &agent,
            "--prompt",
            "[[bash: cat marker.txt]] read the marker",
        ])
        .ok();
    // dispatch returned while the setup still waits at its gate: it did not wait for it.
    assert!(
        !env.worktree_path("marked").join("marker.txt").exists(),
        "dispatch waited for the setup to end"
    );
    assert!(
        run.stdout.contains("setting up in its window"),
        "{}",
        run.stdout
    );
    // While it runs: status and badge say setup, its output is in the window, and the
    // agent has not started.
    let session = env.session("marked");
    assert_eq!(session["status"], "setup");
    assert_eq!(badge(&env, "marked"), "setup");
    assert!(
        wait_until(Duration::from_secs(5), || screen(&env, "marked")
            .contains("preparing the worktree")),
        "{}",
        screen(&env, "marked")
    );
    assert!(!world.api.requests().contains("read the marker"));

    std::fs::write(&gate, "").expect("open the gate");
    wait_for_status(&env, "marked", "running", Duration::from_secs(20));
    let wt = env.worktree_path("marked");
    let id = session["id"].as_str().unwrap();
    let expected = format!("made-by-setup session={id} port=",);
    let read = || world.api.requests().contains(&expected);
    // A read-only command may run without a question; approve it if one comes.
    assert!(
        wait_until(Duration::from_secs(60), || {
            if screen(&env, "marked").contains("Do you want to proceed?") {
                let _ = env.orchestra(&["approve", "marked"]);
            }
            read()
        }),
        "the agent never read the marker:\n{}",
        screen(&env, "marked")
    );
    let requests = world.api.requests();
    assert!(
        requests.contains(&format!("wt={} repo={}", wt.display(), env.repo.display())),
        "the setup had the worktree and the repo in its environment"
    );
    let events = env.orchestra(&["events", "marked", "--json"]).ok().stdout;
    assert!(events.contains("setup done in"), "{events}");
    assert_ne!(badge(&env, "marked"), "setup");
}

#[test]
fn a_failing_setup_keeps_its_output_and_restart_runs_it_again_after_the_fix() {
    let env = Env::new();
    let notified = server_with_notify_log(&env);
    configure(
        &env,
        "[worktree]\nsetup = [\"sh\", \"-c\", \"echo looking for the ready file; test -f \\\"$ORCHESTRA_REPO/ready\\\" || { echo 'no ready file here' >&2; exit 4; }\"]\n",
        Some("ready\n"),
    );
    let wt = env.worktree_path("broken");
    let run = shell_agent(
        &env,
        "broken",
        "echo agent-started > started.txt",
        &["--wait-setup"],
    )
    .fails_with(1);
    assert!(
        run.stderr.contains("exit status 4") && run.stderr.contains("orchestra restart broken"),
        "{}",
        run.stderr
    );
    assert_eq!(env.session("broken")["status"], "setup-failed");
    assert_eq!(badge(&env, "broken"), "setup-failed");
    let shown = screen(&env, "broken");
    assert!(
        shown.contains("no ready file here") && shown.contains("exit status 4"),
        "the window keeps the output:\n{shown}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || std::fs::read_to_string(
            &notified
        )
        .is_ok_and(|t| t.contains("broken setup failed"))),
        "no notification"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!wt.join("started.txt").exists(), "the agent never started");
    // Nothing is typed into a setup: its agent is not there.
    env.orchestra(&["brief", "broken", "hello"]).fails_with(1);
    // A refresh leaves it as it is (no agent to classify, no exit to record).
    env.orchestra(&["refresh"]).ok();
    assert_eq!(env.session("broken")["status"], "setup-failed");

    std::fs::write(env.repo.join("ready"), "").unwrap();
    let run = env.orchestra(&["restart", "broken"]).ok();
    assert!(run.stdout.contains("setup runs again"), "{}", run.stdout);
    wait_for_status(&env, "broken", "running", Duration::from_secs(20));
    assert!(
        wait_until(Duration::from_secs(10), || wt.join("started.txt").exists()),
        "the agent got its prompt after the setup:\n{}",
        screen(&env, "broken")
    );
    assert_eq!(env.session("broken")["retry_count"], 1);
}

#[test]
fn a_hung_setup_is_stopped_at_its_timeout_with_its_process_group() {
    let env = Env::new();
    env.start_server(&[]);
    configure(
        &env,
        "[worktree]\nsetup = [\"sh\", \"-c\", \"sleep 300 & echo $! > \\\"$ORCHESTRA_REPO/../bg.pid\\\"; yes flooding-the-window | head -c 2000000; sleep 300\"]\nsetup_timeout = \"2s\"\n",
        None,
    );
    let started = Instant::now();
    let run = shell_agent(&env, "hung", "echo never", &["--wait-setup"]).fails_with(1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        run.stderr.contains("still running after 2s"),
        "{}",
        run.stderr
    );
    assert_eq!(env.session("hung")["status"], "setup-failed");
    let pid = std::fs::read_to_string(env.root.join("bg.pid")).unwrap();
    let pid = pid.trim();
    assert!(
        wait_until(Duration::from_secs(5), || !Path::new(&format!(
            "/proc/{pid}"
        ))
        .exists()),
        "the setup's background job {pid} outlived the timeout"
    );
    assert!(screen(&env, "hung").contains("stopped with its process group"));
}

#[test]
fn teardown_runs_before_kill_and_merge_and_never_costs_a_commit() {
    let env = Env::new();
    env.start_server(&[]);
    let log = env.root.join("teardown.log");
    configure(
        &env,
        "[worktree]\nteardown = [\"sh\", \"-c\", \"echo \\\"$ORCHESTRA_SESSION $PWD\\\" >> \\\"$ORCHESTRA_REPO/../teardown.log\\\"\"]\n",
        None,
    );
    let commit_in = |label: &str, file: &str| {
        let wt = env.worktree_path(label);
        std::fs::write(wt.join(file), "work\n").unwrap();
        git_in(&wt, &["add", file]);
        git_in(&wt, &["commit", "-q", "-m", &format!("add {file}")]);
        git_in(&wt, &["rev-parse", "HEAD"]).trim().to_string()
    };

    // kill: the teardown runs in the worktree, then it goes.
    env.dispatch_shell("k").ok();
    let k = env.session("k")["id"].as_str().unwrap().to_string();
    let run = env.orchestra(&["kill", "k"]).ok();
    assert!(run.stdout.contains("teardown of k done"), "{}", run.stdout);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains(&format!("{k} {}", env.worktree_path("k").display())),
        "{text}"
    );
    assert!(!env.worktree_path("k").exists());

    // merge: the same, after the merge landed.
    env.dispatch_shell("m").ok();
    let m = env.session("m")["id"].as_str().unwrap().to_string();
    commit_in("m", "m.txt");
    env.orchestra(&["merge", "m", "--yes"]).ok();
    assert!(std::fs::read_to_string(&log).unwrap().contains(&m));
    assert!(!env.worktree_path("m").exists());

    // A failing teardown is said, and the merged worktree and branch go all the same.
    configure(
        &env,
        "[worktree]\nteardown = [\"sh\", \"-c\", \"echo cleanup broke >&2; exit 7\"]\n",
        None,
    );
    env.dispatch_shell("f").ok();
    commit_in("f", "f.txt");
    let run = env.orchestra(&["merge", "f", "--yes"]).ok();
    assert!(
        run.stderr.contains("teardown of f failed")
            && run.stderr.contains("exit status 7")
            && run.stderr.contains("cleanup broke"),
        "{}",
        run.stderr
    );
    assert!(!env.worktree_path("f").exists());
    assert!(!env.branches().contains(&"session/f".to_string()));

    // A teardown that takes a commit off the branch loses nothing.
    configure(
        &env,
        "[worktree]\nteardown = [\"git\", \"reset\", \"-q\", \"--hard\", \"HEAD~1\"]\n",
        None,
    );
    env.dispatch_shell("r").ok();
    let kept = commit_in("r", "keep-me.txt");
    let run = env.orchestra(&["kill", "r"]).ok();
    assert!(run.stdout.contains("archive/r-teardown-"), "{}", run.stdout);
    let holders = env.git(&["branch", "--contains", &kept]);
    assert!(!holders.trim().is_empty(), "commit {kept} is on no branch");

    // A teardown that never ends is stopped at its timeout.
    configure(
        &env,
        "[worktree]\nteardown = \"sleep 100\"\nteardown_timeout = \"1s\"\n",
        None,
    );
    env.dispatch_shell("slow").ok();
    let started = Instant::now();
    let run = env.orchestra(&["kill", "slow"]).ok();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        run.stderr.contains("still running after 1s"),
        "{}",
        run.stderr
    );
    assert!(!env.worktree_path("slow").exists());
}

#[test]
fn copy_and_symlink_go_into_each_new_worktree_and_bad_paths_make_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    std::fs::write(env.repo.join(".env"), "SECRET=1\n").unwrap();
    std::fs::create_dir_all(env.repo.join("models")).unwrap();
    std::fs::write(env.repo.join("models/weights.bin"), "w\n").unwrap();
    std::fs::create_dir_all(env.repo.join("config/local")).unwrap();
    std::fs::write(env.repo.join("config/local/settings.toml"), "x = 1\n").unwrap();
    configure(
        &env,
        "[worktree]\ncopy = [\".env\", \"config/local\"]\nsymlink = [\"models\"]\n",
        Some(".env\nmodels\nconfig/local/\ndata/\n"),
    );
    env.dispatch_shell("cs").ok();
    let wt = env.worktree_path("cs");
    assert_eq!(
        std::fs::read_to_string(wt.join(".env")).unwrap(),
        "SECRET=1\n"
    );
    assert!(!wt.join(".env").is_symlink());
    assert_eq!(
        std::fs::read_to_string(wt.join("config/local/settings.toml")).unwrap(),
        "x = 1\n"
    );
    assert!(wt.join("models").is_symlink());
    assert_eq!(
        std::fs::read_link(wt.join("models")).unwrap(),
        env.repo.join("models")
    );
    assert_eq!(
        git_in(&wt, &["status", "--porcelain"]),
        "",
        "nothing shows as work"
    );
    env.orchestra(&["kill", "cs"]).ok();
    assert!(
        env.repo.join("models/weights.bin").is_file(),
        "the link went, not what it points at"
    );

    // Bad input: exit 2 naming file:line:column, and nothing made.
    std::fs::create_dir_all(env.repo.join("data")).unwrap();
    std::fs::write(env.repo.join("notes.txt"), "mine\n").unwrap();
    let file = env.repo.join("orchestra.toml");
    let cases: &[(&str, &str, &str)] = &[
        (
            "[worktree]\nsymlink = [\"README.md\"]\n",
            "2:12",
            "is tracked",
        ),
        (
            "[worktree]\nsymlink = [\"data\"]\n",
            "2:12",
            "trailing slash",
        ),
        ("[worktree]\ncopy = [\"notes.txt\"]\n", "2:9", "not ignored"),
        (
            "[worktree]\nsymlink = [\"../outside\"]\n",
            "2:12",
            "escapes the repo",
        ),
        ("[worktree]\nsetup = \"npm 'ci\"\n", "2:10", "cannot split"),
        ("[worktree]\nsetpu = \"true\"\n", "2:1", "unknown field"),
    ];
    let branches = env.branches();
    let windows = env.windows();
    let folders = session_dirs(&env);
    for (toml, at, why) in cases {
        std::fs::write(&file, toml).unwrap();
        let run = env.dispatch_shell("bad").fails_with(2);
        assert!(
            run.stderr
                .starts_with(&format!("orchestra: {}:{at}: ", file.display()))
                && run.stderr.contains(why),
            "{toml}: {}",
            run.stderr
        );
        assert_eq!(env.branches(), branches, "{toml}");
        assert_eq!(env.windows(), windows, "{toml}");
        assert!(!env.worktree_path("bad").exists(), "{toml}");
        assert_eq!(session_dirs(&env), folders, "{toml}");
    }
}

#[test]
fn a_blocked_session_starts_on_top_of_the_upstream_work_merged_while_it_waited() {
    let env = Env::new();
    env.start_server(&[]);
    configure(
        &env,
        "[worktree]\nsetup = [\"sh\", \"-c\", \"ls schema.json > setup-saw.txt 2>&1; true\"]\n",
        Some("setup-saw.txt\nseen.txt\n"),
    );
    env.dispatch_shell("api").ok();
    let api_wt = env.worktree_path("api");
    std::fs::write(api_wt.join("schema.json"), "{\"v\": 2}\n").unwrap();
    git_in(&api_wt, &["add", "schema.json"]);
    git_in(&api_wt, &["commit", "-q", "-m", "schema"]);
    // Both wait for the schema; `mine` gets a commit of its own while it waits.
    for label in ["consumer", "mine"] {
        shell_agent(
            &env,
            label,
            "cat schema.json > seen.txt",
            &["--after", "api:schema.json"],
        )
        .ok();
        assert_eq!(env.session(label)["status"], "blocked");
    }
    let mine_wt = env.worktree_path("mine");
    std::fs::write(mine_wt.join("draft.txt"), "d\n").unwrap();
    git_in(&mine_wt, &["add", "draft.txt"]);
    git_in(&mine_wt, &["commit", "-q", "-m", "draft"]);
    let mine_tip = git_in(&mine_wt, &["rev-parse", "HEAD"]);

    // The upstream is merged before anyone noticed its artifact; then a tick notices.
    env.orchestra(&["merge", "api", "--yes"]).ok();
    let main_tip = env.git(&["rev-parse", "main"]);
    env.orchestra(&["refresh"]).ok();

    let wt = env.worktree_path("consumer");
    wait_for_status(&env, "consumer", "running", Duration::from_secs(20));
    assert_eq!(
        git_in(&wt, &["rev-parse", "HEAD"]),
        main_tip,
        "moved onto main"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("setup-saw.txt"))
            .unwrap()
            .trim(),
        "schema.json",
        "the setup ran on the moved worktree"
    );
    assert!(
        wait_until(Duration::from_secs(10), || std::fs::read_to_string(
            wt.join("seen.txt")
        )
        .is_ok_and(|t| t.contains("\"v\": 2"))),
        "the agent saw the upstream's work:\n{}",
        screen(&env, "consumer")
    );
    let events = env.orchestra(&["events", "consumer", "--json"]).ok().stdout;
    assert!(events.contains("\"moved\""), "{events}");

    // A branch with commits of its own stays where it is, and says so.
    wait_for_status(&env, "mine", "running", Duration::from_secs(20));
    assert!(
        wait_until(Duration::from_secs(10), || screen(&env, "mine")
            .contains("was not moved")),
        "{}",
        screen(&env, "mine")
    );
    assert_eq!(git_in(&mine_wt, &["rev-parse", "HEAD"]), mine_tip);
    let events = env.orchestra(&["events", "mine", "--json"]).ok().stdout;
    assert!(events.contains("1 commit(s) of its own"), "{events}");
}

#[test]
fn from_upstream_starts_on_the_upstream_branch_and_wait_setup_is_refused_for_blocked() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("api").ok();
    env.dispatch_shell("web").ok();
    let api_wt = env.worktree_path("api");
    std::fs::write(api_wt.join("client.ts"), "export {}\n").unwrap();
    git_in(&api_wt, &["add", "client.ts"]);
    git_in(&api_wt, &["commit", "-q", "-m", "client"]);
    let api_tip = git_in(&api_wt, &["rev-parse", "HEAD"]);

    // Two different upstreams: which branch? Refused.
    shell_agent(
        &env,
        "two",
        "true",
        &[
            "--after",
            "api:client.ts",
            "--after",
            "web:x",
            "--from-upstream",
        ],
    )
    .fails_with(2);
    assert_eq!(
        env.orchestra(&[
            "dispatch",
            "w",
            "--agent",
            "bash",
            "--wait-setup",
            "--after",
            "api:x"
        ])
        .code,
        2
    );
    assert_eq!(
        env.orchestra(&["dispatch", "w", "--agent", "bash", "--from-upstream"])
            .code,
        2
    );
    assert!(!env
        .branches()
        .iter()
        .any(|b| b == "session/two" || b == "session/w"));

    shell_agent(
        &env,
        "follower",
        "ls client.ts > seen.txt",
        &["--after", "api:client.ts", "--from-upstream"],
    )
    .ok();
    env.orchestra(&["refresh"]).ok();
    wait_for_status(&env, "follower", "running", Duration::from_secs(20));
    let wt = env.worktree_path("follower");
    // The agent gets its prompt once its window moved the branch.
    assert!(
        wait_until(Duration::from_secs(10), || wt.join("seen.txt").exists()),
        "{}",
        screen(&env, "follower")
    );
    assert_eq!(git_in(&wt, &["rev-parse", "HEAD"]), api_tip);
    assert_ne!(
        env.git(&["rev-parse", "main"]),
        api_tip,
        "main is untouched"
    );
}

#[test]
fn doctor_reports_a_setup_past_its_timeout_and_fix_marks_it_failed() {
    let env = Env::new();
    env.start_server(&[]);
    configure(
        &env,
        "[worktree]\nsetup = \"sleep 300\"\nsetup_timeout = \"10m\"\n",
        None,
    );
    shell_agent(&env, "stuck", "true", &[]).ok();
    assert_eq!(env.session("stuck")["status"], "setup");
    let run = env.orchestra(&["doctor"]);
    assert!(!run.stdout.contains("in setup for"), "{}", run.stdout);
    // Time is the one thing faked: the record says the setup began 11 minutes ago.
    let id = env.session("stuck")["id"].as_str().unwrap().to_string();
    let rewind = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
             c.execute(\"UPDATE events SET at = at - 660 WHERE session_id = ?\", (sys.argv[2],)); \
             c.commit()",
        )
        .arg(env.home.join("state.db"))
        .arg(&id)
        .status()
        .unwrap();
    assert!(rewind.success());
    let run = env.orchestra(&["doctor"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("stuck") && run.stdout.contains("past its setup_timeout of 10m"),
        "{}",
        run.stdout
    );
    let run = env.orchestra(&["doctor", "--fix"]);
    assert!(
        run.stdout.contains("marked setup-failed"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(env.session("stuck")["status"], "setup-failed");
    assert!(
        wait_until(Duration::from_secs(5), || screen(&env, "stuck")
            .contains("did not finish within its timeout")),
        "{}",
        screen(&env, "stuck")
    );
    env.orchestra(&["doctor"]).ok();
}

#[test]
fn a_kill_during_setup_stops_the_setup_and_its_teardown_still_runs() {
    let env = Env::new();
    env.start_server(&[]);
    configure(
        &env,
        "[worktree]\nsetup = [\"sh\", \"-c\", \"echo $$ > \\\"$ORCHESTRA_REPO/../setup.pid\\\"; exec sleep 300\"]\nteardown = [\"sh\", \"-c\", \"echo torn >> \\\"$ORCHESTRA_REPO/../teardown.log\\\"\"]\n",
        None,
    );
    shell_agent(&env, "midway", "true", &[]).ok();
    let pid_file = env.root.join("setup.pid");
    // The shell makes the file before it writes its pid there.
    let written = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| t.parse::<u32>().is_ok())
    };
    assert!(wait_until(Duration::from_secs(10), || written().is_some()));
    let pid = written().unwrap_or_default();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    let run = env.orchestra(&["kill", "midway"]).ok();
    assert!(
        run.stdout.contains("teardown of midway done"),
        "{}",
        run.stdout
    );
    assert!(
        wait_until(Duration::from_secs(5), || !Path::new(&format!(
            "/proc/{pid}"
        ))
        .exists()),
        "the setup {pid} outlived its window"
    );
    assert!(!env.worktree_path("midway").exists());
    assert_eq!(
        std::fs::read_to_string(env.root.join("teardown.log")).unwrap(),
        "torn\n"
    );
}
