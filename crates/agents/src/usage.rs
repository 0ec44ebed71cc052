//! The shape every agent's usage log is read into, whichever kind wrote it: a piece of a
//! log (the whole lines read, the usage found per model and day, where the read stopped).
//! The readers live in their kind's folder (`agent/<kind>/cost.rs`); `cost` sums them.

use crate::state::Tokens;

/// What a piece of a log held: how many bytes of whole lines were read, the usage found
/// (model, day, tokens) and where the read stopped (`M`: each log's own mark).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Piece<M> {
    pub consumed: usize,
    pub usage: Vec<(String, String, Tokens)>,
    pub last: M,
}

impl<M: Clone> Piece<M> {
    /// A read of `bytes` from mark `last`, nothing counted yet, and its whole lines: a
    /// last line without its newline is left for the next read.
    pub fn start<'a>(bytes: &'a [u8], last: &M) -> (Piece<M>, impl Iterator<Item = &'a [u8]>) {
        let consumed = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let piece = Piece {
            consumed,
            usage: Vec::new(),
            last: last.clone(),
        };
        (piece, bytes[..consumed].split(|&b| b == b'\n'))
    }
}

/// The day (`YYYY-MM-DD`) of a log line's RFC 3339 timestamp; empty without one.
pub(crate) fn day_of(timestamp: Option<&str>) -> String {
    timestamp.unwrap_or_default().chars().take(10).collect()
}

/// Whether `needle` is in `hay`: a cheap look before a long line is parsed as JSON.
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `t` counted under `model` on `day`.
pub(crate) fn add(usage: &mut Vec<(String, String, Tokens)>, model: &str, day: &str, t: Tokens) {
    match usage.iter_mut().find(|(m, d, _)| m == model && d == day) {
        Some((_, _, sum)) => sum.add(&t),
        None => usage.push((model.to_string(), day.to_string(), t)),
    }
}
