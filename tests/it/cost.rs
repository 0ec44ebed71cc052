//! What sessions cost (issue 18): the real claude writes its conversation logs against
//! the Anthropic stand-in, whose usage is known (10 input and 5 output tokens a reply, no
//! cache), and orchestra sums them.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::harness::{git_in, wait_until, ClaudeWorld, Env};

/// The stand-in's usage per reply.
const INPUT: u64 = 10;
const OUTPUT: u64 = 5;

fn tokens(env: &Env, label: &str) -> (u64, u64) {
    let s = env.session(label);
    let t = &s["tokens"];
    (
        t["input"].as_u64().unwrap_or(0),
        t["output"].as_u64().unwrap_or(0),
    )
}

/// The stand-in's replies in the main conversation (helper requests are not in the log).
fn replies(world: &ClaudeWorld) -> u64 {
    world
        .api
        .requests_json()
        .iter()
        .filter(|r| {
            matches!(
                r["turn"].as_str(),
                Some("prompt" | "tool-result" | "notification")
            )
        })
        .count() as u64
}

fn wait_idle(env: &Env, label: &str) {
    assert!(
        wait_until(Duration::from_secs(60), || env.session(label)["state"]
            == "idle"),
        "{label} never became idle: {}",
        env.session(label)
    );
}

fn cost_json(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["cost", "--json"];
    all.extend(args);
    let run = env.orchestra(&all).ok();
    serde_json::from_str(&run.stdout).expect("cost --json")
}

/// The one log of a conversation under the sandboxed claude config folder.
fn log_of(config: &std::path::Path, uuid: &str) -> PathBuf {
    let projects = config.join("projects");
    std::fs::read_dir(&projects)
        .expect("projects folder")
        .flatten()
        .map(|e| e.path().join(format!("{uuid}.jsonl")))
        .find(|p| p.is_file())
        .expect("the conversation's log")
}

