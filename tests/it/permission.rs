//! Which permission mode a claude session runs in: chosen by `dispatch --permission-mode`
//! or left to the person's own claude settings, and said by `health`.

use std::time::Duration;

use crate::harness::{wait_until, AgentCli, AgentWorld};

/// The permission mode `health --json` says `label` runs in.
fn health_mode(world: &AgentWorld, label: &str) -> Option<String> {
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&world.orchestra(&["health", "--json"]).ok().stdout).unwrap();
    rows.iter()
        .find(|r| r["label"] == label)
        .and_then(|r| r["permission_mode"].as_str().map(str::to_string))
}

#[test]
fn a_dispatch_chooses_claudes_permission_mode_and_health_says_the_one_it_runs_in() {
    let Some(world) = AgentWorld::start(
        AgentCli::claude(""),
        |env| vec![env.worktree_path("planned"), env.worktree_path("plain")],
        None,
    ) else {
        return;
    };
    world
        .orchestra(&[
            "dispatch",
            "planned",
            "--agent",
            &world.agent,
            "--permission-mode",
            "plan",
            "--prompt",
            "[[say: planning]]",
        ])
        .ok();
    world.dispatch("plain", "[[say: plain]]");
    for (label, _) in [("planned", ()), ("plain", ())] {
        assert!(
            wait_until(world.patience, || health_mode(&world, label).is_some()),
            "{label}: no mode said; health: {}",
            world.orchestra(&["health"]).stdout
        );
    }
    assert_eq!(health_mode(&world, "planned").as_deref(), Some("plan"));
    // None passed: the sandboxed person's settings decide, and health says what they made.
    let plain = health_mode(&world, "plain").unwrap();
    assert_ne!(plain, "plan");
    let table = world.orchestra(&["health"]).ok().stdout;
    let header = table.lines().next().unwrap();
    assert!(header.contains(" MODE "), "{header}");
    let row = table.lines().find(|l| l.starts_with("planned ")).unwrap();
    assert!(row.split_whitespace().any(|w| w == "plan"), "{row}");

    // Bad input: another kind has no mode, a command naming one gets no second; nothing made.
    let before = world.list_json().len();
    world
        .cli(&[
            "dispatch",
            "nomode",
            "--agent",
            "bash --norc",
            "--permission-mode",
            "plan",
        ])
        .status(2)
        .stderr_line("orchestra: --permission-mode is claude's: a generic agent has none")
        .run();
    let twice = format!("{} --permission-mode default", world.agent);
    world
        .cli(&[
            "dispatch",
            "twice",
            "--agent",
            &twice,
            "--permission-mode",
            "plan",
        ])
        .status(2)
        .stderr_line(
            "orchestra: the agent command names a permission mode already: pass one or the other",
        )
        .run();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(world.list_json().len(), before);
    assert!(!world
        .branches()
        .iter()
        .any(|b| b.contains("nomode") || b.contains("twice")));
}

#[test]
fn a_manifest_session_chooses_claudes_permission_mode_too() {
    let Some(world) = AgentWorld::start(
        AgentCli::claude(""),
        |env| vec![env.root.join("planner-folder")],
        None,
    ) else {
        return;
    };
    let folder = world.root.join("planner-folder");
    world.write_agent_manifest(&world.agent, "planner", &folder, "true");
    let manifest = world.repo.join("orchestra.toml");
    let mut text = std::fs::read_to_string(&manifest).unwrap();
    text.push_str("permission_mode = \"plan\"\n");
    std::fs::write(&manifest, text).unwrap();
    world.orchestra(&["up"]).ok();
    let cmdline = world.pane_process("planner", "cmdline");
    assert!(cmdline.contains("\n--permission-mode\nplan\n"), "{cmdline}");
    world.said_without_ticks("planner", "idle", world.patience);
    world.brief("planner", "[[say: planned]]");
    assert!(
        wait_until(world.patience, || health_mode(&world, "planner").as_deref()
            == Some("plan")),
        "health: {}",
        world.orchestra(&["health"]).stdout
    );
}
