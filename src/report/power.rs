//! Power of the paired comparison with the baseline, before anything runs (`bench plan`): the
//! smallest difference in resolve rate that n paired tasks detect at 80% power and a two-sided
//! alpha of 0.05, and the tasks needed to detect a given difference. Pure functions, checked
//! against statsmodels' `NormalIndPower` in the reference tables; it knows nothing of
//! manifests.
//!
//! # Method
//!
//! The normal approximation of McNemar's test: a z-test that the mean of the per-task
//! differences `d_i = team_i - baseline_i` (each -1, 0 or 1) is 0. With effect size
//! `e = δ / σ_d` its power over n tasks is statsmodels' `normal_power` (two-sided, both tails):
//! `Φ(e√n - z) + Φ(-e√n - z)`, z = Φ⁻¹(0.975) (`NormalIndPower().power(e, n, 0.05, ratio=0)`).
//! The power reaches 80% at one value `x* = e√n` (about 2.8016), so the effect detectable with
//! n tasks is `x*/√n` and the tasks needed for effect e are `(x*/e)²`, rounded up.
//!
//! **Discordance assumption**: the teams' outcomes on a task are taken as independent given
//! their rates p0 (baseline) and p1 = p0 + δ, so the discordant share is
//! `p0(1 - p1) + p1(1 - p0)` and `σ_d² = p0(1 - p0) + p1(1 - p1)`. Agents usually agree more
//! than that (easy tasks are easy for both), which leaves fewer discordant pairs and more
//! power: the figures are conservative. The baseline rate is 50% unless given (for small
//! differences the largest variance, so the most conservative choice).

use super::inference::{normal_cdf, normal_quantile, normal_sf};

/// The power the figures are for.
pub const POWER: f64 = 0.8;
/// The two-sided significance level.
pub const ALPHA: f64 = 0.05;

/// Power of the two-sided z-test with standardized effect `effect` over `n` paired tasks
/// (statsmodels `normal_power`, both tails).
pub fn normal_power(effect: f64, n: f64) -> f64 {
    let z = normal_quantile(1.0 - ALPHA / 2.0);
    let shift = effect * n.sqrt();
    normal_sf(z - shift) + normal_cdf(-z - shift)
}

/// `x*`: the value of `effect · √n` at which [`normal_power`] is [`POWER`] (bisection to the
/// last bit; the power is increasing in it).
pub fn critical_shift() -> f64 {
    let (mut lo, mut hi) = (0.0f64, 20.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if normal_power(mid, 1.0) < POWER {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The standard deviation of a per-task difference under the independence assumption.
fn sigma(p0: f64, p1: f64) -> f64 {
    (p0 * (1.0 - p0) + p1 * (1.0 - p1)).sqrt()
}

/// Power of `n` paired tasks to detect a change from `p0` to `p0 + delta`.
pub fn paired_power(n: f64, p0: f64, delta: f64) -> f64 {
    let s = sigma(p0, p0 + delta);
    if s == 0.0 {
        return if delta == 0.0 { ALPHA } else { 1.0 };
    }
    normal_power(delta.abs() / s, n)
}

/// The smallest improvement over a baseline rate `p0` that `n` paired tasks detect with 80%
/// power: the positive δ with `δ / σ_d(p0, p0 + δ) = x*/√n`. `None` when `n` is 0, `p0` is
/// outside [0, 1], or no improvement up to 100% is detectable.
pub fn min_detectable_difference(n: u64, p0: f64) -> Option<f64> {
    if n == 0 || !(0.0..=1.0).contains(&p0) {
        return None;
    }
    let e = critical_shift() / (n as f64).sqrt();
    // δ² = e² (p0(1-p0) + (p0+δ)(1-p0-δ))  <=>  (1+e²) δ² - e²(1-2p0) δ - 2e² p0(1-p0) = 0.
    let e2 = e * e;
    let (a, b, c) = (
        1.0 + e2,
        -e2 * (1.0 - 2.0 * p0),
        -2.0 * e2 * p0 * (1.0 - p0),
    );
    let disc = b * b - 4.0 * a * c;
    let delta = (-b + disc.max(0.0).sqrt()) / (2.0 * a);
    (p0 + delta <= 1.0 && delta > 0.0).then_some(delta)
}

/// The paired tasks needed to detect a change of `delta` from `p0` with 80% power, unrounded
/// (`(x*/e)²`); `None` when `delta` is 0 or `p0 + delta` leaves [0, 1].
pub fn sample_size(p0: f64, delta: f64) -> Option<f64> {
    let p1 = p0 + delta;
    if delta == 0.0 || !(0.0..=1.0).contains(&p0) || !(0.0..=1.0).contains(&p1) {
        return None;
    }
    let e = delta.abs() / sigma(p0, p1);
    Some((critical_shift() / e).powi(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_critical_shift_gives_80_percent() {
        let x = critical_shift();
        assert!((normal_power(x, 1.0) - POWER).abs() < 1e-15);
        assert!((x - 2.801_585).abs() < 1e-5, "{x}");
    }

    #[test]
    fn detectable_difference_and_sample_size_invert_each_other() {
        for (n, p0) in [(50u64, 0.5), (50, 0.3), (8, 0.0), (500, 0.7), (2000, 0.05)] {
            let d = min_detectable_difference(n, p0).expect("detectable");
            assert!(
                (paired_power(n as f64, p0, d) - POWER).abs() < 1e-12,
                "{n} {p0}"
            );
            let back = sample_size(p0, d).expect("size");
            assert!(
                (back - n as f64).abs() < 1e-6 * n as f64,
                "{n} {p0}: {back}"
            );
        }
        // 50 tasks at a 50% baseline cannot see a 4-8 point gap (the seed's finding).
        let d = min_detectable_difference(50, 0.5).expect("detectable");
        assert!(d > 0.2, "{d}");
        assert_eq!(min_detectable_difference(0, 0.5), None);
        assert_eq!(min_detectable_difference(1, 0.99), None);
        assert_eq!(sample_size(0.5, 0.0), None);
        assert_eq!(sample_size(0.9, 0.2), None);
    }
}
