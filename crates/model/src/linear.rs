//! Linear's names for an issue and a team as a person may write them (a `tasks pick`
//! argument, an `orchestra.toml` value): the one spelling orchestra keeps. Pure: the
//! manifest checks them, the task source sends them.

/// `text` as a Linear issue: its identifier upper-cased (`eng-12` → `ENG-12`), its id (a
/// UUID, lower-cased), or the identifier in an issue URL (`…/issue/ENG-12/fix-login`);
/// `None` otherwise.
pub fn issue(text: &str) -> Option<String> {
    let text = text.trim();
    let path = text.split(['?', '#']).next().unwrap_or(text);
    let word = match path.split_once("/issue/") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest),
        None if path.contains('/') => return None,
        None => path,
    };
    if let Some(id) = uuid(word) {
        return Some(id);
    }
    let (team, number) = word.rsplit_once('-')?;
    let digits =
        !number.is_empty() && number.len() <= 9 && number.bytes().all(|b| b.is_ascii_digit());
    (team_key(team) && digits && !number.starts_with('0'))
        .then(|| format!("{}-{number}", team.to_ascii_uppercase()))
}

/// Whether `text` can be a team's key: a letter, then letters, digits or `_`, at most
/// ten in all (Linear's keys are short: `ENG`, `WEB2`).
pub fn team_key(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && text.len() <= 10
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` as a UUID in its lower-case dashed form (8-4-4-4-12); `None` otherwise.
pub fn uuid(text: &str) -> Option<String> {
    let dashes: Vec<usize> = text.match_indices('-').map(|(i, _)| i).collect();
    let hex = text
        .bytes()
        .filter(|b| *b != b'-')
        .all(|b| b.is_ascii_hexdigit());
    (text.len() == 36 && dashes == [8, 13, 18, 23] && hex).then(|| text.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_are_identifiers_ids_or_urls() {
        assert_eq!(issue(" eng-12 ").as_deref(), Some("ENG-12"));
        assert_eq!(
            issue("https://linear.app/acme/issue/ENG-7/fix-the-login?x=1").as_deref(),
            Some("ENG-7")
        );
        assert_eq!(
            issue("A1B2C3D4-0000-4000-8000-00000000000F").as_deref(),
            Some("a1b2c3d4-0000-4000-8000-00000000000f")
        );
        for bad in [
            "ENG",
            "ENG-",
            "-12",
            "12",
            "ENG-01",
            "E NG-1",
            "ENG-1x",
            "--dispatch",
            "a/b/ENG-1",
            "TOOLONGTEAMKEY-1",
            "ENG-1234567890",
        ] {
            assert_eq!(issue(bad), None, "{bad}");
        }
        assert!(team_key("WEB2") && team_key("eng") && !team_key("2WEB") && !team_key(""));
    }
}
