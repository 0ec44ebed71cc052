//! Screen rules as data: what a captured pane says its agent is doing. The built-in rules
//! (rules.toml, compiled in) can be extended or replaced per kind from
//! `$ORCHESTRA_HOME/agents.toml`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;
use serde::Deserialize;

use crate::agent::asked::Asked;
use crate::state::AgentState;

const BUILT_IN: &str = include_str!("rules.toml");
const DEFAULT_TAIL_LINES: usize = 12;
/// Only the bottom of a screen matters: a 10,000-line capture is read from its end.
const MAX_LINES_EXAMINED: usize = 200;
/// An unframed input box with no `input_opened` ends this close to the bottom (a footer
/// or hints may follow it).
const INPUT_BOX_WITHIN: usize = 6;

#[derive(Debug, Clone, thiserror::Error)]
pub enum RulesError {
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: rule {rule:?} of {kind}: bad regex for {field}: {message}")]
    Regex {
        file: String,
        kind: String,
        rule: String,
        field: &'static str,
        message: String,
    },
    #[error("{file}: rule {rule:?} of {kind}: unknown state {state:?} (busy, waiting, idle, error or exited)")]
    State {
        file: String,
        kind: String,
        rule: String,
        state: String,
    },
    #[error(
        "{file}: asks {rule:?} of {kind}: unknown kind of ask {asks:?} ({})",
        Asked::KINDS
    )]
    Asks {
        file: String,
        kind: String,
        rule: String,
        asks: String,
    },
    #[error("cannot read {file}: {message}")]
    Read { file: String, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindSpec {
    turn_marker: Option<String>,
    border: Option<String>,
    input_end: Option<String>,
    input_more: Option<String>,
    input_framed: Option<bool>,
    input_opened: Option<String>,
    asks_after: Option<String>,
    menu_entry: Option<String>,
    #[serde(default)]
    replace: bool,
    #[serde(default)]
    rules: Vec<RuleSpec>,
    #[serde(default)]
    asks: Vec<AskSpec>,
}

/// How an approval on screen names what it asks: `pattern` is matched against the lines
/// below the kind's last border, joined by newlines; its group `what` is the command or
/// the path, `asks` what is done with it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AskSpec {
    name: String,
    asks: String,
    pattern: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    name: String,
    state: String,
    last_line: Option<String>,
    tail: Option<String>,
    tail_not: Option<String>,
    tail_lines: Option<usize>,
    above_input: Option<String>,
    below_input: Option<String>,
    last_turn: Option<String>,
    last_turn_not: Option<String>,
    last_turn_text: Option<String>,
    last_frame: Option<String>,
    earlier_turns: Option<String>,
    input_box: Option<bool>,
    menu_last: Option<bool>,
}

#[derive(Debug)]
struct Rule {
    name: String,
    state: AgentState,
    last_line: Option<Regex>,
    tail: Option<Regex>,
    tail_not: Option<Regex>,
    tail_lines: usize,
    above_input: Option<Regex>,
    below_input: Option<Regex>,
    last_turn: Option<Regex>,
    last_turn_not: Option<Regex>,
    last_turn_text: Option<Regex>,
    last_frame: Option<Regex>,
    earlier_turns: Option<Regex>,
    /// `Some(true)`: an input line must be there; `Some(false)`: none may be.
    input_box: Option<bool>,
    /// `Some(true)`: a numbered menu with its cursor is the last block on screen.
    menu_last: Option<bool>,
}

/// One kind's rules as written (from one or more files), compiled on first use: a status
/// refresh pays only for the kinds it meets.
#[derive(Debug, Default)]
struct KindRules {
    turn_marker: Option<(String, String)>,
    border: Option<(String, String)>,
    input_end: Option<(String, String)>,
    input_more: Option<(String, String)>,
    input_framed: Option<bool>,
    input_opened: Option<(String, String)>,
    asks_after: Option<(String, String)>,
    menu_entry: Option<(String, String)>,
    /// (file the rule came from, rule)
    rules: Vec<(String, RuleSpec)>,
    asks: Vec<(String, AskSpec)>,
    compiled: OnceLock<Result<Compiled, RulesError>>,
}

#[derive(Debug)]
struct Compiled {
    turn_marker: Option<Regex>,
    border: Option<Regex>,
    input_end: Option<Regex>,
    /// The lines an input line goes on over (a prompt typed over several lines, wrapped).
    input_more: Option<Regex>,
    /// The input box is framed by `border` lines above and below it.
    input_framed: bool,
    /// The line that opens an unframed input box, right above its input line or with one
    /// line (a hint) between: the box is the last input line so opened, wherever it is.
    input_opened: Option<Regex>,
    /// Where a question's text starts: after the last line matching it (`border` unless
    /// set), so what an earlier dialog in the history asked is never read.
    asks_after: Option<Regex>,
    /// An entry of a numbered menu; its group `number` the entry's number, its group
    /// `cursor` there on the entry the cursor is on.
    menu_entry: Option<Regex>,
    rules: Vec<Rule>,
    /// (what is done, the pattern whose `what` names it)
    asks: Vec<(String, Regex)>,
}

