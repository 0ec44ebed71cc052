//! What a sandboxed session's box lets out: its network, as the record and the command
//! line name it, and the hosts a limited one may reach.

use std::net::IpAddr;

/// A sandbox's network: the host's (`on`), a namespace of its own with only its own
/// loopback (`off`), or that namespace with a proxy outside it that lets through only
/// connections to the listed hosts (`hosts`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Network {
    On,
    Off,
    Hosts(Vec<Allowed>),
}

impl Network {
    /// Its word in the record and on the command line: `on`, `off`, or the hosts joined
    /// by commas.
    pub fn word(&self) -> String {
        match self {
            Network::On => "on".into(),
            Network::Off => "off".into(),
            Network::Hosts(hosts) => hosts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// A word as [`Network::word`] writes it; `None` for anything else.
    pub fn parse(text: &str) -> Option<Network> {
        Network::read(text).ok()
    }

    /// `on`, `off`, or hosts separated by commas; the error says what is wrong with it.
    pub fn read(text: &str) -> Result<Network, String> {
        match text {
            "on" => Ok(Network::On),
            "off" => Ok(Network::Off),
            _ => Allowed::list(text.split(',')).map(Network::Hosts),
        }
    }

    /// Whether the box reaches outside only through the allow-list's proxy.
    pub fn hosts(&self) -> Option<&[Allowed]> {
        match self {
            Network::Hosts(h) => Some(h),
            _ => None,
        }
    }
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.word())
    }
}

/// One host a limited network may reach: a name or an address, on any port or one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Allowed {
    pub host: Host,
    pub port: Option<u16>,
}

/// A host as listed or asked for: names compare without case and without a trailing dot,
/// addresses as addresses (`[::1]` is `0:0::1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Host {
    /// A host as a request names it (`api.example.com`, `127.0.0.1`, `[::1]` or `::1`);
    /// `None` for what is no host name at all.
    pub fn parse(text: &str) -> Option<Host> {
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Some(Host::Ip(ip));
        }
        if bare.len() != text.len() {
            // Brackets hold only an IPv6 address.
            return None;
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let labels_ok = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        labels_ok.then_some(Host::Name(name))
    }
}

impl std::fmt::Display for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// Splits `host:port`, `[v6]:port`, `host`, `[v6]` or a bare IPv6 address into its host
/// and port; `Err` names what is wrong.
pub fn split_host_port(text: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = text.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return Err(format!("{text:?}: an IPv6 address in brackets lacks its ]"));
        };
        let (host, after) = text.split_at(end + 2);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(format!("{text:?}: only :PORT may follow ]")),
            },
        };
    }
    if text.matches(':').count() > 1 {
        // A bare IPv6 address: no port can be told from it.
        return Ok((text, None));
    }
    Ok(match text.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    })
}

impl Allowed {
    /// One entry of the list: `NAME`, `IP`, `[IPv6]`, each with an optional `:PORT`.
    pub fn parse(entry: &str) -> Result<Allowed, String> {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err("an empty host".into());
        }
        if entry.contains('*') || entry.contains('/') {
            return Err(format!(
                "{entry:?}: a host is a name or an address (no patterns, schemes or paths)"
            ));
        }
        let (host, port) = split_host_port(entry)?;
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(format!("{entry:?}: the port is a number from 1 to 65535")),
            },
        };
        if matches!(host, "on" | "off") {
            return Err(format!(
                "{entry:?}: on and off are words of their own, not in a list of hosts"
            ));
        }
        let host =
            Host::parse(host).ok_or_else(|| format!("{entry:?}: not a host name or address"))?;
        Ok(Allowed { host, port })
    }

    /// Every entry, in order, duplicates once; refused when one is bad or there are none.
    pub fn list<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Vec<Allowed>, String> {
        let mut list: Vec<Allowed> = Vec::new();
        for entry in entries {
            let allowed = Allowed::parse(entry)?;
            if !list.contains(&allowed) {
                list.push(allowed);
            }
        }
        if list.is_empty() {
            return Err("a list of hosts names at least one (or write \"off\")".into());
        }
        Ok(list)
    }

    /// Whether a connection to `host` on `port` is this entry's.
    pub fn allows(&self, host: &Host, port: u16) -> bool {
        self.host == *host && self.port.is_none_or(|p| p == port)
    }
}

