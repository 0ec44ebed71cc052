//! One-line text helpers shared by every layer that reports a library's message.

/// A library's message (toml and regex write several lines: a snippet, a caret, a hint)
/// as one line, its lines joined by ": "; `fallback` when it says nothing.
pub fn one_line(message: &str, fallback: &str) -> String {
    let parts: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if parts.is_empty() {
        fallback.to_string()
    } else {
        parts.join(": ")
    }
}

/// Line and column (from 1) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