/// The screen rules of every agent kind.
#[derive(Debug)]
pub struct Rules {
    kinds: HashMap<String, KindRules>,
}

/// What a screen says, and which rule said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub state: AgentState,
    pub rule: Option<String>,
}

impl Rules {
    /// The built-in rules alone.
    pub fn built_in() -> Rules {
        let mut rules = Rules {
            kinds: HashMap::new(),
        };
        rules
            .merge(BUILT_IN, "built-in rules")
            .expect("the built-in rules are valid (tested)");
        rules
    }

    /// The built-in rules with `home/agents.toml` (if any) laid over them.
    pub fn load(home: &Path) -> Result<Rules, RulesError> {
        let mut rules = Rules::built_in();
        let file = home.join("agents.toml");
        match std::fs::read_to_string(&file) {
            Ok(text) => rules.merge(&text, &file.display().to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(RulesError::Read {
                    file: file.display().to_string(),
                    message: e.to_string(),
                })
            }
        }
        Ok(rules)
    }

    /// Adds the kinds of `text`: their rules go before the ones already known (or replace
    /// them with `replace = true`).
    fn merge(&mut self, text: &str, file: &str) -> Result<(), RulesError> {
        let specs: HashMap<String, KindSpec> = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((1, 1), |s| {
                orchestra_model::text::line_column(text, s.start)
            });
            RulesError::Parse {
                file: file.to_string(),
                line,
                column,
                message: orchestra_model::text::one_line(e.message(), "not valid TOML"),
            }
        })?;
        for (kind, spec) in specs {
            for r in &spec.rules {
                if AgentState::parse(&r.state).is_none_or(|s| s == AgentState::Unknown) {
                    return Err(RulesError::State {
                        file: file.to_string(),
                        kind: kind.clone(),
                        rule: r.name.clone(),
                        state: r.state.clone(),
                    });
                }
            }
            for a in &spec.asks {
                if Asked::of(&a.asks, "").is_none() {
                    return Err(RulesError::Asks {
                        file: file.to_string(),
                        kind: kind.clone(),
                        rule: a.name.clone(),
                        asks: a.asks.clone(),
                    });
                }
            }
            let entry = self.kinds.entry(kind).or_default();
            if spec.replace {
                entry.rules.clear();
                entry.asks.clear();
            }
            let mut asks: Vec<(String, AskSpec)> = spec
                .asks
                .into_iter()
                .map(|a| (file.to_string(), a))
                .collect();
            asks.append(&mut entry.asks);
            entry.asks = asks;
            let mut rules: Vec<(String, RuleSpec)> = spec
                .rules
                .into_iter()
                .map(|r| (file.to_string(), r))
                .collect();
            rules.append(&mut entry.rules);
            entry.rules = rules;
            if let Some(m) = spec.turn_marker {
                entry.turn_marker = Some((file.to_string(), m));
            }
            if let Some(b) = spec.border {
                entry.border = Some((file.to_string(), b));
            }
            if let Some(e) = spec.input_end {
                entry.input_end = Some((file.to_string(), e));
            }
            if let Some(m) = spec.input_more {
                entry.input_more = Some((file.to_string(), m));
            }
            if let Some(f) = spec.input_framed {
                entry.input_framed = Some(f);
            }
            if let Some(o) = spec.input_opened {
                entry.input_opened = Some((file.to_string(), o));
            }
            if let Some(a) = spec.asks_after {
                entry.asks_after = Some((file.to_string(), a));
            }
            if let Some(m) = spec.menu_entry {
                entry.menu_entry = Some((file.to_string(), m));
            }
        }
        Ok(())
    }

    pub fn knows(&self, kind: &str) -> bool {
        self.kinds.contains_key(kind)
    }

    /// What sits in `kind`'s input box on `screen`, whitespace removed (a long line wraps
    /// there): the lines from the last input line (`turn_marker`) down to the next border
    /// or `input_end` line (where no border closes the box), without the marker itself. `None` when no input line shows or the kind has none.
    pub fn typed_input(&self, kind: &str, screen: &str) -> Result<Option<String>, RulesError> {
        let Some(k) = self.kinds.get(kind) else {
            return Ok(None);
        };
        let k = compiled(kind, k)?;
        let Some(marker) = &k.turn_marker else {
            return Ok(None);
        };
        let lines: Vec<&str> = screen.lines().collect();
        let Some(start) = lines.iter().rposition(|l| marker.is_match(l)) else {
            return Ok(None);
        };
        let is_border = |l: &str| k.border.as_ref().is_some_and(|b| b.is_match(l));
        let ends_input =
            |l: &str| is_border(l) || k.input_end.as_ref().is_some_and(|e| e.is_match(l));
        let first = marker.replace(lines[start], "").into_owned();
        let text = std::iter::once(first.as_str())
            .chain(
                lines[start + 1..]
                    .iter()
                    .copied()
                    .take_while(|l| !ends_input(l)),
            )
            .flat_map(str::chars)
            .filter(|c| !c.is_whitespace())
            .collect();
        Ok(Some(text))
    }

    /// What the approval on `screen` asks to be allowed (the command, the file), by the
    /// first of `kind`'s `asks` patterns that names it below the last border; `None` when
    /// none does (a trust dialog, a question about no command). For a screen the rules
    /// say waits: elsewhere a match may be history.
    pub fn asked(&self, kind: &str, screen: &str) -> Result<Option<Asked>, RulesError> {
        let Some(k) = self.kinds.get(kind) else {
            return Ok(None);
        };
        let k = compiled(kind, k)?;
        if k.asks.is_empty() {
            return Ok(None);
        }
        let text = self.asking_text(kind, screen)?;
        for (asks, re) in &k.asks {
            let what = re
                .captures_iter(&text)
                .filter_map(|c| c.name("what"))
                .last()
                .map(|m| m.as_str().trim());
            if let Some(what) = what.filter(|w| !w.is_empty()) {
                return Ok(Asked::of(asks, what));
            }
        }
        Ok(None)
    }

    /// The lines of `screen` a question of `kind` is on: those below the kind's last
    /// `asks_after` line (its `border` unless set; all of the bottom lines without one),
    /// where [`Rules::asked`] looks.
    pub fn asking_text(&self, kind: &str, screen: &str) -> Result<String, RulesError> {
        let lines = bottom_lines(screen);
        let border = match self.kinds.get(kind) {
            Some(k) => {
                let k = compiled(kind, k)?;
                k.asks_after.clone().or_else(|| k.border.clone())
            }
            None => None,
        };
        let is_border = |l: &str| border.as_ref().is_some_and(|b| b.is_match(l));
        let start = lines
            .iter()
            .rposition(|l| is_border(l))
            .map_or(0, |i| i + 1);
        Ok(lines[start..].join("\n"))
    }

    /// Whether any rule reads the screens of `kind`.
    pub fn has_rules(&self, kind: &str) -> bool {
        self.kinds.get(kind).is_some_and(|k| !k.rules.is_empty())
    }

    /// Compiles every kind's rules: where a bad pattern in agents.toml shows at once.
    pub fn check_all(&self) -> Result<(), RulesError> {
        for (kind, rules) in &self.kinds {
            compiled(kind, rules)?;
        }
        Ok(())
    }

    /// Classifies one captured screen of an agent of `kind`. An unknown kind says
    /// "unknown"; a bad pattern of that kind is an error.
    pub fn classify(&self, kind: &str, screen: &str) -> Result<Verdict, RulesError> {
        self.classify_except(kind, screen, None)
    }

    /// [`Rules::classify`], the rules that give `passed` left out: what the screen says
    /// once a state it shows is known to be history (an old error a resumed conversation
    /// redraws).
    pub fn classify_except(
        &self,
        kind: &str,
        screen: &str,
        passed: Option<AgentState>,
    ) -> Result<Verdict, RulesError> {
        let unknown = Verdict {
            state: AgentState::Unknown,
            rule: None,
        };
        let Some(k) = self.kinds.get(kind) else {
            return Ok(unknown);
        };
        let k = compiled(kind, k)?;
        let lines = bottom_lines(screen);
        if lines.is_empty() {
            return Ok(unknown);
        }
        let is_turn = |l: &str| k.turn_marker.as_ref().is_some_and(|m| m.is_match(l));
        let input_box = input_box(k, &lines);
        let input_at = input_box.map(|(i, _)| i);
        // Computed once, when a rule first asks.
        let mut menu_last_cache: Option<bool> = None;
        // The last turn: the lines between the previous input line and the box's.
        let last_turn_start = |input: usize| {
            lines[..input]
                .iter()
                .rposition(|l| is_turn(l))
                .map_or(0, |i| i + 1)
        };
        for rule in k.rules.iter().filter(|r| Some(r.state) != passed) {
            if rule
                .input_box
                .is_some_and(|wanted| wanted != input_at.is_some())
            {
                continue;
            }
            if let Some(wanted) = rule.menu_last {
                let last = *menu_last_cache.get_or_insert_with(|| menu_last(k, &lines));
                if last != wanted {
                    continue;
                }
            }
            if let Some(re) = &rule.last_line {
                if !re.is_match(lines[lines.len() - 1]) {
                    continue;
                }
            }
            let tail = &lines[lines.len().saturating_sub(rule.tail_lines)..];
            if let Some(re) = &rule.tail {
                if !tail.iter().any(|l| re.is_match(l)) {
                    continue;
                }
            }
            if let Some(re) = &rule.tail_not {
                if tail.iter().any(|l| re.is_match(l)) {
                    continue;
                }
            }
            if let Some(re) = &rule.above_input {
                let Some(input) = input_at else { continue };
                let above = lines[..input].iter().rev().find(|l| !is_border(k, l));
                if !above.is_some_and(|l| re.is_match(l)) {
                    continue;
                }
            }
            if let Some(re) = &rule.below_input {
                let Some((_, end)) = input_box else { continue };
                if !lines[end + 1..].iter().any(|l| re.is_match(l)) {
                    continue;
                }
            }
            if rule.last_turn.is_some()
                || rule.last_turn_not.is_some()
                || rule.last_turn_text.is_some()
                || rule.earlier_turns.is_some()
                || rule.last_frame.is_some()
            {
                let Some(input) = input_at else { continue };
                let start = last_turn_start(input);
                let turn = &lines[start..input];
                if let Some(re) = &rule.last_turn {
                    if !turn.iter().any(|l| re.is_match(l)) {
                        continue;
                    }
                }
                if let Some(re) = &rule.last_turn_not {
                    if turn.iter().any(|l| re.is_match(l)) {
                        continue;
                    }
                }
                if let Some(re) = &rule.earlier_turns {
                    if !lines[..start].iter().any(|l| re.is_match(l)) {
                        continue;
                    }
                }
                if let Some(re) = &rule.last_frame {
                    // Below the border that closes the frame before the box's own: a
                    // resized pane keeps frames of its earlier size above, each with
                    // its rule.
                    let top = turn.iter().rposition(|l| is_border(k, l));
                    let from = top
                        .and_then(|t| turn[..t].iter().rposition(|l| is_border(k, l)))
                        .map_or(0, |b| b + 1);
                    if !turn[from..].iter().any(|l| re.is_match(l)) {
                        continue;
                    }
                }
                if let Some(re) = &rule.last_turn_text {
                    if !re.is_match(&turn.join("\n")) {
                        continue;
                    }
                }
            }
            return Ok(Verdict {
                state: rule.state,
                rule: Some(rule.name.clone()),
            });
        }
        Ok(unknown)
    }
}

