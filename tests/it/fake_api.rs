//! The Anthropic API stand-in (tests/fake-api) is test code the rest of the suite trusts:
//! its own tests (transcript shapes recorded from the real CLI, and the wire on a live
//! server) run with the suite.

use crate::harness::stand_in_passes_its_own_tests;

#[test]
fn the_api_stand_in_passes_its_own_tests() {
    stand_in_passes_its_own_tests("test_anthropic.py");
}
