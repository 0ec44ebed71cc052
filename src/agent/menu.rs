//! Selection menus on an agent's screen (permission prompts, the trust dialog): their
//! entries and where the cursor is, so an answer is chosen by its label.

use regex::Regex;
use std::sync::LazyLock;

// A narrow window squeezes the space out after the number ("2.Yes, and always allow…").
static NUMBERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(❯\s*)?(\d+)\.\s*(\S.*?)\s*$").expect("valid regex"));
static CURSOR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s{0,2}❯\s*(.+?)\s*$").expect("valid regex"));
static FOOTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(esc to cancel|enter to confirm|enter to select)").expect("valid regex")
});

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

/// The menu at the bottom of `screen` (its footer the last line), if one is open.
pub fn parse(screen: &str) -> Option<Menu> {
    let lines: Vec<&str> = screen
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let footer = lines.len().checked_sub(1)?;
    if !FOOTER.is_match(lines[footer]) {
        return None;
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
    let cursor = entries.len() - 1 - cursor?;
    (entries.len() >= 2).then_some(Menu { entries, cursor })
}

impl Menu {
    /// The entry that gives `answer`, by its label; `None` when the menu has none (deny
    /// then means Esc).
    pub fn choose(&self, answer: Answer) -> Option<usize> {
        let lower: Vec<String> = self.entries.iter().map(|e| e.to_lowercase()).collect();
        let auto = |e: &str| e.contains("auto mode");
        let find = |pred: &dyn Fn(&str) -> bool| lower.iter().position(|e| pred(e));
        match answer {
            Answer::Yes => find(&|e| e.contains("trust this folder") || e == "yes, proceed")
                .or_else(|| find(&|e| e == "yes"))
                .or_else(|| find(&|e| e.starts_with("yes") && !e.contains(" and ") && !auto(e))),
            Answer::Always => find(&|e| {
                !auto(e)
                    && (e.contains("don't ask again")
                        || e.contains("always allow")
                        || e.contains("allow all edits")
                        || e.contains("accept edits"))
            })
            .or_else(|| find(&|e| e.contains("trust this folder") || e == "yes, proceed")),
            Answer::No => find(&|e| e == "no" || e.starts_with("no,") || e.starts_with("no ")),
        }
    }

    /// Whether this is a folder-trust dialog.
    pub fn is_trust_dialog(&self) -> bool {
        self.entries.iter().any(|e| {
            e.to_lowercase().contains("trust this folder") || e.eq_ignore_ascii_case("yes, proceed")
        })
    }
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
            "claude/2.1.332/idle-quoted-menu.txt",
            "claude/2.1.332/idle-after-turn.txt",
            "claude/2.0.77/busy-streaming.txt",
        ] {
            assert_eq!(parse(&fixture(idle)), None, "{idle}");
        }
    }
}