fn is_border(k: &Compiled, line: &str) -> bool {
    k.border.as_ref().is_some_and(|b| b.is_match(line))
}

/// Where the input box is on `lines`: its input line (the last `turn_marker` line that
/// opens a box) and its last line (the lines a longer prompt goes on over, however many).
/// A framed box (`input_framed`) is a border (or the input line itself, scrolled), the
/// input line and its further lines, and a border: whatever is under its bottom border is
/// the box's own (footer, hints, completion lists, the shortcuts panel), however long, and
/// a `turn_marker` line that is not so framed (a prompt echoed in the history, a menu's
/// cursor) is no input box. An unframed box with `input_opened` is the last input line,
/// if that line opens it (above it, or above a hint line that is no input line): what is
/// under it is the box's own as with a framed one (completion lists, the footer, footers
/// a resize left behind), and a prompt echoed last (a dialog hides the box) is none.
/// Other unframed boxes end among the bottom few lines.
fn input_box(k: &Compiled, lines: &[&str]) -> Option<(usize, usize)> {
    let marker = k.turn_marker.as_ref()?;
    let is_more = |l: &str| k.input_more.as_ref().is_some_and(|m| m.is_match(l));
    let box_end = |i: usize| i + lines[i + 1..].iter().take_while(|l| is_more(l)).count();
    if let Some(top) = &k.input_opened {
        let i = lines.iter().rposition(|l| marker.is_match(l))?;
        let opens = |at: Option<usize>| at.is_some_and(|a| top.is_match(lines[a]));
        let opened = opens(i.checked_sub(1))
            || (i >= 2 && !marker.is_match(lines[i - 1]) && opens(Some(i - 2)));
        return opened.then(|| (i, box_end(i)));
    }
    if !k.input_framed {
        let i = lines.iter().rposition(|l| marker.is_match(l))?;
        let end = box_end(i);
        return (lines.len() - end <= INPUT_BOX_WITHIN).then_some((i, end));
    }
    (0..lines.len()).rev().find_map(|i| {
        if !marker.is_match(lines[i]) {
            return None;
        }
        let opened = is_border(k, lines[i]) || (i > 0 && is_border(k, lines[i - 1]));
        let end = box_end(i);
        let closed = lines.get(end + 1).is_some_and(|l| is_border(k, l));
        (opened && closed).then_some((i, end))
    })
}

