//! Where a host really is: the manifest's `address` (`user@host:port`) read through
//! `~/.ssh/config` (Host, HostName, User, Port, IdentityFile), as `ssh` would.

use std::path::{Path, PathBuf};

/// A host resolved to what a connection needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The name known_hosts knows it by (HostName after ~/.ssh/config).
    pub hostname: String,
    pub port: u16,
    pub user: String,
    /// IdentityFile lines of ~/.ssh/config, in order.
    pub identity_files: Vec<PathBuf>,
}

/// Why an `address` is not `user@host:port`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error(
        "the user part {0:?} is not a user name (letters, digits, '.', '_' and '-', not first '-')"
    )]
    BadUser(String),
    #[error("the host part {0:?} is not a host name (letters, digits, '.', '_', '-' and ':', not first '-')")]
    BadHost(String),
    #[error("the port {0:?} is not a number from 1 to 65535")]
    BadPort(String),
    #[error("an IPv6 address goes in brackets: [::1]:22")]
    BadBrackets,
}

/// `user@host:port`, `host:port`, `user@host`, `host`, `[v6]:port` → (user, host, port).
/// The user and host end up in an `ssh` argv (attach) where a leading `-` would be read
/// as an option, so both are held to the characters their names may have.
pub fn parse_address(address: &str) -> Result<(Option<String>, String, Option<u16>), AddressError> {
    let (user, rest) = match address.rsplit_once('@') {
        Some((u, r)) => {
            if !valid_user(u) {
                return Err(AddressError::BadUser(u.to_string()));
            }
            (Some(u.to_string()), r)
        }
        None => (None, address),
    };
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| AddressError::BadPort(p.to_string()))
    };
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (host, after) = inner.split_once(']').ok_or(AddressError::BadBrackets)?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(port(p)?),
            None if after.is_empty() => None,
            None => return Err(AddressError::BadBrackets),
        };
        (host.to_string(), port)
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(port(p)?)),
            None => (rest.to_string(), None),
        }
    };
    if !valid_host(&host) {
        return Err(AddressError::BadHost(host));
    }
    Ok((user, host, port))
}

/// [`parse_address`] without the reason.
pub fn split_address(address: &str) -> Option<(Option<String>, String, Option<u16>)> {
    parse_address(address).ok()
}

/// A user name of POSIX's portable set: letters, digits, `.`, `_`, `-`, not starting
/// with `-` (useradd's own rule; ssh would read a leading `-` as an option).
pub fn valid_user(user: &str) -> bool {
    !user.is_empty()
        && !user.starts_with('-')
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A host name, IPv4 or (unbracketed) IPv6 address, or ~/.ssh/config alias.
pub fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
}

/// Resolves `address` with the ssh config text `config` (empty when there is none).
/// Values given in the address win over the config, as with `ssh user@host -p N`.
pub fn resolve(address: &str, config: &str, home: &Path, local_user: &str) -> Option<Target> {
    let (user, alias, port) = split_address(address)?;
    let mut found = HostConfig::default();
    let mut applies = true;
    for line in config.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once(|c: char| c.is_whitespace() || c == '=') {
            Some((k, v)) => (
                k,
                v.trim_start_matches(|c: char| c.is_whitespace() || c == '='),
            ),
            None => continue,
        };
        let value = value.trim().trim_matches('"');
        match key.to_ascii_lowercase().as_str() {
            "host" => applies = host_matches(value, &alias),
            // Match blocks need ssh's own evaluation: skip their contents.
            "match" => applies = false,
            _ if !applies => {}
            // First value wins, as in ssh_config(5); IdentityFile accumulates.
            "hostname" if found.hostname.is_none() => {
                found.hostname = Some(value.replace("%h", &alias));
            }
            "user" if found.user.is_none() => found.user = Some(value.to_string()),
            "port" if found.port.is_none() => found.port = value.parse().ok(),
            "identityfile" => found.identity_files.push(expand_home(value, home)),
            _ => {}
        }
    }
    let target = Target {
        hostname: found.hostname.unwrap_or_else(|| alias.clone()),
        port: port.or(found.port).unwrap_or(22),
        user: user
            .or(found.user)
            .unwrap_or_else(|| local_user.to_string()),
        identity_files: found.identity_files,
    };
    // What ~/.ssh/config or $USER gave is held to the address's rules too.
    (valid_user(&target.user) && valid_host(&target.hostname)).then_some(target)
}

#[derive(Default)]
struct HostConfig {
    hostname: Option<String>,
    user: Option<String>,
    port: Option<u16>,
    identity_files: Vec<PathBuf>,
}

