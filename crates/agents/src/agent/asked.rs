//! What an agent asks a person to allow, wherever it was read (a Claude Code hook's JSON,
//! an approval on screen), and the one short phrase a person is told of it.

use std::path::Path;

use crate::notify::ASK_CHARS;

/// What an agent waits for a person to allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// A shell command.
    Run(String),
    /// A new file (or a whole file written over).
    Write(String),
    /// A change to a file.
    Edit(String),
    /// A web address.
    Fetch(String),
    /// A tool the agent names, nothing more known.
    Use(String),
}

impl Asked {
    /// What a screen rule's `asks` names: `None` for another word.
    pub fn of(kind: &str, what: &str) -> Option<Asked> {
        let what = what.to_string();
        Some(match kind {
            "run" => Asked::Run(what),
            "write" => Asked::Write(what),
            "edit" => Asked::Edit(what),
            "fetch" => Asked::Fetch(what),
            "use" => Asked::Use(what),
            _ => return None,
        })
    }

    /// The kinds a screen rule may name (for its error message).
    pub const KINDS: &'static str = "run, write, edit, fetch or use";

    fn text(&self) -> &str {
        match self {
            Asked::Run(t) | Asked::Write(t) | Asked::Edit(t) | Asked::Fetch(t) | Asked::Use(t) => t,
        }
    }

    /// A path under `dir` said from there ("src/login.rs" rather than the worktree's full
    /// path, which the agent shows as often as not); other text as it is.
    pub fn relative_to(self, dir: &Path) -> Asked {
        let rel = |p: String| match Path::new(&p).strip_prefix(dir) {
            Ok(r) if !r.as_os_str().is_empty() => r.to_string_lossy().into_owned(),
            _ => p,
        };
        match self {
            Asked::Write(p) => Asked::Write(rel(p)),
            Asked::Edit(p) => Asked::Edit(rel(p)),
            other => other,
        }
    }

    /// The one line a person reads after "<label> wants to": "run: npm test", "write
    /// src/login.rs". The agent's text is made one short line ([`crate::inert::cut`]:
    /// control characters shown, cut at [`ASK_CHARS`]): it is shown, never interpreted.
    /// `None` when nothing is left.
    pub fn phrase(&self) -> Option<String> {
        let one = crate::inert::cut(self.text(), ASK_CHARS);
        if one.is_empty() {
            return None;
        }
        Some(match self {
            Asked::Run(_) => format!("run: {one}"),
            Asked::Write(_) => format!("write {one}"),
            Asked::Edit(_) => format!("edit {one}"),
            Asked::Fetch(_) => format!("fetch {one}"),
            Asked::Use(_) => format!("use {one}"),
        })
    }
}

impl Asked {
    /// What a phrase ("edit src/login.rs", "run: npm test") names, without its kind's word;
    /// `None` for a phrase cut short (what it names is not all there) or an empty one.
    pub fn named_text(named: &str) -> Option<&str> {
        let named = named.trim();
        if named.ends_with('…') {
            return None;
        }
        let text = ["run:", "write", "edit", "fetch", "use"]
            .iter()
            .find_map(|word| named.strip_prefix(word))
            .map_or(named, str::trim);
        (!text.is_empty()).then_some(text)
    }

    /// Whether `named` names this question: its phrase as a person was told it ("run:
    /// npm test"), or the bare text ("npm test"), whitespace runs aside. A phrase cut
    /// short ("…") names what begins with what it kept; nothing else is taken for it, so a
    /// later question that only begins like the named one is not.
    pub fn is_named_by(&self, named: &str) -> bool {
        let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let named = flat(named);
        let Some(phrase) = self.phrase().map(|p| flat(&p)) else {
            return false;
        };
        let bare = flat(&crate::inert::cut(self.text(), ASK_CHARS));
        let names = |full: &str| {
            if named == full {
                return true;
            }
            // Both cut at the same bound: what each kept must be the same.
            match (named.strip_suffix('…'), full.strip_suffix('…')) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            }
        };
        names(&phrase) || names(&bare)
    }
}

/// What a hook says the agent asks the person for: Claude Code's PermissionRequest and
/// PreToolUse name the tool and its input, the Gemini CLI's ToolPermission notification
/// has `details`; `None` for a hook that names neither. Told as [`Asked::phrase`], as an
/// approval read from the screen is.
pub fn from_hook(hook: &serde_json::Value) -> Option<Asked> {
    fn text(v: Option<&serde_json::Value>) -> String {
        v.and_then(|v| v.as_str()).unwrap_or("").to_string()
    }
    if let Some(details) = hook
        .get("details")
        .filter(|_| hook.get("tool_name").is_none())
    {
        let field = |name: &str| text(details.get(name));
        return match field("type").as_str() {
            "exec" => Some(Asked::Run(field("command"))),
            // A file with nothing in it before is a new one.
            "edit" if field("originalContent").is_empty() => Some(Asked::Write(field("filePath"))),
            "edit" => Some(Asked::Edit(field("filePath"))),
            _ => None,
        };
    }
    // opencode's permission.asked: the permission, the patterns it would allow (a
    // command, a file) and the tool's own words in `metadata`.
    if let Some(permission) = hook
        .get("permission")
        .and_then(|v| v.as_str())
        .filter(|_| hook.get("patterns").is_some())
    {
        let first = text(hook.pointer("/patterns/0"));
        let meta = |name: &str| {
            Some(text(hook.pointer(&format!("/metadata/{name}")))).filter(|t| !t.is_empty())
        };
        return match permission {
            "bash" => Some(Asked::Run(meta("command").unwrap_or(first))),
            "edit" => Some(Asked::Edit(meta("filepath").unwrap_or(first))),
            "webfetch" => Some(Asked::Fetch(meta("url").unwrap_or(first))),
            other => Some(Asked::Use(other.to_string())),
        };
    }
    let tool = text(hook.get("tool_name"));
    let input = hook.get("tool_input");
    let field = |name: &str| text(input.and_then(|i| i.get(name)));
    let asked = match tool.as_str() {
        // A question or a plan is no permission: nothing to approve by name.
        "" => return None,
        tool if crate::agent::claude::hooks::asks_the_person(tool) => return None,
        "Bash" => Asked::Run(field("command")),
        "Write" => Asked::Write(field("file_path")),
        "Edit" | "MultiEdit" => Asked::Edit(field("file_path")),
        "NotebookEdit" => Asked::Edit(field("notebook_path")),
        "WebFetch" => Asked::Fetch(field("url")),
        _ => Asked::Use(tool),
    };
    Some(asked)
}

