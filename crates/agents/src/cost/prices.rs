//! Prices per model, in US dollars per million tokens: a built-in table, overridden and
//! extended by `$ORCHESTRA_HOME/prices.toml`. A model in neither has no price: its tokens
//! are shown, its cost never guessed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::state::Tokens;

/// What a million tokens of each kind cost.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Writing the prompt cache (claude's 5-minute cache: 1.25 × input).
    pub cache_write: f64,
    /// Reading it (0.1 × input).
    pub cache_read: f64,
}

impl Price {
    const fn of(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_write: input * 1.25,
            cache_read: input * 0.1,
        }
    }

    /// OpenAI's and Google's way: a cache read has a price of its own, writing the cache
    /// costs what the input does (no write fee).
    const fn cached(input: f64, output: f64, cache_read: f64) -> Price {
        Price {
            input,
            output,
            cache_write: input,
            cache_read,
        }
    }

    pub fn cost(&self, t: &Tokens) -> f64 {
        (t.input as f64 * self.input
            + t.output as f64 * self.output
            + t.cache_creation as f64 * self.cache_write
            + t.cache_read as f64 * self.cache_read)
            / 1_000_000.0
    }
}

/// Anthropic's list prices (anthropic.com/pricing, as of 2025-11), base rates: Sonnet's
/// dearer rate for prompts over 200K tokens and the 1-hour cache's write rate are not
/// told apart, the log does not say which applied to a message. Names are matched with
/// and without a trailing `-YYYYMMDD`.
const BUILT_IN: &[(&str, Price)] = &[
    ("claude-opus-4-5", Price::of(5.0, 25.0)),
    ("claude-opus-4-1", Price::of(15.0, 75.0)),
    ("claude-opus-4", Price::of(15.0, 75.0)),
    ("claude-sonnet-4-5", Price::of(3.0, 15.0)),
    ("claude-sonnet-4", Price::of(3.0, 15.0)),
    ("claude-3-7-sonnet", Price::of(3.0, 15.0)),
    ("claude-3-5-sonnet", Price::of(3.0, 15.0)),
    ("claude-haiku-4-5", Price::of(1.0, 5.0)),
    ("claude-3-5-haiku", Price::of(0.8, 4.0)),
    ("claude-3-haiku", Price::of(0.25, 1.25)),
    // OpenAI's list prices (openai.com/api/pricing, as of 2025-11), the standard tier (not
    // batch, flex or priority, which the rollout does not tell apart); cached input at its
    // own rate. Names are matched with and without a trailing `-YYYY-MM-DD`.
    ("gpt-5.1", Price::cached(1.25, 10.0, 0.125)),
    ("gpt-5.1-codex", Price::cached(1.25, 10.0, 0.125)),
    ("gpt-5.1-codex-mini", Price::cached(0.25, 2.0, 0.025)),
    ("gpt-5", Price::cached(1.25, 10.0, 0.125)),
    ("gpt-5-codex", Price::cached(1.25, 10.0, 0.125)),
    ("gpt-5-mini", Price::cached(0.25, 2.0, 0.025)),
    ("gpt-5-nano", Price::cached(0.05, 0.4, 0.005)),
    ("gpt-4.1", Price::cached(2.0, 8.0, 0.5)),
    ("gpt-4.1-mini", Price::cached(0.4, 1.6, 0.1)),
    ("o3", Price::cached(2.0, 8.0, 0.5)),
    ("o4-mini", Price::cached(1.1, 4.4, 0.275)),
    // Google's list prices for the Gemini API (ai.google.dev/pricing, as of 2025-11), the
    // paid tier's text rates for prompts up to 200K tokens (2.5 Pro's dearer rate above
    // that is not told apart: the chat record does not say the prompt's size); implicit
    // cache reads at their own rate, no storage fee counted.
    ("gemini-2.5-pro", Price::cached(1.25, 10.0, 0.125)),
    ("gemini-2.5-flash", Price::cached(0.3, 2.5, 0.03)),
    ("gemini-2.5-flash-lite", Price::cached(0.1, 0.4, 0.01)),
];

#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("{path}: {message}")]
    Bad { path: PathBuf, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    models: BTreeMap<String, FilePrice>,
}

/// A model in prices.toml: `input` and `output` are required; the cache rates default to
/// Anthropic's multipliers of the input price.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePrice {
    input: f64,
    output: f64,
    cache_write: Option<f64>,
    cache_read: Option<f64>,
}

