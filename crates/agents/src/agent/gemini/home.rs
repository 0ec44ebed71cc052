//! Gemini CLI: the hooks that report its state, and the home it runs in to get them.
//!
//! The CLI reads hooks only from settings files: the project's `.gemini/settings.json`
//! (in the worktree: it would show in `git status`, and the CLI records project hooks as
//! trusted in the person's `~/.gemini`), the person's own `~/.gemini/settings.json` (not
//! ours to change), and system files, which it skips unless they and every folder above
//! them belong to root. So a session runs with `GEMINI_CLI_HOME` set to a folder of its
//! own whose `.gemini` holds the person's settings with orchestra's hooks added, and a
//! symbolic link to everything else of the person's `.gemini` (sign-in, history, trusted
//! folders, extensions): the CLI reads and writes those where they always were.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The events that carry state. Hooks run synchronously, one process each: the per-chunk
/// model events would slow every answer, and compression says nothing about the turn.
pub const HOOK_EVENTS: &[&str] = &[
    "SessionStart",
    "BeforeAgent",
    "BeforeTool",
    "Notification",
    "AfterTool",
    "AfterAgent",
    "SessionEnd",
];

/// The folder, in a session's folder, that the CLI takes as its home.
pub const HOME_DIR: &str = "gemini-home";

