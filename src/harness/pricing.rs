//! What a run cost: a pure function of its tokens and a price. Not where usage is read (that
//! is `usage.rs`), nor where the pricing table comes from (`pricing.toml` and the manifest),
//! nor the rule that picks between the table and a harness's own figure (`jobs::solve`'s
//! `recorded_cost`, beside the recorded run it reads).

use crate::types::Price;

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

/// [`cost_of`] over a run's recorded [`Tokens`](crate::types::Tokens).
pub fn cost_of_tokens(t: &crate::types::Tokens, price: &Price) -> f64 {
    cost_of(t.input, t.cached_input, t.cache_write, t.output, price)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A price for tests (dollars per million tokens).
    pub(crate) const P: Price = Price {
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
}
