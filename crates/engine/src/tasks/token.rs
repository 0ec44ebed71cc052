//! Where the Notion token comes from: `NOTION_TOKEN`, else the Notion MCP server Claude
//! Code is configured with (the person's own config, then a repo's allowed `.mcp.json`).
//! It is never in orchestra's own files, and never printed, logged or written: [`Token`] has no `Display`, and its `Debug` shows only where it came
//! from.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub struct Token {
    secret: String,
    /// Where it was found, for messages: "NOTION_TOKEN", "~/.claude.json (mcpServers.notion)".
    pub from: String,
}

impl Token {
    /// The `Authorization` header's value.
    pub(super) fn bearer(&self) -> crate::http::Secret {
        crate::http::Secret::new(format!("Bearer {}", self.secret))
    }

    /// The `Authorization` header's value as Linear takes a personal API key: the key
    /// itself, no scheme (an OAuth token is given as `Bearer …` and sent as given).
    pub(super) fn as_given(&self) -> crate::http::Secret {
        crate::http::Secret::new(self.secret.clone())
    }
}

/// Linear's key: `$LINEAR_API_KEY`, the person's own (Linear's MCP server signs in with
/// OAuth in a browser and keeps no key a config file could give).
pub(super) fn linear_key() -> Option<Token> {
    crate::paths::non_empty_env("LINEAR_API_KEY").map(|secret| Token {
        secret: secret.trim().to_string(),
        from: "LINEAR_API_KEY".into(),
    })
}

#[cfg(test)]
impl Token {
    pub(super) fn for_tests(secret: &str, from: &str) -> Token {
        Token {
            secret: secret.into(),
            from: from.into(),
        }
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token(from {})", self.from)
    }
}

/// The token: `$NOTION_TOKEN`; else the Notion MCP server's entry in the person's own
/// Claude Code config (`~/.claude.json`: this project's entry, then the global
/// `mcpServers`); else the repo's `.mcp.json`, only once `orchestra allow` allowed that
/// very file (a clone's file is not the person's: it could name any variable, or a token
/// of its author's that would see the person's tasks). Only sources the person controls.
pub(super) fn find(root: &Path) -> Option<Token> {
    if let Some(secret) = crate::paths::non_empty_env("NOTION_TOKEN") {
        return Some(Token {
            secret: secret.trim().to_string(),
            from: "NOTION_TOKEN".into(),
        });
    }
    let env = |name: &str| crate::paths::non_empty_env(name);
    let claude = claude_json().and_then(|p| read_json(&p).map(|v| (p, v)));
    if let Some((path, config)) = &claude {
        let projects = config.get("projects").and_then(Value::as_object);
        let keys = [root.to_path_buf(), root.canonicalize().unwrap_or_default()];
        for key in keys.iter().map(|k| k.to_string_lossy().into_owned()) {
            if let Some(servers) = projects
                .and_then(|p| p.get(&key))
                .and_then(|p| p.get("mcpServers"))
            {
                if let Some(token) = from_servers(
                    servers,
                    &format!("{} (projects.{key:?}.mcpServers", shown(path)),
                    &env,
                ) {
                    return Some(token);
                }
            }
        }
        if let Some(token) = config.get("mcpServers").and_then(|servers| {
            from_servers(servers, &format!("{} (mcpServers", shown(path)), &env)
        }) {
            return Some(token);
        }
    }
    // The same home every command works with (Context::home is this too).
    let home = crate::paths::orchestra_home().ok()?;
    let asked = crate::trust::Asked::of(root).ok()?;
    // The very bytes whose digest was checked: a file swapped after the check is not read.
    let config: Value = serde_json::from_slice(asked.mcp_if_allowed(&home)?).ok()?;
    let at = format!("{} (mcpServers", root.join(".mcp.json").display());
    from_servers(config.get("mcpServers")?, &at, &env)
}

/// Claude Code's config file: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
fn claude_json() -> Option<PathBuf> {
    match crate::paths::non_empty_env("CLAUDE_CONFIG_DIR") {
        Some(dir) => Some(PathBuf::from(dir).join(".claude.json")),
        None => crate::paths::user_home()
            .ok()
            .map(|h| h.join(".claude.json")),
    }
}

fn shown(path: &Path) -> String {
    match crate::paths::user_home() {
        Ok(home) => match path.strip_prefix(&home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => path.display().to_string(),
        },
        Err(_) => path.display().to_string(),
    }
}