#[test]
fn cost_sums_real_claude_logs_incrementally_follows_clear_and_rolls_up_by_outcome() {
    let mut env = Env::new();
    let (wa, wb) = (env.worktree_path("alpha"), env.worktree_path("beta"));
    let Some(world) = ClaudeWorld::start(&env, &[&wa, &wb]) else {
        return;
    };
    env.start_server(&world.env);
    let home = world
        .env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v))
        .expect("the sandboxed HOME");
    // orchestra finds claude's logs where claude does: $CLAUDE_CONFIG_DIR, else ~/.claude.
    let config = home.join(".claude");
    env.env
        .push(("CLAUDE_CONFIG_DIR".into(), config.to_string_lossy().into()));
    let claude = world.claude.to_string_lossy().into_owned();
    // No notification bus: notifications go to @orchestra-notify-cmd.
    env.env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), String::new()));
    env.env.push((
        "XDG_RUNTIME_DIR".into(),
        env.root.join("no-runtime").to_string_lossy().into_owned(),
    ));

    env.orchestra(&[
        "dispatch",
        "alpha",
        "--agent",
        &claude,
        "--prompt",
        "[[say: one]]",
    ])
    .ok();
    // Before claude has written anything the log is missing: no error, no cost.
    env.orchestra(&["cost"]).ok();
    wait_idle(&env, "alpha");
    assert!(wait_until(Duration::from_secs(20), || tokens(
        &env, "alpha"
    )
    .1 >= OUTPUT));
    let n = replies(&world);
    assert!(n >= 1);
    assert_eq!(tokens(&env, "alpha"), (INPUT * n, OUTPUT * n));

    // The model the CLI asks for has no built-in price: tokens, no cost, never a guess.
    let rows = cost_json(&env, &[]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["cost_usd"], Value::Null, "{rows:?}");
    let model = rows[0]["models"][0]["model"]
        .as_str()
        .expect("a model")
        .to_string();
    assert_eq!(rows[0]["tokens"]["cache_read"], 0);

    // A second turn appended to the same log: read from where the last read stopped,
    // so nothing counts twice.
    env.orchestra(&["brief", "alpha", "[[say: two]]"]).ok();
    assert!(wait_until(Duration::from_secs(60), || replies(&world) > n));
    wait_idle(&env, "alpha");
    let n = replies(&world);
    assert!(wait_until(Duration::from_secs(20), || tokens(
        &env, "alpha"
    )
    .1 >= OUTPUT * n));
    assert_eq!(tokens(&env, "alpha"), (INPUT * n, OUTPUT * n));

    // A line claude is still writing is left for the next read; once whole it counts.
    let first = env.session("alpha")["conversation"]
        .as_str()
        .unwrap()
        .to_string();
    let log = log_of(&config, &first);
    let line = serde_json::json!({
        "type": "assistant", "timestamp": "2026-11-30T12:00:00.000Z",
        "message": {"id": "msg_by_the_test", "model": model, "usage": {
            "input_tokens": 1000, "output_tokens": 100,
            "cache_creation_input_tokens": 7, "cache_read_input_tokens": 3}}
    })
    .to_string();
    let (head, tail) = line.split_at(40);
    let append = |text: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    append(head);
    assert_eq!(tokens(&env, "alpha"), (INPUT * n, OUTPUT * n));
    append(&format!("{tail}\n"));
    assert_eq!(tokens(&env, "alpha"), (INPUT * n + 1000, OUTPUT * n + 100));
    let extra = (1000, 100);

    // /clear starts another conversation (another log): both count.
    env.orchestra(&["brief", "alpha", "/clear"]).ok();
    assert!(
        wait_until(Duration::from_secs(30), || env.session("alpha")
            ["conversation"]
            != first.as_str()),
        "the conversation never changed: {}",
        env.session("alpha")
    );
    wait_idle(&env, "alpha");
    env.orchestra(&["brief", "alpha", "[[say: three]]"]).ok();
    assert!(wait_until(Duration::from_secs(60), || replies(&world) > n));
    wait_idle(&env, "alpha");
    let n = replies(&world);
    let want = (INPUT * n + extra.0, OUTPUT * n + extra.1);
    assert!(
        wait_until(Duration::from_secs(20), || tokens(&env, "alpha") == want),
        "{:?} != {want:?}",
        tokens(&env, "alpha")
    );
    let second = env.session("alpha")["conversation"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(log_of(&config, &second).is_file());

    // Prices overridden: the stand-in's model priced in prices.toml.
    std::fs::write(
        env.home.join("prices.toml"),
        format!(
            "[models.\"{model}\"]\ninput = 2.0\noutput = 10.0\ncache_write = 4.0\ncache_read = 1.0\n"
        ),
    )
    .unwrap();
    let usd = |input: u64, output: u64, cw: u64, cr: u64| {
        (input as f64 * 2.0 + output as f64 * 10.0 + cw as f64 * 4.0 + cr as f64) / 1e6
    };
    let alpha_usd = usd(want.0, want.1, 7, 3);
    let cost = env.session("alpha")["cost_usd"]
        .as_f64()
        .expect("a price now");
    assert!((cost - alpha_usd).abs() < 1e-12, "{cost} != {alpha_usd}");
    // health shows it in its COST column.
    let health = env.orchestra(&["health"]).ok().stdout;
    let alpha = health
        .lines()
        .find(|l| l.starts_with("alpha"))
        .expect("alpha's row");
    assert!(
        health.lines().next().unwrap().trim_end().ends_with("COST"),
        "{health}"
    );
    assert!(
        alpha.trim_end().ends_with(&format!("${alpha_usd:.4}")),
        "{health}"
    );

    // @orchestra-budget: a notification at 80 % and at 100 %, each once; the agent runs on.
    let script = env.root.join("notify.sh");
    let notes = env.root.join("notify.log");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s|%s\\n' \"$1\" \"$2\" >> '{}'\n",
            notes.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-notify-cmd",
        script.to_str().unwrap(),
    ]);
    let lines = || std::fs::read_to_string(&notes).unwrap_or_default();
    let budget = alpha_usd / 0.9;
    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-budget",
        &format!("{budget}"),
    ]);
    env.orchestra(&["refresh"]).ok();
    assert!(
        wait_until(Duration::from_secs(10), || lines()
            .contains("alpha at 80% of its budget")),
        "{}",
        lines()
    );
    env.orchestra(&["refresh"]).ok();
    env.tmux(&[
        "set-option",
        "-g",
        "@orchestra-budget",
        &format!("{}", budget * 0.5),
    ]);
    env.orchestra(&["refresh"]).ok();
    assert!(wait_until(Duration::from_secs(10), || lines()
        .contains("alpha at 100% of its budget")));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(lines().lines().count(), 2, "{}", lines());
    assert_eq!(env.session("alpha")["status"], "running");
    env.tmux(&["set-option", "-gu", "@orchestra-budget"]);

    // @orchestra-status-cost on: the status line shows the live total.
    let status = || {
        env.orchestra(&["refresh"]).ok();
        env.orchestra(&["status-line"]).ok().stdout
    };
    assert!(!status().contains('$'), "off by default");
    env.tmux(&["set-option", "-g", "@orchestra-status-cost", "on"]);
    let line = status();
    assert!(line.contains(&format!("${alpha_usd:.4}")), "{line}");

    // alpha's work merged; beta killed with unmerged work (archived).
    std::fs::write(wa.join("a.txt"), "a\n").unwrap();
    git_in(&wa, &["add", "a.txt"]);
    git_in(&wa, &["commit", "-qm", "a"]);
    env.orchestra(&["merge", "alpha", "--yes"]).ok();
    env.orchestra(&[
        "dispatch",
        "beta",
        "--agent",
        &claude,
        "--prompt",
        "[[say: b]]",
    ])
    .ok();
    let before = replies(&world);
    assert!(wait_until(Duration::from_secs(60), || replies(&world) > before));
    wait_idle(&env, "beta");
    let beta_replies = replies(&world) - before;
    std::fs::write(wb.join("b.txt"), "b\n").unwrap();
    git_in(&wb, &["add", "b.txt"]);
    git_in(&wb, &["commit", "-qm", "b"]);
    env.orchestra(&["kill", "beta"]).ok();

    let outcomes = cost_json(&env, &["--by", "outcome"]);
    let group = |name: &str| {
        outcomes
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {outcomes:?}"))
            .clone()
    };
    let merged = group("merged");
    assert_eq!(merged["sessions"], 1);
    assert_eq!(merged["tokens"]["input"], want.0);
    assert_eq!(merged["tokens"]["output"], want.1);
    let archived = group("archived");
    assert_eq!(archived["sessions"], 1);
    assert_eq!(archived["tokens"]["input"], INPUT * beta_replies);
    let beta_usd = usd(INPUT * beta_replies, OUTPUT * beta_replies, 0, 0);
    assert!((archived["cost_usd"].as_f64().unwrap() - beta_usd).abs() < 1e-12);
    assert!(outcomes.iter().all(|g| g["name"] != "live"), "{outcomes:?}");

    // By day: the test's own line is dated 2026-11-30 12:00 UTC; the rest today.
    let days = cost_json(&env, &["--by", "day"]);
    let total: u64 = days
        .iter()
        .map(|d| d["tokens"]["input"].as_u64().unwrap())
        .sum();
    assert_eq!(total, want.0 + INPUT * beta_replies);
    // The table says it in words too.
    let table = env.orchestra(&["cost"]).ok().stdout;
    assert!(
        table.contains("alpha") && table.contains("merged"),
        "{table}"
    );
    assert!(
        table.contains("beta") && table.contains("archived"),
        "{table}"
    );

    // A prices.toml that is not one: one line, exit 2.
    std::fs::write(env.home.join("prices.toml"), "[models.x]\ninput = 1\n").unwrap();
    let bad = env.orchestra(&["cost"]).fails_with(2);
    assert!(bad.stderr.contains("prices.toml"), "{}", bad.stderr);
}
