//! A restarted claude session whose resumed screen still shows an old API error: the
//! error is history, and the session is what it does now.

use std::time::Duration;

use crate::harness::{AgentCli, AgentWorld};

const SLOW: Duration = Duration::from_secs(60);

#[test]
fn an_api_error_resumed_on_screen_is_history_not_the_state() {
    let Some(world) = AgentWorld::start(
        AgentCli::claude(""),
        |env| vec![env.worktree_path("flaky")],
        None,
    ) else {
        return;
    };
    world.dispatch("flaky", "[[error: 400]]");
    world.reaches("flaky", "error", SLOW);
    world.brief("flaky", "/exit");
    world.reaches("flaky", "exited", SLOW);
    world.orchestra(&["restart", "flaky"]).ok();
    world.wait_screen("flaky", "API Error");
    // Resumed and idle, the old error above the input box: history, not the state.
    world.reaches("flaky", "idle", SLOW);
    for _ in 0..3 {
        world.orchestra(&["refresh"]).ok();
    }
    let changes = world.changes_text("flaky");
    assert_eq!(world.state("flaky"), "idle", "{changes}");
    let since_restart = changes.rsplit("SessionStart").next().unwrap_or_default();
    assert!(!since_restart.contains("error"), "{changes}");
    // A turn that fails now is an error again.
    world.brief("flaky", "[[error: 400]]");
    world.reaches("flaky", "error", SLOW);
}
