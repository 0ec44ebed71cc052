//! The Gemini CLI's chat records (pure but for finding them): where a session's lie, and
//! the usage of the model's messages in the whole lines of a piece of one.
//!
//! Checked on the real CLI (0.61.0): each conversation is recorded, line by line, in
//! `<its home>/.gemini/tmp/<project>/chats/session-<time>-<first 8 of its session id>.jsonl`
//! (`<project>`: the folder's name in `.gemini/projects.json`; its subagents' in
//! `chats/<session id>/`). A message of the model (`"type": "gemini"`) carries its
//! `model` and `tokens` (`input` with `cached` among them, `output`, `thoughts` and
//! `tool` apart); a message is written again, whole, when the CLI adds to it. Its hooks'
//! payloads name the session (`session_id`) but carry no usage.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::Tokens;

/// The chat records of `sessions` (Gemini session ids) begun in `cwd`, under the Gemini
/// home `home` (the folder holding `.gemini`). Where `projects.json` does not name `cwd`,
/// every project's chats are looked in.
pub fn chat_files(home: &Path, cwd: &str, sessions: &[String]) -> Vec<PathBuf> {
    let tmp = home.join(".gemini").join("tmp");
    let projects = match project_of(home, cwd) {
        Some(name) => vec![tmp.join(name)],
        None => std::fs::read_dir(&tmp)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default(),
    };
    let mut files = Vec::new();
    for project in projects {
        let chats = project.join("chats");
        let Ok(entries) = std::fs::read_dir(&chats) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let ours = sessions.iter().any(|s| {
                name.starts_with("session-")
                    && s.get(..8)
                        .is_some_and(|short| name.ends_with(&format!("-{short}.jsonl")))
            });
            if ours {
                files.push(e.path());
            }
        }
        for s in sessions {
            let Ok(subs) = std::fs::read_dir(chats.join(s)) else {
                continue;
            };
            files.extend(
                subs.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "jsonl")),
            );
        }
    }
    files.sort();
    files
}

/// Whether the Gemini home `home` holds a chat begun in `cwd` that the model answered in:
/// only such a chat can the CLI resume. It also records a chat that holds only a slash
/// command (`/quit`), and `--resume latest` finds no session in that, and the CLI exits.
pub fn has_chat(home: &Path, cwd: &str) -> bool {
    let Some(project) = project_of(home, cwd) else {
        return false;
    };
    let chats = home.join(".gemini").join("tmp").join(project).join("chats");
    let Ok(entries) = std::fs::read_dir(chats) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with("session-")
            && name.ends_with(".jsonl")
            && std::fs::read(e.path()).is_ok_and(|bytes| model_answered(&bytes))
    })
}

/// Whether a chat record holds a message of the model (a line [`read`] would look at).
fn model_answered(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(|line| {
        serde_json::from_slice::<Line>(line).is_ok_and(|l| l.kind.as_deref() == Some("gemini"))
    })
}

/// The project folder name the CLI gave `cwd` (its real path, as the CLI records it).
fn project_of(home: &Path, cwd: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Projects {
        projects: std::collections::BTreeMap<String, String>,
    }
    let text = std::fs::read_to_string(home.join(".gemini").join("projects.json")).ok()?;
    let file: Projects = serde_json::from_str(&text).ok()?;
    let real = std::fs::canonicalize(cwd)
        .map_or_else(|_| cwd.to_string(), |p| p.to_string_lossy().into_owned());
    let name = file
        .projects
        .get(&real)
        .or_else(|| file.projects.get(cwd))?;
    // A name that would lead out of tmp/ is not the CLI's.
    (!name.is_empty() && !name.contains('/') && name != "..").then(|| name.clone())
}

/// The ids of the last messages counted (a message written again counts once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub ids: Vec<String>,
}

/// How many counted ids a mark keeps: the CLI writes again only the message it is at.
const KEEP: usize = 32;

/// What a piece of this log held (its mark: [`Seen`]).
pub type Piece = crate::usage::Piece<Seen>;

#[derive(Deserialize)]
struct Line {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    timestamp: Option<String>,
    model: Option<String>,
    tokens: Option<Counts>,
}

#[derive(Deserialize)]
struct Counts {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    cached: u64,
    #[serde(default)]
    thoughts: u64,
    #[serde(default)]
    tool: u64,
}

