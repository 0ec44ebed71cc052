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

#[cfg(test)]
mod tests {
    use super::Asked;
    use std::path::Path;

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