/// The price table in force.
#[derive(Debug, Clone)]
pub struct Prices {
    table: BTreeMap<String, Price>,
}

impl Prices {
    pub fn built_in() -> Prices {
        Prices {
            table: BUILT_IN.iter().map(|(m, p)| (m.to_string(), *p)).collect(),
        }
    }

    /// The built-in table with `home/prices.toml` over it (none: the built-in table).
    pub fn load(home: &Path) -> Result<Prices, PricesError> {
        let path = home.join("prices.toml");
        let mut prices = Prices::built_in();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(prices),
            Err(e) => {
                return Err(PricesError::Bad {
                    path,
                    message: e.to_string(),
                })
            }
        };
        let bad = |message: String| PricesError::Bad {
            path: path.clone(),
            message,
        };
        let file: File = toml::from_str(&text).map_err(|e| bad(e.message().to_string()))?;
        for (model, p) in file.models {
            let price = Price {
                input: p.input,
                output: p.output,
                cache_write: p.cache_write.unwrap_or(p.input * 1.25),
                cache_read: p.cache_read.unwrap_or(p.input * 0.1),
            };
            let all = [
                price.input,
                price.output,
                price.cache_write,
                price.cache_read,
            ];
            if all.iter().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(bad(format!(
                    "models.{model:?}: prices are dollars per million tokens, not negative"
                )));
            }
            prices.table.insert(model, price);
        }
        Ok(prices)
    }

    /// The price of `model`, by its name or its name without a `-YYYYMMDD` (Anthropic's)
    /// or `-YYYY-MM-DD` (OpenAI's) date.
    pub fn get(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.table.get(model) {
            return Some(*p);
        }
        let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        let (base, date) = model.rsplit_once('-')?;
        if digits(date, 8) {
            return self.table.get(base).copied();
        }
        let mut parts = model.rsplitn(4, '-');
        let (day, month, year, base) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if digits(day, 2) && digits(month, 2) && digits(year, 4) {
            self.table.get(base).copied()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dated_name_has_its_models_price_and_an_unknown_one_none() {
        let p = Prices::built_in();
        assert_eq!(
            p.get("claude-sonnet-4-5-20250929"),
            p.get("claude-sonnet-4-5")
        );
        assert!(p.get("claude-sonnet-4-5").is_some());
        assert_eq!(p.get("claude-opus-5-5"), None);
        assert_eq!(p.get("gpt-4"), None);
        assert_eq!(p.get("gpt-5-2025-08-07"), p.get("gpt-5"));
        assert!(p.get("gpt-5").is_some());
        assert_eq!(p.get("gemini-2.5-pro-preview-06-05"), None);
        assert_eq!(p.get("stand-in"), None);
        // Cached input at OpenAI's own rate, no fee for writing the cache.
        let gpt = p.get("gpt-5").unwrap().cost(&Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_creation: 0,
            cache_read: 1_000_000,
        });
        assert!((gpt - (1.25 + 10.0 + 0.125)).abs() < 1e-9, "{gpt}");
        let t = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_creation: 1_000_000,
            cache_read: 1_000_000,
        };
        let cost = p.get("claude-sonnet-4-5").unwrap().cost(&t);
        assert!((cost - (3.0 + 15.0 + 3.75 + 0.3)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn prices_toml_overrides_and_adds_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("prices.toml"),
            "[models.\"claude-sonnet-4-5\"]\ninput = 1.0\noutput = 2.0\n\
             [models.\"my-model\"]\ninput = 4\noutput = 8\ncache_write = 5\ncache_read = 0.5\n",
        )
        .unwrap();
        let p = Prices::load(dir.path()).unwrap();
        assert_eq!(p.get("claude-sonnet-4-5").unwrap(), Price::of(1.0, 2.0));
        assert_eq!(p.get("my-model").unwrap().cache_write, 5.0);
        std::fs::write(dir.path().join("prices.toml"), "[models.x]\ninput = 1\n").unwrap();
        let e = Prices::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("prices.toml") && e.contains("output"), "{e}");
        std::fs::write(
            dir.path().join("prices.toml"),
            "[models.x]\ninput = -1\noutput = 1\n",
        )
        .unwrap();
        assert!(Prices::load(dir.path()).is_err());
    }
}