fn read_json(path: &Path) -> Option<Value> {
    // A config of megabytes is not Claude Code's: leave it.
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 * 1024 {
        return None;
    }
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The token of the first Notion server among `servers` (an `mcpServers` object) that
/// has one; `at` names the object for messages (closed here with the entry's name).
fn from_servers(servers: &Value, at: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<Token> {
    servers
        .as_object()?
        .iter()
        .filter(|(name, entry)| is_notion(name, entry))
        .find_map(|(name, entry)| {
            let secret = entry_token(entry, env)?;
            Some(Token {
                secret,
                from: format!("{at}.{name})"),
            })
        })
}

/// Whether an MCP server entry is Notion's: by its name, or the package it runs.
fn is_notion(name: &str, entry: &Value) -> bool {
    if name.to_ascii_lowercase().contains("notion") {
        return true;
    }
    let mut words: Vec<&str> = entry
        .get("command")
        .and_then(Value::as_str)
        .into_iter()
        .collect();
    if let Some(args) = entry.get("args").and_then(Value::as_array) {
        words.extend(args.iter().filter_map(Value::as_str));
    }
    words.iter().any(|w| w.contains("notion-mcp-server"))
}

/// The token an entry gives its server: its `NOTION_TOKEN`, else the `Authorization`
/// header in `OPENAPI_MCP_HEADERS` (a JSON object in a string). `${VAR}` in a value is
/// the environment's, as Claude Code expands it.
fn entry_token(entry: &Value, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let vars = entry.get("env")?;
    let value = |name: &str| {
        vars.get(name)
            .and_then(Value::as_str)
            .and_then(|v| expand(v, env))
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let Some(token) = value("NOTION_TOKEN") {
        return Some(token);
    }
    let headers: Value = serde_json::from_str(&value("OPENAPI_MCP_HEADERS")?).ok()?;
    let authorization = headers.as_object()?.iter().find_map(|(k, v)| {
        k.eq_ignore_ascii_case("authorization")
            .then(|| v.as_str())
            .flatten()
    })?;
    let token = authorization.trim();
    let token = match token.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("bearer ") => &token[7..],
        _ => token,
    };
    Some(token.trim().to_string()).filter(|t| !t.is_empty())
}

/// Whether `${name}` in a Notion entry may be read: only a variable that is Notion's by
/// its name (`NOTION_TOKEN`, `MY_NOTION_KEY`), so an entry cannot send some other secret
/// of the environment (`${AWS_SECRET_ACCESS_KEY}`) to Notion as its token.
fn notion_variable(name: &str) -> bool {
    name.to_ascii_uppercase().contains("NOTION")
}

/// `${VAR}` and `${VAR:-default}` replaced from `env`; `None` when a variable without a
/// default is unset, or is not a Notion variable (the entry then gives no token).
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}')?;
        let (name, default) = match after[..end].split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (&after[..end], None),
        };
        if !notion_variable(name) {
            return None;
        }
        out.push_str(&env(name).or_else(|| default.map(str::to_string))?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn an_entry_gives_its_notion_token_or_its_authorization_header() {
        let direct = serde_json::json!({"command": "npx", "env": {"NOTION_TOKEN": " ntn_direct "}});
        assert_eq!(entry_token(&direct, &no_env).as_deref(), Some("ntn_direct"));
        let headers = serde_json::json!({"env": {"OPENAPI_MCP_HEADERS":
            "{\"authorization\": \"Bearer ntn_header\", \"Notion-Version\": \"2022-06-28\"}"}});
        assert_eq!(
            entry_token(&headers, &no_env).as_deref(),
            Some("ntn_header")
        );
        let neither = serde_json::json!({"env": {"OTHER": "x"}});
        assert_eq!(entry_token(&neither, &no_env), None);
        let env = |name: &str| (name == "MY_NOTION").then(|| "ntn_env".to_string());
        let expanded = serde_json::json!({"env": {"NOTION_TOKEN": "${MY_NOTION}"}});
        assert_eq!(entry_token(&expanded, &env).as_deref(), Some("ntn_env"));
        let unset = serde_json::json!({"env": {"NOTION_TOKEN": "${UNSET}"}});
        assert_eq!(entry_token(&unset, &env), None);
        assert_eq!(expand("a${UNSET_NOTION:-b}c", &env).as_deref(), Some("abc"));
        let secret = |name: &str| (name == "AWS_SECRET_ACCESS_KEY").then(|| "aws".to_string());
        let hostile = serde_json::json!({"env": {"NOTION_TOKEN": "${AWS_SECRET_ACCESS_KEY}"}});
        assert_eq!(
            entry_token(&hostile, &secret),
            None,
            "not a Notion variable"
        );
        assert_eq!(expand("${AWS_SECRET_ACCESS_KEY:-x}", &secret), None);
    }

    #[test]
    fn notion_servers_are_found_by_name_or_package() {
        let servers = serde_json::json!({
            "github": {"command": "gh-mcp", "env": {"NOTION_TOKEN": "not this"}},
            "docs": {"command": "npx", "args": ["-y", "@notionhq/notion-mcp-server"],
                     "env": {"NOTION_TOKEN": "ntn_pkg"}}
        });
        let token = from_servers(&servers, "x (mcpServers", &no_env).expect("found");
        assert_eq!(token.secret, "ntn_pkg");
        assert_eq!(token.from, "x (mcpServers.docs)");
        assert_eq!(format!("{token:?}"), "Token(from x (mcpServers.docs))");
    }
}
