//! Screen classification throughput: the real claude screens of every release in the
//! matrix (plain and with ANSI escapes), decoded, stripped and classified in a loop, in MB/s
//! of screen text. Target: at least 100 MB/s.
//!
//!   cargo bench --bench classify

#[path = "../tests/it/screens.rs"]
mod screens;

use std::time::Instant;

use orchestra::agent::rules::{screen_text, Rules};

fn main() {
    // Every release's claude screens (tests/fixtures/screens/claude/<version>/).
    let screens: Vec<Vec<u8>> = screens::labelled()
        .into_iter()
        .filter(|s| s.agent == "claude")
        .map(|s| std::fs::read(&s.path).expect("read"))
        .collect();
    let rules = Rules::built_in();
    let per_pass: usize = screens.iter().map(Vec::len).sum();
    let mut states = 0usize;
    // Warm up (compiles the rules), then measure.
    for s in &screens {
        let _ = rules.classify("claude", &screen_text(s, usize::MAX));
    }
    let passes: usize = std::env::var("CLASSIFY_PASSES")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(2_000);
    let started = Instant::now();
    for _ in 0..passes {
        for s in &screens {
            let v = rules
                .classify("claude", &screen_text(s, usize::MAX))
                .expect("valid rules");
            states += v.state as usize;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let mb = (per_pass * passes) as f64 / 1e6;
    println!(
        "classify: {} real screens ({} KB) x {passes}: {:.1} MB in {:.2} s = {:.0} MB/s (target >= 100) [{states}]",
        screens.len(),
        per_pass / 1024,
        mb,
        secs,
        mb / secs
    );

    // A 10,000-line pane: only its bottom is decoded and examined.
    let mut big = Vec::new();
    for i in 0..10_000 {
        big.extend_from_slice(
            format!("line {i}: some earlier output of the agent, long enough to matter\n")
                .as_bytes(),
        );
    }
    big.extend_from_slice(&screens[0]);
    let runs = passes;
    let started = Instant::now();
    for _ in 0..runs {
        let v = rules
            .classify("claude", &screen_text(&big, 64 * 1024))
            .expect("valid rules");
        states += v.state as usize;
    }
    let secs = started.elapsed().as_secs_f64();
    let mb = (big.len() * runs) as f64 / 1e6;
    println!(
        "classify: a 10,000-line pane ({} KB) x {runs}: {:.0} MB/s of pane text [{states}]",
        big.len() / 1024,
        mb / secs
    );
}