/// A `Host` line's patterns: `*` and `?` wildcards, `!` negation, any positive match wins
/// unless a negated one matches.
fn host_matches(patterns: &str, host: &str) -> bool {
    let mut matched = false;
    for pattern in patterns.split_whitespace() {
        if let Some(negated) = pattern.strip_prefix('!') {
            if wildcard(negated, host) {
                return false;
            }
        } else if wildcard(pattern, host) {
            matched = true;
        }
    }
    matched
}

pub(crate) fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let t: Vec<char> = text.to_ascii_lowercase().chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `~/x` → `<home>/x`.
pub fn expand_home(path: &str, home: &Path) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if path == "~" => home.to_path_buf(),
        None => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            split_address("user@gpu-box:22"),
            Some((Some("user".into()), "gpu-box".into(), Some(22)))
        );
        assert_eq!(split_address("gpu"), Some((None, "gpu".into(), None)));
        assert_eq!(
            split_address("[::1]:2222"),
            Some((None, "::1".into(), Some(2222)))
        );
        assert_eq!(split_address("a@b:notaport"), None);
        assert_eq!(split_address("@b"), None);
        assert_eq!(split_address("-oProxyCommand=x"), None);
        assert_eq!(split_address("a b"), None);
        assert_eq!(split_address("box:0"), None);
    }

    #[test]
    fn user_and_host_parts_are_plain_names() {
        assert_eq!(
            parse_address("alice.b_c-d@box"),
            Ok((Some("alice.b_c-d".into()), "box".into(), None))
        );
        for (address, want) in [
            (
                "-oProxyCommand=x@box",
                AddressError::BadUser("-oProxyCommand=x".into()),
            ),
            ("a b@box", AddressError::BadUser("a b".into())),
            ("al\tice@box", AddressError::BadUser("al\tice".into())),
            ("a;touch x@box", AddressError::BadUser("a;touch x".into())),
            ("a@b@box", AddressError::BadUser("a@b".into())),
            ("$(id)@box", AddressError::BadUser("$(id)".into())),
            ("@box", AddressError::BadUser(String::new())),
            ("me@-box", AddressError::BadHost("-box".into())),
            (
                "me@-oProxyCommand=x:22",
                AddressError::BadHost("-oProxyCommand=x".into()),
            ),
            ("me@box:ssh", AddressError::BadPort("ssh".into())),
            ("[::1", AddressError::BadBrackets),
        ] {
            assert_eq!(parse_address(address), Err(want), "{address:?}");
        }
        assert_eq!(
            parse_address("bad\u{7}user@box").map(|_| ()),
            Err(AddressError::BadUser("bad\u{7}user".into()))
        );
        // A hostile User or HostName line in ~/.ssh/config is refused as well.
        let home = Path::new("/home/me");
        assert_eq!(
            resolve("gpu", "Host gpu\n User -oProxyCommand=x\n", home, "me"),
            None
        );
        assert_eq!(resolve("gpu", "Host gpu\n HostName -x\n", home, "me"), None);
        assert_eq!(resolve("gpu", "", home, "-me"), None);
    }

    #[test]
    fn ssh_config_is_honoured() {
        let config = "\
# comment
Host gpu gpu-*
    HostName 10.0.0.7
    User alice
    Port 2200
    IdentityFile ~/.ssh/gpu_key
Host *
    User nobody
    IdentityFile ~/.ssh/id_other
";
        let home = Path::new("/home/me");
        let t = resolve("gpu", config, home, "me").expect("resolves");
        assert_eq!(t.hostname, "10.0.0.7");
        assert_eq!(t.user, "alice");
        assert_eq!(t.port, 2200);
        assert_eq!(
            t.identity_files,
            vec![home.join(".ssh/gpu_key"), home.join(".ssh/id_other")]
        );
        let t = resolve("bob@gpu:22", config, home, "me").expect("resolves");
        assert_eq!((t.user.as_str(), t.port), ("bob", 22));
        let t = resolve("other", config, home, "me").expect("resolves");
        assert_eq!(
            (t.hostname.as_str(), t.user.as_str(), t.port),
            ("other", "nobody", 22)
        );
        let t = resolve("other", "", home, "me").expect("resolves");
        assert_eq!(t.user, "me");
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("gpu-*", "gpu-box"));
        assert!(wildcard("g?u", "gpu"));
        assert!(!wildcard("gpu", "gpu-box"));
        assert!(!host_matches("* !gpu", "gpu"));
    }
}