#[derive(Debug, thiserror::Error)]
pub enum GeminiHomeError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `without`: what of orchestra's the agent then runs without (its hooks, its tools).
    #[error("{path}: {message}: the agent runs without orchestra's {without}")]
    Settings {
        path: PathBuf,
        message: String,
        without: &'static str,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> GeminiHomeError + '_ {
    move |source| GeminiHomeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The `hooks` settings that call `orchestra event` for each of [`HOOK_EVENTS`]. The CLI
/// may strip unknown variables from a hook's environment, so the command names the
/// session and orchestra's home itself.
pub fn hooks(orchestra: &Path, orchestra_home: &Path, session: &str) -> Value {
    let exe = shell_words::quote(&orchestra.to_string_lossy()).into_owned();
    let home = shell_words::quote(&orchestra_home.to_string_lossy()).into_owned();
    let session = shell_words::quote(session).into_owned();
    let mut hooks = Map::new();
    for event in HOOK_EVENTS {
        hooks.insert(
            event.to_string(),
            serde_json::json!([{ "hooks": [{
                // Shown while the hook runs ("Executing Hook: orchestra").
                "name": "orchestra",
                "type": "command",
                "command": format!(
                    "ORCHESTRA_HOME={home} {exe} event --from-hook --session {session} {event}"
                ),
                // Milliseconds.
                "timeout": 10000
            }]}]),
        );
    }
    Value::Object(hooks)
}

/// The person's settings (`text`, JSON with comments as the CLI reads it; `None` when
/// there is no file) with `hooks` added after the person's own hooks of each event.
pub fn merged_settings(text: Option<&str>, hooks: &Value) -> Result<Value, String> {
    let mut settings = parsed_settings(text)?;
    let Some(object) = settings.as_object_mut() else {
        return Err("not a JSON object".into());
    };
    let theirs = object
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(theirs) = theirs.as_object_mut() else {
        return Err("\"hooks\" is not an object".into());
    };
    for (event, ours) in hooks.as_object().into_iter().flatten() {
        let list = theirs
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(list) = list.as_array_mut() else {
            return Err(format!("hooks.{event} is not a list"));
        };
        list.extend(ours.as_array().into_iter().flatten().cloned());
    }
    Ok(settings)
}

/// The settings in `text` (JSON with comments; `None` or blank: none), an object.
fn parsed_settings(text: Option<&str>) -> Result<Value, String> {
    let settings = match text {
        Some(text) if !text.trim().is_empty() => {
            serde_json::from_str(&strip_json_comments(text)).map_err(|e| e.to_string())?
        }
        _ => Value::Object(Map::new()),
    };
    if settings.is_object() {
        Ok(settings)
    } else {
        Err("not a JSON object".into())
    }
}

/// The `mcpServers` entry of a stdio server (`argv`: program first) whose `tools` the CLI
/// offers the model (`mcp_NAME_TOOL`) and runs without asking (`trust`).
pub fn mcp_server(argv: &[String], env: &[(String, String)], tools: &[&str]) -> Value {
    let env: Map<String, Value> = env
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    serde_json::json!({
        "command": argv.first(),
        "args": argv.get(1..).unwrap_or_default(),
        "env": env,
        "trust": true,
        "includeTools": tools,
    })
}

/// The person's settings (`text`, as [`merged_settings`] reads it) with `server` as
/// `mcpServers.NAME`, beside the person's own servers (one of theirs by that name gives way).
pub fn with_mcp_server(text: Option<&str>, name: &str, server: &Value) -> Result<Value, String> {
    let mut settings = parsed_settings(text)?;
    let servers = settings
        .as_object_mut()
        .map(|o| {
            o.entry("mcpServers")
                .or_insert_with(|| Value::Object(Map::new()))
        })
        .and_then(Value::as_object_mut)
        .ok_or("\"mcpServers\" is not an object")?;
    servers.insert(name.to_string(), server.clone());
    Ok(settings)
}

/// `text` with `//` and `/* */` comments outside strings blanked out, as the CLI reads
/// its settings files.
fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Where the person's own CLI keeps its `.gemini`: `$GEMINI_CLI_HOME`, else `$HOME`.
pub fn person_home() -> PathBuf {
    crate::paths::non_empty_env("GEMINI_CLI_HOME")
        .or_else(|| crate::paths::non_empty_env("HOME"))
        .map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// Makes (or brings up to date) `home`, the session's Gemini home: `.gemini/settings.json`
/// is the settings of `person` (the person's Gemini home: `$GEMINI_CLI_HOME`, else
/// `$HOME`) with `hooks` added; every other entry of the person's `.gemini`, and their
/// `~/.agents`, is a symbolic link to the original. Entries of the person's made since
/// last time get their link; nothing of the person's is written.
pub fn prepare_home(home: &Path, person: &Path, hooks: &Value) -> Result<(), GeminiHomeError> {
    prepare_home_with(home, person, "hooks", |text| merged_settings(text, hooks))
}

/// [`prepare_home`] for a sandboxed session, whose box hides the person's home: the
/// person's `.gemini` files are copied once instead of linked (the copy is the CLI's to
/// change), their folders (other chats, extensions) and `~/.agents` left out, and links
/// made before by [`prepare_home`] taken away.
pub fn prepare_boxed_home(
    home: &Path,
    person: &Path,
    hooks: &Value,
) -> Result<(), GeminiHomeError> {
    prepare(home, person, "hooks", true, |text| {
        merged_settings(text, hooks)
    })
}

/// [`prepare_home`] with the settings `ours` makes of the person's (their text, if any);
/// `without` names what the agent lacks when it cannot read them.
pub fn prepare_home_with(
    home: &Path,
    person: &Path,
    without: &'static str,
    ours_of: impl FnOnce(Option<&str>) -> Result<Value, String>,
) -> Result<(), GeminiHomeError> {
    prepare(home, person, without, false, ours_of)
}

fn prepare(
    home: &Path,
    person: &Path,
    without: &'static str,
    boxed: bool,
    ours_of: impl FnOnce(Option<&str>) -> Result<Value, String>,
) -> Result<(), GeminiHomeError> {
    let theirs = person.join(".gemini");
    let ours = home.join(".gemini");
    crate::paths::private_dir(home).map_err(io(home))?;
    crate::paths::private_dir(&ours).map_err(io(&ours))?;
    let settings_path = theirs.join("settings.json");
    let text = match std::fs::read_to_string(&settings_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(&settings_path)(e)),
    };
    let settings = ours_of(text.as_deref()).map_err(|message| GeminiHomeError::Settings {
        path: settings_path.clone(),
        message,
        without,
    })?;
    let mut links: Vec<(PathBuf, PathBuf)> = Vec::new();
    match std::fs::read_dir(&theirs) {
        Ok(entries) => {
            for entry in entries {
                let entry = entry.map_err(io(&theirs))?;
                if entry.file_name() != "settings.json" {
                    links.push((entry.path(), ours.join(entry.file_name())));
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&theirs)(e)),
    }
    let agents = person.join(".agents");
    if agents.exists() {
        links.push((agents, home.join(".agents")));
    }
    for (target, link) in links {
        if boxed {
            copy_in(&target, &link)?;
            continue;
        }
        // Something already there is a link made last time, or the CLI's own file.
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&target, &link).map_err(io(&link))?;
        }
    }
    let path = ours.join("settings.json");
    let text = serde_json::to_string_pretty(&settings).unwrap_or_default();
    crate::paths::replace_private(&path, text).map_err(io(&path))
}

/// In a box, the person's file `target` as a copy at `link` (once: later the CLI's), a
/// link made there before taken away, a folder left out.
fn copy_in(target: &Path, link: &Path) -> Result<(), GeminiHomeError> {
    if std::fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::remove_file(link).map_err(io(link))?;
    }
    if std::fs::metadata(target).is_ok_and(|m| m.is_file())
        && std::fs::symlink_metadata(link).is_err()
    {
        std::fs::copy(target, link).map_err(io(link))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_name_the_session_and_home_quoted() {
        let h = hooks(
            Path::new("/opt/my tools/orchestra"),
            Path::new("/h"),
            "abc123",
        );
        assert_eq!(
            h.as_object().unwrap().keys().count(),
            HOOK_EVENTS.len(),
            "{h}"
        );
        let command = h["AfterAgent"][0]["hooks"][0]["command"].as_str().unwrap();
        assert_eq!(
            command,
            "ORCHESTRA_HOME=/h '/opt/my tools/orchestra' event --from-hook --session abc123 AfterAgent"
        );
        assert_eq!(h["AfterAgent"][0]["hooks"][0]["timeout"], 10000);
    }

    #[test]
    fn the_persons_settings_and_hooks_are_kept() {
        let ours = hooks(Path::new("/o"), Path::new("/h"), "s");
        let text = r#"{
            // the person's theme
            "ui": {"theme": "GitHub", "note": "a // not a comment /* nor this */"},
            /* their hook */
            "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "say done"}]}]}
        }"#;
        let merged = merged_settings(Some(text), &ours).unwrap();
        assert_eq!(merged["ui"]["theme"], "GitHub");
        assert_eq!(merged["ui"]["note"], "a // not a comment /* nor this */");
        let after = merged["hooks"]["AfterAgent"].as_array().unwrap();
        assert_eq!(after.len(), 2);
        assert_eq!(after[0]["hooks"][0]["command"], "say done");
        assert!(after[1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("AfterAgent"));
        assert_eq!(merged_settings(None, &ours).unwrap()["hooks"], ours);
        assert!(merged_settings(Some("[1]"), &ours).is_err());
        assert!(merged_settings(Some("{\"hooks\": 3}"), &ours).is_err());
        assert!(merged_settings(Some("{oops"), &ours).is_err());
        assert_eq!(
            strip_json_comments("{\"a\": \"\\\"//\"} // x\n"),
            "{\"a\": \"\\\"//\"} \n"
        );
    }

    #[test]
    fn the_orchestrators_server_joins_the_persons_settings_trusted_and_its_tools_only() {
        let server = mcp_server(
            &[
                "/opt/my tools/orchestra".into(),
                "mcp".into(),
                "--repo=/r".into(),
            ],
            &[("ORCHESTRA_HOME".into(), "/h".into())],
            &["dispatch", "status"],
        );
        assert_eq!(
            server,
            json!({
                "command": "/opt/my tools/orchestra",
                "args": ["mcp", "--repo=/r"],
                "env": {"ORCHESTRA_HOME": "/h"},
                "trust": true,
                "includeTools": ["dispatch", "status"],
            })
        );
        let text = r#"{
            // their own server, and one of theirs by our name
            "mcpServers": {"theirs": {"command": "t"}, "orchestra": {"command": "old"}},
            "ui": {"theme": "GitHub"}
        }"#;
        let merged = with_mcp_server(Some(text), "orchestra", &server).unwrap();
        assert_eq!(merged["mcpServers"]["theirs"], json!({"command": "t"}));
        assert_eq!(merged["mcpServers"]["orchestra"], server);
        assert_eq!(merged["ui"]["theme"], "GitHub");
        assert_eq!(
            with_mcp_server(None, "orchestra", &server).unwrap(),
            json!({"mcpServers": {"orchestra": server}})
        );
        assert!(with_mcp_server(Some("{\"mcpServers\": []}"), "orchestra", &server).is_err());
        assert!(with_mcp_server(Some("[1]"), "orchestra", &server).is_err());

        // Written in a home of its own; the person's settings untouched.
        let dir = tempfile::tempdir().unwrap();
        let person = dir.path().join("person");
        std::fs::create_dir_all(person.join(".gemini")).unwrap();
        std::fs::write(person.join(".gemini/settings.json"), text).unwrap();
        let home = dir.path().join("mcp/x-gemini-home");
        prepare_home_with(&home, &person, "tools", |t| {
            with_mcp_server(t, "orchestra", &server)
        })
        .unwrap();
        let written: Value = serde_json::from_str(
            &std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(written["mcpServers"]["orchestra"]["trust"], true);
        assert!(written.get("hooks").is_none(), "{written}");
        assert_eq!(
            std::fs::read_to_string(person.join(".gemini/settings.json")).unwrap(),
            text
        );
        std::fs::write(person.join(".gemini/settings.json"), "{oops").unwrap();
        let err = prepare_home_with(&home, &person, "tools", |t| {
            with_mcp_server(t, "orchestra", &server)
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("without orchestra's tools"),
            "{err}"
        );
    }

    #[test]
    fn a_boxed_home_copies_the_persons_files_where_it_had_links_and_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let person = dir.path().join("person");
        std::fs::create_dir_all(person.join(".gemini/tmp")).unwrap();
        std::fs::create_dir_all(person.join(".agents")).unwrap();
        std::fs::write(person.join(".gemini/settings.json"), "{}").unwrap();
        std::fs::write(person.join(".gemini/trustedFolders.json"), "{\"a\": 1}").unwrap();
        let home = dir.path().join("session/gemini-home");
        let ours = hooks(Path::new("/o"), Path::new("/h"), "s");
        // Dispatch made links; the box's start takes them away.
        prepare_home(&home, &person, &ours).unwrap();
        prepare_boxed_home(&home, &person, &ours).unwrap();
        let trusted = home.join(".gemini/trustedFolders.json");
        assert!(!std::fs::symlink_metadata(&trusted)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&trusted).unwrap(), "{\"a\": 1}");
        for gone in [".gemini/tmp", ".agents"] {
            assert!(
                std::fs::symlink_metadata(home.join(gone)).is_err(),
                "{gone}"
            );
        }
        // The copy is the CLI's: changed, it stays; the person's is never written.
        std::fs::write(&trusted, "{\"b\": 2}").unwrap();
        prepare_boxed_home(&home, &person, &ours).unwrap();
        assert_eq!(std::fs::read_to_string(&trusted).unwrap(), "{\"b\": 2}");
        assert_eq!(
            std::fs::read_to_string(person.join(".gemini/trustedFolders.json")).unwrap(),
            "{\"a\": 1}"
        );
    }

    #[test]
    fn the_home_links_the_persons_files_and_leaves_them_alone() {
        let dir = tempfile::tempdir().unwrap();
        let person = dir.path().join("person");
        std::fs::create_dir_all(person.join(".gemini/tmp")).unwrap();
        std::fs::create_dir_all(person.join(".agents")).unwrap();
        let settings = r#"{"ui": {"theme": "GitHub"}}"#;
        std::fs::write(person.join(".gemini/settings.json"), settings).unwrap();
        std::fs::write(person.join(".gemini/oauth_creds.json"), "{}").unwrap();
        let home = dir.path().join("session/gemini-home");
        let ours = hooks(Path::new("/o"), Path::new("/h"), "s");
        prepare_home(&home, &person, &ours).unwrap();
        let written: Value = serde_json::from_str(
            &std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(written["ui"], json!({"theme": "GitHub"}));
        assert_eq!(written["hooks"], ours);
        for linked in [".gemini/tmp", ".gemini/oauth_creds.json", ".agents"] {
            let meta = std::fs::symlink_metadata(home.join(linked)).unwrap();
            assert!(meta.file_type().is_symlink(), "{linked}");
        }
        assert_eq!(
            std::fs::read_to_string(person.join(".gemini/settings.json")).unwrap(),
            settings
        );
        // Again (a restart): new entries of the person's get links, the rest stays.
        std::fs::write(person.join(".gemini/projects.json"), "{}").unwrap();
        prepare_home(&home, &person, &ours).unwrap();
        assert!(
            std::fs::symlink_metadata(home.join(".gemini/projects.json"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // Settings the CLI cannot read either: no hooks, said so.
        std::fs::write(person.join(".gemini/settings.json"), "{oops").unwrap();
        let err = prepare_home(&home, &person, &ours).unwrap_err();
        assert!(
            err.to_string().contains("without orchestra's hooks"),
            "{err}"
        );
        // No .gemini at all: settings with the hooks alone.
        let bare = dir.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        let home2 = dir.path().join("session2/gemini-home");
        prepare_home(&home2, &bare, &ours).unwrap();
        assert!(home2.join(".gemini/settings.json").is_file());
        assert!(!bare.join(".gemini").exists());
    }
}
