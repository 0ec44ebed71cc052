//! What sessions cost (issue 18): the real claude writes its conversation logs against
//! the Anthropic stand-in, whose usage is known (10 input and 5 output tokens a reply, no
//! cache), and orchestra sums them; the real codex and gemini write their rollouts and chat
//! records against theirs (known usage too, with cached and reasoning tokens), and
//! orchestra sums those.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::harness::{commit_file, wait_until, AgentCli, AgentWorld, ClaudeWorld, Env};

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

/// Waits until `file` has not grown for a second.
fn quiet(file: &Path) {
    let size = || std::fs::metadata(file).map_or(0, |m| m.len());
    let mut last = (size(), std::time::Instant::now());
    assert!(
        wait_until(Duration::from_secs(20), || {
            let now = size();
            if now != last.0 {
                last = (now, std::time::Instant::now());
            }
            last.1.elapsed() >= Duration::from_secs(1)
        }),
        "{} kept growing",
        file.display()
    );
}

#[test]
fn cost_sums_real_claude_logs_incrementally_follows_clear_and_rolls_up_by_outcome() {
    let mut env = Env::new();
    let (wa, wb) = (env.worktree_path("alpha"), env.worktree_path("beta"));
    let Some(world) = ClaudeWorld::start(&env, &[&wa, &wb]) else {
        return;
    };
    env.start_server(&world.env);
    // orchestra finds claude's logs where claude does: $CLAUDE_CONFIG_DIR, else ~/.claude.
    let config = world.home().join(".claude");
    env.env
        .push(("CLAUDE_CONFIG_DIR".into(), config.to_string_lossy().into()));
    let claude = world.claude.to_string_lossy().into_owned();
    // No notification bus: notifications go to @orchestra-notify-cmd.
    env.without_bus();

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
    // claude adds lines of its own a moment after its turn (between the test's two halves
    // they would break the test's line): appended once the log has been still a while.
    quiet(&log);
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
    let notes = env.notes_to_file();
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
    commit_file(&wa, "a.txt", "a\n", "a");
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
    // claude writes the reply to its log a moment after drawing it: counted before the kill.
    assert!(
        wait_until(Duration::from_secs(20), || tokens(&env, "beta").0
            >= INPUT * beta_replies),
        "{:?}",
        tokens(&env, "beta")
    );
    commit_file(&wb, "b.txt", "b\n", "b");
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

/// A world with another agent CLI against its stand-in: codex (openai.py) or gemini
/// (gemini.py), in a sandboxed home; orchestra's own commands see that home too.
struct Other(AgentWorld);

impl std::ops::Deref for Other {
    type Target = AgentWorld;

    fn deref(&self) -> &AgentWorld {
        &self.0
    }
}

fn codex_world(label: &str) -> Option<Other> {
    let mut world = AgentWorld::start(
        AgentCli::codex(),
        |env| vec![env.worktree_path(label)],
        None,
    )?;
    // orchestra finds codex's rollouts where codex writes them: $CODEX_HOME.
    world.share("CODEX_HOME");
    Some(Other(world))
}

fn gemini_world() -> Option<Other> {
    let mut world = AgentWorld::start(AgentCli::gemini(), |_| Vec::new(), None)?;
    // orchestra builds each session's Gemini home from the person's: the sandboxed one.
    world.share("HOME");
    Some(Other(world))
}

impl Other {
    /// The stand-in's answers to the person's turns (not the CLI's helper requests, such as
    /// codex's title or gemini's checks, which no log of theirs records).
    fn replies(&self) -> u64 {
        self.api
            .requests_json()
            .iter()
            .filter(|r| matches!(r["turn"].as_str(), Some("prompt" | "tool-result" | "again")))
            .count() as u64
    }

    fn all_tokens(&self, label: &str) -> Tokens4 {
        let t = self.env.session(label)["tokens"].clone();
        let n = |k: &str| t[k].as_u64().unwrap_or(0);
        Tokens4 {
            input: n("input"),
            output: n("output"),
            cache_read: n("cache_read"),
            cache_creation: n("cache_creation"),
        }
    }

    /// Ticks until `label` is idle (gemini's hooks and codex's notify say it at once; a
    /// tick is the fallback).
    #[track_caller]
    fn idle(&self, label: &str) {
        self.reaches(label, "idle", Duration::from_secs(60));
    }

    /// Waits for a reply past the first `before` (a turn of `label`) and `label` idle
    /// again, then for its tokens to be `per` a reply so far; returns the replies.
    #[track_caller]
    fn turn_counted(&self, label: &str, before: u64, per: Tokens4) -> u64 {
        assert!(
            wait_until(Duration::from_secs(60), || self.replies() > before),
            "no reply:\n{}\n{}",
            self.screen(label),
            self.api.requests()
        );
        self.idle(label);
        let n = self.replies();
        self.tokens_become(label, per.times(n));
        n
    }

    /// Waits until `label`'s tokens are `want` (read by list --json, which reads on from
    /// the marks), and says what they were if never.
    #[track_caller]
    fn tokens_become(&self, label: &str, want: Tokens4) {
        assert!(
            wait_until(Duration::from_secs(20), || self.all_tokens(label) == want),
            "{label}: {:?} != {want:?}",
            self.all_tokens(label)
        );
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tokens4 {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_creation: u64,
}

impl Tokens4 {
    fn times(self, n: u64) -> Tokens4 {
        Tokens4 {
            input: self.input * n,
            output: self.output * n,
            cache_read: self.cache_read * n,
            cache_creation: self.cache_creation * n,
        }
    }

    fn plus(self, input: u64, output: u64, cache_read: u64) -> Tokens4 {
        Tokens4 {
            input: self.input + input,
            output: self.output + output,
            cache_read: self.cache_read + cache_read,
            ..self
        }
    }
}

/// Appends `text` to `file` as an agent would, in two writes: the first half of the line,
/// then the rest.
fn append(file: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// Which files under `dir` (recursively) have names ending in `suffix`.
fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                found.push(p);
            }
        }
    }
    found
}

