//! Classifier accuracy: every labelled screen in tests/fixtures/screens/<agent>/<version>/
//! (the file name's first word is the state it shows) through the built-in rules, by
//! agent, release and catalogue entry (`<state>-<entry>@<cols>x<rows>.txt`, one row per
//! entry over its sizes; the screens named otherwise in one row per release): screens,
//! right, wrong (a confident wrong state: the worst failure, a busy screen read idle, a
//! question read idle) and unknown (read as no state: never announced, but not a lie),
//! the failures by name with what they were read as. Target: 100% right. Exits 1 on a
//! confident wrong read; `unknown` is counted apart (the test
//! classify::every_real_screen_is_classified_as_its_name_says fails on either).
//!
//!   cargo bench --bench accuracy

#[path = "../tests/it/screens.rs"]
mod screens;

use orchestra::agent::rules::{screen_text, Rules};

/// How much of a screen `orchestra classify` and a refresh decode: its last 64 KiB.
const TAIL_BYTES: usize = 64 * 1024;
/// The row of the screens a release holds that are not catalogue entries.
const NAMED: &str = "(named fixtures)";

#[derive(Default)]
struct Row {
    agent: String,
    version: String,
    entry: String,
    screens: usize,
    wrong: Vec<String>,
    unknown: Vec<String>,
}

impl Row {
    fn right(&self) -> usize {
        self.screens - self.wrong.len() - self.unknown.len()
    }
}

fn main() {
    let rules = Rules::built_in();
    let mut rows: Vec<Row> = Vec::new();
    for s in screens::labelled() {
        let bytes = std::fs::read(&s.path).expect("read a fixture");
        let got = rules
            .classify(&s.agent, &screen_text(&bytes, TAIL_BYTES))
            .expect("the built-in rules compile")
            .state;
        let entry = s.entry.clone().unwrap_or_else(|| NAMED.to_string());
        let at = match rows
            .iter()
            .position(|r| r.agent == s.agent && r.version == s.version && r.entry == entry)
        {
            Some(at) => at,
            None => {
                rows.push(Row {
                    agent: s.agent.clone(),
                    version: s.version.clone(),
                    entry,
                    ..Row::default()
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[at];
        row.screens += 1;
        let read = got.as_str();
        if read == s.expected {
            continue;
        }
        let failure = format!("{} (read {read})", s.name);
        if read == "unknown" {
            row.unknown.push(failure);
        } else {
            row.wrong.push(failure);
        }
    }
    // Per release, the named fixtures first, then the catalogue's entries by name.
    rows.sort_by(|a, b| {
        (
            &a.agent,
            screens::version_key(&a.version),
            a.entry != NAMED,
            &a.entry,
        )
            .cmp(&(
                &b.agent,
                screens::version_key(&b.version),
                b.entry != NAMED,
                &b.entry,
            ))
    });
    println!(
        "{:<8} {:<10} {:<34} {:>7} {:>6} {:>6} {:>7}  failures",
        "agent", "release", "entry", "screens", "right", "wrong", "unknown"
    );
    let (mut total, mut wrong, mut unknown) = (0, 0, 0);
    for r in &rows {
        total += r.screens;
        wrong += r.wrong.len();
        unknown += r.unknown.len();
        let failures: Vec<&str> = r
            .wrong
            .iter()
            .chain(&r.unknown)
            .map(String::as_str)
            .collect();
        println!(
            "{:<8} {:<10} {:<34} {:>7} {:>6} {:>6} {:>7}  {}",
            r.agent,
            r.version,
            r.entry,
            r.screens,
            r.right(),
            r.wrong.len(),
            r.unknown.len(),
            failures.join(", ")
        );
    }
    let right = total - wrong - unknown;
    let percent = |n: usize| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    println!(
        "{:<8} {:<10} {:<34} {:>7} {:>6} {:>6} {:>7}  right {:.1}% (target 100%), confident wrong {:.1}%, unknown {:.1}%",
        "all",
        "",
        "",
        total,
        right,
        wrong,
        unknown,
        percent(right),
        percent(wrong),
        percent(unknown)
    );
    if total == 0 || wrong > 0 {
        std::process::exit(1);
    }
}
