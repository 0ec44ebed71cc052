//! One task to several agents: a fan-out made as one group (real claude twice against the
//! stand-in, and the real claude, codex and gemini at once, each candidate making its own
//! file), the repo's check run in each, the candidates compared, one picked in a popup as a
//! person picks it (merged on y, the others archived with their commits), a fan-out killed
//! at every step, and the bad inputs.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::faults::{all_commits, at_every_step_then, Before};
use crate::harness::{commit_file, wait_until, AgentCli, AgentWorld, Env, MixedWorld};

const SHELL: &str = "bash --norc --noprofile";

/// orchestra.toml with `check`, committed and allowed: the candidates start from it.
fn with_check(env: &Env, check: &str) {
    std::fs::write(
        env.repo.join("orchestra.toml"),
        format!("[worktree]\ncheck = {check}\n"),
    )
    .unwrap();
    crate::harness::git_in(&env.repo, &["add", "orchestra.toml"]);
    crate::harness::git_in(&env.repo, &["commit", "-q", "-m", "the check"]);
    env.orchestra(&["allow"]).ok();
}

fn shell_fan_out(env: &Env, label: &str, count: &str) {
    env.orchestra(&[
        "dispatch", label, "--count", count, "--agent", SHELL, "--kind", "generic",
    ])
    .ok();
}

fn compare_json(env: &Env, group: &str) -> Vec<Value> {
    let run = env.orchestra(&["compare", group, "--json"]).ok();
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

fn row<'a>(rows: &'a [Value], label: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no row {label}: {rows:?}"))
}