/// A priced model's cost at prices.toml's made-up rates (input 2, output 10, cache write
/// 4, cache read 1 dollars per million).
fn made_up_usd(t: Tokens4) -> f64 {
    (t.input as f64 * 2.0
        + t.output as f64 * 10.0
        + t.cache_creation as f64 * 4.0
        + t.cache_read as f64)
        / 1e6
}

fn price_model(env: &Env, model: &str) {
    std::fs::write(
        env.home.join("prices.toml"),
        format!(
            "[models.\"{model}\"]\ninput = 2.0\noutput = 10.0\ncache_write = 4.0\ncache_read = 1.0\n"
        ),
    )
    .unwrap();
}

/// codex: its own usage lies in its rollout (`$CODEX_HOME/sessions/…/rollout-…-<thread>.jsonl`,
/// the `token_count` events' running totals); its notify names the thread but carries no
/// usage. The stand-in answers each request with 10 input tokens, 4 of them cached, and 5
/// output: input 6, cache read 4, output 5 a reply.
#[test]
fn codex_cost_is_read_from_its_rollout_incrementally() {
    let Some(w) = codex_world("cx") else { return };
    let per = Tokens4 {
        input: 6,
        output: 5,
        cache_read: 4,
        cache_creation: 0,
    };
    w.dispatch("cx", "[[say: one]]");
    // Before codex has said its thread (the end of the first turn) there is no log to read:
    // no error, and no cost (unknown, not zero).
    w.env.orchestra(&["cost"]).ok();
    let n = w.turn_counted("cx", 0, per);
    let s = w.env.session("cx");
    // The stand-in's model has no list price: tokens, and a cost that is unknown.
    assert_eq!(s["cost_usd"], Value::Null, "{s}");
    let rows = cost_json(&w.env, &[]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["models"][0]["model"], "stand-in", "{rows:?}");
    assert_eq!(rows[0]["cost_usd"], Value::Null);

    // A second turn appended to the same rollout: read on from the mark, nothing twice.
    w.brief("cx", "[[say: two]]");
    let n = w.turn_counted("cx", n, per);

    // A token_count codex is still writing waits for its newline; once whole, what the
    // thread's total grew by counts, to the turn's model.
    let codex_home = w.env.root.join("codex-home/.codex");
    let rollouts = files_under(&codex_home.join("sessions"), ".jsonl");
    assert_eq!(rollouts.len(), 1, "{rollouts:?}");
    let total = per.times(n);
    let line = serde_json::json!({
        "timestamp": "2026-11-30T12:00:00.000Z", "type": "event_msg",
        "payload": {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": total.input + total.cache_read + 1000,
            "cached_input_tokens": total.cache_read + 30,
            "cache_write_input_tokens": 0,
            "output_tokens": total.output + 100,
            "reasoning_output_tokens": 0, "total_tokens": 0}}}
    })
    .to_string();
    let (head, tail) = line.split_at(50);
    quiet(&rollouts[0]);
    append(&rollouts[0], head);
    assert_eq!(w.all_tokens("cx"), total);
    append(&rollouts[0], &format!("{tail}\n"));
    let want = total.plus(970, 100, 30);
    assert_eq!(w.all_tokens("cx"), want);

    // Priced: the cost is the tokens at the price.
    price_model(&w.env, "stand-in");
    let cost = w.env.session("cx")["cost_usd"]
        .as_f64()
        .expect("a price now");
    assert!((cost - made_up_usd(want)).abs() < 1e-12, "{cost}");
    let health = w.env.orchestra(&["health"]).ok().stdout;
    let row = health
        .lines()
        .find(|l| l.starts_with("cx"))
        .expect("cx's row");
    assert!(
        row.trim_end()
            .ends_with(&format!("${:.4}", made_up_usd(want))),
        "{health}"
    );

    // A thread whose rollout was never written (codex run with its history off): no
    // error, nothing more counted.
    let id = w.env.session("cx")["id"].as_str().unwrap().to_string();
    let payload = serde_json::json!({"type": "agent-turn-complete",
        "thread-id": "01a22e3b-c2a4-7e92-a977-000000000000", "input-messages": ["go"]});
    w.env
        .orchestra(&[
            "event",
            "--session",
            &id,
            "codex-notify",
            &payload.to_string(),
        ])
        .ok();
    assert_eq!(w.all_tokens("cx"), want);

    // The rollout gone (codex's files cleaned away): no error, what was counted stays.
    std::fs::remove_file(&rollouts[0]).unwrap();
    assert_eq!(w.all_tokens("cx"), want);
    w.env.orchestra(&["cost"]).ok();
}

