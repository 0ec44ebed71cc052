//! The ONE renderer for text that comes from an agent, a repository or a host (commit
//! subjects, paths, diffs, what a screen asks, a remote hook's word, task titles): shown
//! to a person as it is, never read by their terminal. Control characters, escapes, C1
//! controls, DEL and the bidi overrides that reorder what follows are written visibly
//! (`\e`, `\r`, `\x08`, `\u202e`), so no text can move the cursor, erase a line, set
//! the clipboard or disguise itself; the characters themselves stay, nothing is dropped.
//! A backslash is left as it is: the rendering is for reading, and stays the same when
//! rendered again. What JSON leaves raw (DEL, C1, the bidi controls) is written as JSON
//! writes an escape (`\u202e`), so rendered JSON is still the same JSON.
//!
//! Pure: text in, text out.

/// `text` on one line: line breaks and tabs visible too (`\n`, `\t`), so a name holding
/// one cannot pass for two lines of a listing.
pub fn line(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        push(&mut shown, c, false);
    }
    shown
}

/// [`line`] of `text` without its surrounding whitespace, at most `max` characters: past
/// that it is cut, and "…" says so.
pub fn cut(text: &str, max: usize) -> String {
    let shown = line(text.trim());
    if shown.chars().count() <= max {
        return shown;
    }
    // A rendering cut in its middle (`\u{20…`) is still only characters to read.
    let mut cut: String = shown.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` over as many lines as it has: its line breaks and tabs kept (a diff's), every
/// other control character visible, a carriage return included (it would write the
/// line over).
pub fn lines(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        push(&mut shown, c, true);
    }
    shown
}

/// Whether `text` holds nothing a terminal would act on beyond a line break and a tab:
/// what [`lines`] gives.
pub fn is_inert(text: &str) -> bool {
    text.chars()
        .all(|c| matches!(c, '\n' | '\t') || visible_as(c).is_none())
}

fn push(shown: &mut String, c: char, keep_lines: bool) {
    if keep_lines && matches!(c, '\n' | '\t') {
        shown.push(c);
        return;
    }
    match visible_as(c) {
        Some(v) => shown.push_str(&v),
        None => shown.push(c),
    }
}

/// How `c` is written when it must not reach a terminal as itself.
fn visible_as(c: char) -> Option<String> {
    Some(match c {
        '\x1b' => "\\e".into(),
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        '\0' => "\\0".into(),
        '\x01'..='\x1f' => format!("\\x{:02x}", c as u32),
        // DEL, the C1 controls (U+009B is a one-character CSI to many terminals), the bidi
        // embeddings, overrides and isolates, the marks, and the line and paragraph
        // separators some renderers break lines at: all of which JSON leaves raw.
        '\x7f'
        | '\u{80}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => format!("\\u{:04x}", c as u32),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_shown_never_sent() {
        let hostile = "a\u{1b}[1A\u{1b}[2Kb\u{1b}]52;c;aGk=\u{7}\r\u{8}\0\u{7f}\u{9b}2J\u{202e}fdp.exe\u{2066}";
        let shown = line(hostile);
        assert_eq!(
            shown,
            "a\\e[1A\\e[2Kb\\e]52;c;aGk=\\x07\\r\\x08\\0\\u007f\\u009b2J\\u202efdp.exe\\u2066"
        );
        assert!(is_inert(&shown));
        assert!(!is_inert(hostile));
        // Rendering again changes nothing: a backstop may run over rendered text.
        assert_eq!(line(&shown), shown);
        assert_eq!(lines(&shown), shown);
        assert_eq!(line("one\ntwo\tthree"), "one\\ntwo\\tthree");
        assert_eq!(lines("one\ntwo\tthree\r\n"), "one\ntwo\tthree\\r\n");
        assert_eq!(line("日本語 ❯ café"), "日本語 ❯ café");
    }

    #[test]
    fn json_rendered_is_the_same_json() {
        let hostile = serde_json::json!({
            "path": "a\u{7f}\u{85}\u{9b}2J\u{202e}gnp.exe\u{2028}\u{2069}",
            "subject": "\u{1b}[1A\u{1b}[2K\r\u{8}\n\t",
        });
        for text in [
            serde_json::to_string(&hostile).unwrap(),
            serde_json::to_string_pretty(&hostile).unwrap(),
        ] {
            let shown = lines(&text);
            assert!(is_inert(&shown), "{shown}");
            let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
            assert_eq!(back, hostile);
        }
    }

    #[test]
    fn a_cut_line_is_bounded_and_says_it_was_cut() {
        assert_eq!(cut("  npm test\n", 80), "npm test");
        assert_eq!(cut("npm test\nrm -rf /", 80), "npm test\\nrm -rf /");
        let long = cut(&"y".repeat(3000), 80);
        assert_eq!(long.chars().count(), 80);
        assert!(long.ends_with('…'));
        // The bound holds for what is shown, escapes included.
        let escapes = cut(&"\u{1b}".repeat(100), 10);
        assert!(escapes.chars().count() <= 10, "{escapes}");
        assert!(is_inert(&escapes));
        assert_eq!(cut(&"x".repeat(80), 80), "x".repeat(80));
        assert_eq!(cut("  ", 80), "");
    }
}
