//! The prompts' templating: `{{KEY}}` placeholders, and the synthesis prompt that carries
//! every report.

/// Replaces each `{{KEY}}` of `values` in one pass, so a value that itself contains
/// `{{…}}` (a report quoting a template) is left as it is.
pub(super) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let found = after.find("}}").and_then(|end| {
            let key = &after[..end];
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v, end))
        });
        match found {
            Some((value, end)) => {
                out.push_str(value);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The synthesis prompt: the reports, each headed by its session, in `{{REPORTS}}` (or
/// after the text, for a user's template that forgot the placeholder).
pub(super) fn synthesis_prompt(template: &str, reports: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (session, report) in reports {
        text.push_str(&format!(
            "## Session {session}\n\n<report session=\"{session}\">\n{}\n</report>\n\n",
            report.trim()
        ));
    }
    let text = text.trim_end();
    if template.contains("{{REPORTS}}") {
        fill(template, &[("REPORTS", text)])
    } else {
        format!("{}\n\n{text}\n", template.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_known_keys_once_and_leaves_the_rest() {
        assert_eq!(
            fill(
                "{{SESSION}} at {{PATH}} {{UNKNOWN}} {{ {{SESSION}}",
                &[("SESSION", "a{{PATH}}"), ("PATH", "/x")]
            ),
            "a{{PATH}} at /x {{UNKNOWN}} {{ a{{PATH}}"
        );
        assert_eq!(fill("no keys }}", &[("A", "b")]), "no keys }}");
    }

    #[test]
    fn the_synthesis_prompt_heads_each_report_with_its_session() {
        let text = synthesis_prompt("Merge:\n{{REPORTS}}\nEnd", &[("a", "one\n"), ("b", "two")]);
        assert!(text.starts_with("Merge:\n## Session a\n"), "{text}");
        assert!(
            text.contains("<report session=\"b\">\ntwo\n</report>\nEnd"),
            "{text}"
        );
        let text = synthesis_prompt("No placeholder", &[("a", "one")]);
        assert!(text.starts_with("No placeholder\n\n## Session a"), "{text}");
    }
}
