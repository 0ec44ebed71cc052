//! What an agent asks a person on its screen, so an answer is chosen by its label:
//! selection menus (permission prompts, the trust dialog), their entries and where the
//! cursor is (Claude Code marks it `❯`, codex `›`); and questions answered by typing a key
//! (aider's "(Y)es/(N)o").

use regex::Regex;
use std::sync::LazyLock;

// A narrow window squeezes the space out after the number ("2.Yes, and always allow…").
static NUMBERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*([❯›]\s*)?(\d+)\.\s*(\S.*?)\s*$").expect("valid regex"));
static CURSOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,2}❯\s*(.+?)\s*$").expect("valid regex"));
static FOOTER: LazyLock<Regex> = LazyLock::new(|| {
    // Claude: "Esc to cancel", "Enter to confirm · Esc to cancel"; codex: "Press enter to
    // confirm or esc to cancel" (approvals), "enter continue · esc back" (trust dialog),
    // "enter to submit | esc to cancel" (an MCP tool's approval).
    Regex::new(
        r"(?i)^\s*(esc to cancel|enter to confirm|enter to select|press enter to confirm|enter continue\b|enter to submit\b)",
    )
    .expect("valid regex")
});
/// An entry of a menu drawn in a box (Gemini CLI): "│ ● 1. Allow once   │".
static BOXED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*│\s*(●\s*)?(\d+)\.\s+(.+?)\s*│?\s*$").expect("valid regex"));
/// A line inside a box, and the box's bottom edge.
static IN_BOX: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*│").expect("valid regex"));
static BOX_BOTTOM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*╰─").expect("valid regex"));
/// An input line below a box: the box is history, not a question.
static INPUT_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s?[>❯]\s").expect("valid regex"));

/// A question on the last line, its answers named by a key in parentheses and a default
/// in brackets: "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: " and what is
/// typed after it.
static QUESTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<text>.*?)\s*(?P<options>\([A-Za-z]\)[^/\[]*(?:/\([A-Za-z]\)[^/\[]*)+)\[[^\]]+\]:(?P<typed>.*)$",
    )
    .expect("valid regex")
});
static OPTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(.*)\(([A-Za-z])\)(.*)$").expect("valid regex"));

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Menu {
    pub entries: Vec<String>,
    pub cursor: usize,
}

/// What a person wants from a menu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Yes,
    /// Yes, and stop asking for this kind of action (never "switch to auto mode").
    Always,
    No,
}

/// A question answered by typing the key of an answer, then Enter (aider's questions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// "Run shell command?"
    pub text: String,
    /// (the key to type, the answer's label): ("y", "Yes"), ("d", "Don't ask again").
    pub options: Vec<(String, String)>,
    /// What is typed after the question so far, trimmed.
    pub typed: String,
}

/// What waits for a person's answer at the bottom of a screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asking {
    Menu(Menu),
    Question(Question),
}

/// The menu or question at the bottom of `screen`, if one is open.
pub fn asking(screen: &str) -> Option<Asking> {
    parse(screen)
        .map(Asking::Menu)
        .or_else(|| parse_question(screen).map(Asking::Question))
}