/// Whether a numbered menu with its cursor is the last block on `lines`: entries
/// (`menu_entry`) numbered on from 1 up to the last one on screen, however many lines
/// each takes (a description, a rule between them), exactly one of them with the
/// cursor, and no input line from the first entry down to the bottom. What is below the
/// last entry (a footer, hints, nothing) does not matter.
fn menu_last(k: &Compiled, lines: &[&str]) -> bool {
    let Some(entry) = &k.menu_entry else {
        return false;
    };
    let is_turn = |l: &str| k.turn_marker.as_ref().is_some_and(|m| m.is_match(l));
    let Some(last) = lines.iter().rposition(|l| entry.is_match(l)) else {
        return false;
    };
    if lines[last + 1..].iter().any(|l| is_turn(l)) {
        return false;
    }
    let (mut want, mut entries, mut cursors) = (None::<u64>, 0, 0);
    for line in lines[..=last].iter().rev() {
        let Some(c) = entry.captures(line) else {
            if is_turn(line) {
                return false;
            }
            continue;
        };
        let Some(n) = c
            .name("number")
            .and_then(|n| n.as_str().parse::<u64>().ok())
        else {
            return false;
        };
        if want.is_some_and(|w| w != n) {
            return false;
        }
        entries += 1;
        cursors += usize::from(c.name("cursor").is_some());
        if n == 1 {
            return entries >= 2 && cursors == 1;
        }
        want = Some(n - 1);
    }
    false
}

