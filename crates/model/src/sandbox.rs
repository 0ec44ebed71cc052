//! What a sandboxed session's box lets out: its network, as the record and the command
//! line name it.

/// A sandbox's network: the host's (`on`), or a namespace of its own with only its own
/// loopback (`off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    On,
    Off,
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Network::On => "on",
            Network::Off => "off",
        }
    }

    pub fn parse(text: &str) -> Option<Network> {
        match text {
            "on" => Some(Network::On),
            "off" => Some(Network::Off),
            _ => None,
        }
    }
}

impl std::fmt::Display for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_reads_back_as_written() {
        for n in [Network::On, Network::Off] {
            assert_eq!(Network::parse(n.as_str()), Some(n));
        }
        assert_eq!(Network::parse("api.example"), None);
    }
}