/// The question on the last non-empty line of `screen`, if that line is one.
pub fn parse_question(screen: &str) -> Option<Question> {
    let last = screen.lines().rev().find(|l| !l.trim().is_empty())?;
    let c = QUESTION.captures(last.trim_end())?;
    let options = c["options"]
        .split('/')
        .map(|option| {
            let o = OPTION.captures(option.trim())?;
            let label = format!("{}{}{}", &o[1], &o[2], &o[3]);
            Some((o[2].to_ascii_lowercase(), label))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Question {
        text: c["text"].trim().to_string(),
        options,
        typed: c["typed"].trim().to_string(),
    })
}

impl Question {
    /// The answer that gives `answer`, by its label; `None` when the question has none.
    pub fn choose(&self, answer: Answer) -> Option<usize> {
        let find = |label: &str| {
            self.options
                .iter()
                .position(|(_, l)| l.eq_ignore_ascii_case(label))
        };
        match answer {
            Answer::Yes => find("yes"),
            // "All" says yes to this and to what else the same answer asks; never
            // "Don't ask again", which means no from then on.
            Answer::Always => find("all"),
            Answer::No => find("no"),
        }
    }

    /// The labels of the question's answers: "Yes", "No", "Don't ask again".
    pub fn labels(&self) -> Vec<String> {
        self.options
            .iter()
            .map(|(_, label)| label.clone())
            .collect()
    }
}

/// The menu at the bottom of `screen` (its footer the last line, or the last box on the
/// screen with no input line below it), if one is open.
pub fn parse(screen: &str) -> Option<Menu> {
    let lines: Vec<&str> = screen
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let footer = lines.len().checked_sub(1)?;
    if !FOOTER.is_match(lines[footer]) {
        return parse_boxed(&lines);
    }
    let block = &lines[footer.saturating_sub(20)..footer];
    // Numbered menus: "❯ 1. Yes", "  2. No" (wrapped labels continue on unnumbered lines).
    let numbered: Vec<(bool, String)> = block
        .iter()
        .filter_map(|l| {
            NUMBERED
                .captures(l)
                .map(|c| (c.get(1).is_some(), c[3].to_string()))
        })
        .collect();
    if numbered.len() >= 2 {
        let cursor = numbered.iter().position(|(on, _)| *on)?;
        return Some(Menu {
            entries: numbered.into_iter().map(|(_, label)| label).collect(),
            cursor,
        });
    }
    // Unnumbered: the lines just above the footer, the cursor line among them, indented.
    let mut entries = Vec::new();
    let mut cursor = None;
    for line in block.iter().rev() {
        if let Some(c) = CURSOR.captures(line) {
            entries.push(c[1].to_string());
            cursor = Some(entries.len() - 1);
        } else if line.starts_with("   ") {
            entries.push(line.trim().to_string());
        } else {
            break;
        }
    }
    entries.reverse();
    // Read the cursor first: without one there may be no entries to count back from.
    let from_bottom = cursor?;
    let cursor = entries.len() - 1 - from_bottom;
    (entries.len() >= 2).then_some(Menu { entries, cursor })
}

/// A menu in the last box on screen (Gemini CLI's approvals and trust dialog): numbered
/// entries from 1, `●` on the one the cursor is on, nothing but the box's bottom edge and
/// notices below them, and no input line below the box.
fn parse_boxed(lines: &[&str]) -> Option<Menu> {
    let start = lines.len().saturating_sub(40);
    let last = (start..lines.len())
        .rev()
        .find(|&i| BOXED.is_match(lines[i]))?;
    let below = &lines[last + 1..];
    let bottom = below.iter().position(|l| BOX_BOTTOM.is_match(l))?;
    if below[..bottom].iter().any(|l| !IN_BOX.is_match(l))
        || below[bottom + 1..]
            .iter()
            .any(|l| INPUT_LINE.is_match(l) || IN_BOX.is_match(l))
    {
        return None;
    }
    let mut entries: Vec<(bool, u32, String)> = Vec::new();
    for line in lines[start..=last].iter().rev() {
        let Some(c) = BOXED.captures(line) else {
            break;
        };
        let number = c[2].parse().ok()?;
        entries.push((c.get(1).is_some(), number, c[3].to_string()));
    }
    entries.reverse();
    let numbered_from_one = entries.iter().zip(1..).all(|((_, n, _), want)| *n == want);
    let cursor = entries.iter().position(|(on, _, _)| *on)?;
    if entries.len() < 2 || !numbered_from_one || entries.iter().filter(|e| e.0).count() != 1 {
        return None;
    }
    Some(Menu {
        entries: entries.into_iter().map(|(_, _, label)| label).collect(),
        cursor,
    })
}

impl Menu {
    /// The entry that gives `answer`, by its label; `None` when the menu has none (deny
    /// then means Esc).
    pub fn choose(&self, answer: Answer) -> Option<usize> {
        // An entry's label is read up to a column of description beside it (codex's MCP
        // approval: "Allow                   Run the tool and continue").
        let lower: Vec<String> = self
            .entries
            .iter()
            .map(|e| e.split("  ").next().unwrap_or(e).to_lowercase())
            .collect();
        let auto = |e: &str| e.contains("auto mode");
        let find = |pred: &dyn Fn(&str) -> bool| lower.iter().position(|e| pred(e));
        match answer {
            Answer::Yes => find(&|e| is_trust(e))
                .or_else(|| find(&|e| e == "yes" || e == "allow once" || e == "allow"))
                .or_else(|| find(&|e| e.starts_with("yes") && !e.contains(" and ") && !auto(e))),
            Answer::Always => find(&|e| {
                !auto(e)
                    && (e.contains("don't ask again")
                        || e.contains("always allow")
                        || e.contains("allow always")
                        || e == "allow tool for this session"
                        || e.contains("allow all edits")
                        || e.contains("accept edits")
                        || e == "allow for this session")
            })
            .or_else(|| find(&|e| is_trust(e))),
            Answer::No => find(&|e| e == "no" || e.starts_with("no,") || e.starts_with("no ")),
        }
    }

    /// Whether this is a folder-trust dialog.
    pub fn is_trust_dialog(&self) -> bool {
        self.entries.iter().any(|e| is_trust(&e.to_lowercase()))
    }
}

/// The entry (lower case) that trusts the folder: claude's "Yes, I trust this folder" (2.0:
/// "Yes, proceed"), gemini's "Trust folder (name)" — never its "Trust parent folder" —
/// and codex's "Trust and continue".
fn is_trust(entry: &str) -> bool {
    entry.contains("trust this folder")
        || entry == "yes, proceed"
        || entry.starts_with("trust folder")
        || entry.starts_with("trust and continue")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/screens/{name}",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../..")
        ))
        .unwrap()
    }

    #[test]
    fn real_menus_are_read_and_answered_by_label() {
        let bash = parse(&fixture("claude/2.1.332/waiting-bash-menu.txt")).unwrap();
        assert_eq!(bash.entries.len(), 4);
        assert_eq!(bash.cursor, 0);
        assert_eq!(bash.choose(Answer::Yes), Some(0));
        assert_eq!(bash.choose(Answer::Always), Some(1), "{:?}", bash.entries);
        assert_eq!(bash.choose(Answer::No), Some(3));
        let write = parse(&fixture("claude/2.1.332/waiting-write-menu.txt")).unwrap();
        assert_eq!(
            write.choose(Answer::Always),
            Some(1),
            "accept edits, not auto mode: {:?}",
            write.entries
        );
        let old = parse(&fixture("claude/2.0.77/waiting-bash-menu.txt")).unwrap();
        assert_eq!(old.choose(Answer::Always), Some(1));
        assert_eq!(
            old.choose(Answer::No),
            None,
            "2.0.77 has no No: deny presses Esc"
        );
        let old_write = parse(&fixture("claude/2.0.77/waiting-write-menu.txt")).unwrap();
        assert_eq!(old_write.choose(Answer::Always), Some(1));

        let trust = parse(&fixture("claude/2.1.332/waiting-trust-dialog.txt")).unwrap();
        assert_eq!(trust.entries, ["No, exit", "Yes, I trust this folder"]);
        assert_eq!(trust.cursor, 0);
        assert!(trust.is_trust_dialog());
        assert_eq!(
            trust.choose(Answer::Yes),
            Some(1),
            "the entry that trusts, not the default"
        );
        let old_trust = parse(&fixture("claude/2.0.77/waiting-trust-dialog.txt")).unwrap();
        assert_eq!(old_trust.choose(Answer::Yes), Some(0));

        // 2.1.100 in a 50-column window: "  2.Yes, and always allow access to wt/"
        // (no space after the number, the label wrapped).
        let narrow = parse(&fixture("claude/2.1.100/waiting-bash-menu-narrow.txt")).unwrap();
        assert_eq!(narrow.entries.len(), 3, "{:?}", narrow.entries);
        assert_eq!(narrow.choose(Answer::Always), Some(1));
        assert_eq!(narrow.choose(Answer::No), Some(2));

        for idle in [
            "aider/0.86.2/waiting-shell-command.txt",
            "gemini/0.61.0/idle-quoted-menu.txt",
            "gemini/0.61.0/idle-after-tool.txt",
            "gemini/0.61.0/busy-shell-running.txt",
            "gemini/0.61.0/exited-quit.txt",
            "codex/0.171.0/idle-quoted-menu.txt",
            "codex/0.171.0/idle-after-turn.txt",
            "codex/0.171.0/busy-running-command.txt",
            "claude/2.1.332/idle-quoted-menu.txt",
            "claude/2.1.332/idle-after-turn.txt",
            "claude/2.0.77/busy-streaming.txt",
        ] {
            assert_eq!(parse(&fixture(idle)), None, "{idle}");
        }
    }

    #[test]
    fn aider_questions_are_read_and_answered_by_key() {
        let shell = parse_question(&fixture("aider/0.86.2/waiting-shell-command.txt")).unwrap();
        assert_eq!(shell.text, "Run shell command?");
        assert_eq!(shell.labels(), ["Yes", "No", "Don't ask again"]);
        assert_eq!(shell.typed, "");
        assert_eq!(
            shell.choose(Answer::Yes).map(|i| &shell.options[i].0[..]),
            Some("y")
        );
        assert_eq!(
            shell.choose(Answer::No).map(|i| &shell.options[i].0[..]),
            Some("n")
        );
        assert_eq!(
            shell.choose(Answer::Always),
            None,
            "\"Don't ask again\" means no from then on: never an approval"
        );
        let file = parse_question(&fixture("aider/0.86.2/waiting-new-file.txt")).unwrap();
        assert_eq!(file.text, "Create new file?");
        assert_eq!(file.labels(), ["Yes", "No"]);
        let ignore =
            parse_question(&fixture("aider/0.86.2/waiting-gitignore-question.txt")).unwrap();
        assert_eq!(ignore.text, "Add .aider* to .gitignore (recommended)?");
        let group =
            parse_question("Create new file? (Y)es/(N)o/(A)ll/(S)kip all [Yes]: y").unwrap();
        assert_eq!(group.typed, "y");
        assert_eq!(
            group
                .choose(Answer::Always)
                .map(|i| &group.options[i].1[..]),
            Some("All")
        );
        assert!(matches!(
            asking(&fixture("aider/0.86.2/waiting-command-output.txt")),
            Some(Asking::Question(_))
        ));
        assert!(matches!(
            asking(&fixture("claude/2.1.332/waiting-bash-menu.txt")),
            Some(Asking::Menu(_))
        ));
        // Answered questions above the prompt, and the words quoted in prose, ask nothing.
        for idle in [
            "aider/0.86.2/idle-after-command.txt",
            "aider/0.86.2/idle-quoted-question.txt",
            "aider/0.86.2/busy-running-command.txt",
            "claude/2.1.332/waiting-bash-menu.txt",
        ] {
            assert_eq!(parse_question(&fixture(idle)), None, "{idle}");
        }
    }

    #[test]
    fn gemini_menus_in_boxes_are_read_and_answered_by_label() {
        let shell = parse(&fixture("gemini/0.61.0/waiting-shell-menu.txt")).unwrap();
        assert_eq!(
            shell.entries,
            [
                "Allow once",
                "Allow for this session",
                "No, suggest changes (esc)"
            ]
        );
        assert_eq!(shell.cursor, 0);
        assert_eq!(shell.choose(Answer::Yes), Some(0));
        assert_eq!(shell.choose(Answer::Always), Some(1));
        assert_eq!(shell.choose(Answer::No), Some(2));
        assert!(!shell.is_trust_dialog());
        let narrow = parse(&fixture("gemini/0.61.0/waiting-shell-menu-narrow.txt")).unwrap();
        assert_eq!(narrow, shell);
        let write = parse(&fixture("gemini/0.61.0/waiting-write-menu.txt")).unwrap();
        assert_eq!(write.entries.len(), 4, "{:?}", write.entries);
        assert_eq!(write.choose(Answer::No), Some(3));
        let moved = parse(&fixture("gemini/0.61.0/waiting-write-menu-moved.txt")).unwrap();
        assert_eq!(moved.cursor, 1, "the cursor follows the ●");
        let trust = parse(&fixture("gemini/0.61.0/waiting-trust-dialog.txt")).unwrap();
        assert!(trust.is_trust_dialog());
        assert!(trust.entries[1].starts_with("Trust parent folder"));
        assert_eq!(trust.choose(Answer::Yes), Some(0), "{:?}", trust.entries);
        assert_eq!(trust.choose(Answer::No), None);
    }

    #[test]
    fn codex_menus_are_read_and_answered_by_label() {
        let bash = parse(&fixture("codex/0.171.0/waiting-bash-menu.txt")).unwrap();
        assert_eq!(bash.entries.len(), 3, "{:?}", bash.entries);
        assert_eq!(bash.cursor, 0);
        assert_eq!(bash.entries[0], "Yes, proceed (y)");
        assert_eq!(bash.choose(Answer::Yes), Some(0));
        assert_eq!(bash.choose(Answer::Always), Some(1), "{:?}", bash.entries);
        assert_eq!(bash.choose(Answer::No), Some(2), "{:?}", bash.entries);
        let write = parse(&fixture("codex/0.171.0/waiting-write-menu.txt")).unwrap();
        assert!(write.entries[1].contains("don't ask again for these files"));
        assert_eq!(write.choose(Answer::Always), Some(1));
        assert_eq!(write.choose(Answer::No), Some(2));
        assert!(!bash.is_trust_dialog() && !write.is_trust_dialog());

        let trust = parse(&fixture("codex/0.171.0/waiting-trust-dialog.txt")).unwrap();
        assert_eq!(
            trust.entries,
            ["Trust and continue", "Back to Agent Command Center"]
        );
        assert!(trust.is_trust_dialog());
        assert_eq!(trust.choose(Answer::Yes), Some(0));
        assert_eq!(trust.choose(Answer::No), None, "deny presses Esc");
    }

    /// Every approval the codex and gemini catalogues captured, at every size, is read as
    /// a menu that `approve` and `deny` can answer by label (deny is Esc where no entry
    /// says no).
    #[test]
    fn every_catalogue_approval_of_codex_and_gemini_is_a_menu_answered_by_label() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/screens");
        let mut seen = 0;
        for agent in ["codex", "gemini"] {
            for release in std::fs::read_dir(root.join(agent)).unwrap() {
                let release = release.unwrap().path();
                if !release.is_dir() {
                    continue;
                }
                for file in std::fs::read_dir(&release).unwrap() {
                    let path = file.unwrap().path();
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    if !(name.starts_with("waiting-")
                        && name.contains("-approval@")
                        && name.ends_with(".txt"))
                    {
                        continue;
                    }
                    let screen = std::fs::read_to_string(&path).unwrap();
                    let menu =
                        parse(&screen).unwrap_or_else(|| panic!("no menu: {}", path.display()));
                    assert_eq!(menu.cursor, 0, "{}", path.display());
                    assert_eq!(
                        menu.choose(Answer::Yes),
                        Some(0),
                        "{}: {:?}",
                        path.display(),
                        menu.entries
                    );
                    assert!(
                        menu.choose(Answer::Always).is_some(),
                        "{}: {:?}",
                        path.display(),
                        menu.entries
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen >= 40, "only {seen} approvals");
    }
}
