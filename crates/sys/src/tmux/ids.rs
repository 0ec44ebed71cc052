//! Pane and window ids (`%12`, `@3`) as types. An id is checked once, where it enters
//! (tmux's own output, the record, a flag, `$TMUX_PANE`), and goes into tmux command
//! strings unquoted from then on; a window id cannot be passed where a pane id goes.
//! Both read as text (`Deref<Target = str>`) for showing, comparing and recording.
//!
//! ```
//! # use orchestra::tmux::{PaneId, Tmux};
//! fn screen(tmux: &Tmux, pane: &PaneId) -> String {
//!     tmux.capture_pane(pane, 0).unwrap_or_default()
//! }
//! ```
//! A window id where a pane goes does not compile:
//! ```compile_fail
//! # use orchestra::tmux::{Tmux, WindowId};
//! fn screen(tmux: &Tmux, window: &WindowId) -> String {
//!     tmux.capture_pane(window, 0).unwrap_or_default()
//! }
//! ```

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::TmuxError;

macro_rules! tmux_id {
    ($(#[$doc:meta])* $name:ident, $sigil:literal, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// `text` if it is such an id: the sigil and digits, nothing else.
            pub fn parse(text: &str) -> Result<$name, TmuxError> {
                match text.strip_prefix($sigil) {
                    Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                        Ok($name(text.to_string()))
                    }
                    _ => Err(TmuxError::BadTarget {
                        what: $what,
                        value: text.to_string(),
                    }),
                }
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl std::str::FromStr for $name {
            type Err = TmuxError;
            fn from_str(text: &str) -> Result<$name, TmuxError> {
                $name::parse(text)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = String::deserialize(d)?;
                $name::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

tmux_id!(
    /// A tmux pane id, `%` and digits: unique on its server while the pane lives (tmux
    /// reuses it after a restart: see `OwnedPane`).
    PaneId,
    '%',
    "pane id"
);

tmux_id!(
    /// A tmux window id, `@` and digits.
    WindowId,
    '@',
    "window id"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_sigil_and_digits_only() {
        assert_eq!(PaneId::parse("%12").unwrap().as_str(), "%12");
        assert_eq!(WindowId::parse("@3").unwrap(), "@3");
        for bad in [
            "",
            "%",
            "12",
            "@3",
            "%1;kill-server",
            "% 1",
            "%1 ",
            "%-1",
            "%٣",
        ] {
            assert!(PaneId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(WindowId::parse("%3").is_err());
    }

    #[test]
    fn ids_travel_as_their_text() {
        let pane = PaneId::parse("%7").unwrap();
        let json = serde_json::to_string(&pane).unwrap();
        assert_eq!(json, "\"%7\"");
        assert_eq!(serde_json::from_str::<PaneId>(&json).unwrap(), pane);
        assert!(serde_json::from_str::<PaneId>("\"@7\"").is_err());
    }
}
