//! `~/.ssh/known_hosts`, read the way OpenSSH reads it: plain and hashed (`|1|salt|hash`)
//! names, `[host]:port` for other ports, patterns with `*`/`?`/`!`, `@revoked` lines.
//! Pure: the connection hands in the key the server showed.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Digest;

/// What known_hosts says of a key a server showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Known,
    /// The host is not listed with a key of this type.
    Unknown {
        /// Key types listed for the host (others than the one shown).
        other_types: Vec<String>,
    },
    /// Listed with a different key of the same type: possibly an attack.
    Changed {
        line: usize,
    },
    /// The key is marked `@revoked`.
    Revoked {
        line: usize,
    },
}

/// The name a host goes by in known_hosts: `host`, or `[host]:port` off port 22.
pub fn host_entry_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// The key type named inside an SSH public key blob (`ssh-ed25519`, `ssh-rsa`, …).
pub fn key_type(blob: &[u8]) -> Option<String> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    let name = blob.get(4..4 + len)?;
    String::from_utf8(name.to_vec()).ok()
}

/// `SHA256:…` as `ssh-keygen -l` prints it.
pub fn fingerprint(blob: &[u8]) -> String {
    format!(
        "SHA256:{}",
        STANDARD_NO_PAD.encode(sha2::Sha256::digest(blob))
    )
}

/// The known_hosts line that trusts `blob` for `host`:`port`.
pub fn line_for(host: &str, port: u16, blob: &[u8]) -> Option<String> {
    Some(format!(
        "{} {} {}",
        host_entry_name(host, port),
        key_type(blob)?,
        STANDARD.encode(blob)
    ))
}

/// The key types `text` lists for `host`:`port` (to ask the server for one of them).
pub fn known_types(text: &str, host: &str, port: u16) -> Vec<String> {
    let mut types = Vec::new();
    for entry in entries(text, host, port) {
        if entry.marker.is_none() && !types.contains(&entry.key_type) {
            types.push(entry.key_type);
        }
    }
    types
}

/// Checks the key `blob` shown by `host`:`port` against known_hosts `text`.
pub fn check(text: &str, host: &str, port: u16, blob: &[u8]) -> Verdict {
    let Some(shown_type) = key_type(blob) else {
        return Verdict::Unknown {
            other_types: Vec::new(),
        };
    };
    let shown = STANDARD.encode(blob);
    let mut known = false;
    let mut changed = None;
    let mut other_types = Vec::new();
    for entry in entries(text, host, port) {
        match entry.marker.as_deref() {
            Some("@revoked") if entry.key == shown => return Verdict::Revoked { line: entry.line },
            Some(_) => continue,
            None => {}
        }
        if entry.key_type != shown_type {
            if !other_types.contains(&entry.key_type) {
                other_types.push(entry.key_type);
            }
        } else if entry.key == shown {
            known = true;
        } else if changed.is_none() {
            changed = Some(entry.line);
        }
    }
    match (known, changed) {
        (true, _) => Verdict::Known,
        (false, Some(line)) => Verdict::Changed { line },
        (false, None) => Verdict::Unknown { other_types },
    }
}

struct Entry {
    line: usize,
    marker: Option<String>,
    key_type: String,
    key: String,
}

/// The lines of `text` whose names match `host`:`port`.
fn entries(text: &str, host: &str, port: u16) -> Vec<Entry> {
    let name = host_entry_name(host, port);
    let mut found = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let mut first = fields.next().unwrap_or_default();
        let marker = if first.starts_with('@') {
            let m = first.to_string();
            first = fields.next().unwrap_or_default();
            Some(m)
        } else {
            None
        };
        let (Some(key_type), Some(key)) = (fields.next(), fields.next()) else {
            continue;
        };
        if names_match(first, &name) {
            found.push(Entry {
                line: i + 1,
                marker,
                key_type: key_type.to_string(),
                key: key.to_string(),
            });
        }
    }
    found
}

