//! The Anthropic API stand-in (tests/fake-api) is test code the rest of the suite trusts:
//! its own tests (transcript shapes recorded from the real CLI, and the wire on a live
//! server) run with the suite.

use std::io::{Read, Seek};
use std::process::Command;
use std::time::Duration;

use crate::harness::{fake_api_dir, require, wait_until, which};

#[test]
fn the_api_stand_in_passes_its_own_tests() {
    if !require("python3", which("python3").is_some()) {
        return;
    }
    // A file, not a pipe: a full pipe would stall the child past its deadline.
    let report = tempfile::tempfile().expect("temp file");
    let mut child = Command::new("python3")
        .arg(fake_api_dir().join("test_anthropic.py"))
        .stdout(report.try_clone().expect("temp file"))
        .stderr(report.try_clone().expect("temp file"))
        .spawn()
        .expect("run python3");
    let mut status = None;
    let finished = wait_until(Duration::from_secs(120), || {
        status = child.try_wait().expect("wait for python3");
        status.is_some()
    });
    if !finished {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut text = String::new();
    let mut report = report;
    report.rewind().expect("rewind");
    report.read_to_string(&mut text).expect("read the report");
    assert!(
        status.is_some_and(|s| s.success()),
        "tests/fake-api/test_anthropic.py failed (or ran past 120 s):\n{text}"
    );
}
