//! codex's rollout files (pure but for finding one): where a thread's rollout lies, and the
//! usage its `token_count` events add up to in the whole lines of a piece of one.
//!
//! Checked on the real CLI (0.171.0): each thread writes
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl`; a
//! `turn_context` line names the model of the turn that follows; after each model response
//! an `event_msg` of type `token_count` carries the thread's running total
//! (`info.total_token_usage`: `input_tokens` with `cached_input_tokens` among them,
//! `output_tokens` with `reasoning_output_tokens` among them). codex's `notify` payload
//! names the thread (`thread-id`) but carries no usage.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::Tokens;

/// codex's home: `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    match crate::paths::non_empty_env("CODEX_HOME") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => crate::paths::user_home().ok().map(|h| h.join(".codex")),
    }
}

/// The rollout of thread `thread` under `home`, if written yet. Thread ids are UUIDv7, so
/// the id says when the thread began: only the day folders around that moment are looked
/// in (the folder is named in codex's local time, which may be a day either side of UTC).
/// An id that is not v7 (an older CLI) is looked for in the last three days' folders.
pub fn rollout(home: &Path, thread: &str) -> Option<PathBuf> {
    let began = uuid_v7_millis(thread)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .unwrap_or_else(chrono::Utc::now);
    let suffix = format!("-{thread}.jsonl");
    let sessions = home.join("sessions");
    [1i64, 0, -1].into_iter().find_map(|shift| {
        let day = began + chrono::Duration::days(shift);
        let folder = sessions.join(day.format("%Y/%m/%d").to_string());
        std::fs::read_dir(folder).ok()?.flatten().find_map(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            (name.starts_with("rollout-") && name.ends_with(&suffix)).then(|| e.path())
        })
    })
}

/// The milliseconds since the epoch a UUIDv7 begins with.
fn uuid_v7_millis(id: &str) -> Option<i64> {
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || hex.as_bytes()[12] != b'7' {
        return None;
    }
    i64::from_str_radix(&hex[..12], 16).ok()
}

/// A thread's token counts as codex reports them (every field a running total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Raw {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

impl Raw {
    fn covers(&self, o: &Raw) -> bool {
        self.input_tokens >= o.input_tokens
            && self.cached_input_tokens >= o.cached_input_tokens
            && self.cache_write_input_tokens >= o.cache_write_input_tokens
            && self.output_tokens >= o.output_tokens
    }

    /// As the other agents' kinds: `input_tokens` counts the cached ones (and those written
    /// to the cache) too, so input is what is left; reasoning is part of `output_tokens`.
    fn tokens(&self) -> Tokens {
        Tokens {
            input: self
                .input_tokens
                .saturating_sub(self.cached_input_tokens)
                .saturating_sub(self.cache_write_input_tokens),
            output: self.output_tokens,
            cache_creation: self.cache_write_input_tokens,
            cache_read: self.cached_input_tokens,
        }
    }

    fn minus(&self, o: &Raw) -> Raw {
        Raw {
            input_tokens: self.input_tokens - o.input_tokens,
            cached_input_tokens: self.cached_input_tokens - o.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens - o.cache_write_input_tokens,
            output_tokens: self.output_tokens - o.output_tokens,
        }
    }
}

/// Where a read stopped: the model of the turn under way and the thread's total counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub model: String,
    pub total: Raw,
}

/// What a piece of this log held (its mark: [`Seen`]).
pub type Piece = crate::usage::Piece<Seen>;

#[derive(Deserialize)]
struct Line {
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    payload: Option<Payload>,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: Option<String>,
    model: Option<String>,
    info: Option<Info>,
}

#[derive(Deserialize)]
struct Info {
    total_token_usage: Option<Raw>,
}

