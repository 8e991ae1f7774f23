//! What a run cost: a pure function of its tokens and a price, and the rule that picks between
//! a harness's own exact figure and one computed from tokens. Not where usage is read (that is
//! `usage.rs`) nor where the pricing table comes from (`pricing.toml` and the manifest).

use std::collections::BTreeMap;

use crate::types::Price;

use super::usage::Usage;

/// Dollars for a run's tokens at `price` (dollars per million tokens). `input` counts every
/// input token, cache hits (`cached_input`) and cache writes (`cache_write`) included; the rest
/// of the input is priced as uncached input.
pub fn cost_of(input: u64, cached_input: u64, cache_write: u64, output: u64, price: &Price) -> f64 {
    let uncached = input.saturating_sub(cached_input.saturating_add(cache_write));
    (uncached as f64 * price.input
        + cached_input as f64 * price.cached_input
        + cache_write as f64 * price.cache_write
        + output as f64 * price.output)
        / 1e6
}

/// A run's cost: the harness's own figure when it reports an exact one (claude's
/// `total_cost_usd`), else its tokens priced by `pricing[model]`; `None` (unknown, never $0) when
/// neither is available.
pub fn run_cost(
    usage: &Usage,
    model: Option<&str>,
    pricing: &BTreeMap<String, Price>,
) -> Option<f64> {
    if let Some(c) = usage.reported_cost_usd {
        return Some(c);
    }
    let price = pricing.get(model?)?;
    Some(cost_of(
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.output_tokens,
        price,
    ))
}

/// [`cost_of`] over a run's recorded [`Tokens`](crate::types::Tokens).
pub fn cost_of_tokens(t: &crate::types::Tokens, price: &Price) -> f64 {
    cost_of(t.input, t.cached_input, t.cache_write, t.output, price)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Price = Price {
        input: 2.0,
        cached_input: 0.2,
        cache_write: 2.5,
        output: 10.0,
    };

    #[test]
    fn tokens_are_priced_by_kind() {
        // 1M input of which 600k cache hits and 100k cache writes: 300k uncached.
        let c = cost_of(1_000_000, 600_000, 100_000, 50_000, &P);
        let want = 0.3 * 2.0 + 0.6 * 0.2 + 0.1 * 2.5 + 0.05 * 10.0;
        assert!((c - want).abs() < 1e-12, "{c} != {want}");
        assert_eq!(cost_of(0, 0, 0, 0, &P), 0.0);
        // Inconsistent counts never go negative.
        assert!(cost_of(10, 20, 0, 0, &P) > 0.0);
    }

    #[test]
    fn reported_figure_wins_and_unknown_is_none() {
        let pricing = BTreeMap::from([("m".to_string(), P)]);
        let mut u = Usage {
            input_tokens: 1000,
            output_tokens: 100,
            calls: 1,
            ..Default::default()
        };
        let computed = run_cost(&u, Some("m"), &pricing).unwrap();
        assert!((computed - (1000.0 * 2.0 + 100.0 * 10.0) / 1e6).abs() < 1e-15);
        assert_eq!(run_cost(&u, Some("other"), &pricing), None);
        assert_eq!(run_cost(&u, None, &pricing), None);
        u.reported_cost_usd = Some(0.5);
        assert_eq!(run_cost(&u, Some("other"), &pricing), Some(0.5));
    }
}
