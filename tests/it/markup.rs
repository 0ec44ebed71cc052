//! A notification body on a server that reads markup: an agent's command shows as written.

use std::time::Duration;

use crate::harness::{wait_until, Bus, Env};

/// The body the stand-in server received for one `orchestra notify` of `body`, on a
/// server with `capabilities`.
fn received(capabilities: &[&str], body: &str) -> Option<String> {
    let mut env = Env::new();
    let bus = Bus::start_with(&env.root, capabilities)?;
    env.env
        .push(("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone()));
    let run = env
        .orchestra(&[
            "notify",
            "--title",
            "orchestra: api is waiting",
            "--body",
            body,
        ])
        .ok();
    assert!(run.stdout.contains("sent via dbus"), "{}", run.stdout);
    assert!(wait_until(Duration::from_secs(10), || !bus
        .notes()
        .is_empty()));
    Some(bus.notes()[0]["body"].as_str().unwrap().to_string())
}

#[test]
fn a_body_is_escaped_for_a_server_that_reads_markup_and_only_there() {
    let body = "api wants to run: make a && b <x> '<b>bold</b>' &amp; (in repo)";
    let Some(markup) = received(&["body", "body-markup"], body) else {
        return;
    };
    // What a markup server shows of this is the original text, byte for byte.
    assert_eq!(
        markup,
        "api wants to run: make a &amp;&amp; b &lt;x&gt; '&lt;b&gt;bold&lt;/b&gt;' &amp;amp; (in repo)"
    );
    let Some(plain) = received(&["body"], body) else {
        return;
    };
    assert_eq!(plain, body);
}