fn names_match(field: &str, name: &str) -> bool {
    if let Some(hashed) = field.strip_prefix("|1|") {
        return hashed_match(hashed, name);
    }
    let mut matched = false;
    for pattern in field.split(',') {
        if let Some(negated) = pattern.strip_prefix('!') {
            if super::config::wildcard(negated, name) {
                return false;
            }
        } else if super::config::wildcard(pattern, name) {
            matched = true;
        }
    }
    matched
}

/// `salt|hash`: HMAC-SHA1 of the name keyed by the salt, both base64.
fn hashed_match(field: &str, name: &str) -> bool {
    let Some((salt, hash)) = field.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(hash)) = (STANDARD.decode(salt), STANDARD.decode(hash)) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<sha1::Sha1>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    mac.verify_slice(&hash).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(kind: &str, body: &[u8]) -> Vec<u8> {
        let mut b = (kind.len() as u32).to_be_bytes().to_vec();
        b.extend(kind.as_bytes());
        b.extend(body);
        b
    }

    #[test]
    fn plain_hashed_and_ported_names() {
        let ed = blob("ssh-ed25519", b"one");
        let line = line_for("127.0.0.1", 2222, &ed).expect("line");
        assert!(line.starts_with("[127.0.0.1]:2222 ssh-ed25519 "));
        assert_eq!(check(&line, "127.0.0.1", 2222, &ed), Verdict::Known);
        assert!(matches!(
            check(&line, "127.0.0.1", 22, &ed),
            Verdict::Unknown { .. }
        ));
        // A hashed entry for "gpu" (salt "salt"), as `ssh-keygen -H` writes them.
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(b"salt").expect("key");
        mac.update(b"gpu");
        let hashed = format!(
            "|1|{}|{} ssh-ed25519 {}",
            STANDARD.encode(b"salt"),
            STANDARD.encode(mac.finalize().into_bytes()),
            STANDARD.encode(&ed)
        );
        assert_eq!(check(&hashed, "gpu", 22, &ed), Verdict::Known);
        assert!(matches!(
            check(&hashed, "gpx", 22, &ed),
            Verdict::Unknown { .. }
        ));
        let pattern = format!("*.lan,!evil.lan ssh-ed25519 {}", STANDARD.encode(&ed));
        assert_eq!(check(&pattern, "gpu.lan", 22, &ed), Verdict::Known);
        assert!(matches!(
            check(&pattern, "evil.lan", 22, &ed),
            Verdict::Unknown { .. }
        ));
    }

    #[test]
    fn changed_revoked_and_other_types() {
        let old = blob("ssh-ed25519", b"old");
        let new = blob("ssh-ed25519", b"new");
        let rsa = blob("ssh-rsa", b"r");
        let text = format!(
            "# comment\ngpu ssh-rsa {}\ngpu ssh-ed25519 {}\n",
            STANDARD.encode(&rsa),
            STANDARD.encode(&old)
        );
        assert_eq!(check(&text, "gpu", 22, &new), Verdict::Changed { line: 3 });
        assert_eq!(check(&text, "gpu", 22, &rsa), Verdict::Known);
        assert_eq!(
            known_types(&text, "gpu", 22),
            vec!["ssh-rsa", "ssh-ed25519"]
        );
        let only_rsa = format!("gpu ssh-rsa {}\n", STANDARD.encode(&rsa));
        assert_eq!(
            check(&only_rsa, "gpu", 22, &new),
            Verdict::Unknown {
                other_types: vec!["ssh-rsa".into()]
            }
        );
        let revoked = format!("@revoked * ssh-ed25519 {}\n", STANDARD.encode(&new));
        assert_eq!(
            check(&revoked, "gpu", 22, &new),
            Verdict::Revoked { line: 1 }
        );
        assert!(fingerprint(&new).starts_with("SHA256:"));
    }
}