#[test]
fn claude_twice_makes_a_group_whose_candidates_differ_are_checked_and_compared() {
    let Some(c) = AgentWorld::start(
        AgentCli::claude("--permission-mode default"),
        |env| vec![env.worktree_path("fan-1"), env.worktree_path("fan-2")],
        None,
    ) else {
        return;
    };
    // Passes only where the candidate made fan-1's file.
    with_check(
        &c.env,
        r#"["sh", "-c", "echo checking; test -f made-fan-1.txt"]"#,
    );
    let run = c
        .env
        .orchestra(&[
            "dispatch",
            "fan",
            "--agents",
            &format!("{0},{0}", c.agent),
            "--prompt",
            r#"[[bash: touch "made-$(basename "$PWD").txt"]] [[after: made it]]"#,
        ])
        .ok();
    assert!(
        run.stdout.contains("group fan: 2 session(s)"),
        "{}",
        run.stdout
    );
    for label in ["fan-1", "fan-2"] {
        c.wait_screen(label, "Do you want to proceed?");
        c.env.orchestra(&["approve", label]).ok();
    }
    for label in ["fan-1", "fan-2"] {
        let file = c.env.worktree_path(label).join(format!("made-{label}.txt"));
        assert!(
            wait_until(c.patience, || file.exists()),
            "{label} made no file:\n{}",
            c.screen(label)
        );
        c.wait_screen(label, "made it");
    }
    // Same base, same prompt, one group; each an ordinary session.
    let rows = c.env.list_json();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["group"], "fan", "{r}");
    }
    let table = c.env.orchestra(&["list"]).ok().stdout;
    assert!(table.lines().next().unwrap().contains("GROUP"), "{table}");

    // The check passes on one, fails on the other (exit 1), each recorded.
    let run = c.env.orchestra(&["check", "fan", "--json"]).fails_with(1);
    let checks: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(row(&checks, "fan-1")["passed"], true, "{checks:?}");
    assert_eq!(row(&checks, "fan-2")["passed"], false, "{checks:?}");
    assert_eq!(c.env.session("fan-2")["check"]["ended"], "exit status 1");
    assert!(c.env.session("fan-1")["check"]["tail"]
        .as_str()
        .unwrap()
        .contains("checking"));

    let rows = compare_json(&c.env, "fan");
    assert_eq!(rows.len(), 2);
    let (one, two) = (row(&rows, "fan-1"), row(&rows, "fan-2"));
    assert_eq!(one["agent"], "claude");
    assert_eq!(
        (one["files"].as_u64(), two["files"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(one["check"]["passed"], true);
    assert_eq!(two["check"]["passed"], false);
    assert!(one["wall_secs"].as_i64().unwrap() >= 0);
    assert_eq!(one["conflicts_with"], serde_json::json!([]));
    let table = c.env.orchestra(&["compare", "fan"]).ok().stdout;
    assert!(table.contains("pass") && table.contains("FAIL"), "{table}");
    let diff = c
        .env
        .orchestra(&["compare", "fan", "fan-1", "fan-2"])
        .ok()
        .stdout;
    assert!(
        diff.contains("made-fan-1.txt") && !diff.contains("made-fan-2.txt"),
        "{diff}"
    );

    // The status line counts the group's candidates apart.
    assert!(
        wait_until(Duration::from_secs(20), || c
            .env
            .orchestra(&["status-line"])
            .stdout
            .contains("fan ✓2")),
        "{}",
        c.env.orchestra(&["status-line"]).stdout
    );
}

/// The task to three kinds at once: the real claude, codex and gemini, each against its
/// stand-in, one group labelled by kind. The same prompt makes a file named after each
/// candidate's worktree (each CLI asks first, in its own words, and `approve` answers each);
/// the check passes on codex's alone; compare shows each one's agent, its one file and its
/// check, and what one changes that another does not.
#[test]
fn claude_codex_and_gemini_at_once_make_their_own_files_and_are_checked_and_compared() {
    let Some(m) = MixedWorld::start(
        vec![
            AgentCli::claude("--permission-mode default"),
            AgentCli::codex(),
            AgentCli::gemini(),
        ],
        |env| {
            vec![
                vec![env.worktree_path("mix-claude")],
                vec![env.worktree_path("mix-codex")],
                Vec::new(),
            ]
        },
    ) else {
        return;
    };
    with_check(
        &m.env,
        r#"["sh", "-c", "echo checking; test -f made-mix-codex.txt"]"#,
    );
    let run = m
        .env
        .orchestra(&[
            "dispatch",
            "mix",
            "--agents",
            &m.agents.join(","),
            "--prompt",
            // No `$(…)`: gemini blocks a shell command with a command substitution in it.
            r#"[[bash: touch "made-${PWD##*/}.txt"]] [[after: made it]]"#,
        ])
        .ok();
    assert!(
        run.stdout.contains("group mix: 3 session(s)"),
        "{}",
        run.stdout
    );
    let kinds = [
        ("mix-claude", "claude", "Do you want to proceed?"),
        (
            "mix-codex",
            "codex",
            "Would you like to run the following command?",
        ),
        ("mix-gemini", "gemini", "Allow execution of"),
    ];
    for (label, kind, _) in kinds {
        assert!(
            run.stdout.contains(&format!(
                "dispatched {label}: {kind} on branch session/{label}"
            )),
            "{}",
            run.stdout
        );
    }
    for (label, _, asks) in kinds {
        m.wait_screen(label, asks);
        m.env.orchestra(&["approve", label]).ok();
    }
    for (label, _, _) in kinds {
        let file = m.env.worktree_path(label).join(format!("made-{label}.txt"));
        assert!(
            wait_until(m.patience, || file.exists()),
            "{label} made no file:\n{}",
            m.env.screen(label)
        );
        m.wait_screen(label, "made it");
    }
    // Each CLI talked to its own stand-in.
    for api in &m.apis {
        assert!(
            api.requests().contains("made-${PWD##*/}.txt"),
            "{}",
            api.requests()
        );
    }
    let rows = m.env.list_json();
    assert_eq!(rows.len(), 3, "{rows:?}");
    for r in &rows {
        assert_eq!(r["group"], "mix", "{r}");
    }

    // The check passes on codex's candidate only (exit 1, the failed ones named).
    let run = m.env.orchestra(&["check", "mix", "--json"]).fails_with(1);
    let checks: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(checks.len(), 3, "{checks:?}");
    assert_eq!(row(&checks, "mix-codex")["passed"], true, "{checks:?}");
    assert_eq!(row(&checks, "mix-claude")["passed"], false, "{checks:?}");
    assert_eq!(row(&checks, "mix-gemini")["passed"], false, "{checks:?}");
    assert!(
        run.stderr.contains("mix-claude (exit status 1)")
            && run.stderr.contains("mix-gemini (exit status 1)")
            && !run.stderr.contains("mix-codex"),
        "{}",
        run.stderr
    );

    let rows = compare_json(&m.env, "mix");
    assert_eq!(rows.len(), 3, "{rows:?}");
    for (label, kind, _) in kinds {
        let r = row(&rows, label);
        assert_eq!(r["agent"], kind, "{r}");
        assert_eq!(r["files"], 1, "{label} changed its one file: {r}");
        assert_eq!(r["check"]["passed"], label == "mix-codex", "{r}");
        assert_eq!(r["conflicts_with"], serde_json::json!([]), "{r}");
    }
    let diff = m
        .env
        .orchestra(&["compare", "mix", "mix-codex", "mix-gemini"])
        .ok()
        .stdout;
    assert!(
        diff.contains("made-mix-codex.txt") && !diff.contains("made-mix-gemini.txt"),
        "{diff}"
    );
}

#[test]
fn compare_in_a_popup_merges_the_chosen_on_y_and_archives_the_others_with_their_commits() {
    let env = Env::new();
    env.start_server(&[]);
    shell_fan_out(&env, "pick", "3");
    for (label, file) in [
        ("pick-1", "one.txt"),
        ("pick-2", "two.txt"),
        ("pick-3", "three.txt"),
    ] {
        commit_file(
            &env.worktree_path(label),
            file,
            &format!("{label}\n"),
            &format!("{label}: {file}"),
        );
    }
    // pick-3 also leaves work uncommitted: archived as a WIP commit, never lost.
    std::fs::write(env.worktree_path("pick-3").join("draft.txt"), "draft\n").unwrap();
    let tips: Vec<String> = ["pick-2", "pick-3"]
        .iter()
        .map(|l| {
            env.git(&["rev-parse", &format!("session/{l}")])
                .trim()
                .to_string()
        })
        .collect();

    let person = crate::harness::Person::attach(&env);
    let popup = env
        .orchestra_command(&env.repo, &["compare", "pick", "--choose", "--popup"])
        .spawn()
        .unwrap();
    person.wait_to_see("Merge which candidate");
    assert!(person.sees().contains("pick-3"), "{}", person.sees());
    person.type_text("pick-1");
    person.keys(&["Enter"]);
    person.wait_to_see("Merge session/pick-1 into main? [y/N]");
    person.keys(&["y", "Enter"]);
    person.wait_to_see("Archive the other candidates");
    person.keys(&["y", "Enter"]);
    let out = popup.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    assert!(env.repo.join("one.txt").exists(), "pick-1 merged");
    assert!(!env.repo.join("two.txt").exists());
    assert!(env.list_json().is_empty(), "{:?}", env.list_json());
    let branches = env.branches();
    for (label, tip) in ["pick-2", "pick-3"].iter().zip(&tips) {
        let archived = branches
            .iter()
            .find(|b| b.starts_with(&format!("archive/{label}-")))
            .unwrap_or_else(|| panic!("{label} not archived: {branches:?}"));
        let kept = env.git(&["rev-list", archived]);
        assert!(
            kept.contains(tip.as_str()),
            "{label}'s commits are on {archived}"
        );
        if *label == "pick-3" {
            assert_eq!(
                env.git(&["show", &format!("{archived}:draft.txt")]),
                "draft\n"
            );
        }
    }
    // A group left with its merged one only: nothing to compare.
    env.orchestra(&["compare", "pick"]).fails_with(2);
}

#[test]
fn compare_pick_without_a_terminal_merges_nothing_and_keeps_every_candidate() {
    let env = Env::new();
    env.start_server(&[]);
    shell_fan_out(&env, "keep", "2");
    commit_file(&env.worktree_path("keep-1"), "k.txt", "k\n", "k");
    let before = env.git(&["rev-parse", "HEAD"]);
    // No terminal: the ordinary merge refuses to ask; nothing changes.
    let run = env
        .orchestra(&["compare", "keep", "--pick", "keep-1"])
        .fails_with(1);
    assert!(run.stderr.contains("--yes"), "{}", run.stderr);
    assert_eq!(env.git(&["rev-parse", "HEAD"]), before);
    assert_eq!(env.list_json().len(), 2);
    // The dashboard shows the group's candidates together.
    let frame = env.orchestra(&["watch", "--count", "1"]).ok().stdout;
    assert!(
        frame.contains("groups:") && frame.contains("keep: keep-1 ") && frame.contains(", keep-2 "),
        "{frame}"
    );
}

#[test]
fn bad_fan_outs_and_compares_are_refused_in_one_line_and_make_nothing() {
    let env = Env::new();
    env.start_server(&[]);
    env.dispatch_shell("taken").ok();
    shell_fan_out(&env, "grp", "2");
    let before = (env.branches(), env.windows().len(), env.list_json().len());
    let refused = |args: &[&str], says: &str| {
        let run = env.orchestra(args).fails_with(2);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert_eq!(
            (env.branches(), env.windows().len(), env.list_json().len()),
            before,
            "{args:?} changed something"
        );
    };
    let shell = |label: &'static str, more: &[&'static str]| {
        let mut args = vec!["dispatch", label, "--agent", SHELL, "--kind", "generic"];
        args.extend_from_slice(more);
        args
    };
    refused(
        &shell("taken", &["--count", "2"]),
        "already the label of session",
    );
    refused(
        &shell("grp", &["--count", "2"]),
        "group \"grp\" already exists",
    );
    refused(
        &[
            "dispatch",
            "new",
            "--agents",
            &format!("{SHELL},no-such-agent-here"),
        ],
        "--agents \"no-such-agent-here\"",
    );
    refused(&shell("big", &["--count", "9"]), "more than the bound of 8");
    refused(&shell("none", &["--count", "0"]), "--count 0");
    refused(
        &["compare", "taken"],
        "compare needs a group of two or more",
    );
    refused(&["compare", "nothing-here"], "no group or session");
    refused(
        &["compare", "grp", "grp-1", "stranger"],
        "not a candidate of group grp",
    );
    // A group of one is made, and is nothing to compare.
    shell_fan_out(&env, "solo", "1");
    let run = env.orchestra(&["compare", "solo"]).fails_with(2);
    assert!(run.stderr.contains("1 candidate(s)"), "{}", run.stderr);
    // The bound can be raised on purpose.
    env.cli(&shell("wide", &["--count", "4"]))
        .env("ORCHESTRA_FANOUT_MAX", "3")
        .status(2)
        .stderr_line("orchestra: 4 sessions asked for, more than the bound of 3: each runs an agent, a worktree and a window at once and costs its own tokens (ORCHESTRA_FANOUT_MAX raises the bound)")
        .run();
    // A check with no check configured: bad input, nothing recorded.
    env.orchestra(&["check", "grp"]).fails_with(2);
    assert_eq!(env.session("grp-1")["check"], Value::Null);
}

#[test]
fn a_fan_out_killed_at_every_step_leaves_nothing_after_doctor_fix() {
    let args = [
        "dispatch", "fan", "--count", "2", "--agent", SHELL, "--kind", "generic",
    ];
    let points = at_every_step_then(
        "dispatch",
        &args,
        |env| Before {
            commits: all_commits(env),
            uncommitted: None,
        },
        |env, context| {
            assert!(
                env.list_json().is_empty(),
                "{context}: {:?}",
                env.list_json()
            );
            assert_eq!(env.branches(), ["main"], "{context}");
            let root = env.root.join("repo.worktrees");
            let left: Vec<_> = std::fs::read_dir(&root)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default();
            assert!(left.is_empty(), "{context}: {left:?}");
            assert!(!Path::new(&root.join("fan-1")).exists());
        },
    );
    assert!(
        points >= 15,
        "a fan-out of two has only {points} kill points"
    );
}
