//! Claude Code's conversation logs (pure): where one lies, and the usage of the assistant
//! messages in the whole lines of a piece of one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::Tokens;

/// The folder Claude Code keeps a working folder's conversations in, under its
/// `projects/`: the path with every character but ASCII letters and digits made `-`
/// (checked on the real CLI: `/tmp/a.b/my_repo` → `-tmp-a-b-my-repo`).
pub fn project_folder(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The log files of conversation `uuid` begun in `cwd`, under claude's config folder:
/// `projects/<folder>/<uuid>.jsonl` and its subagents' logs beside it
/// (`<uuid>/subagents/*.jsonl`). When there is no such folder (claude shortens very long
/// paths its own way), the log of that name in any project folder; a folder without the
/// log is a conversation that has written nothing yet, and costs no scan.
pub fn log_files(config: &Path, cwd: &str, uuid: &str) -> Vec<PathBuf> {
    let projects = config.join("projects");
    let name = format!("{uuid}.jsonl");
    let mut folder = projects.join(project_folder(cwd));
    if !folder.is_dir() {
        let found = std::fs::read_dir(&projects).ok().and_then(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .find(|p| p.join(&name).is_file())
        });
        match found {
            Some(f) => folder = f,
            None => return Vec::new(),
        }
    }
    if !folder.join(&name).is_file() {
        return Vec::new();
    }
    let mut files = vec![folder.join(&name)];
    if let Ok(entries) = std::fs::read_dir(folder.join(uuid).join("subagents")) {
        let mut subs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        subs.sort();
        files.extend(subs);
    }
    files
}

/// The last assistant message counted in a log: claude writes one line per content block
/// of a message, each with the message's usage so far, so a line with the same id replaces
/// what was counted for it rather than adding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    pub id: String,
    pub model: String,
    pub day: String,
    pub tokens: Tokens,
}

/// What a piece of this log held (its mark: [`Counted`]).
pub type Piece = crate::usage::Piece<Counted>;

#[derive(Deserialize)]
struct Line {
    #[serde(rename = "type")]
    kind: Option<String>,
    timestamp: Option<String>,
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Message {
    id: Option<String>,
    model: Option<String>,
    usage: Option<ApiUsage>,
}

#[derive(Deserialize)]
struct ApiUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
}