#[cfg(test)]
mod tests {
    use super::Asked;
    use std::path::Path;

    #[test]
    fn asked_names_the_command_or_the_file() {
        let hook = |v: &str| serde_json::from_str::<serde_json::Value>(v).unwrap();
        let asked = |v: &serde_json::Value| super::from_hook(v).and_then(|a| a.phrase());
        assert_eq!(
            asked(&hook(
                r#"{"tool_name":"Bash","tool_input":{"command":"npm test"}}"#
            ))
            .as_deref(),
            Some("run: npm test")
        );
        assert_eq!(
            asked(&hook(
                r#"{"tool_name":"Write","tool_input":{"file_path":"src/login.rs","content":"x"}}"#
            ))
            .as_deref(),
            Some("write src/login.rs")
        );
        let hostile = asked(&hook(
            r#"{"tool_name":"Bash","tool_input":{"command":"echo hi\n\u001b]0;x\u0007 && make"}}"#,
        ))
        .unwrap();
        assert!(!hostile.chars().any(char::is_control), "{hostile:?}");
        assert!(hostile.starts_with("run: echo hi"), "{hostile:?}");
        let long = format!(
            r#"{{"tool_name":"Bash","tool_input":{{"command":"{}"}}}}"#,
            "x".repeat(10_000)
        );
        assert!(asked(&hook(&long)).unwrap().chars().count() < 100);
        assert_eq!(asked(&serde_json::Value::Null), None);

        // The Gemini CLI's ToolPermission notifications, as 0.61.0 sent them.
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/screens/gemini/0.61.0/hooks");
        let gemini = |name: &str| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            super::from_hook(&hook(&text))
                .map(|a| a.relative_to(std::path::Path::new("/tmp/orchestra-capture.SWICkx/wt")))
        };
        assert_eq!(
            gemini("Notification.1796053111770353353.json"),
            Some(Asked::Run("touch created-by-shell.txt".into()))
        );
        assert_eq!(
            gemini("Notification.1796053128734426965.json"),
            Some(Asked::Write("new-file.txt".into()))
        );
    }

    #[test]
    fn a_question_is_named_only_by_its_own_phrase_or_text() {
        let asked = Asked::Run("npm  test".into());
        assert!(asked.is_named_by("run: npm test"));
        assert!(asked.is_named_by("npm test"));
        assert!(!asked.is_named_by("run: rm -rf ~/important"));
        assert!(!Asked::Run("npm test && rm -rf ~".into()).is_named_by("run: npm test"));
        assert!(!Asked::Write("npm test".into()).is_named_by("run: npm test"));
        let long = format!("echo {}", "x".repeat(200));
        let told = Asked::Run(long.clone()).phrase().unwrap();
        assert!(Asked::Run(long.clone()).is_named_by(&told));
        assert!(!Asked::Run(format!("{long} && rm -rf ~")).is_named_by("run: echo"));
        assert!(!Asked::Run(format!("echo {}", "y".repeat(200))).is_named_by(&told));
        assert_eq!(Asked::named_text("edit src/login.rs"), Some("src/login.rs"));
        assert_eq!(Asked::named_text("npm test"), Some("npm test"));
        assert_eq!(Asked::named_text(&told), None);
        assert_eq!(Asked::named_text("run: "), None);
    }

    #[test]
    fn a_phrase_is_one_short_line_and_paths_are_said_from_the_worktree() {
        assert_eq!(
            Asked::Run("npm test".into()).phrase().as_deref(),
            Some("run: npm test")
        );
        assert_eq!(Asked::Run(" \n\t".into()).phrase(), None);
        let hostile = Asked::Run(format!("a\u{1b}]0;x\u{7}\nb{}", "y".repeat(5000)))
            .phrase()
            .unwrap();
        assert!(crate::inert::is_inert(&hostile), "{hostile:?}");
        assert!(hostile.starts_with("run: a\\e]0;x\\x07\\nb"), "{hostile:?}");
        assert!(hostile.chars().count() <= "run: ".len() + super::ASK_CHARS);
        let wt = Path::new("/w/wt");
        assert_eq!(
            Asked::Write("/w/wt/src/login.rs".into()).relative_to(wt),
            Asked::Write("src/login.rs".into())
        );
        assert_eq!(
            Asked::Write("/elsewhere/x".into()).relative_to(wt),
            Asked::Write("/elsewhere/x".into())
        );
        assert_eq!(
            Asked::Run("/w/wt/x".into()).relative_to(wt),
            Asked::Run("/w/wt/x".into())
        );
    }
}
