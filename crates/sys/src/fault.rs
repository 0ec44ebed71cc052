//! Fault injection for the crash tests, as git's own test suite does it:
//! `ORCHESTRA_FAULT_AT=<command>:<n>` makes this process SIGKILL itself at the n-th
//! [`point`] of `<command>` (counted from 1), so a test can stop `dispatch`, `merge`, `kill`
//! or `restart` between any two of their steps and check that `doctor --fix` leaves
//! nothing lost or orphaned. Unset (always, outside the tests) a point costs one load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The variable's name, for the tests.
pub const ENV: &str = "ORCHESTRA_FAULT_AT";

static PLAN: OnceLock<Option<(String, usize)>> = OnceLock::new();
static PASSED: AtomicUsize = AtomicUsize::new(0);

/// A step boundary of `command`: the process dies here when the plan says so.
pub fn point(command: &str) {
    let Some((wanted, n)) = PLAN.get_or_init(read_plan) else {
        return;
    };
    if wanted != command {
        return;
    }
    if PASSED.fetch_add(1, Ordering::SeqCst) + 1 == *n {
        die();
    }
}

fn read_plan() -> Option<(String, usize)> {
    parse(&std::env::var(ENV).ok()?)
}

fn parse(text: &str) -> Option<(String, usize)> {
    let (command, n) = text.rsplit_once(':')?;
    let n: usize = n.trim().parse().ok()?;
    (n > 0 && !command.is_empty()).then(|| (command.to_string(), n))
}

/// SIGKILL, not an exit or an abort: no destructor, no buffered write and no lock release
/// by this process happens after it, as when a person's machine loses power or the OOM
/// killer strikes. Without a `kill` program the abort is the nearest thing.
fn die() -> ! {
    let pid = std::process::id().to_string();
    let _ = crate::process::Run::new("kill", std::time::Duration::from_secs(5))
        .args(["-KILL", &pid])
        .inherit_output()
        .status();
    // The signal is delivered before `kill` exits; reaching here means it could not run.
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn the_plan_is_a_command_and_a_step_from_one() {
        assert_eq!(parse("merge:3"), Some(("merge".into(), 3)));
        assert_eq!(parse("merge:0"), None);
        assert_eq!(parse("merge"), None);
        assert_eq!(parse(":2"), None);
        assert_eq!(parse("merge:x"), None);
    }
}