/// Reads the whole lines of `bytes` (a rollout from its mark on). Each `token_count` adds
/// what the thread's total grew by since the last one, to the model of the turn; a total
/// smaller than the last (a thread that counts anew) counts whole. A last line without its
/// newline is left for the next read; other lines count nothing.
pub fn read(bytes: &[u8], last: &Seen) -> Piece {
    let (mut piece, lines) = Piece::start(bytes, last);
    for raw in lines {
        // Most lines are messages and tool output, often long: only two kinds matter.
        if !crate::usage::contains(raw, b"\"turn_context\"")
            && !crate::usage::contains(raw, b"\"token_count\"")
        {
            continue;
        }
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            continue;
        };
        let Some(payload) = line.payload else {
            continue;
        };
        if line.kind.as_deref() == Some("turn_context") {
            if let Some(model) = payload.model.filter(|m| !m.is_empty()) {
                piece.last.model = model;
            }
            continue;
        }
        if line.kind.as_deref() != Some("event_msg")
            || payload.kind.as_deref() != Some("token_count")
        {
            continue;
        }
        let Some(total) = payload.info.and_then(|i| i.total_token_usage) else {
            continue;
        };
        let grown = if total.covers(&piece.last.total) {
            total.minus(&piece.last.total)
        } else {
            total
        };
        piece.last.total = total;
        let tokens = grown.tokens();
        if tokens.total() == 0 {
            continue;
        }
        let day = crate::usage::day_of(line.timestamp.as_deref());
        let model = if piece.last.model.is_empty() {
            // A rollout read from a mark made before any turn_context: codex names no model.
            "codex".to_string()
        } else {
            piece.last.model.clone()
        };
        crate::usage::add(&mut piece.usage, &model, &day, tokens);
    }
    piece
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(day: &str, input: u64, cached: u64, output: u64) -> String {
        serde_json::json!({
            "timestamp": format!("{day}T20:53:18.475Z"), "type": "event_msg",
            "payload": {"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": input, "cached_input_tokens": cached,
                    "cache_write_input_tokens": 0, "output_tokens": output,
                    "reasoning_output_tokens": 2, "total_tokens": input + output},
                "last_token_usage": {"input_tokens": 10}}}
        })
        .to_string()
            + "\n"
    }

    fn turn(model: &str) -> String {
        serde_json::json!({"timestamp": "2026-11-30T20:53:18.3Z", "type": "turn_context",
            "payload": {"model": model, "cwd": "/w"}})
        .to_string()
            + "\n"
    }

    #[test]
    fn totals_count_what_they_grew_by_to_the_turns_model() {
        let log = [
            r#"{"type":"session_meta","payload":{"id":"x","cwd":"/w"}}"#.to_string() + "\n",
            turn("gpt-5"),
            count("2026-11-30", 10, 4, 5),
            // The same total again (codex repeats it with rate limits): nothing new.
            count("2026-11-30", 10, 4, 5),
            turn("gpt-5-mini"),
            count("2026-12-01", 30, 10, 8),
        ]
        .concat();
        let piece = read(log.as_bytes(), &Seen::default());
        assert_eq!(piece.consumed, log.len());
        assert_eq!(
            piece.usage,
            vec![
                (
                    "gpt-5".to_string(),
                    "2026-11-30".to_string(),
                    Tokens {
                        input: 6,
                        output: 5,
                        cache_creation: 0,
                        cache_read: 4
                    }
                ),
                (
                    "gpt-5-mini".to_string(),
                    "2026-12-01".to_string(),
                    Tokens {
                        input: 14,
                        output: 3,
                        cache_creation: 0,
                        cache_read: 6
                    }
                ),
            ]
        );
        // Read on from the mark: only what grew since, to the model named before it.
        let more = count("2026-12-01", 40, 10, 9);
        let next = read(more.as_bytes(), &piece.last);
        assert_eq!(next.usage[0].0, "gpt-5-mini");
        assert_eq!(next.usage[0].2.input, 10);
        assert_eq!(next.usage[0].2.output, 1);
        // A total that went down counts whole; a cut line waits.
        let reset = count("2026-12-01", 3, 0, 1);
        let again = read(&reset.as_bytes()[..reset.len() - 1], &next.last);
        assert_eq!(
            again,
            Piece {
                last: next.last.clone(),
                ..Piece::default()
            }
        );
        assert_eq!(read(reset.as_bytes(), &next.last).usage[0].2.input, 3);
    }

    #[test]
    fn a_rollout_is_found_by_its_thread_in_the_days_around_its_start() {
        let dir = tempfile::tempdir().unwrap();
        // 0x01a22e3bc2a4 ms: 2026-11-30T20:53:18Z.
        let thread = "01a22e3b-c2a4-7e92-a977-10b0be56a033";
        assert_eq!(uuid_v7_millis(thread), Some(0x01a22e3bc2a4));
        assert_eq!(uuid_v7_millis("01a22e3b-c2a4-4e92-a977-10b0be56a033"), None);
        assert_eq!(rollout(dir.path(), thread), None);
        let folder = dir.path().join("sessions/2026/12/01");
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join(format!("rollout-2026-12-01T01-53-18-{thread}.jsonl"));
        std::fs::write(&file, "").unwrap();
        std::fs::write(folder.join("rollout-2026-12-01T01-53-18-other.jsonl"), "").unwrap();
        assert_eq!(rollout(dir.path(), thread), Some(file));
    }
}
