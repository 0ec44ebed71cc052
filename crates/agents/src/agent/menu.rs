//! What an agent asks a person on its screen, so an answer is chosen by its label:
//! selection menus (permission prompts, the trust dialog), their entries and where the
//! cursor is (Claude Code marks it `❯`, codex `›`, opencode only by colour, its entries in a
//! row); and questions answered by typing a key (aider's "(Y)es/(N)o").

use regex::Regex;
use std::sync::LazyLock;

use crate::tmux::Key;

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
    /// Its entries side by side in a row: Left and Right move the cursor, not Up and Down.
    pub across: bool,
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
            across: false,
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
    (entries.len() >= 2).then_some(Menu {
        entries,
        cursor,
        across: false,
    })
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
        across: false,
    })
}

/// The hints that end a row of choices (opencode: "ctrl+f fullscreen  ⇆ select  enter
/// confirm"); "⇆ select" somewhere on its last lines says the row is a menu.
const ROW_HINT: &str = "⇆ select";

/// The menu at the bottom of `styled` (a screen with its colour escapes, as `capture-pane
/// -e` gives it) whose entries stand in a row and whose cursor is only a colour: opencode's
/// permission dialog, "Allow once   Allow always   Reject" over "⇆ select  enter confirm"
/// (beside them in a wide window). The entry the cursor is on is the one drawn on a
/// background other than the dialog's.
pub fn parse_row(styled: &str) -> Option<Menu> {
    let lines: Vec<Vec<Cell>> = styled.lines().map(cells).collect();
    // Each line as drawn inside the dialog's left border "┃", when it has one.
    let inside: Vec<&[Cell]> = lines
        .iter()
        .map(|line| match line.iter().position(|c| c.ch == '┃') {
            Some(border) if line[..border].iter().all(|c| c.ch == ' ') => &line[border + 1..],
            _ => &line[..],
        })
        .collect();
    let text = |cells: &[Cell]| cells.iter().map(|c| c.ch).collect::<String>();
    let filled: Vec<usize> = (0..inside.len())
        .filter(|&i| !text(inside[i]).trim().is_empty())
        .collect();
    // The hint is on the dialog's last line (below it only a sidebar, right of its end),
    // the entries on it or on the line above.
    let hint = *filled
        .iter()
        .rev()
        .take(4)
        .find(|&&i| text(inside[i]).contains(ROW_HINT))?;
    let end = inside[hint].iter().rposition(|c| c.ch != ' ')?;
    if inside[hint + 1..].iter().any(|line| {
        line.iter()
            .position(|c| c.ch != ' ')
            .is_some_and(|at| at <= end)
    }) {
        return None;
    }
    let filled: Vec<usize> = filled.into_iter().filter(|&i| i <= hint).collect();
    let segments = |cells: &[Cell]| -> Vec<(String, Option<String>)> {
        let mut out: Vec<(String, Option<String>)> = Vec::new();
        let mut current = String::new();
        let mut background = None;
        let mut spaces = 0;
        for cell in cells {
            if cell.ch == ' ' {
                spaces += 1;
                continue;
            }
            if spaces >= 2 && !current.is_empty() {
                out.push((std::mem::take(&mut current), background.take()));
            } else if spaces == 1 && !current.is_empty() {
                current.push(' ');
            }
            spaces = 0;
            if current.is_empty() {
                background = cell.background.clone();
            }
            current.push(cell.ch);
        }
        if !current.is_empty() {
            out.push((current, background));
        }
        out
    };
    let is_hint = |label: &str| {
        label.starts_with("ctrl+") || label.starts_with('⇆') || label.starts_with("enter ")
    };
    let row = if segments(inside[hint])
        .first()
        .is_some_and(|(label, _)| !is_hint(label))
    {
        hint
    } else {
        *filled.iter().rev().nth(1)?
    };
    let panel = inside[row].first()?.background.clone();
    let entries: Vec<(String, Option<String>)> = segments(inside[row])
        .into_iter()
        .take_while(|(label, _)| !is_hint(label))
        .collect();
    let lit: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].1 != panel)
        .collect();
    if entries.len() < 2 || lit.len() != 1 {
        return None;
    }
    Some(Menu {
        entries: entries.into_iter().map(|(label, _)| label).collect(),
        cursor: lit[0],
        across: true,
    })
}

/// One character of a styled line and the background it is drawn on (the SGR words that
/// set it; `None` for the terminal's own).
struct Cell {
    ch: char,
    background: Option<String>,
}

/// The characters of `line` with their backgrounds, its escape sequences read and dropped.
fn cells(line: &str) -> Vec<Cell> {
    let mut out = Vec::new();
    let mut background: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            if !c.is_control() {
                out.push(Cell {
                    ch: c,
                    background: background.clone(),
                });
            }
            continue;
        }
        if let Some((params, 'm')) = crate::agent::rules::read_escape(&mut chars) {
            apply_sgr(&params, &mut background);
        }
    }
    out
}

