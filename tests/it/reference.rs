//! The README's command reference ("## Commands") against the binary's own `--help`, so
//! the hand-written pages cannot drift from clap's (src/cli.rs):
//!
//! - every command `--help` lists has a `### \`orchestra VERB …\`` section, and every
//!   subcommand (`deps add`) is named in its parent's section;
//! - every long flag a command's `--help` lists is written in that command's section, or,
//!   for the flags many commands share (`--repo`, `--config`, `--socket`), in the
//!   paragraph that opens "## Commands";
//! - every flag the README gives an `orchestra …` command line (a code block, or an inline
//!   code span naming a command) exists on that command;
//! - each `--help` is kept as a snapshot in tests/fixtures/help/, so a change to the help
//!   text shows up in review (`ORCHESTRA_BLESS=1` rewrites them).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::bin;

/// What clap adds to every command; never the README's business.
const CLAP_OWN: [&str; 2] = ["help", "version"];

/// A command as typed after `orchestra`: `["deps", "add"]`.
type CmdPath = Vec<String>;

struct Help {
    text: String,
    subcommands: Vec<String>,
    flags: BTreeSet<String>,
}

fn help_of(path: &[String]) -> Help {
    let out = Command::new(bin())
        .args(path)
        .arg("--help")
        // clap wraps at the terminal's width only with its wrap_help feature; a fixed
        // width keeps the snapshots the same should that ever change.
        .env("COLUMNS", "100")
        .env_remove("ORCHESTRA_TMUX_SOCKET")
        .output()
        .expect("run orchestra --help");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "`orchestra {} --help` failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    let (subcommands, flags) = parse_help(&text);
    Help {
        text,
        subcommands,
        flags,
    }
}

/// The subcommands and long flags a clap help lists, from its "Commands:" and "Options:"
/// blocks (entries stand at two to six spaces; their descriptions deeper).
fn parse_help(text: &str) -> (Vec<String>, BTreeSet<String>) {
    let mut subcommands = Vec::new();
    let mut flags = BTreeSet::new();
    let mut block = "";
    for line in text.lines() {
        if !line.starts_with(' ') {
            block = line.trim_end_matches(':');
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if indent > 6 {
            continue;
        }
        let entry = line.trim_start();
        match block {
            "Commands" => {
                let name = entry.split_whitespace().next().unwrap_or("");
                if !name.is_empty() && !CLAP_OWN.contains(&name) {
                    subcommands.push(name.to_string());
                }
            }
            "Options" => {
                let entry = entry
                    .strip_prefix('-')
                    .filter(|rest| rest.chars().nth(1) == Some(','))
                    .map(|rest| rest[2..].trim_start())
                    .unwrap_or(entry);
                if let Some(long) = entry.strip_prefix("--") {
                    let name: String = long
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                        .collect();
                    if !CLAP_OWN.contains(&name.as_str()) {
                        flags.insert(name);
                    }
                }
            }
            _ => {}
        }
    }
    (subcommands, flags)
}

/// Every visible command, depth first, with its help.
fn commands() -> BTreeMap<CmdPath, Help> {
    let mut all = BTreeMap::new();
    let mut todo: Vec<CmdPath> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let help = help_of(&path);
        for sub in &help.subcommands {
            let mut child = path.clone();
            child.push(sub.clone());
            todo.push(child);
        }
        all.insert(path, help);
    }
    all
}

fn readme_path() -> PathBuf {
    // The README stands at the top of the repository, above the crate once it is one of
    // a workspace's.
    let mut dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    loop {
        let candidate = dir.join("README.md");
        if candidate.is_file()
            && std::fs::read_to_string(&candidate).is_ok_and(|t| t.contains("\n## Commands\n"))
        {
            return candidate;
        }
        dir = dir
            .parent()
            .expect("a README.md with a \"## Commands\" section above the crate");
    }
}

struct Section {
    heading: String,
    /// The commands its heading names: `### \`orchestra hosts check [NAME]\`` names
    /// `hosts check`.
    names: Vec<CmdPath>,
    body: String,
}

struct Reference {
    /// The paragraphs between "## Commands" and its first "###".
    intro: String,
    sections: Vec<Section>,
}

