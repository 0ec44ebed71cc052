//! The agent prompts shipped in prompts/, overridable per user in
//! `$ORCHESTRA_HOME/prompts/<name>.md`.

use std::path::Path;

/// The worker's standing instructions, appended to its system prompt by dispatch.
pub const WORKER: &str = "worker";
/// The orchestrator's instructions, appended by `orchestra launch`.
pub const TASK_DRAFTING: &str = "task-drafting";

fn built_in(name: &str) -> Option<&'static str> {
    match name {
        WORKER => Some(include_str!("../prompts/worker.md")),
        TASK_DRAFTING => Some(include_str!("../prompts/task-drafting.md")),
        _ => None,
    }
}

/// The prompt `name`: the user's copy if there is one, else the built-in one.
pub fn load(home: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(home.join("prompts").join(format!("{name}.md")))
        .ok()
        .or_else(|| built_in(name).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_copy_wins_over_the_built_in_prompt() {
        let home = tempfile::tempdir().unwrap();
        assert!(load(home.path(), WORKER)
            .unwrap()
            .contains("orchestra worker"));
        std::fs::create_dir_all(home.path().join("prompts")).unwrap();
        std::fs::write(home.path().join("prompts/worker.md"), "my own rules").unwrap();
        assert_eq!(load(home.path(), WORKER).unwrap(), "my own rules");
        assert!(load(home.path(), TASK_DRAFTING)
            .unwrap()
            .contains("orchestrator"));
        assert_eq!(load(home.path(), "no-such-prompt"), None);
    }
}
