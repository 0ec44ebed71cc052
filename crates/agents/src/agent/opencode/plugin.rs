//! opencode: the plugin that reports its state, and the config folder it runs with.
//!
//! opencode has no hook settings: it loads ES modules from a config folder's `plugins/`,
//! and hands each of them every event of its bus. A session runs with
//! `OPENCODE_CONFIG_DIR` naming a folder in the session's own folder (never the worktree:
//! opencode writes a `.gitignore`, a package.json and node_modules into every config
//! folder it loads), whose `plugins/orchestra.js` calls `orchestra event` for the events
//! that carry state. The person's own config stays in force: that folder is one more.

use std::path::Path;

/// The folder, in a session's folder, that `OPENCODE_CONFIG_DIR` names.
pub const CONFIG_DIR: &str = "opencode";

/// The plugin's file, under [`CONFIG_DIR`].
pub const PLUGIN_FILE: &str = "plugins/orchestra.js";

/// The bus events the plugin passes on (as `opencode-<type>`, their `properties` on
/// stdin). The streaming ones (`message.part.*`) would start a process per chunk.
pub const EVENTS: &[&str] = &[
    "session.created",
    "session.status",
    "session.idle",
    "session.error",
    "permission.asked",
    "permission.replied",
];

/// What a config folder holds after opencode installed its plugin package there. A
/// folder without it gets an install at start, and opencode loads no plugin until that
/// install ends (about two minutes online, 70 s offline until it gives up, measured on
/// 1.18.33); with these copied from a folder that has them it tries none.
pub const INSTALLED: &[&str] = &["package.json", "package-lock.json", "node_modules"];

/// The event name `orchestra event` gets for an opencode bus event of type `kind`.
pub fn event_name(kind: &str) -> String {
    format!("opencode-{kind}")
}

/// The plugin's source for session `session`: argv, not a shell line, and every path in
/// it a JSON string (a quote or a backslash in a path stays itself). Each call gets 10 s
/// and opencode's turn does not wait for it, but each waits for the one before: a
/// session.error and the idle a millisecond after it must be recorded in that order.
pub fn plugin(orchestra: &Path, orchestra_home: &Path, session: &str) -> String {
    let argv = serde_json::json!([
        orchestra.to_string_lossy(),
        "event",
        "--from-hook",
        "--session",
        session
    ]);
    let home = serde_json::Value::from(orchestra_home.to_string_lossy());
    let events = serde_json::json!(EVENTS);
    format!(
        r#"// Written by orchestra: tells it what opencode is doing in this session.
const ARGV = {argv}
const ENV = {{ ...process.env, ORCHESTRA_HOME: {home} }}
const WANTED = new Set({events})
let last = Promise.resolve()
function run(type, properties) {{
  try {{
    const p = Bun.spawn([...ARGV, "opencode-" + type], {{
      stdin: "pipe", stdout: "ignore", stderr: "ignore", env: ENV,
    }})
    p.stdin.write(JSON.stringify(properties ?? {{}}))
    p.stdin.end()
    const t = setTimeout(() => p.kill(), 10000)
    return p.exited.catch(() => {{}}).finally(() => clearTimeout(t))
  }} catch {{
    return Promise.resolve()
  }}
}}
function tell(type, properties) {{
  last = last.then(() => run(type, properties))
}}
export const Orchestra = async () => ({{
  event: async ({{ event }}) => {{
    if (WANTED.has(event.type)) tell(event.type, event.properties)
  }},
}})
"#
    )
}

/// Whether `text` is an opencode session id (`ses_` and 26 letters and digits): it goes
/// back on a command line as `-s ID`.
pub fn is_session_id(text: &str) -> bool {
    text.strip_prefix("ses_")
        .is_some_and(|rest| rest.len() == 26 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_names_orchestra_as_json_strings() {
        let js = plugin(
            Path::new("/opt/my \"tools\"/orchestra"),
            Path::new("/h"),
            "s-1",
        );
        assert!(js.contains(
            r#"const ARGV = ["/opt/my \"tools\"/orchestra","event","--from-hook","--session","s-1"]"#
        ));
        assert!(js.contains(r#"ORCHESTRA_HOME: "/h""#));
        assert!(js.contains(r#""permission.asked""#));
    }

    #[test]
    fn session_ids_are_recognised() {
        assert!(is_session_id("ses_dcae52746ffeXlceujJWQ7dMNb"));
        assert!(!is_session_id("ses_short"));
        assert!(!is_session_id("ses_dcae52746ffeXlceujJWQ7dM-b"));
        assert!(!is_session_id("3f2504e0-4f89-11d3-9a0c-0305e82c3301"));
    }
}