fn read_reference(known: &BTreeMap<CmdPath, Help>) -> Reference {
    let readme = std::fs::read_to_string(readme_path()).expect("read README.md");
    let start = readme
        .find("\n## Commands\n")
        .expect("a \"## Commands\" section")
        + 1;
    let rest = &readme[start + "## Commands\n".len()..];
    let end = rest.find("\n## ").map_or(rest.len(), |i| i + 1);
    let part = &rest[..end];
    let mut chunks = part.split("\n### ");
    let intro = chunks.next().unwrap_or("").to_string();
    let sections = chunks
        .map(|chunk| {
            let (heading, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
            let names = code_spans(heading)
                .iter()
                .filter_map(|span| command_line(span, known).map(|(path, _)| path))
                .collect();
            Section {
                heading: heading.to_string(),
                names,
                body: body.to_string(),
            }
        })
        .collect();
    Reference { intro, sections }
}

/// The inline code spans of a Markdown text (single backticks; fenced blocks are read
/// line by line by `command_lines`).
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut in_fence = false;
    let mut prose = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let mut pieces = prose.split('`');
    pieces.next();
    while let Some(span) = pieces.next() {
        spans.push(span.to_string());
        pieces.next();
    }
    spans
}

/// The lines of a text's fenced code blocks.
fn fenced_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if in_fence {
            lines.push(line.to_string());
        }
    }
    lines
}

/// The words of one shell command at the start of `text`, up to what ends it: a pipe,
/// `;`, `&&`, a redirection, a comment, a command substitution, an unmatched quote. A
/// quoted word is kept as `"…"` (a value, never a flag).
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    // Inside a synopsis' `<LABEL|all>` or `[NAME|all]`, `|` is no pipe.
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                depth += 1;
                word.push(c);
            }
            '<' if chars.peek().is_some_and(|d| d.is_ascii_uppercase()) => {
                depth += 1;
                word.push(c);
            }
            ']' | '>' if depth > 0 => {
                depth -= 1;
                word.push(c);
            }
            '|' if depth > 0 => word.push(c),
            '"' | '\'' => {
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == c {
                        closed = true;
                        break;
                    }
                }
                if !closed {
                    break;
                }
                word.push_str("\"…\"");
            }
            '|' | ';' | '&' | ')' | '`' => {
                break;
            }
            '$' if chars.peek() == Some(&'(') => {
                break;
            }
            '#' if word.is_empty() => {
                break;
            }
            '>' if word.is_empty() || word == "2" => {
                break;
            }
            '<' => {
                break;
            }
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A command line in `text` starting at its first word (`orchestra` or a command): the
/// longest command path it names, and the long flags after it. None when it names no
/// command.
fn command_line(text: &str, known: &BTreeMap<CmdPath, Help>) -> Option<(CmdPath, Vec<String>)> {
    let text = text.trim_start();
    let text = text.strip_prefix("orchestra ").unwrap_or(text);
    let mut words = shell_words(text).into_iter().peekable();
    let mut path: CmdPath = Vec::new();
    let mut flags = Vec::new();
    // The global flag may stand before the verb.
    if words.peek().is_some_and(|w| w == "--socket") {
        words.next();
        words.next();
        flags.push("socket".to_string());
    }
    let mut in_path = true;
    for word in words {
        let mut next = path.clone();
        next.push(word.clone());
        if in_path && known.contains_key(&next) {
            path = next;
            continue;
        }
        in_path = false;
        // `[--always]` in a heading's synopsis is a flag too.
        if let Some(long) = word.trim_start_matches('[').strip_prefix("--") {
            let name: String = long
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !name.is_empty() {
                flags.push(name);
            }
        }
    }
    if path.is_empty() {
        return None;
    }
    Some((path, flags))
}

/// Every `orchestra …` command line of a text: in its fenced blocks, and in its inline
/// code spans that start with `orchestra` or with a command (`list --json`).
fn command_lines(
    text: &str,
    known: &BTreeMap<CmdPath, Help>,
) -> Vec<(String, CmdPath, Vec<String>)> {
    let mut found = Vec::new();
    let mut pieces: Vec<String> = Vec::new();
    for line in fenced_lines(text) {
        // `$ orchestra …`, `x=$(orchestra …)` and `… | orchestra …` alike.
        for (i, _) in line.match_indices("orchestra ") {
            let before = line[..i].chars().last();
            if before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-' && c != '/' && c != '.')
            {
                pieces.push(line[i..].to_string());
            }
        }
    }
    for span in code_spans(text) {
        let span = span.replace('\n', " ");
        for (i, _) in span.match_indices("orchestra ") {
            if i == 0 || span[..i].ends_with([' ', '"', '(']) {
                pieces.push(span[i..].to_string());
            }
        }
        if !span.starts_with("orchestra") {
            pieces.push(span);
        }
    }
    for piece in pieces {
        if let Some((path, flags)) = command_line(&piece, known) {
            found.push((piece.trim().to_string(), path, flags));
        }
    }
    found
}

