//! What Claude Code's hook events mean.

use crate::agent::{shared_event, AgentError};
use crate::state::AgentState;

/// The state an event means; `None` for events that change nothing.
pub fn state_for(event: &str, hook: &serde_json::Value) -> Result<Option<AgentState>, AgentError> {
    let field = |name: &str| hook.get(name).and_then(|v| v.as_str()).unwrap_or("");
    Ok(match event {
        // A question the agent asks, or its plan put up for approval, is shown to the
        // person as the tool starts: waiting, without the screen. Their answer is the
        // tool's end (PostToolUse): the turn goes on.
        "PreToolUse" if asks_the_person(field("tool_name")) => Some(AgentState::Waiting),
        "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => {
            Some(AgentState::Busy)
        }
        "PermissionRequest" => Some(AgentState::Waiting),
        "Notification" => {
            let kind = field("notification_type");
            let message = field("message").to_ascii_lowercase();
            let asks = matches!(kind, "permission_prompt" | "elicitation_dialog")
                || kind.is_empty() && message.contains("permission");
            asks.then_some(AgentState::Waiting)
        }
        // A sub-agent finishing says nothing about its parent.
        "Stop" if !field("agent_id").is_empty() || field("hook_event_name") == "SubagentStop" => {
            None
        }
        "Stop" => Some(AgentState::Idle),
        "SubagentStop" => None,
        // Compaction restarts the conversation in the middle of a turn: still busy.
        "SessionStart" if field("source") == "compact" => None,
        "SessionStart" => Some(AgentState::Idle),
        // Compacting is part of a turn, not its end.
        "PreCompact" => None,
        "StopFailure" => Some(AgentState::Error),
        "SessionEnd" => Some(AgentState::Exited),
        other => return shared_event(other, "a Claude Code hook event"),
    })
}

/// Claude Code's tools whose use is a question to the person: AskUserQuestion (its
/// options), ExitPlanMode (the plan, to approve or not).
pub const CLAUDE_PERSON_TOOLS: &[&str] = &["AskUserQuestion", "ExitPlanMode"];

pub(crate) fn asks_the_person(tool: &str) -> bool {
    CLAUDE_PERSON_TOOLS.contains(&tool)
}

/// The conversation claude's SessionStart hook names (a start, `/clear`, `/resume`), when
/// it is a conversation id.
pub fn conversation_started<'a>(event: &str, hook: &'a serde_json::Value) -> Option<&'a str> {
    if event != "SessionStart" {
        return None;
    }
    hook.get("session_id")
        .and_then(|v| v.as_str())
        .filter(|u| crate::agent::is_conversation_id(u))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hook_events_map_to_states() {
        let none = serde_json::Value::Null;
        assert_eq!(
            state_for("PreToolUse", &none).unwrap(),
            Some(AgentState::Busy)
        );
        assert_eq!(
            state_for("PermissionRequest", &none).unwrap(),
            Some(AgentState::Waiting)
        );
        assert_eq!(state_for("Stop", &none).unwrap(), Some(AgentState::Idle));
        assert_eq!(
            state_for("StopFailure", &none).unwrap(),
            Some(AgentState::Error)
        );
        assert_eq!(
            state_for("SessionEnd", &none).unwrap(),
            Some(AgentState::Exited)
        );
        assert_eq!(
            state_for("pane-died", &none).unwrap(),
            Some(AgentState::Exited)
        );
        assert_eq!(
            state_for("waiting", &none).unwrap(),
            Some(AgentState::Waiting)
        );
        assert!(state_for("bogus", &none).is_err());
        assert!(state_for("unknown", &none).is_err());
    }

    #[test]
    fn a_question_or_a_plan_waits_from_its_tool_use_and_its_answer_goes_on() {
        for tool in ["AskUserQuestion", "ExitPlanMode"] {
            let hook =
                json!({"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": {}});
            assert_eq!(
                state_for("PreToolUse", &hook).unwrap(),
                Some(AgentState::Waiting),
                "{tool}"
            );
            assert_eq!(
                crate::agent::asked::from_hook(&hook),
                None,
                "nothing to approve by name"
            );
            let answered = json!({"hook_event_name": "PostToolUse", "tool_name": tool});
            assert_eq!(
                state_for("PostToolUse", &answered).unwrap(),
                Some(AgentState::Busy)
            );
        }
        let bash = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        assert_eq!(
            state_for("PreToolUse", &bash).unwrap(),
            Some(AgentState::Busy)
        );
    }

    #[test]
    fn notifications_wait_only_for_a_person() {
        let perm = json!({"notification_type": "permission_prompt"});
        let idle = json!({"notification_type": "idle_prompt", "message": "Claude is waiting for your input"});
        let elicit = json!({"notification_type": "elicitation_dialog"});
        let old = json!({"message": "Claude needs your permission to use Bash"});
        assert_eq!(
            state_for("Notification", &perm).unwrap(),
            Some(AgentState::Waiting)
        );
        assert_eq!(
            state_for("Notification", &elicit).unwrap(),
            Some(AgentState::Waiting)
        );
        assert_eq!(state_for("Notification", &idle).unwrap(), None);
        assert_eq!(
            state_for("Notification", &old).unwrap(),
            Some(AgentState::Waiting)
        );
    }

    #[test]
    fn a_sub_agent_stop_leaves_the_parent_alone() {
        let sub = json!({"hook_event_name": "SubagentStop", "agent_id": "ae186a1"});
        let tagged = json!({"hook_event_name": "Stop", "agent_id": "ae186a1"});
        assert_eq!(state_for("Stop", &sub).unwrap(), None);
        assert_eq!(state_for("Stop", &tagged).unwrap(), None);
        assert_eq!(state_for("SubagentStop", &sub).unwrap(), None);
    }

    /// Measured on the real CLI (tests/it/background.rs): a turn that started a background
    /// shell ends with Stop while the shell runs, and the CLI is then at its prompt; when
    /// the shell ends it wakes the model with a task notification as UserPromptSubmit.
    #[test]
    fn recorded_background_shell_hooks_map_as_captured() {
        let root = concat!(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../.."),
            "/tests/fixtures/screens/claude"
        );
        let (mut running, mut woken) = (0, 0);
        for release in ["2.0.77", "2.1.100", "2.1.332"] {
            for entry in std::fs::read_dir(format!("{root}/{release}/hooks")).unwrap() {
                let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
                let hook: serde_json::Value = serde_json::from_str(&text).unwrap();
                let event = hook["hook_event_name"].as_str().unwrap().to_string();
                let state = state_for(&event, &hook).unwrap();
                if event == "UserPromptSubmit" {
                    assert_eq!(state, Some(AgentState::Busy), "{text}");
                    woken += usize::from(text.contains("<task-notification>"));
                }
                if event == "Stop" && hook.get("agent_id").is_none() {
                    assert_eq!(state, Some(AgentState::Idle), "{text}");
                    running += usize::from(text.contains(r#""status":"running""#));
                }
            }
        }
        assert_eq!((running, woken), (1, 3), "the captured background hooks");
    }

    #[test]
    fn compaction_does_not_end_a_turn() {
        let compact = json!({"hook_event_name": "SessionStart", "source": "compact"});
        let clear = json!({"hook_event_name": "SessionStart", "source": "clear"});
        assert_eq!(state_for("SessionStart", &compact).unwrap(), None);
        assert_eq!(state_for("PreCompact", &compact).unwrap(), None);
        assert_eq!(
            state_for("SessionStart", &clear).unwrap(),
            Some(AgentState::Idle)
        );
    }
}
