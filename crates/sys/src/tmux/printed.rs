//! Values read back from what tmux prints, exactly, on every release.
//!
//! tmux 3.4 and 3.5 pass command output through strvis before printing it (undone in 3.6):
//! control characters come back as `\ooo` or `\n`-style escapes, 3.4 also writes `$NAME`
//! and `${` as `\$…`, and a `\` of the value is left as it is, so the printed text alone
//! cannot tell `\037` typed by a person from an escaped 0x1f. Every value orchestra reads is
//! therefore asked through [`field`]: tmux doubles the value's own `\` and writes its
//! newlines and tabs (the separators of records and fields) as `\n` and `\t` before it
//! prints, and [`decode`] undoes that and strvis in one pass. On the releases that print
//! raw the same decoding holds, because every `\` left in the output is one of ours.

/// `#{name}` as a format whose printed form [`decode`] reads back exactly: a value holding
/// a `\\`, newline or tab has its `\\` doubled, then newlines and tabs escaped (tmux's
/// `s/` modifier, in every release since 2.9; a replacement's `\\\\` is one backslash).
/// The substitutions run only on such a value: each compiles a regex, and three per field
/// made a 32-pane listing 70 times slower; the `m:` test (fnmatch) is cheap.
pub fn field(name: &str) -> String {
    format!("#{{?#{{m:{NEEDS_ESCAPING},#{{{name}}}}},{ESCAPED_OPEN}{name}}},#{{{name}}}}}")
}

/// An fnmatch pattern: the value holds a `\\`, a newline or a tab.
const NEEDS_ESCAPING: &str = "*[\\\\\n\t]*";
/// The modifiers that escape a value, up to its name.
const ESCAPED_OPEN: &str = "#{s/\\\\/\\\\\\\\/;s/\n/\\\\n/;s/\t/\\\\t/:";

/// The name of the [`field`] `format` starts with, and the field's length (for the
/// scripted transports of other crates' tests, which print as tmux does).
#[cfg(any(test, feature = "testing"))]
pub fn field_at(format: &str) -> Option<(&str, usize)> {
    let rest = format.strip_prefix(&format!("#{{?#{{m:{NEEDS_ESCAPING},#{{"))?;
    let name = &rest[..rest.find('}')?];
    let whole = field(name);
    format.starts_with(&whole).then_some((name, whole.len()))
}

/// What tmux prints for a [`field`] of `value` on the releases that print raw.
#[cfg(any(test, feature = "testing"))]
pub fn escaped(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('\n', r"\n")
        .replace('\t', r"\t")
}

/// The value behind one printed [`field`]: `\\` is a backslash, `\n` and `\t` the escaped
/// separators, and strvis's own escapes (3.4/3.5: `\ooo`, C-style `\r`…, `\$`) the
/// characters they stand for. Bytes that are not UTF-8 become U+FFFD.
pub fn decode(printed: &str) -> String {
    let bytes = printed.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let octal = |at: usize| bytes.get(at).filter(|b| (b'0'..=b'7').contains(b));
        if let (Some(a), Some(b), Some(c)) = (octal(i + 1), octal(i + 2), octal(i + 3)) {
            let value =
                (u32::from(a - b'0') << 6) | (u32::from(b - b'0') << 3) | u32::from(c - b'0');
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        let escaped = match bytes.get(i + 1) {
            Some(b'\\') => Some(b'\\'),
            Some(b'n') => Some(b'\n'),
            Some(b't') => Some(b'\t'),
            Some(b'r') => Some(b'\r'),
            Some(b'a') => Some(0x07),
            Some(b'b') => Some(0x08),
            Some(b'v') => Some(0x0b),
            Some(b'f') => Some(0x0c),
            Some(b's') => Some(b' '),
            Some(b'0') => Some(0),
            Some(b'$') => Some(b'$'),
            _ => None,
        };
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 2;
            }
            None => {
                out.push(b'\\');
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The fields of one printed line of [`field`]s joined by tabs, decoded.
pub fn fields(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split('\t').map(decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// strvis as tmux 3.4 prints (VIS_OCTAL|VIS_CSTYLE|VIS_NOSLASH, `\$` before a name).
    fn strvis_3_4(text: &str) -> String {
        let mut out = String::new();
        let chars: Vec<char> = text.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let next = chars.get(i + 1).copied();
            match c {
                '$' if next.is_some_and(|n| n.is_ascii_alphabetic() || n == '_' || n == '{') => {
                    out.push_str(r"\$");
                }
                '\r' => out.push_str(r"\r"),
                '\x07' => out.push_str(r"\a"),
                '\x08' => out.push_str(r"\b"),
                '\x0b' => out.push_str(r"\v"),
                '\x0c' => out.push_str(r"\f"),
                '\0' if next.is_some_and(|n| ('0'..='7').contains(&n)) => out.push_str(r"\000"),
                '\0' => out.push_str(r"\0"),
                c if c.is_ascii_control() && c != '\t' && c != '\n' => {
                    out.push_str(&format!("\\{:03o}", c as u32));
                }
                c => out.push(c),
            }
        }
        out
    }

    const HOSTILE: &[&str] = &[
        "",
        "plain",
        "$HOME ${x} $1 $",
        r"a\b \\ \037 \$HOME \n \",
        "tab\there\nnewline\r\x1f\x07\x0b\x0c\x08 and \0 and \x001",
        "#{session_name} #(rm -rf ~) ##",
        "ünïcødé ✓ 🎼",
        "/tmp/my $project/a\\b\nc",
    ];

    #[test]
    fn decode_undoes_every_release_printing() {
        for value in HOSTILE {
            let raw = escaped(value);
            assert_eq!(decode(&raw), *value, "raw print of {value:?}");
            assert_eq!(decode(&strvis_3_4(&raw)), *value, "3.4 print of {value:?}");
            assert!(!raw.contains(['\n', '\t']), "separators escaped in {raw:?}");
        }
    }

    #[test]
    fn field_asks_the_value_escaped_when_it_needs_it() {
        assert_eq!(
            field("@x"),
            "#{?#{m:*[\\\\\n\t]*,#{@x}},#{s/\\\\/\\\\\\\\/;s/\n/\\\\n/;s/\t/\\\\t/:@x},#{@x}}"
        );
        assert_eq!(
            field_at(&format!("{}\tx", field("@x"))),
            Some(("@x", field("@x").len()))
        );
    }
}