/// The background after the SGR sequence `params` ("38;5;215", "48;5;234", "0").
fn apply_sgr(params: &str, background: &mut Option<String>) {
    let words: Vec<&str> = params.split(';').collect();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        match word {
            "" | "0" | "49" => *background = None,
            "38" | "48" | "58" => {
                // An extended colour: 5;N or 2;R;G;B follow.
                let take = match words.get(i + 1) {
                    Some(&"5") => 2,
                    Some(&"2") => 4,
                    _ => 0,
                };
                if word == "48" {
                    *background = Some(words[i..(i + 1 + take).min(words.len())].join(";"));
                }
                i += take;
            }
            w if w.len() == 2 && w.starts_with('4') || w.len() == 3 && w.starts_with("10") => {
                *background = Some(w.to_string());
            }
            _ => {}
        }
        i += 1;
    }
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
            // opencode's "Reject" (its Esc rejects too, but a subagent's asks why first).
            Answer::No => find(&|e| {
                e == "no" || e.starts_with("no,") || e.starts_with("no ") || e == "reject"
            }),
        }
    }

    /// The keys that move the cursor from where it is to entry `target`.
    pub fn keys_to(&self, target: usize) -> Vec<Key> {
        let key = match (self.across, target > self.cursor) {
            (true, true) => Key::Right,
            (true, false) => Key::Left,
            (false, true) => Key::Down,
            (false, false) => Key::Up,
        };
        vec![key; target.abs_diff(self.cursor)]
    }

    /// The entry that confirms an answer given already: opencode asks "Confirm  Cancel"
    /// after "Allow always".
    pub fn confirmation(&self) -> Option<usize> {
        let has = |label: &str| self.entries.iter().position(|e| e == label);
        has("Cancel").and(has("Confirm"))
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

    /// Every permission dialog opencode's catalogue captured, at every size: a row whose
    /// cursor is only its colour, on "Allow once"; approve presses nothing before Enter,
    /// deny Right Right, always Right. Its plain text is no menu, and none of its other
    /// screens (nor any other kind's) reads as a row.
    #[test]
    fn opencode_permission_rows_are_read_by_colour_and_answered_across() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/screens");
        let mut seen = 0;
        for agent in std::fs::read_dir(&root).unwrap() {
            let agent = agent.unwrap().path();
            let is_opencode = agent.ends_with("opencode");
            for release in std::fs::read_dir(&agent).into_iter().flatten() {
                let release = release.unwrap().path();
                for file in std::fs::read_dir(&release).into_iter().flatten() {
                    let path = file.unwrap().path();
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    if !name.ends_with(".ansi") {
                        continue;
                    }
                    let styled = std::fs::read_to_string(&path).unwrap();
                    let row = parse_row(&styled);
                    if !(is_opencode && name.starts_with("waiting-permission-")) {
                        assert_eq!(row, None, "{}", path.display());
                        continue;
                    }
                    let plain = crate::agent::rules::strip_ansi(&styled);
                    assert_eq!(asking(&plain), None, "{}", path.display());
                    let row = row.unwrap_or_else(|| panic!("no row: {}", path.display()));
                    assert_eq!(
                        row.entries,
                        ["Allow once", "Allow always", "Reject"],
                        "{}",
                        path.display()
                    );
                    assert_eq!(row.cursor, 0, "{}", path.display());
                    assert!(row.across);
                    let keys = |answer| row.choose(answer).map(|target| row.keys_to(target));
                    assert_eq!(keys(Answer::Yes), Some(vec![]), "{}", path.display());
                    assert_eq!(keys(Answer::Always), Some(vec![Key::Right]));
                    assert_eq!(keys(Answer::No), Some(vec![Key::Right, Key::Right]));
                    assert_eq!(row.confirmation(), None);
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, 12, "three dialogs at four sizes");
    }

    /// The cursor is where the lit background is, on any entry; a row with none lit, or
    /// two, is no menu; and one whose hint is not on the dialog's last line is history.
    #[test]
    fn a_row_cursor_is_the_one_entry_on_another_background() {
        let lit = |label: &str| {
            format!("\x1b[48;5;215m \x1b[38;5;232m{label}\x1b[38;5;15m \x1b[48;5;234m")
        };
        let dim = |label: &str| format!(" \x1b[38;5;8m{label}\x1b[38;5;15m ");
        let screen = |entries: [String; 3], hint: &str| {
            format!(
                "  \x1b[38;5;215m┃\x1b[48;5;234m  △ Permission required\n  \x1b[38;5;215m┃\x1b[48;5;234m  {}  {}  {}\n  \x1b[38;5;215m┃\x1b[48;5;234m\n  \x1b[38;5;215m┃\x1b[48;5;234m  {hint}\n",
                entries[0], entries[1], entries[2]
            )
        };
        let hint = "ctrl+f fullscreen  ⇆ select  enter confirm";
        let reject = parse_row(&screen(
            [dim("Allow once"), dim("Allow always"), lit("Reject")],
            hint,
        ))
        .unwrap();
        assert_eq!(reject.entries, ["Allow once", "Allow always", "Reject"]);
        assert_eq!(reject.cursor, 2);
        assert_eq!(reject.keys_to(0), [Key::Left, Key::Left]);
        let always = parse_row(&screen(
            [dim("Allow once"), lit("Allow always"), dim("Reject")],
            hint,
        ))
        .unwrap();
        assert_eq!(always.cursor, 1);
        assert_eq!(always.keys_to(2), [Key::Right]);
        assert_eq!(
            parse_row(&screen(
                [dim("Allow once"), dim("Allow always"), dim("Reject")],
                hint
            )),
            None
        );
        assert_eq!(
            parse_row(&screen(
                [lit("Allow once"), dim("Allow always"), lit("Reject")],
                hint
            )),
            None
        );
        assert_eq!(
            parse_row(
                &(screen(
                    [lit("Allow once"), dim("Allow always"), dim("Reject")],
                    hint
                ) + "  ┃  typed on\n")
            ),
            None
        );
        // "Allow always" asks to confirm, in a row of two.
        let confirm = format!(
            "  \x1b[38;5;215m┃\x1b[48;5;234m  {}  {}\n  \x1b[38;5;215m┃\x1b[48;5;234m  ⇆ select  enter confirm\n",
            lit("Confirm"),
            dim("Cancel")
        );
        let confirm = parse_row(&confirm).unwrap();
        assert_eq!(confirm.entries, ["Confirm", "Cancel"]);
        assert_eq!(confirm.confirmation(), Some(0));
        assert_eq!(confirm.cursor, 0);
    }
}
