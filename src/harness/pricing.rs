//! What a run cost: a pure function of its tokens and a price, and the rule that picks between
//! the pricing table and a harness's own figure (the table wins for a model it prices). Not where usage is read (that is
//! `usage.rs`) nor where the pricing table comes from (`pricing.toml` and the manifest).

use std::collections::BTreeMap;

use crate::types::Price;

use crate::jobs::{CostBasis, RunUsage};

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

/// Where a recorded run's cost comes from, and the cost. The pricing table (built-in plus the
/// manifest's `[pricing]`) wins for a model it prices: a harness's own total (claude's
/// `total_cost_usd`) is one figure for the whole run, not priced per model, so it is used only
/// for a model the table does not price (exact first, then a rounded one). Unknown (`None`,
/// never $0) when neither is available; nothing for a run that drives no model. Derived when a
/// report is made, so editing a price re-renders the report and reruns nothing.
pub fn recorded_cost(
    run: &RunUsage,
    pricing: &BTreeMap<String, Price>,
) -> (CostBasis, Option<f64>) {
    if run.no_model {
        return (CostBasis::Free, Some(0.0));
    }
    if let (Some(t), Some(p)) = (run.tokens, run.model.as_ref().and_then(|m| pricing.get(m))) {
        return (CostBasis::Table, Some(cost_of_tokens(&t, p)));
    }
    match run.reported_cost_usd {
        Some(c) if run.reported_exact => (CostBasis::Reported, Some(c)),
        Some(c) => (CostBasis::Rounded, Some(c)),
        None => (CostBasis::Unpriced, None),
    }
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
    fn the_table_wins_and_the_harness_figure_prices_the_rest() {
        let pricing = BTreeMap::from([("m".to_string(), P)]);
        let mut run = RunUsage {
            role: "worker".into(),
            harness: "claude-code".into(),
            model: Some("m".into()),
            tokens: Some(crate::types::Tokens {
                input: 1000,
                output: 100,
                ..Default::default()
            }),
            reported_cost_usd: Some(0.5),
            reported_exact: true,
            no_model: false,
            timed_out: false,
        };
        let table = (1000.0 * 2.0 + 100.0 * 10.0) / 1e6;
        let (basis, cost) = recorded_cost(&run, &pricing);
        assert_eq!(basis, CostBasis::Table);
        assert!((cost.unwrap() - table).abs() < 1e-15);
        // A model the table does not price: the harness's own figure.
        run.model = Some("other".into());
        assert_eq!(
            recorded_cost(&run, &pricing),
            (CostBasis::Reported, Some(0.5))
        );
        run.reported_exact = false;
        assert_eq!(
            recorded_cost(&run, &pricing),
            (CostBasis::Rounded, Some(0.5))
        );
        run.reported_cost_usd = None;
        assert_eq!(recorded_cost(&run, &pricing), (CostBasis::Unpriced, None));
        run.no_model = true;
        assert_eq!(recorded_cost(&run, &pricing), (CostBasis::Free, Some(0.0)));
    }
}