impl std::fmt::Display for Allowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.port {
            Some(p) => write!(f, "{}:{p}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

/// Whether `list` lets through a connection to `host` (as a request names it) on `port`.
pub fn allowed(list: &[Allowed], host: &str, port: u16) -> bool {
    Host::parse(host).is_some_and(|h| list.iter().any(|a| a.allows(&h, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_reads_back_as_written() {
        for n in [
            Network::On,
            Network::Off,
            Network::read("127.0.0.1:8080,api.example.com,[::1]").unwrap(),
        ] {
            assert_eq!(Network::parse(&n.word()), Some(n));
        }
        assert_eq!(
            Network::parse("api.example"),
            Some(Network::Hosts(vec![Allowed {
                host: Host::Name("api.example".into()),
                port: None
            }]))
        );
        assert_eq!(Network::parse(""), None);
    }

    #[test]
    fn a_name_matches_without_case_or_trailing_dot_on_any_port_unless_one_is_listed() {
        let list = Allowed::list(["API.Anthropic.com.", "example.org:8443"]).unwrap();
        assert!(allowed(&list, "api.anthropic.com", 443));
        assert!(allowed(&list, "api.ANTHROPIC.com.", 80));
        assert!(!allowed(&list, "anthropic.com", 443));
        assert!(!allowed(&list, "evil.api.anthropic.com", 443));
        assert!(!allowed(&list, "api.anthropic.com.evil", 443));
        assert!(allowed(&list, "example.org", 8443));
        assert!(!allowed(&list, "example.org", 443));
        assert_eq!(list[0].to_string(), "api.anthropic.com");
    }

    #[test]
    fn an_address_matches_as_an_address() {
        let list = Allowed::list(["127.0.0.1:9000", "[::1]", "[2001:db8::1]:443"]).unwrap();
        assert!(allowed(&list, "127.0.0.1", 9000));
        assert!(!allowed(&list, "127.0.0.1", 9001));
        assert!(!allowed(&list, "127.0.0.2", 9000));
        // A name that resolves to it is not it: what is listed is what is asked for.
        assert!(!allowed(&list, "localhost", 9000));
        assert!(allowed(&list, "[0:0:0:0:0:0:0:1]", 22));
        assert!(allowed(&list, "::1", 22));
        assert!(allowed(&list, "[2001:DB8:0::1]", 443));
        assert!(!allowed(&list, "[2001:db8::1]", 80));
        assert_eq!(list[2].to_string(), "[2001:db8::1]:443");
        assert_eq!(Allowed::parse("::1").unwrap().to_string(), "[::1]");
    }

    #[test]
    fn a_bad_entry_says_what_is_wrong() {
        for (entry, says) in [
            ("", "empty"),
            ("*.example.com", "no patterns"),
            ("https://example.com", "no patterns"),
            ("example.com:0", "port"),
            ("example.com:http", "port"),
            ("example.com:70000", "port"),
            ("[::1", "lacks its ]"),
            ("[::1]x", "only :PORT"),
            ("[example.com]", "not a host"),
            ("exa mple.com", "not a host"),
            ("-bad.com", "not a host"),
            ("a..b", "not a host"),
            ("off", "words of their own"),
        ] {
            let e = Allowed::parse(entry).unwrap_err();
            assert!(e.contains(says), "{entry:?}: {e}");
        }
        assert!(Allowed::list(std::iter::empty()).is_err());
        assert_eq!(
            Allowed::list(["a.com", "A.com."]).unwrap().len(),
            1,
            "the same host once"
        );
    }
}
