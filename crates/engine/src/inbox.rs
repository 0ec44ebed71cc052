//! A sandboxed session's drop folder: inside its box the record (`state.db`) is not there,
//! so its hooks and `orchestra done` leave their word in `$ORCHESTRA_HOME/inbox/<id>/`,
//! the one folder of orchestra's home the box binds besides the session's own. Outside,
//! each status tick replays the folders into the record: the session a word is about is
//! the folder's, never what the file says, and a folder is read only so far (a few files,
//! each small), so an agent filling its own cannot stall the status line.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::error::Error;
use crate::state::Store;

/// What the box sets to its session's id: with the record out of reach, the words go to
/// the drop folder.
pub const SANDBOXED_ENV: &str = "ORCHESTRA_SANDBOXED";

/// Words read from one folder per tick, at most; the rest wait for the next ticks.
pub const MAX_WORDS: usize = 32;
/// Names listed from one folder per tick, at most (those read are the oldest of them).
const MAX_LISTED: usize = 1024;
/// A word's file larger than this is not read (and is removed): a hook's word is small.
pub const MAX_WORD_BYTES: u64 = 64 * 1024;
/// Sessions' folders looked at per tick, at most.
const MAX_FOLDERS: usize = 4096;

/// Session `id`'s drop folder.
pub fn dir(home: &Path, id: &str) -> PathBuf {
    crate::paths::inbox_dir(home, id)
}

/// The session whose box this process runs in: the box said so, and its drop folder is
/// here or the record is not. `None` outside a box (the variable alone, with the record
/// reachable and no such folder, is no box). The drop folder counts first: a command that
/// opened "the record" inside made an empty one in the box's own scratch home.
pub fn in_box(home: &Path) -> Option<String> {
    let id = crate::paths::non_empty_env(SANDBOXED_ENV)?;
    (dir(home, &id).is_dir() || !home.join("state.db").exists()).then_some(id)
}

/// A word left in a drop folder. It names no session: the folder does.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "word", rename_all = "lowercase")]
pub enum Word {
    /// A hook's event (what `hooks::receive` was given, its prompt left out).
    Hook {
        event: String,
        at: i64,
        hook: serde_json::Value,
    },
    /// `orchestra done`.
    Done { at: i64 },
}

impl Word {
    fn at(&self) -> i64 {
        match self {
            Word::Hook { at, .. } | Word::Done { at } => *at,
        }
    }
}

/// Leaves `word` in session `id`'s drop folder (inside its box: the folder is bound in).
pub fn leave(home: &Path, id: &str, word: &Word) -> Result<(), Error> {
    let folder = dir(home, id);
    if !folder.is_dir() {
        return Err(Error::BadInput(format!(
            "the record is out of reach here and {} is not there: is this session's box orchestra's?",
            folder.display()
        )));
    }
    let name = format!(
        "{:020}-{}.json",
        word.at().max(0),
        uuid::Uuid::new_v4().simple()
    );
    let path = folder.join(name);
    let text = serde_json::to_string(word).unwrap_or_default();
    crate::paths::replace_private(&path, text)
        .map_err(Error::io(format!("writing {}", path.display())))
}

/// Whether any drop folder holds something (a status tick opens the record only then).
pub fn waiting(home: &Path) -> bool {
    folders(home)
        .iter()
        .any(|(_, f)| std::fs::read_dir(f).is_ok_and(|mut e| e.next().is_some()))
}

/// The drop folders and their sessions' ids (the folders' names).
fn folders(home: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(home.join("inbox")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .take(MAX_FOLDERS)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect()
}

/// Records the drop folders' words, each folder's oldest first and at most [`MAX_WORDS`]
/// of them, each file removed once read (a word that means nothing, or is not a word, is
/// dropped). A busy record stops it there, the rest kept.
pub fn replay(ctx: &Context, store: &Store) -> Result<(), Error> {
    for (id, folder) in folders(&ctx.home) {
        let Some(session) = store.session_by_id(&id)? else {
            continue;
        };
        let mut done_said = false;
        for file in oldest(&folder) {
            // One `done` a tick is all a session needs (each wakes the dependency engine).
            let word = read_word(&file).filter(|w| {
                let again = done_said && matches!(w, Word::Done { .. });
                done_said |= matches!(w, Word::Done { .. });
                !again
            });
            if let Some(word) = word {
                match say(ctx, store, &session, word) {
                    Err(e) if e.is_busy() => return Err(e),
                    _ => {}
                }
            }
            let _ = std::fs::remove_file(&file);
        }
    }
    Ok(())
}

fn say(
    ctx: &Context,
    store: &Store,
    session: &crate::state::Session,
    word: Word,
) -> Result<(), Error> {
    match word {
        Word::Hook { event, at, hook } => {
            crate::hooks::record_word(ctx, store, &session.id, event, at, hook)
        }
        Word::Done { .. } => crate::session::done::finish(ctx, store, session).map(drop),
    }
}

/// The oldest words' files of a folder, a bounded number of them.
fn oldest(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .take(MAX_LISTED)
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files.truncate(MAX_WORDS);
    files
}

/// A word's file read: a regular file itself (no link followed, no pipe waited on), no
/// larger than [`MAX_WORD_BYTES`].
fn read_word(path: &Path) -> Option<Word> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_WORD_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_WORD_BYTES).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_read_only_so_far_and_never_through_a_link_or_a_pipe() {
        let folder = tempfile::tempdir().unwrap();
        for i in 0..(MAX_WORDS + 10) {
            std::fs::write(folder.path().join(format!("{i:05}.json")), "{}").unwrap();
        }
        let files = oldest(folder.path());
        assert_eq!(files.len(), MAX_WORDS);
        assert!(files[0].ends_with("00000.json"));
        let outside = folder.path().join("outside");
        std::fs::write(&outside, r#"{"word":"done","at":1}"#).unwrap();
        let link = folder.path().join("link.json");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(read_word(&link).is_none());
        assert!(read_word(&outside).is_some());
        let pipe = folder.path().join("pipe.json");
        let c = std::ffi::CString::new(pipe.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(made, 0);
        assert!(read_word(&pipe).is_none());
        let big = folder.path().join("big.json");
        std::fs::write(&big, vec![b' '; MAX_WORD_BYTES as usize + 1]).unwrap();
        assert!(read_word(&big).is_none());
    }

    #[test]
    fn a_word_names_no_session_whatever_its_file_says() {
        let word: Word = serde_json::from_str(
            r#"{"word":"hook","id":"another","event":"Stop","at":3,"hook":null}"#,
        )
        .unwrap();
        assert!(matches!(word, Word::Hook { ref event, at: 3, .. } if event == "Stop"));
    }
}
