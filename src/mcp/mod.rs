//! The Model Context Protocol on stdio: JSON-RPC 2.0, one message per line, read from
//! the client and answered on the writer given, nothing else ever written there (what
//! the server has to say besides goes to its log, stderr). The tools themselves are a
//! [`Tools`] the command gives: this module knows the protocol and the tools' schemas,
//! never what runs behind a call.

pub mod schema;
pub mod tools;

use std::io::{BufRead, Write};

use serde_json::{json, Map, Value};

/// The newest revision spoken; a client asking for an older one it also knows gets that.
pub const PROTOCOL: &str = "2025-06-18";
const SUPPORTED: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// A message longer than this is answered with an error and dropped unread: a line is
/// held whole in memory, and no call of ours needs more.
pub const MAX_MESSAGE: usize = 1 << 20;

/// What a tool call came to: text for any client, the command's JSON where it has one,
/// and whether it failed (a tool error the model reads, not a protocol error).
pub struct Outcome {
    pub text: String,
    pub structured: Option<Value>,
    pub is_error: bool,
}

impl Outcome {
    pub fn error(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            structured: None,
            is_error: true,
        }
    }
}

/// What runs a tool once its arguments met its schema.
pub trait Tools {
    fn call(&mut self, tool: &tools::Tool, args: &Map<String, Value>) -> Outcome;
}

/// Serves until the client closes its side (or stops reading ours). A call under way
/// when stdin closes is finished and answered first.
pub fn serve(
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    log: &mut dyn Write,
    handler: &mut dyn Tools,
) {
    loop {
        let line = match read_line(input, MAX_MESSAGE) {
            Ok(Line::End) => return,
            Ok(Line::Text(line)) => line,
            Ok(Line::TooLong) => {
                let _ = writeln!(
                    log,
                    "orchestra mcp: a message over {MAX_MESSAGE} bytes, dropped"
                );
                let answer = failure(
                    Value::Null,
                    -32600,
                    &format!("message over {MAX_MESSAGE} bytes: dropped"),
                );
                if send(output, &answer).is_err() {
                    return;
                }
                continue;
            }
            Err(e) => {
                let _ = writeln!(log, "orchestra mcp: reading stdin: {e}");
                return;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(message) => answer(&message, handler),
            Err(e) => Some(failure(Value::Null, -32700, &format!("parse error: {e}"))),
        };
        if let Some(answer) = answer {
            if send(output, &answer).is_err() {
                // The client stopped reading: nobody is left to answer.
                return;
            }
        }
    }
}

enum Line {
    Text(String),
    TooLong,
    End,
}

/// One line of at most `max` bytes; a longer one is read to its end and thrown away, so
/// the next message starts clean.
fn read_line(input: &mut dyn BufRead, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if too_long {
                return Ok(Line::TooLong);
            }
            if line.is_empty() {
                return Ok(Line::End);
            }
            break;
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(at) => (&buf[..at], at + 1),
            None => (buf, buf.len()),
        };
        let ends = done > chunk.len();
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        input.consume(done);
        if ends {
            if too_long {
                return Ok(Line::TooLong);
            }
            break;
        }
    }
    Ok(Line::Text(String::from_utf8_lossy(&line).into_owned()))
}

fn send(output: &mut dyn Write, message: &Value) -> std::io::Result<()> {
    let mut text = serde_json::to_string(message).unwrap_or_default();
    text.push('\n');
    output.write_all(text.as_bytes())?;
    output.flush()
}

fn failure(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The answer to one message; none for a notification (or an answer of the client's).
fn answer(message: &Value, handler: &mut dyn Tools) -> Option<Value> {
    let Some(object) = message.as_object() else {
        return Some(failure(
            Value::Null,
            -32600,
            "not a JSON-RPC message (batches are not taken)",
        ));
    };
    let id = object.get("id").cloned();
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        // A response to us, or nonsense: we ask nothing, so nothing is owed.
        return id.map(|id| failure(id, -32600, "a request needs a method"));
    };
    // A notification (no id) is never answered: `notifications/initialized`,
    // `notifications/cancelled` (a call here is over before the next line is read).
    let id = id?;
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    Some(match method {
        "initialize" => success(id, initialized(&params)),
        "ping" => success(id, json!({})),
        "tools/list" => success(
            id,
            json!({"tools": tools::ALL.iter().map(tools::Tool::listed).collect::<Vec<_>>()}),
        ),
        "tools/call" => call(id, &params, handler),
        other => failure(id, -32601, &format!("method not found: {other}")),
    })
}

fn initialized(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked.filter(|v| SUPPORTED.contains(v)).unwrap_or(PROTOCOL);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "orchestra", "version": env!("CARGO_PKG_VERSION")},
        "instructions": tools::INSTRUCTIONS,
    })
}

fn call(id: Value, params: &Value, handler: &mut dyn Tools) -> Value {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return failure(id, -32602, "tools/call needs a tool name");
    };
    let Some(tool) = tools::find(name) else {
        return failure(id, -32602, &format!("unknown tool: {name}"));
    };
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => {
            return success(
                id,
                result(Outcome::error("the arguments must be an object")),
            );
        }
    };
    let outcome = match schema::check(tool.fields, args) {
        Ok(()) => handler.call(tool, args),
        Err(wrong) => Outcome::error(format!("{name}: {wrong}")),
    };
    success(id, result(outcome))
}

fn result(outcome: Outcome) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": outcome.text}],
        "isError": outcome.is_error,
    });
    if let Some(structured) = outcome.structured {
        result["structuredContent"] = structured;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;
    impl Tools for Echo {
        fn call(&mut self, tool: &tools::Tool, args: &Map<String, Value>) -> Outcome {
            Outcome {
                text: tool.name.to_string(),
                structured: Some(Value::Object(args.clone())),
                is_error: false,
            }
        }
    }

    fn talk(input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        serve(
            &mut input.as_bytes(),
            &mut out,
            &mut std::io::sink(),
            &mut Echo,
        );
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn an_older_known_revision_is_kept_and_an_unknown_one_gets_ours() {
        let answers = talk(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#,
            "\n"
        ));
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(answers[0]["result"]["protocolVersion"], "2025-03-26");
        assert_eq!(answers[1]["result"]["protocolVersion"], PROTOCOL);
    }

    #[test]
    fn a_line_over_the_bound_is_answered_and_the_next_one_is_read() {
        let mut input = String::from("{\"x\":\"");
        input.push_str(&"a".repeat(MAX_MESSAGE + 10));
        input.push_str("\"}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n");
        let answers = talk(&input);
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert_eq!(answers[1]["id"], 7);
        assert_eq!(answers[1]["result"], json!({}));
    }

    #[test]
    fn a_bad_argument_is_a_tool_error_naming_the_field_and_merge_is_no_tool() {
        let answers = talk(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"dispatch","arguments":{"label":7,"prompt":"x"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"merge","arguments":{}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list","arguments":{"all":true}}}"#,
            "\n"
        ));
        assert_eq!(answers[0]["result"]["isError"], true);
        let text = answers[0]["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("label"), "{text}");
        assert_eq!(answers[1]["error"]["code"], -32602);
        assert_eq!(answers[2]["result"]["isError"], false);
        assert_eq!(answers[2]["result"]["structuredContent"]["all"], true);
    }
}