fn compiled<'a>(kind: &str, k: &'a KindRules) -> Result<&'a Compiled, RulesError> {
    k.compiled
        .get_or_init(|| compile_kind(kind, k))
        .as_ref()
        .map_err(Clone::clone)
}

fn compile_kind(kind: &str, k: &KindRules) -> Result<Compiled, RulesError> {
    let compile = |file: &str, rule: &str, field: &'static str, pattern: Option<&str>| {
        pattern
            .map(Regex::new)
            .transpose()
            .map_err(|e| RulesError::Regex {
                file: file.to_string(),
                kind: kind.to_string(),
                rule: rule.to_string(),
                field,
                message: orchestra_model::text::one_line(&e.to_string(), "invalid"),
            })
    };
    let mut rules = Vec::new();
    for (file, r) in &k.rules {
        rules.push(Rule {
            name: r.name.clone(),
            state: AgentState::parse(&r.state).unwrap_or(AgentState::Unknown),
            last_line: compile(file, &r.name, "last_line", r.last_line.as_deref())?,
            tail: compile(file, &r.name, "tail", r.tail.as_deref())?,
            tail_not: compile(file, &r.name, "tail_not", r.tail_not.as_deref())?,
            tail_lines: r.tail_lines.unwrap_or(DEFAULT_TAIL_LINES),
            above_input: compile(file, &r.name, "above_input", r.above_input.as_deref())?,
            below_input: compile(file, &r.name, "below_input", r.below_input.as_deref())?,
            last_turn: compile(file, &r.name, "last_turn", r.last_turn.as_deref())?,
            last_turn_not: compile(file, &r.name, "last_turn_not", r.last_turn_not.as_deref())?,
            last_turn_text: compile(file, &r.name, "last_turn_text", r.last_turn_text.as_deref())?,
            earlier_turns: compile(file, &r.name, "earlier_turns", r.earlier_turns.as_deref())?,
            last_frame: compile(file, &r.name, "last_frame", r.last_frame.as_deref())?,
            input_box: r.input_box,
            menu_last: r.menu_last,
        });
    }
    let marker = |field, v: &Option<(String, String)>| match v {
        Some((file, p)) => compile(file, "-", field, Some(p)),
        None => Ok(None),
    };
    let mut asks = Vec::new();
    for (file, a) in &k.asks {
        let re = compile(file, &a.name, "pattern", Some(&a.pattern))?.expect("a pattern was given");
        if !re.capture_names().any(|n| n == Some("what")) {
            return Err(RulesError::Regex {
                file: file.clone(),
                kind: kind.to_string(),
                rule: a.name.clone(),
                field: "pattern",
                message: "no group named `what` (the command or path asked about)".into(),
            });
        }
        asks.push((a.asks.clone(), re));
    }
    Ok(Compiled {
        turn_marker: marker("turn_marker", &k.turn_marker)?,
        border: marker("border", &k.border)?,
        input_end: marker("input_end", &k.input_end)?,
        input_more: marker("input_more", &k.input_more)?,
        input_framed: k.input_framed.unwrap_or(false),
        input_opened: marker("input_opened", &k.input_opened)?,
        asks_after: marker("asks_after", &k.asks_after)?,
        menu_entry: match &k.menu_entry {
            Some((file, p)) => {
                let re = compile(file, "-", "menu_entry", Some(p))?.expect("a pattern was given");
                if !re.capture_names().any(|n| n == Some("number")) {
                    return Err(RulesError::Regex {
                        file: file.clone(),
                        kind: kind.to_string(),
                        rule: "-".into(),
                        field: "menu_entry",
                        message: "no group named `number` (the entry's number)".into(),
                    });
                }
                Some(re)
            }
            None => None,
        },
        rules,
        asks,
    })
}

/// The last non-empty lines of `screen` (at most [`MAX_LINES_EXAMINED`]), ANSI escapes
/// removed, trailing whitespace trimmed, top to bottom, each cut to [`MAX_LINE_BYTES`].
fn bottom_lines(screen: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = screen
        .lines()
        .rev()
        .map(|l| line_start(l).trim_end())
        .filter(|l| !l.is_empty())
        .take(MAX_LINES_EXAMINED)
        .collect();
    lines.reverse();
    lines
}