/// gemini: its own usage lies in its chat record (the session's Gemini home,
/// `.gemini/tmp/<project>/chats/session-…-<session id>.jsonl`, each model message's
/// `tokens`); its hooks name the session but carry no usage. The stand-in answers each
/// request with a 10-token prompt, 4 of it cached, 5 tokens of answer and 2 of thinking:
/// input 6, cache read 4, output 7 a reply.
#[test]
fn gemini_cost_is_read_from_its_chat_record_incrementally() {
    let Some(w) = gemini_world() else { return };
    let per = Tokens4 {
        input: 6,
        output: 7,
        cache_read: 4,
        cache_creation: 0,
    };
    w.dispatch("gm", "[[say: ANSWER-ONE]]");
    w.env.orchestra(&["cost"]).ok();
    let n = w.turn_counted("gm", 0, per);
    let s = w.env.session("gm");
    assert_eq!(s["cost_usd"], Value::Null, "{s}");
    let rows = cost_json(&w.env, &[]);
    let model = rows[0]["models"][0]["model"]
        .as_str()
        .expect("a model")
        .to_string();
    assert_eq!(rows[0]["cost_usd"], Value::Null, "{rows:?}");

    // The answer drawn first (the prompt shows the word once, the answer again): the CLI
    // takes typed text once its turn is over on screen.
    assert!(
        wait_until(Duration::from_secs(30), || w
            .screen("gm")
            .matches("ANSWER-ONE")
            .count()
            >= 2),
        "{}",
        w.screen("gm")
    );
    // A brief typed just after a turn is sent even when gemini drops its first Enter
    // (brief presses it again while the text stays in the input box).
    w.brief("gm", "[[say: two]]");
    let n = w.turn_counted("gm", n, per);

    // The record lies in the session's own Gemini home.
    let id = s["id"].as_str().unwrap().to_string();
    let chats = files_under(
        &w.env.home.join("sessions").join(&id).join("gemini-home"),
        ".jsonl",
    );
    let chats: Vec<PathBuf> = chats
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("/chats/"))
        .collect();
    assert_eq!(chats.len(), 1, "{chats:?}");
    // A message the CLI is still writing waits; written again whole, it counts once.
    let line = serde_json::json!({
        "id": "by-the-test", "timestamp": "2026-11-30T12:00:00.000Z", "type": "gemini",
        "content": "x", "model": model,
        "tokens": {"input": 1030, "output": 90, "cached": 30, "thoughts": 10, "tool": 0, "total": 0}
    })
    .to_string();
    let (head, tail) = line.split_at(40);
    let total = per.times(n);
    quiet(&chats[0]);
    append(&chats[0], head);
    assert_eq!(w.all_tokens("gm"), total);
    append(&chats[0], &format!("{tail}\n"));
    let want = total.plus(1000, 100, 30);
    assert_eq!(w.all_tokens("gm"), want);
    append(&chats[0], &format!("{line}\n"));
    assert_eq!(w.all_tokens("gm"), want);

    price_model(&w.env, &model);
    let cost = w.env.session("gm")["cost_usd"]
        .as_f64()
        .expect("a price now");
    assert!((cost - made_up_usd(want)).abs() < 1e-12, "{cost}");

    // Killed: its Gemini home (the record with it) goes, its cost stays, filed by outcome.
    w.env.orchestra(&["kill", "gm", "--force"]).ok();
    let outcomes = cost_json(&w.env, &["--by", "outcome"]);
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[0]["tokens"]["input"], want.input, "{outcomes:?}");
    assert_eq!(outcomes[0]["tokens"]["output"], want.output);
}