/// Whether `--flag` stands in `text` as a whole flag (not as the start of a longer one).
fn mentions_flag(text: &str, flag: &str) -> bool {
    let needle = format!("--{flag}");
    text.match_indices(&needle).any(|(i, _)| {
        let after = text[i + needle.len()..].chars().next();
        let before = text[..i].chars().last();
        after.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
            && before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
    })
}

fn mentions_command(text: &str, path: &[String]) -> bool {
    let words = path.join(" ");
    text.match_indices(&words).any(|(i, _)| {
        let after = text[i + words.len()..].chars().next();
        let before = text[..i].chars().last();
        after.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
            && before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
    })
}

/// The sections that document `path`: those whose heading names it, a command above it
/// (`deps` for `deps add`) or one under it (`hosts check` for `hosts`), else those naming
/// a command beside it (`tmux init` for `tmux menu`).
fn sections_of<'r>(reference: &'r Reference, path: &[String]) -> Vec<&'r Section> {
    let above: Vec<&Section> = reference
        .sections
        .iter()
        .filter(|s| {
            s.names
                .iter()
                .any(|n| path.starts_with(n) || n.starts_with(path))
        })
        .collect();
    if !above.is_empty() || path.len() < 2 {
        return above;
    }
    let parent = &path[..path.len() - 1];
    reference
        .sections
        .iter()
        .filter(|s| {
            s.names
                .iter()
                .any(|n| n.len() == path.len() && n.starts_with(parent))
        })
        .collect()
}

fn shown(path: &[String]) -> String {
    if path.is_empty() {
        "orchestra".to_string()
    } else {
        format!("orchestra {}", path.join(" "))
    }
}

