//! CONTEXT.md: this run's summaries merged into orchestra's marked sections, every byte
//! outside them kept.

use std::path::Path;

use super::{Kind, Part};

/// The first line of each CONTEXT.md section; the run folder after it says where the
/// section came from.
fn section_start(part: Part) -> String {
    format!("<!-- orchestra:{}", part.name())
}

fn section_end(part: Part) -> String {
    format!("<!-- /orchestra:{} -->", part.name())
}

/// Where the section of `part` lies in an earlier CONTEXT.md, markers included: an end
/// marker and the last start marker before it. A stray marker (a section cut by hand) is
/// left where it is, as the person's text.
fn section_span(old: &[u8], part: Part) -> Option<std::ops::Range<usize>> {
    let (start, end) = (section_start(part), section_end(part));
    let mut from = 0;
    while let Some(at) = find(&old[from..], end.as_bytes()) {
        let end_at = from + at;
        if let Some(begin) = rfind(&old[from..end_at], start.as_bytes()) {
            return Some(from + begin..end_at + end.len());
        }
        from = end_at + end.len();
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

/// One section: its markers (the run folder after the start says where it came from),
/// heading and summary. A summary that quotes a marker would cut the section short on the
/// next run: the quote is defused.
fn section_text(part: Part, summary: &str, kind: Kind, run_dir: &Path) -> String {
    let summary = summary
        .trim()
        .replace("<!-- orchestra:", "<!-- (orchestra):")
        .replace("<!-- /orchestra:", "<!-- (/orchestra):");
    format!(
        "{} from `orchestra {}`, reports in {} -->\n## {}\n\n{summary}\n{}",
        section_start(part),
        kind.command(),
        run_dir.display(),
        part.heading(),
        section_end(part)
    )
}

/// CONTEXT.md with this run's summaries in orchestra's marked sections. Everything outside
/// those sections (a person's own text, before, between or after them) stays byte for
/// byte: a section already there is replaced where it stands, a missing one is appended at
/// the end, and a part this run did not produce keeps its section as it was. A new file
/// starts with a header saying so.
fn context_document(
    old: Option<&[u8]>,
    summaries: &[(Part, String)],
    kind: Kind,
    run_dir: &Path,
) -> Vec<u8> {
    let mut doc: Vec<u8> = match old {
        Some(old) => old.to_vec(),
        None => b"# Project context\n\n\
             What the sessions of this project have learned, merged by orchestra \
             (`orchestra sync`, `insights`, `dream`). Each run rewrites only what lies \
             between its `<!-- orchestra:... -->` markers; the rest of this file is yours.\n"
            .to_vec(),
    };
    for (i, part) in Part::ALL.into_iter().enumerate() {
        let Some((_, summary)) = summaries.iter().find(|(p, _)| *p == part) else {
            continue;
        };
        let section = section_text(part, summary, kind, run_dir);
        // A missing section goes before the next one there is, to keep their order.
        let next = Part::ALL[i + 1..]
            .iter()
            .find_map(|later| section_span(&doc, *later));
        match section_span(&doc, part) {
            Some(span) => {
                doc.splice(span, section.into_bytes());
            }
            None if next.is_some() => {
                let at = next.map(|span| span.start).unwrap_or_default();
                doc.splice(at..at, format!("{section}\n\n").into_bytes());
            }
            None => {
                if !doc.is_empty() && !doc.ends_with(b"\n") {
                    doc.push(b'\n');
                }
                doc.push(b'\n');
                doc.extend_from_slice(section.as_bytes());
                doc.push(b'\n');
            }
        }
    }
    doc
}

/// Reads CONTEXT.md (bytes: a person's file need not be UTF-8), puts this run's sections
/// in, and writes it back in one step. An existing file that cannot be read is not
/// replaced.
pub(super) fn update_context(
    path: &Path,
    summaries: &[(Part, String)],
    kind: Kind,
    run_dir: &Path,
) -> std::io::Result<()> {
    // A symlinked CONTEXT.md (shared between checkouts) is updated where it points.
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let old = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let doc = context_document(old.as_deref(), summaries, kind, run_dir);
    write_atomically(&path, &doc)
}

/// Readers of a shared CONTEXT.md (agents on other hosts) never see half a file. The file
/// keeps its permissions.
fn write_atomically(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".CONTEXT.md.orchestra-{}", std::process::id()));
    let result = std::fs::write(&tmp, text)
        .and_then(|()| match std::fs::metadata(path) {
            Ok(meta) => std::fs::set_permissions(&tmp, meta.permissions()),
            Err(_) => Ok(()),
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(doc: Vec<u8>) -> String {
        String::from_utf8(doc).expect("utf-8")
    }

    #[test]
    fn context_md_keeps_the_section_this_run_did_not_make() {
        let run = Path::new("/runs/1");
        let both = text(context_document(
            None,
            &[(Part::Insights, "I1".into()), (Part::Dream, "D1".into())],
            Kind::Both,
            run,
        ));
        assert!(both.contains("## Insights\n\nI1\n"), "{both}");
        assert!(both.contains("## Dream\n\nD1\n"), "{both}");
        let later = text(context_document(
            Some(both.as_bytes()),
            &[(Part::Insights, "I2".into())],
            Kind::Insights,
            Path::new("/runs/2"),
        ));
        assert!(later.contains("I2") && !later.contains("I1"), "{later}");
        assert!(later.contains("## Dream\n\nD1\n"), "{later}");
        assert_eq!(later.matches("## Dream").count(), 1, "{later}");
        assert!(later.find("## Insights") < later.find("## Dream"));
    }

    #[test]
    fn context_md_keeps_a_persons_text_byte_for_byte() {
        let run = Path::new("/runs/1");
        // Hand-written, no newline at the end, not even UTF-8.
        let mine: &[u8] = b"# Our notes\n\nKeep \xff this.";
        let first = context_document(Some(mine), &[(Part::Dream, "D1".into())], Kind::Dream, run);
        assert!(
            first.starts_with(mine),
            "{:?}",
            String::from_utf8_lossy(&first)
        );
        // The person writes between and after; a later run adds insights before dream.
        let mut edited = first.clone();
        let dream = section_span(&edited, Part::Dream).expect("dream section");
        edited.splice(dream.start..dream.start, b"between\n\n".to_vec());
        edited.extend_from_slice(b"\nafter <!-- orchestra:insights stray -->\n");
        let both = context_document(
            Some(&edited),
            &[
                (
                    Part::Insights,
                    "I1 quoting <!-- /orchestra:insights -->".into(),
                ),
                (Part::Dream, "D2".into()),
            ],
            Kind::Both,
            Path::new("/runs/2"),
        );
        let shown = String::from_utf8_lossy(&both).into_owned();
        let outside = |doc: &[u8]| {
            let mut rest = doc.to_vec();
            for part in Part::ALL {
                if let Some(span) = section_span(&rest, part) {
                    rest.splice(span, Vec::new());
                }
            }
            rest
        };
        // Outside the sections only the separator of the new insights section was added,
        // just before the dream section.
        let mut expected = edited.clone();
        let at = section_span(&edited, Part::Dream).expect("dream").start;
        expected.splice(at..at, b"\n\n".to_vec());
        let expected = outside(&expected);
        assert_eq!(
            String::from_utf8_lossy(&outside(&both)),
            String::from_utf8_lossy(&expected)
        );
        assert!(shown.contains("D2") && !shown.contains("D1"), "{shown}");
        assert!(
            shown.find("## Insights") < shown.find("## Dream"),
            "{shown}"
        );
        // The quoted marker does not end the section on the next run.
        let again = text(
            context_document(
                Some(&both),
                &[(Part::Insights, "I2".into())],
                Kind::Insights,
                Path::new("/runs/3"),
            )
            .into_iter()
            .filter(|b| *b != 0xff)
            .collect(),
        );
        assert!(again.contains("I2") && !again.contains("I1"), "{again}");
        assert!(
            again.contains("after <!-- orchestra:insights stray -->"),
            "{again}"
        );
    }
}
