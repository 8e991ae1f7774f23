//! Cost from token counts and a price table entry. Used when a report renders (so a price edit
//! re-renders the report and reruns no solve) and when a budget charges a finished solve.

use crate::jobs::Tokens;
use crate::manifest::Price;

/// Dollars for `t` at `p` (prices per million tokens). Cached input is priced at
/// `cached_input`; every other input token (cache writes included) at `input`.
pub fn cost_of(t: &Tokens, p: &Price) -> f64 {
    let uncached = t.input.saturating_sub(t.cached_input) as f64;
    (uncached * p.input + t.cached_input as f64 * p.cached_input + t.output as f64 * p.output) / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_cached_input_apart() {
        let p = Price {
            input: 0.10,
            cached_input: 0.01,
            output: 0.50,
        };
        let t = Tokens {
            input: 1_000_000,
            cached_input: 500_000,
            cache_write: 0,
            output: 100_000,
        };
        let want = (500_000.0 * 0.10 + 500_000.0 * 0.01 + 100_000.0 * 0.50) / 1e6;
        assert!((cost_of(&t, &p) - want).abs() < 1e-12);
    }
}
