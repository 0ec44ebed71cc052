//! Selection menus on an agent's screen (permission prompts, the trust dialog): their
//! entries and where the cursor is, so an answer is chosen by its label.

use regex::Regex;
use std::sync::LazyLock;

static NUMBERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(❯\s*)?(\d+)\.\s+(.+?)\s*$").expect("valid regex"));
static CURSOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,2}❯\s*(.+?)\s*$").expect("valid regex"));
static FOOTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(esc to cancel|enter to confirm|enter to select)").expect("valid regex")
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
        let lower: Vec<String> = self.entries.iter().map(|e| e.to_lowercase()).collect();
        let auto = |e: &str| e.contains("auto mode");
        let find = |pred: &dyn Fn(&str) -> bool| lower.iter().position(|e| pred(e));
        match answer {
            Answer::Yes => find(&|e| is_trust(e))
                .or_else(|| find(&|e| e == "yes" || e == "allow once"))
                .or_else(|| find(&|e| e.starts_with("yes") && !e.contains(" and ") && !auto(e))),
            Answer::Always => find(&|e| {
                !auto(e)
                    && (e.contains("don't ask again")
                        || e.contains("always allow")
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
/// "Yes, proceed"), gemini's "Trust folder (name)" — never its "Trust parent folder".
fn is_trust(entry: &str) -> bool {
    entry.contains("trust this folder")
        || entry == "yes, proceed"
        || entry.starts_with("trust folder")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/screens/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn real_menus_are_read_and_answered_by_label() {
        let bash = parse(&fixture("2.1.332/waiting-bash-menu.txt")).unwrap();
        assert_eq!(bash.entries.len(), 4);
        assert_eq!(bash.cursor, 0);
        assert_eq!(bash.choose(Answer::Yes), Some(0));
        assert_eq!(bash.choose(Answer::Always), Some(1), "{:?}", bash.entries);
        assert_eq!(bash.choose(Answer::No), Some(3));
        let write = parse(&fixture("2.1.332/waiting-write-menu.txt")).unwrap();
        assert_eq!(
            write.choose(Answer::Always),
            Some(1),
            "accept edits, not auto mode: {:?}",
            write.entries
        );
        let old = parse(&fixture("2.0.77/waiting-bash-menu.txt")).unwrap();
        assert_eq!(old.choose(Answer::Always), Some(1));
        assert_eq!(
            old.choose(Answer::No),
            None,
            "2.0.77 has no No: deny presses Esc"
        );
        let old_write = parse(&fixture("2.0.77/waiting-write-menu.txt")).unwrap();
        assert_eq!(old_write.choose(Answer::Always), Some(1));

        let trust = parse(&fixture("2.1.332/waiting-trust-dialog.txt")).unwrap();
        assert_eq!(trust.entries, ["No, exit", "Yes, I trust this folder"]);
        assert_eq!(trust.cursor, 0);
        assert!(trust.is_trust_dialog());
        assert_eq!(
            trust.choose(Answer::Yes),
            Some(1),
            "the entry that trusts, not the default"
        );
        let old_trust = parse(&fixture("2.0.77/waiting-trust-dialog.txt")).unwrap();
        assert_eq!(old_trust.choose(Answer::Yes), Some(0));

        for idle in [
            "gemini/0.61.0/idle-quoted-menu.txt",
            "gemini/0.61.0/idle-after-tool.txt",
            "gemini/0.61.0/busy-shell-running.txt",
            "gemini/0.61.0/exited-quit.txt",
            "2.1.332/idle-quoted-menu.txt",
            "2.1.332/idle-after-turn.txt",
            "2.0.77/busy-streaming.txt",
        ] {
            assert_eq!(parse(&fixture(idle)), None, "{idle}");
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
}
