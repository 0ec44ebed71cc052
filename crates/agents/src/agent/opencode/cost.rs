//! opencode's usage (pure): each assistant message of its session in its database
//! (`orchestra_sys::opencode_db`), counted once, when it has completed.
//!
//! Checked on the real opencode (1.18.33): the `message` table holds one row per message
//! (`id`s growing with time, `session_id` the `ses_…` its plugin names), its `data` JSON
//! for an assistant message carrying `modelID`, `time.created`/`time.completed` (ms since
//! the epoch) and `tokens` (`input` less the cached part, `output`, `reasoning`,
//! `cache.write`, `cache.read`); its tokens are final once `time.completed` is set.

use serde::Deserialize;

use crate::state::Tokens;

#[derive(Deserialize, Default)]
struct Message {
    #[serde(default)]
    role: String,
    #[serde(default, rename = "modelID")]
    model: String,
    #[serde(default)]
    time: Times,
    tokens: Option<MessageTokens>,
}

#[derive(Deserialize, Default)]
struct Times {
    created: Option<i64>,
    completed: Option<i64>,
}

#[derive(Deserialize, Default)]
struct MessageTokens {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    reasoning: u64,
    #[serde(default)]
    cache: Cache,
}

#[derive(Deserialize, Default)]
struct Cache {
    #[serde(default)]
    write: u64,
    #[serde(default)]
    read: u64,
}

/// The usage (model, UTC day, tokens) of `messages` (id, JSON; oldest first) and the id
/// the read got to: up to, not including, the first assistant message still at work (read
/// again next time). A message that does not parse counts nothing.
pub fn read(messages: &[(String, String)]) -> (Vec<(String, String, Tokens)>, Option<String>) {
    let mut usage = Vec::new();
    let mut last = None;
    for (id, data) in messages {
        let message: Message = serde_json::from_str(data).unwrap_or_default();
        if message.role == "assistant" {
            if message.time.completed.is_none() {
                break;
            }
            if let Some(t) = message.tokens {
                let tokens = Tokens {
                    input: t.input,
                    output: t.output + t.reasoning,
                    cache_creation: t.cache.write,
                    cache_read: t.cache.read,
                };
                if tokens != Tokens::default() {
                    usage.push((message.model, day_of_millis(message.time.created), tokens));
                }
            }
        }
        last = Some(id.clone());
    }
    (usage, last)
}

/// The UTC day (`YYYY-MM-DD`) of a time in ms since the epoch; empty without one.
fn day_of_millis(millis: Option<i64>) -> String {
    millis
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages opencode 1.18.33 wrote for a turn that ran a command (a user message,
    /// two assistant steps), then a step still at work.
    #[test]
    fn completed_assistant_messages_count_once_and_one_at_work_waits() {
        let row = |id: &str, data: &str| (id.to_string(), data.to_string());
        let messages = [
            row(
                "msg_1",
                r#"{"role":"user","time":{"created":1796223838693},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-stand-in"}}"#,
            ),
            row(
                "msg_2",
                r#"{"parentID":"msg_1","role":"assistant","mode":"build","cost":0.000105,"tokens":{"total":15,"input":10,"output":5,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"claude-stand-in","providerID":"anthropic","time":{"created":1796223840413,"completed":1796224026630},"finish":"tool-calls"}"#,
            ),
            row(
                "msg_3",
                r#"{"parentID":"msg_1","role":"assistant","tokens":{"total":40,"input":3,"output":5,"reasoning":2,"cache":{"write":20,"read":10}},"modelID":"claude-sonnet-4-5","time":{"created":1796224027280,"completed":1796224055128},"finish":"stop"}"#,
            ),
            row(
                "msg_4",
                r#"{"role":"assistant","tokens":{"input":0,"output":0,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"claude-sonnet-4-5","time":{"created":1796224060000}}"#,
            ),
            row(
                "msg_5",
                r#"{"role":"user","time":{"created":1796224070000}}"#,
            ),
        ];
        let (usage, last) = read(&messages);
        assert_eq!(
            usage,
            [
                (
                    "claude-stand-in".to_string(),
                    "2026-12-02".to_string(),
                    Tokens {
                        input: 10,
                        output: 5,
                        cache_creation: 0,
                        cache_read: 0
                    }
                ),
                (
                    "claude-sonnet-4-5".to_string(),
                    "2026-12-02".to_string(),
                    Tokens {
                        input: 3,
                        output: 7,
                        cache_creation: 20,
                        cache_read: 10
                    }
                ),
            ]
        );
        assert_eq!(
            last.as_deref(),
            Some("msg_3"),
            "the step at work is read later"
        );
        assert_eq!(read(&messages[3..]), (Vec::new(), None));
        let (usage, last) = read(&[row("msg_9", "not json")]);
        assert!(usage.is_empty());
        assert_eq!(last.as_deref(), Some("msg_9"));
    }
}
