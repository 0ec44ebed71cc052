//! Notion's ids as a person may write them (an `orchestra.toml` value, a task's id): the
//! one spelling orchestra keeps. Pure: the manifest checks them, the task source sends them.

/// `text` as a Notion id in its dashed form (8-4-4-4-12), from 32 hex digits with or
/// without dashes, or from a Notion URL ending in one; `None` otherwise.
pub fn id(text: &str) -> Option<String> {
    let text = text.trim();
    let path = text.split(['?', '#']).next().unwrap_or(text);
    let last = path.rsplit('/').next().unwrap_or(path);
    let dashes: Vec<usize> = last.match_indices('-').map(|(i, _)| i).collect();
    let hex = if last.len() == 36 && dashes == [8, 13, 18, 23] {
        last.replace('-', "")
    } else if last.len() == 32
        || (last.len() > 32
            && last.is_char_boundary(last.len() - 32)
            && last[..last.len() - 32].ends_with('-'))
    {
        // Bare, or a page URL's last part: Title-<32 hex>.
        last[last.len() - 32..].to_string()
    } else {
        return None;
    };
    if hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let h = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notion_ids_take_every_spelling_and_refuse_the_rest() {
        let dashed = "1c2f3a4b-5c6d-7e8f-9a0b-1c2d3e4f5a6b";
        assert_eq!(id(dashed).as_deref(), Some(dashed));
        assert_eq!(
            id("1C2F3A4B5C6D7E8F9A0B1C2D3E4F5A6B").as_deref(),
            Some(dashed)
        );
        assert_eq!(
            id("https://www.notion.so/team/Fix-login-1c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b?pvs=4")
                .as_deref(),
            Some(dashed)
        );
        for bad in [
            "",
            "tasks",
            "1c2f3a4b-5c6d-7e8f-9a0b",
            "1c2f3a4b5c6d7e8f9a0b1c2d3e4f5a6z",
            "1c2f3a4b5c6d-7e8f-9a0b-1c2d-3e4f5a6b",
        ] {
            assert_eq!(id(bad), None, "{bad}");
        }
    }
}