/// Reads the whole lines of `bytes` (a chat record from its mark on): each model message
/// with tokens counts once, as input the prompt less its cached part plus the tool-use
/// prompt, as cache read the cached part, as output the answer and the thinking (both are
/// billed as output). A last line without its newline is left for the next read.
pub fn read(bytes: &[u8], last: &Seen) -> Piece {
    let (mut piece, lines) = Piece::start(bytes, last);
    for raw in lines {
        if !crate::usage::contains(raw, b"\"tokens\"") {
            continue;
        }
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            continue;
        };
        if line.kind.as_deref() != Some("gemini") {
            continue;
        }
        let (Some(id), Some(t)) = (line.id, line.tokens) else {
            continue;
        };
        if piece.last.ids.contains(&id) {
            continue;
        }
        let tokens = Tokens {
            input: t.input.saturating_sub(t.cached) + t.tool,
            output: t.output + t.thoughts,
            cache_creation: 0,
            cache_read: t.cached,
        };
        let day = crate::usage::day_of(line.timestamp.as_deref());
        let model = line
            .model
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "gemini".to_string());
        crate::usage::add(&mut piece.usage, &model, &day, tokens);
        piece.last.ids.push(id);
        if piece.last.ids.len() > KEEP {
            piece.last.ids.remove(0);
        }
    }
    piece
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: &str, model: &str, tokens: Option<(u64, u64, u64, u64)>) -> String {
        let mut v = serde_json::json!({"id": id, "timestamp": "2026-11-30T20:53:32.960Z",
            "type": "gemini", "content": "one", "thoughts": [], "model": model});
        if let Some((input, output, cached, thoughts)) = tokens {
            v["tokens"] = serde_json::json!({"input": input, "output": output,
                "cached": cached, "thoughts": thoughts, "tool": 1, "total": 0});
        }
        v.to_string() + "\n"
    }

    #[test]
    fn a_model_message_counts_once_with_its_tokens() {
        let log = [
            r#"{"sessionId":"487e652f-7805","projectHash":"x","kind":"main"}"#.to_string() + "\n",
            r#"{"$set":{"messages":[{"id":"a","type":"gemini","tokens":{"input":99}}]}}"#
                .to_string()
                + "\n",
            r#"{"id":"u","type":"user","content":[{"text":"hi"}]}"#.to_string() + "\n",
            // Written first without tokens, then again with them, then again with a tool call.
            reply("m1", "gemini-2.5-pro", None),
            reply("m1", "gemini-2.5-pro", Some((10, 5, 4, 2))),
            reply("m1", "gemini-2.5-pro", Some((10, 5, 4, 2))),
            reply("m2", "gemini-2.5-flash", Some((20, 1, 0, 0))),
        ]
        .concat();
        let piece = read(log.as_bytes(), &Seen::default());
        assert_eq!(piece.consumed, log.len());
        assert_eq!(
            piece.usage[0],
            (
                "gemini-2.5-pro".to_string(),
                "2026-11-30".to_string(),
                Tokens {
                    input: 7,
                    output: 7,
                    cache_creation: 0,
                    cache_read: 4
                }
            )
        );
        assert_eq!(piece.usage[1].2.input, 21);
        // Written again after the mark: still once.
        let again = reply("m2", "gemini-2.5-flash", Some((20, 1, 0, 0)));
        assert!(read(again.as_bytes(), &piece.last).usage.is_empty());
        let cut = reply("m3", "gemini-2.5-flash", Some((1, 1, 0, 0)));
        assert_eq!(
            read(&cut.as_bytes()[..cut.len() - 1], &piece.last).consumed,
            0
        );
    }

    #[test]
    fn only_a_chat_the_model_answered_in_is_one_to_resume() {
        let quit_only = br#"{"sessionId":"s","projectHash":"p","startTime":"t"}
{"id":"u1","type":"user","content":[{"text":"/quit"}]}
"#;
        assert!(!model_answered(quit_only));
        let answered = br#"{"sessionId":"s","projectHash":"p","startTime":"t"}
{"id":"u1","type":"user","content":[{"text":"hello"}]}
{"id":"g1","type":"gemini","content":"hi","model":"m"}
"#;
        assert!(model_answered(answered));
        assert!(!model_answered(b"not json\n{\"type\":\"gem"));
    }

    #[test]
    fn chats_are_found_by_project_and_session() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let cwd = dir.path().join("repo.worktrees").join("gm");
        std::fs::create_dir_all(&cwd).unwrap();
        let cwd = std::fs::canonicalize(&cwd).unwrap();
        let cwd = cwd.to_string_lossy().into_owned();
        let chats = home.join(".gemini/tmp/gm/chats");
        std::fs::create_dir_all(chats.join("487e652f-7805-451e-a254-8be508a22d4e")).unwrap();
        let ours = chats.join("session-2026-11-30T20-53-487e652f.jsonl");
        std::fs::write(&ours, "").unwrap();
        std::fs::write(chats.join("session-2026-11-30T20-53-aaaaaaaa.jsonl"), "").unwrap();
        let sub = chats.join("487e652f-7805-451e-a254-8be508a22d4e/sub-1.jsonl");
        std::fs::write(&sub, "").unwrap();
        let ids = vec!["487e652f-7805-451e-a254-8be508a22d4e".to_string()];
        // No projects.json: every project is looked in.
        assert_eq!(
            chat_files(home, &cwd, &ids),
            vec![sub.clone(), ours.clone()]
        );
        std::fs::write(
            home.join(".gemini/projects.json"),
            serde_json::json!({"projects": {cwd.clone(): "gm"}}).to_string(),
        )
        .unwrap();
        assert_eq!(chat_files(home, &cwd, &ids), vec![sub, ours]);
        assert!(chat_files(home, &cwd, &[]).is_empty());
        assert!(chat_files(&home.join("none"), &cwd, &ids).is_empty());
    }
}
