//! Spans of time as people write and read them (pure): the one grammar every duration
//! setting is parsed with (tmux options, orchestra.toml, flags, the environment), the one
//! way an age is shown, and the one way a timeout or a run time is spelled.

use std::time::Duration;

/// `500ms`, `90s`, `10m`, `1h`, `30d`, or a bare number of seconds (space allowed around
/// the unit); `None` for anything else, or past what a `Duration` holds.
pub fn parse(text: &str) -> Option<Duration> {
    let t = text.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits.parse().ok()?;
    let secs = |per: u64| n.checked_mul(per).map(Duration::from_secs);
    match unit.trim() {
        "ms" => Some(Duration::from_millis(n)),
        "" | "s" => secs(1),
        "m" => secs(60),
        "h" => secs(3600),
        "d" => secs(86_400),
        _ => None,
    }
}

/// A setting kept in whole seconds (an interval, a retention): `None` for a part of a
/// second (`1500ms`) or more seconds than an `i64` holds.
pub fn parse_secs(text: &str) -> Option<i64> {
    let d = parse(text)?;
    if d.subsec_nanos() != 0 {
        return None;
    }
    i64::try_from(d.as_secs()).ok()
}

/// A timeout: a duration above zero (a zero timeout would fail everything at once).
pub fn parse_timeout(text: &str) -> Option<Duration> {
    parse(text).filter(|d| !d.is_zero())
}

/// How long ago, in its largest unit: "42s", "5m", "3h", "2d" (a negative age is "0s").
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A timeout or a run time, exactly enough to compare with what was set: "500ms",
/// "2.5s", "90s" as "1m30s", "10m".
pub fn spell(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 60, s % 60) {
        (0, 0) if !d.is_zero() => format!("{}ms", d.as_millis()),
        (0, _) if d.subsec_millis() == 0 => format!("{s}s"),
        (0, _) => format!("{:.1}s", d.as_secs_f64()),
        (m, 0) => format!("{m}m"),
        (m, r) => format!("{m}m{r}s"),
    }
}

/// `micros` since the epoch as the local time a person reads in a table
/// ("2026-12-02 14:03:51"); empty when out of range.
pub fn local_time(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_parses_with_one_grammar() {
        assert_eq!(parse("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse(" 90 s "), Some(Duration::from_secs(90)));
        assert_eq!(parse("10m"), Some(Duration::from_secs(600)));
        assert_eq!(parse("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse("30d"), Some(Duration::from_secs(30 * 86_400)));
        for bad in ["", "m", "10x", "-5s", "1.5s", "10 minutes", "5s5"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn seconds_and_timeouts_refuse_what_they_cannot_hold() {
        assert_eq!(parse_secs("0"), Some(0));
        assert_eq!(parse_secs("2000ms"), Some(2));
        assert_eq!(parse_secs("500ms"), None, "not a whole second");
        assert_eq!(parse_secs("200000000000000000m"), None, "past i64 seconds");
        assert_eq!(parse("400000000000000000m"), None, "past u64 seconds");
        assert_eq!(parse_timeout("0s"), None);
        assert_eq!(parse_timeout("0ms"), None);
        assert_eq!(parse_timeout("1ms"), Some(Duration::from_millis(1)));
    }

    #[test]
    fn an_age_shows_its_largest_unit() {
        assert_eq!(age(-3), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(61), "1m");
        assert_eq!(age(3600), "1h");
        assert_eq!(age(2 * 86_400 + 5), "2d");
    }

    #[test]
    fn a_timeout_is_spelled_exactly() {
        for (d, text) in [
            (Duration::from_millis(500), "500ms"),
            (Duration::from_millis(2500), "2.5s"),
            (Duration::from_secs(2), "2s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(600), "10m"),
            (Duration::ZERO, "0s"),
        ] {
            assert_eq!(spell(d), text);
        }
        for d in [500, 2000, 600_000].map(Duration::from_millis) {
            assert_eq!(parse(&spell(d)), Some(d));
        }
    }
}
