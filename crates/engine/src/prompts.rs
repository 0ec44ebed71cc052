//! The agent prompts shipped in prompts/, overridable per user in
//! `$ORCHESTRA_HOME/prompts/<name>.md`.

use std::path::Path;

/// The worker's standing instructions, appended to its system prompt by dispatch.
pub const WORKER: &str = "worker";
/// The orchestrator's instructions, appended by `orchestra launch`.
pub const TASK_DRAFTING: &str = "task-drafting";
/// What a session has learned that the others should know (`orchestra insights`).
pub const INSIGHT: &str = "insight";
/// A session's reflection on its own memory and notes (`orchestra dream`).
pub const DREAM: &str = "dream";
/// Merges the insight reports into the shared context; `{{REPORTS}}` holds them.
pub const SYNTHESIZE_INSIGHTS: &str = "synthesize_insights";
/// Merges the dream reports into the shared context; `{{REPORTS}}` holds them.
pub const SYNTHESIZE_DREAM: &str = "synthesize_dream";

fn built_in(name: &str) -> Option<&'static str> {
    match name {
        WORKER => Some(include_str!("../../../prompts/worker.md")),
        TASK_DRAFTING => Some(include_str!("../../../prompts/task-drafting.md")),
        INSIGHT => Some(include_str!("../../../prompts/insight.md")),
        DREAM => Some(include_str!("../../../prompts/dream.md")),
        SYNTHESIZE_INSIGHTS => Some(include_str!("../../../prompts/synthesize_insights.md")),
        SYNTHESIZE_DREAM => Some(include_str!("../../../prompts/synthesize_dream.md")),
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

    #[test]
    fn the_sync_prompts_are_built_in_with_their_placeholders() {
        let home = tempfile::tempdir().unwrap();
        for name in [INSIGHT, DREAM] {
            let text = load(home.path(), name).unwrap();
            for key in ["{{SESSION}}", "{{ROLE}}", "{{PATH}}"] {
                assert!(text.contains(key), "{name} lacks {key}");
            }
        }
        for name in [SYNTHESIZE_INSIGHTS, SYNTHESIZE_DREAM] {
            assert!(load(home.path(), name).unwrap().contains("{{REPORTS}}"));
        }
    }
}
