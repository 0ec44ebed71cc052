//! Session labels: what a valid one looks like, and how a title becomes one.

use std::sync::LazyLock;

use regex::Regex;

/// A label names a branch (`session/<label>`), a folder and a tmux window, so it is kept to
/// characters that are safe in all three and in a shell.
static LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9][a-z0-9-]{0,62}$").expect("the label pattern is a valid regex")
});

/// How long a slug may be before a collision suffix.
pub const SLUG_MAX: usize = 40;

/// How much of a rejected label or title an error message repeats.
const SHOWN_MAX: usize = 40;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LabelError {
    #[error("invalid label {}: use 1 to 63 characters of a-z, 0-9 and '-', starting with a letter or digit (try `orchestra slugify <title>`)", shown(.0))]
    Invalid(String),
    #[error("the title {} has no letter or digit to make a label from", shown(.0))]
    EmptyTitle(String),
}

/// `text` quoted for a message: whole when short, else its first [`SHOWN_MAX`] characters
/// and its length, so a long paste does not fill the terminal.
fn shown(text: &str) -> String {
    let count = text.chars().count();
    if count <= SHOWN_MAX {
        return format!("{text:?}");
    }
    let start: String = text.chars().take(SHOWN_MAX).collect();
    format!("{:?} ({count} characters)", format!("{start}…"))
}

pub fn validate(label: &str) -> Result<(), LabelError> {
    if LABEL.is_match(label) {
        Ok(())
    } else {
        Err(LabelError::Invalid(label.to_string()))
    }
}

/// Lowercase ASCII words of `title` joined by `-`, at most [`SLUG_MAX`] characters, cut at
/// a word boundary (a first word longer than that is cut inside). Accented letters are
/// transliterated ("Café" → "cafe") rather than dropped.
pub fn slug(title: &str) -> Result<String, LabelError> {
    let ascii = deunicode::deunicode(title).to_ascii_lowercase();
    let mut out = String::new();
    for word in ascii
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let needed = if out.is_empty() {
            word.len()
        } else {
            word.len() + 1
        };
        if out.len() + needed > SLUG_MAX {
            if out.is_empty() {
                out.push_str(&word[..SLUG_MAX]);
            }
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        return Err(LabelError::EmptyTitle(title.to_string()));
    }
    Ok(out)
}

/// `base`, or `base-2`, `base-3`… — the first that `taken` says is free. The suffix
/// replaces the end of a long base so the result stays within [`SLUG_MAX`].
pub fn first_free(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (2u32..)
        .map(|n| {
            let suffix = format!("-{n}");
            let keep = base.len().min(SLUG_MAX.saturating_sub(suffix.len()));
            format!("{}{suffix}", base[..keep].trim_end_matches('-'))
        })
        .find(|candidate| !taken(candidate))
        .expect("an unbounded range always yields a free name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_labels() {
        for ok in ["a", "fix-login", "0day", &"a".repeat(63)] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "A",
            "a b",
            "../x",
            "x;rm -rf ~",
            "$(id)",
            "ünï",
            &"a".repeat(64),
            "a_b",
            "a\n",
        ] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_long_rejected_label_is_cut_and_measured() {
        let message = validate(&"A".repeat(200)).unwrap_err().to_string();
        assert!(message.contains("(200 characters)"), "{message}");
        assert!(
            message.contains(&format!("\"{}…\"", "A".repeat(SHOWN_MAX))),
            "{message}"
        );
        assert!(!message.contains(&"A".repeat(SHOWN_MAX + 1)), "{message}");
        // Short ones are repeated whole, as before.
        let message = validate("a b").unwrap_err().to_string();
        assert!(message.starts_with("invalid label \"a b\": "), "{message}");
        let message = slug(&"!".repeat(100)).unwrap_err().to_string();
        assert!(message.contains("(100 characters)"), "{message}");
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Fix the Login bug!").unwrap(), "fix-the-login-bug");
        assert_eq!(slug("  Café   au lait ").unwrap(), "cafe-au-lait");
        assert_eq!(
            slug("one two three four five six seven eight nine ten").unwrap(),
            "one-two-three-four-five-six-seven-eight"
        );
        assert_eq!(slug(&"x".repeat(50)).unwrap(), "x".repeat(40));
        assert!(slug("!!! ???").is_err());
        assert!(slug("").is_err());
    }

    #[test]
    fn collisions_get_suffixes_within_the_limit() {
        let taken = ["fix", "fix-2"];
        assert_eq!(first_free("fix", |c| taken.contains(&c)), "fix-3");
        let long = "a".repeat(40);
        let got = first_free(&long, |c| c == long);
        assert_eq!(got.len(), 40);
        assert!(got.ends_with("-2"));
    }
}