/// Reads the whole lines of `bytes` (a log from its mark on; `last`: the message counted
/// last before it). A last line without its newline is left for the next read; a line
/// that is not JSON, or not an assistant message with usage, counts nothing. claude's
/// own `<synthetic>` messages (errors it shows as replies) used no tokens.
pub fn read(bytes: &[u8], last: &Counted) -> Piece {
    let (mut piece, lines) = Piece::start(bytes, last);
    for raw in lines {
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            continue;
        };
        if line.kind.as_deref() != Some("assistant") {
            continue;
        }
        let Some(message) = line.message else {
            continue;
        };
        let Some(usage) = message.usage else {
            continue;
        };
        let model = message.model.unwrap_or_default();
        if model.is_empty() || model == "<synthetic>" {
            continue;
        }
        let tokens = Tokens {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cache_creation: usage.cache_creation_input_tokens,
            cache_read: usage.cache_read_input_tokens,
        };
        let id = message.id.unwrap_or_default();
        let day = crate::usage::day_of(line.timestamp.as_deref());
        if !id.is_empty() && id == piece.last.id {
            // The same message again: count only what it grew by (a kind never shrinks
            // in a later line; if one did, the larger number stands).
            let before = piece.last.tokens;
            let grown = Tokens {
                input: tokens.input.saturating_sub(before.input),
                output: tokens.output.saturating_sub(before.output),
                cache_creation: tokens.cache_creation.saturating_sub(before.cache_creation),
                cache_read: tokens.cache_read.saturating_sub(before.cache_read),
            };
            piece.last.tokens = Tokens {
                input: before.input.max(tokens.input),
                output: before.output.max(tokens.output),
                cache_creation: before.cache_creation.max(tokens.cache_creation),
                cache_read: before.cache_read.max(tokens.cache_read),
            };
            if grown.total() > 0 {
                crate::usage::add(&mut piece.usage, &piece.last.model, &piece.last.day, grown);
            }
            continue;
        }
        crate::usage::add(&mut piece.usage, &model, &day, tokens);
        piece.last = Counted {
            id,
            model,
            day,
            tokens,
        };
    }
    piece
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(id: &str, model: &str, input: u64, output: u64, cc: u64, cr: u64) -> String {
        serde_json::json!({
            "type": "assistant",
            "timestamp": "2026-11-30T19:02:47.483Z",
            "message": {"id": id, "model": model, "usage": {
                "input_tokens": input, "output_tokens": output,
                "cache_creation_input_tokens": cc, "cache_read_input_tokens": cr}}
        })
        .to_string()
            + "\n"
    }

    #[test]
    fn a_log_is_found_in_its_folder_else_in_any_and_subagents_count() {
        let dir = tempfile::tempdir().unwrap();
        let projects = dir.path().join("projects");
        let own = projects.join(project_folder("/w/a"));
        std::fs::create_dir_all(own.join("u1").join("subagents")).unwrap();
        std::fs::write(own.join("u1.jsonl"), "").unwrap();
        std::fs::write(own.join("u1").join("subagents").join("agent-x.jsonl"), "").unwrap();
        assert_eq!(log_files(dir.path(), "/w/a", "u1").len(), 2);
        // Not written yet: nothing, no error.
        assert!(log_files(dir.path(), "/w/a", "u2").is_empty());
        // A folder named otherwise (claude's shortened long paths): found by name.
        let other = projects.join("-shortened-123");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("u3.jsonl"), "").unwrap();
        assert_eq!(
            log_files(dir.path(), "/a/very/long/path", "u3"),
            vec![other.join("u3.jsonl")]
        );
        assert!(log_files(&dir.path().join("none"), "/w/a", "u1").is_empty());
    }

    #[test]
    fn the_folder_is_the_path_with_every_other_character_a_dash() {
        assert_eq!(
            project_folder("/tmp/costprobe.YwrM/wt.dir/my_repo.x"),
            "-tmp-costprobe-YwrM-wt-dir-my-repo-x"
        );
    }

    #[test]
    fn usage_is_summed_per_model_and_a_message_counts_once() {
        let log = [
            r#"{"type":"user","message":{"role":"user","content":"hi"}}"#.to_string() + "\n",
            assistant("m1", "claude-a", 10, 5, 100, 1000),
            // The same message's next content block: grown output only.
            assistant("m1", "claude-a", 10, 9, 100, 1000),
            assistant("m2", "claude-a", 1, 2, 3, 4),
            assistant("m3", "claude-b", 7, 7, 0, 0),
            assistant("s", "<synthetic>", 0, 0, 0, 0),
            "not json\n".to_string(),
        ]
        .concat();
        let piece = read(log.as_bytes(), &Counted::default());
        assert_eq!(piece.consumed, log.len());
        let a: Tokens = piece.usage.iter().filter(|(m, _, _)| m == "claude-a").fold(
            Tokens::default(),
            |mut s, (_, _, t)| {
                s.add(t);
                s
            },
        );
        assert_eq!(
            a,
            Tokens {
                input: 11,
                output: 11,
                cache_creation: 103,
                cache_read: 1004
            }
        );
        assert_eq!(piece.last.id, "m3");
        assert_eq!(piece.usage.len(), 2);
        assert_eq!(piece.usage[0].1, "2026-11-30");
    }

    #[test]
    fn a_line_without_its_newline_is_left_for_the_next_read() {
        let whole = assistant("m1", "claude-a", 10, 5, 0, 0);
        let next = assistant("m2", "claude-a", 1, 1, 0, 0);
        let log = format!("{whole}{}", &next[..20]);
        let piece = read(log.as_bytes(), &Counted::default());
        assert_eq!(piece.consumed, whole.len());
        assert_eq!(piece.usage.len(), 1);
        // The next read goes on from the mark, with the message counted before.
        let piece2 = read(next.as_bytes(), &piece.last);
        assert_eq!(piece2.usage[0].2.input, 1);
        // A message split across two reads still counts once.
        let again = read(whole.as_bytes(), &piece.last);
        assert!(again.usage.is_empty());
        assert_eq!(read(b"", &Counted::default()), Piece::default());
    }
}