#[test]
fn every_command_and_flag_of_the_help_is_in_its_readme_section() {
    let known = commands();
    let reference = read_reference(&known);
    let mut missing = Vec::new();
    for (path, help) in &known {
        if path.is_empty() {
            // Only the global flags: the intro says them.
            for flag in &help.flags {
                if !mentions_flag(&reference.intro, flag) {
                    missing.push(format!(
                        "--{flag} (`orchestra --help`): not in the paragraph opening \"## Commands\""
                    ));
                }
            }
            continue;
        }
        let sections = sections_of(&reference, path);
        if sections.is_empty() {
            missing.push(format!(
                "`{}`: no \"### `{}`\" section under \"## Commands\"",
                shown(path),
                shown(&path[..1])
            ));
            continue;
        }
        let headings: Vec<&str> = sections.iter().map(|s| s.heading.as_str()).collect();
        let text: String = sections
            .iter()
            .map(|s| format!("{}\n{}\n", s.heading, s.body))
            .collect();
        if path.len() > 1 && !mentions_command(&text, path) {
            missing.push(format!(
                "`{}`: \"{}\" is not named in its section(s) {headings:?}",
                shown(path),
                path.join(" ")
            ));
        }
        for flag in &help.flags {
            let global = known[&Vec::new()].flags.contains(flag);
            if !mentions_flag(&text, flag) && (!mentions_flag(&reference.intro, flag) || global) {
                if global {
                    continue;
                }
                missing.push(format!(
                    "`{} --{flag}`: not in its section(s) {headings:?}",
                    shown(path)
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "README.md's command reference misses what `--help` lists ({} gaps):\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn every_flag_the_readme_gives_a_command_exists() {
    let known = commands();
    let readme = std::fs::read_to_string(readme_path()).expect("read README.md");
    let global = &known[&Vec::new()].flags;
    let mut wrong = BTreeSet::new();
    for (line, path, flags) in command_lines(&readme, &known) {
        for flag in flags {
            if !known[&path].flags.contains(&flag) && !global.contains(&flag) {
                wrong.insert(format!(
                    "`{} --{flag}` (README: `{line}`): `{} --help` has no --{flag}",
                    shown(&path),
                    shown(&path)
                ));
            }
        }
    }
    // The paragraph opening "## Commands" names flags shared by many commands: each must be one.
    let reference = read_reference(&known);
    for span in code_spans(&reference.intro) {
        for word in span.split_whitespace() {
            if let Some(flag) = word.strip_prefix("--") {
                if !known.values().any(|h| h.flags.contains(flag)) {
                    wrong.insert(format!(
                        "--{flag} (README, the paragraph opening \"## Commands\"): no command has it"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "README.md names flags the commands do not have ({}):\n  {}",
        wrong.len(),
        wrong.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

fn snapshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/help")
}

fn snapshot_name(path: &[String]) -> String {
    let mut name = String::from("orchestra");
    for word in path {
        name.push('-');
        name.push_str(word);
    }
    name + ".txt"
}

#[test]
fn each_help_matches_its_snapshot() {
    let known = commands();
    let dir = snapshot_dir();
    let bless = std::env::var_os("ORCHESTRA_BLESS").is_some_and(|v| v == "1");
    if bless {
        std::fs::create_dir_all(&dir).expect("create tests/fixtures/help");
    }
    let mut problems = Vec::new();
    let mut expected_files = BTreeSet::new();
    for (path, help) in &known {
        let name = snapshot_name(path);
        let file = dir.join(&name);
        expected_files.insert(name.clone());
        let kept = std::fs::read_to_string(&file).ok();
        if kept.as_deref() == Some(help.text.as_str()) {
            continue;
        }
        if bless {
            std::fs::write(&file, &help.text).expect("write a help snapshot");
            continue;
        }
        let Some(kept) = kept else {
            problems.push(format!(
                "`{} --help` has no snapshot tests/fixtures/help/{name}",
                shown(path)
            ));
            continue;
        };
        let (line, was, now) = kept
            .lines()
            .map(Some)
            .chain(std::iter::repeat(None))
            .zip(help.text.lines().map(Some).chain(std::iter::repeat(None)))
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| (i + 1, a.unwrap_or("(end)"), b.unwrap_or("(end)")))
            .unwrap_or((0, "(same lines, other line ends)", ""));
        problems.push(format!(
            "`{} --help` differs from tests/fixtures/help/{name} at line {line}:\n      kept: {was}\n      now:  {now}",
            shown(path)
        ));
    }
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".txt") && !expected_files.contains(&name) {
                if bless {
                    std::fs::remove_file(entry.path()).expect("remove a stale help snapshot");
                } else {
                    problems.push(format!(
                        "tests/fixtures/help/{name}: no such command in `--help` any more"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "help snapshots out of date (review the change, then `ORCHESTRA_BLESS=1 cargo test --test it reference::` rewrites them):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn the_reference_reader_finds_commands_and_flags() {
    // The parsers on hand-made text, so a gap the tests above report is the README's and
    // not the reader's.
    let help = "Usage: orchestra merge [OPTIONS] <LABEL>\n\nArguments:\n  <LABEL>\n          The label\n\nOptions:\n      --repo <DIR>\n          The repository\n  -y, --yes\n          Merge without asking\n          --not-a-flag in a description\n  -h, --help\n          Print help\n";
    let (subs, flags) = parse_help(help);
    assert!(subs.is_empty());
    assert_eq!(
        flags.into_iter().collect::<Vec<_>>(),
        vec!["repo".to_string(), "yes".to_string()]
    );
    let (subs, _) =
        parse_help("Commands:\n  add    Add one\n  check  Check\n  help   Print this\n");
    assert_eq!(subs, vec!["add".to_string(), "check".to_string()]);

    let mut known = BTreeMap::new();
    for path in [vec![], vec!["deps"], vec!["deps", "add"], vec!["list"]] {
        known.insert(
            path.into_iter().map(String::from).collect::<CmdPath>(),
            Help {
                text: String::new(),
                subcommands: Vec::new(),
                flags: BTreeSet::new(),
            },
        );
    }
    let text = "```sh\n$ orchestra deps add b a out.csv --repo x | orchestra list --json # --not\n```\nsee `list --all`, `orchestra.toml`, `claude --resume`\n";
    let lines: Vec<(CmdPath, Vec<String>)> = command_lines(text, &known)
        .into_iter()
        .map(|(_, p, f)| (p, f))
        .collect();
    let v = |s: &[&str]| s.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    assert_eq!(
        lines,
        vec![
            (v(&["deps", "add"]), v(&["repo"])),
            (v(&["list"]), v(&["json"])),
            (v(&["list"]), v(&["all"])),
        ]
    );
    assert!(mentions_flag("with `--json`.", "json"));
    assert!(!mentions_flag("--json-lines", "json"));
    assert!(!mentions_flag("--prompt-file", "prompt"));
}