/// A pane's line is at most its width, and no terminal is this wide: a longer "line" (a
/// megabyte piped into `orchestra classify`) is read from its start only, so the rules'
/// many passes over the bottom lines stay bounded whatever the input.
const MAX_LINE_BYTES: usize = 4096;

/// The first [`MAX_LINE_BYTES`] of `line`, cut at a character boundary.
fn line_start(line: &str) -> &str {
    if line.len() <= MAX_LINE_BYTES {
        return line;
    }
    let mut end = MAX_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// Removes ANSI escape sequences (CSI, OSC, and two-byte escapes) from `text`.
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            read_escape(&mut chars);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Reads the rest of an escape sequence, its ESC read already, from `chars`: a CSI's
/// parameters and final byte; an OSC or a two-byte escape is read and gives `None`.
pub(crate) fn read_escape(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Option<(String, char)> {
    match chars.next() {
        Some('[') => {
            // CSI: parameters and intermediates, then one final byte in @..~.
            let mut params = String::new();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    return Some((params, c));
                }
                params.push(c);
            }
            None
        }
        Some(']') => {
            // OSC: ends with BEL or ESC \.
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                    chars.next();
                    break;
                }
            }
            None
        }
        _ => None,
    }
}

/// Reads the tail of a screen given as raw bytes (any encoding: invalid UTF-8 is
/// replaced), ANSI escapes removed. Only the last `max_bytes` are decoded.
pub fn screen_text(bytes: &[u8], max_bytes: usize) -> String {
    let start = bytes.len().saturating_sub(max_bytes);
    let text = String::from_utf8_lossy(&bytes[start..]);
    strip_ansi(&text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{screen_text, Rules};
    use crate::agent::asked::Asked;
    use crate::state::AgentState;
    use std::path::Path;

    /// What every captured waiting screen asks, by agent, release, name (a catalogue
    /// capture's name without its `@<size>`) and size (`""` for a named fixture).
    fn expected(kind: &str, version: &str, name: &str, size: &str) -> Option<Asked> {
        let run = |c: &str| Some(Asked::Run(c.into()));
        // A line wrapped at 50 columns cuts what it names: better nothing than half of it.
        let narrow = size == "50x30";
        match (kind, name) {
            (_, "waiting-trust-dialog" | "waiting-gitignore-question") => None,
            // Menus a person opened, questions, a limit: nothing to run.
            (
                _,
                "waiting-permissions-picker"
                | "waiting-ask-user"
                | "waiting-usage-limit"
                | "waiting-add-mentioned-file",
            ) => None,
            // The catalogues of codex, gemini and aider: what each approval names, read
            // from the last dialog only (an earlier one stays in the history above it).
            ("codex", "waiting-exec-approval") => run("touch created-by-bash.txt"),
            ("codex", "waiting-patch-approval") => match version {
                "0.110.0" => Some(Asked::Edit("new-file.txt".into())),
                _ if narrow => None,
                _ => Some(Asked::Edit(
                    "/tmp/orchestra-capture-codex.2uzT0u/wt/new-file.txt".into(),
                )),
            },
            ("codex", "waiting-mcp-approval") => Some(Asked::Use("orchestra.note".into())),
            ("gemini", "waiting-shell-approval") => run("touch created-by-shell.txt"),
            ("gemini", "waiting-write-approval") => Some(Asked::Write("new-file.txt".into())),
            ("gemini", "waiting-edit-approval") => Some(Asked::Edit("README.md".into())),
            ("gemini", "waiting-web-fetch-approval") => {
                Some(Asked::Fetch("http://127.0.0.1:9/page".into()))
            }
            ("gemini", "waiting-mcp-approval") => {
                Some(Asked::Use("note (orchestra MCP Server)".into()))
            }
            ("aider", "waiting-shell-command") if narrow => None,
            ("aider", "waiting-shell-command") if !size.is_empty() => {
                run("sleep 6; echo ran-by-aider")
            }
            ("aider", "waiting-edit-file-not-in-chat" | "waiting-add-url") if narrow => None,
            ("aider", "waiting-edit-file-not-in-chat") => Some(Asked::Edit("README.md".into())),
            ("aider", "waiting-add-url") => Some(Asked::Fetch("http://127.0.0.1:9/page".into())),
            // The claude catalogue: each permission dialog names what it asks.
            ("claude", "waiting-permission-bash") => run("touch catalogue-bash.txt"),
            ("claude", "waiting-permission-write") => Some(Asked::Write("new-file.txt".into())),
            ("claude", "waiting-permission-edit") => Some(Asked::Edit("a.txt".into())),
            ("claude", "waiting-permission-notebook-edit") => Some(Asked::Edit("nb.ipynb".into())),
            ("claude", "waiting-permission-webfetch") => {
                // The stand-in's own address, a port of its own on each capture run.
                let port = match version {
                    "2.0.77" => 36357,
                    "2.1.20" => 44595,
                    "2.1.100" => 46429,
                    "2.1.220" => 46505,
                    _ => 42659,
                };
                Some(Asked::Fetch(format!("http://127.0.0.1:{port}/page")))
            }
            ("claude", "waiting-permission-websearch") => {
                Some(Asked::Use("Web Search(\"tmux status line\")".into()))
            }
            ("claude", "waiting-permission-mcp") => Some(Asked::Use(
                if version == "2.1.332" {
                    "orchestra — Note Tool"
                } else {
                    "orchestra - note"
                }
                .into(),
            )),
            // Questions, plans and what a person opened: no command, no path.
            (
                "claude",
                "waiting-ask-single"
                | "waiting-ask-multi"
                | "waiting-exit-plan-mode"
                | "waiting-exit-plan-mode-no-plan"
                | "waiting-model-picker"
                | "waiting-resume-picker"
                | "waiting-permissions-panel",
            ) => None,
            ("claude", "waiting-bash-menu") => run("touch created-by-bash.txt"),
            ("claude", "waiting-bash-menu-narrow") => run("touch narrow.txt"),
            ("claude", "waiting-bash-menu-typed-12-lines") => run("touch typed-menu.txt"),
            ("claude", "waiting-write-menu") => Some(Asked::Write("new-file.txt".into())),
            ("codex", "waiting-bash-menu") => run("touch created-by-bash.txt"),
            ("codex", "waiting-write-menu") => Some(Asked::Edit(
                "/tmp/orchestra-capture-codex.GrjNcH/wt/new-file.txt".into(),
            )),
            ("gemini", "waiting-shell-menu" | "waiting-shell-menu-narrow") => {
                run(if name.ends_with("narrow") {
                    "touch narrow.txt"
                } else {
                    "touch created-by-shell.txt"
                })
            }
            ("gemini", "waiting-write-menu" | "waiting-write-menu-moved") => {
                Some(Asked::Write("new-file.txt".into()))
            }
            ("opencode", "waiting-permission-bash") => run("touch catalogue-bash.txt"),
            ("opencode", "waiting-permission-edit") => Some(Asked::Edit("a.txt".into())),
            // Its dialog's head names the new file as an Edit too.
            ("opencode", "waiting-permission-write") => Some(Asked::Edit("new-file.txt".into())),
            ("aider", "waiting-shell-command") => run("sleep 3; echo ran-by-aider"),
            ("aider", "waiting-new-file") => Some(Asked::Write("notes/new-file.txt".into())),
            // Its command ran: the question is about its output, not a command.
            ("aider", "waiting-command-output") => None,
            // Derived from the menus above, their footer dropped: the same ask.
            ("claude", n) if n.starts_with("waiting-bash-menu-derived-") => {
                run("touch created-by-bash.txt")
            }
            ("claude", n) if n.starts_with("waiting-write-menu-derived-") => {
                Some(Asked::Write("new-file.txt".into()))
            }
            ("claude", n) if n.starts_with("waiting-web-fetch-derived-") => Some(Asked::Fetch(
                "https://docs.example.com/guide/install".into(),
            )),
            // Questions, plans and the trust dialog, derived: nothing to run.
            (_, n) if n.contains("-derived-") => None,
            other => panic!("no expectation for {other:?}: add one"),
        }
    }

    #[test]
    fn every_captured_waiting_screen_names_what_it_asks() {
        let root =
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/screens");
        let rules = Rules::built_in();
        let mut seen = 0;
        for agent in std::fs::read_dir(&root).unwrap() {
            let agent = agent.unwrap();
            if !agent.path().is_dir() {
                continue;
            }
            let kind = agent.file_name().to_string_lossy().into_owned();
            for version in std::fs::read_dir(agent.path()).unwrap() {
                let version = version.unwrap().path();
                if !version.is_dir() {
                    continue;
                }
                for file in std::fs::read_dir(&version).unwrap() {
                    let path = file.unwrap().path();
                    let name = path.file_name().unwrap().to_string_lossy().into_owned();
                    let Some(stem) = name
                        .strip_suffix(".txt")
                        .or_else(|| name.strip_suffix(".ansi"))
                    else {
                        continue;
                    };
                    let screen = screen_text(&std::fs::read(&path).unwrap(), usize::MAX);
                    let asked = rules.asked(&kind, &screen).unwrap();
                    // The catalogue's screens are `<state>-<entry>@<size>`.
                    let (stem, size) = stem.split_once('@').unwrap_or((stem, ""));
                    if !stem.starts_with("waiting-") {
                        continue;
                    }
                    assert_eq!(
                        rules.classify(&kind, &screen).unwrap().state,
                        AgentState::Waiting,
                        "{}",
                        path.display()
                    );
                    let release = version.file_name().unwrap().to_string_lossy().into_owned();
                    assert_eq!(
                        asked,
                        expected(&kind, &release, stem, size),
                        "{}",
                        path.display()
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen >= 850, "only {seen} waiting screens found");
    }

    /// What `brief` reads from a box holding a prompt typed over many lines: the lines
    /// shown, down to the box's border; a box scrolled past its height (2.1.332) from the
    /// first line it shows, its top border no part of the text.
    #[test]
    fn typed_input_reads_a_box_of_many_lines() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/screens/claude");
        let rules = Rules::built_in();
        let read = |path: &str| {
            let screen = screen_text(&std::fs::read(root.join(path)).unwrap(), usize::MAX);
            rules.typed_input("claude", &screen).unwrap().unwrap()
        };
        let line = |n: usize| format!("line{n}:keeptheoldentriesastheyareandsaywhy");
        let tall = read("2.1.100/idle-typed-fills-pane.txt");
        assert!(
            tall.starts_with("[[slow:6]][[say:thelongpromptran]]"),
            "{tall}"
        );
        assert!(
            tall.ends_with(&format!("{}{}", line(27), line(28))),
            "{tall}"
        );
        let scrolled = read("2.1.332/idle-typed-fills-pane.txt");
        assert!(scrolled.starts_with(&line(14)), "{scrolled}");
        assert!(scrolled.ends_with(&line(28)), "{scrolled}");
        let narrow = read("2.1.332/idle-typed-narrow-12-lines.txt");
        assert!(narrow.ends_with(&line(12)), "{narrow}");
    }

    /// gemini's input box is where its rule opens it, however much is under it; a prompt
    /// echoed last (a dialog hides the box) is no input box.
    #[test]
    fn an_opened_input_box_owns_what_is_under_it() {
        let rules = Rules::built_in();
        let state = |screen: &str| rules.classify("gemini", screen).unwrap().state;
        let rule = "─".repeat(40);
        let list: String = (1..=12).map(|n| format!(" file-{n}.txt\n")).collect();
        let footer = " workspace (/directory)   sandbox\n /tmp/wt   no sandbox\n";
        let idle = format!("✦ done\n{rule}\n Shift+Tab to accept edits\n > @\n{list}{footer}");
        assert_eq!(state(&idle), AgentState::Idle);
        // Footers a resize left below the redrawn frame are the box's too.
        let resized = format!("⠋ Thinking... (esc to cancel, 3s)\n{rule}\n >   Type your message\n{footer}{footer}{footer}");
        assert_eq!(state(&resized), AgentState::Busy);
        let dialog = format!(
            "{rule}\n Shift+Tab to accept edits\n >   Type your message\n > [[bash: touch x]]\n╭────\n│ ? Shell  touch x │\n│ ● 1. Allow once │\n│   2. Allow for this session │\n│   3. No, suggest changes (esc) │\n╰────\n"
        );
        assert_eq!(state(&dialog), AgentState::Waiting);
        // An input line with nothing opening it is history.
        assert_eq!(
            state("✦ done\n > [[say: hi]]\n✦ hi\n > echoed\n"),
            AgentState::Unknown
        );
    }

    #[test]
    fn asks_patterns_are_checked_like_rules() {
        let home = tempfile::tempdir().unwrap();
        let file = home.path().join("agents.toml");
        std::fs::write(
            &file,
            "[claude]\n[[claude.asks]]\nname = \"x\"\nasks = \"delete\"\npattern = '(?P<what>.)'\n",
        )
        .unwrap();
        let e = Rules::load(home.path())
            .expect_err("unknown ask")
            .to_string();
        assert!(e.contains("unknown kind of ask \"delete\""), "{e}");
        std::fs::write(
            &file,
            "[claude]\n[[claude.asks]]\nname = \"x\"\nasks = \"run\"\npattern = '^\\$ (.+)'\n",
        )
        .unwrap();
        let e = Rules::load(home.path()).unwrap().check_all().unwrap_err();
        assert!(e.to_string().contains("no group named `what`"), "{e}");
        // A person's pattern is tried before the built-in ones.
        std::fs::write(
            &file,
            "[claude]\n[[claude.asks]]\nname = \"mine\"\nasks = \"use\"\npattern = '(?m)^ (?P<what>Bash) command$'\n",
        )
        .unwrap();
        let screen = "──────────\n Bash command\n   make\n Esc to cancel\n";
        let rules = Rules::load(home.path()).unwrap();
        assert_eq!(
            rules.asked("claude", screen).unwrap(),
            Some(Asked::Use("Bash".into()))
        );
        assert_eq!(
            Rules::built_in().asked("claude", screen).unwrap(),
            Some(Asked::Run("make".into()))
        );
        // Above the last border is history, not the menu.
        let history = " Bash command\n   make\n──────────\n❯ \n";
        assert_eq!(Rules::built_in().asked("claude", history).unwrap(), None);
    }
}
