//! Classifier accuracy: every labelled screen in tests/fixtures/screens/<agent>/<version>/
//! (the file name's first word is the state it shows) through the built-in rules, one row
//! per agent and release: screens, right, wrong, and the wrong ones by name with what they
//! were read as. Target: 100%. Exits 1 when a screen is read wrong (so does the test
//! classify::every_real_screen_is_classified_as_its_name_says).
//!
//!   cargo bench --bench accuracy

#[path = "../tests/it/screens.rs"]
mod screens;

use orchestra::agent::rules::{screen_text, Rules};

/// How much of a screen `orchestra classify` and a refresh decode: its last 64 KiB.
const TAIL_BYTES: usize = 64 * 1024;

struct Row {
    agent: String,
    version: String,
    screens: usize,
    wrong: Vec<String>,
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
        if rows
            .last()
            .is_none_or(|r| r.agent != s.agent || r.version != s.version)
        {
            rows.push(Row {
                agent: s.agent.clone(),
                version: s.version.clone(),
                screens: 0,
                wrong: Vec::new(),
            });
        }
        let row = rows.last_mut().expect("pushed above");
        row.screens += 1;
        if got.as_str() != s.expected {
            row.wrong.push(format!("{} (read {got})", s.name));
        }
    }
    println!(
        "{:<8} {:<10} {:>7} {:>6} {:>6}  wrong screens",
        "agent", "release", "screens", "right", "wrong"
    );
    let (mut total, mut total_wrong) = (0, 0);
    for r in &rows {
        total += r.screens;
        total_wrong += r.wrong.len();
        println!(
            "{:<8} {:<10} {:>7} {:>6} {:>6}  {}",
            r.agent,
            r.version,
            r.screens,
            r.screens - r.wrong.len(),
            r.wrong.len(),
            r.wrong.join(", ")
        );
    }
    let right = total - total_wrong;
    println!(
        "{:<8} {:<10} {:>7} {:>6} {:>6}  accuracy {:.1}% (target 100%)",
        "all",
        "",
        total,
        right,
        total_wrong,
        if total == 0 {
            0.0
        } else {
            100.0 * right as f64 / total as f64
        }
    );
    if total == 0 || total_wrong > 0 {
        std::process::exit(1);
    }
}
