//! Power of the paired comparison with the baseline, before anything runs (`bench plan`): the
//! smallest difference in resolve rate that n paired tasks detect at 80% power, and the tasks
//! needed to detect a given difference, for the test the report decides with: the exact
//! McNemar test ([`super::stats::mcnemar_exact`]) at a two-sided alpha of 0.05. Pure functions,
//! checked against an independent scipy enumeration (`scipy.stats.binomtest` and `binom`) in
//! the reference tables; it knows nothing of manifests.
//!
//! # Method
//!
//! Exact enumeration. Over n paired tasks, let `p10` be the chance that the team resolves a
//! task the baseline does not and `p01` the reverse. The discordant pairs are
//! `D ~ Binomial(n, p10 + p01)`, and given `D = d` the team's wins are
//! `W ~ Binomial(d, p10 / (p10 + p01))`. The power is
//! `Σ_d Σ_w P(D = d) P(W = w | d) · 1[mcnemar_exact(w, d - w) ≤ 0.05]`: every outcome the
//! report would call significant, in either direction. The rejection region of each d is
//! `w ≥ c_d` or `w ≤ d - c_d` ([`ExactMcNemar`]); terms further than `8√n` from a binomial's
//! mean are left out (Hoeffding: their mass is below `2e^-128`).
//!
//! **Discordance assumption**: the teams' outcomes on a task are taken as independent given
//! their rates p0 (baseline) and p1 = p0 + δ, so `p10 = p1(1 - p0)` and `p01 = p0(1 - p1)`.
//! Agents usually agree more than that (easy tasks are easy for both), which leaves fewer
//! discordant pairs. Exact power is not monotone in the discordant rate, so this is an
//! assumption, not a bound: the figures are neither conservative nor optimistic by
//! construction. The baseline rate is 50% unless given.
//!
//! **Smallest detectable difference**: the smallest δ in (0, 1 - p0] whose power reaches 80%:
//! the first of 200 equal steps of (0, 1 - p0] that reaches it, then bisection inside that step
//! (the power rises with δ for a fixed discordance; with p0 ≠ 50% the discordance moves with δ
//! too, hence the scan). `None` when even δ = 1 - p0 falls short (few tasks: exact McNemar
//! cannot reject at all below 6 discordant pairs).
//!
//! **Tasks needed**: exact power is not monotone in n (the rejection region moves in whole
//! steps, so power zig-zags as tasks are added). The figure is the smallest n reaching 80%
//! found by doubling and bisection, then a look back over up to [`LOOK_BACK`] smaller n for an
//! earlier one that reaches it; a few more tasks than it may fall just short.

use super::stats::mcnemar_exact;

/// The power the figures are for.
pub const POWER: f64 = 0.8;
/// The two-sided significance level.
pub const ALPHA: f64 = 0.05;
/// The test the figures are for, as the plan prints it.
pub const TEST: &str = "exact McNemar, alpha 0.05, two-sided";
/// The largest sample the tasks-needed search considers.
pub const MAX_TASKS: u64 = 200_000;
/// How many smaller sample sizes the tasks-needed search checks below the crossing it found.
pub const LOOK_BACK: u64 = 64;
/// Steps of the scan for the smallest detectable difference.
const SCAN_STEPS: u32 = 200;

/// The exact McNemar test at [`ALPHA`] over n paired tasks: its rejection region for d
/// discordant pairs is `w ≥ c_d` or `w ≤ d - c_d` wins, `c_d` the smallest `w > d/2` with
/// `mcnemar_exact(w, d - w) ≤ ALPHA` ([`ExactMcNemar::critical`]; none when no w rejects).
#[derive(Debug, Clone, Copy)]
pub struct ExactMcNemar {
    n: u64,
}

/// Whether `w` wins of `d` discordant pairs (`w > d/2`) reject: `mcnemar_exact(w, d - w) ≤
/// ALPHA`. Above 1000 pairs the p-value is first taken from `lgamma` (relative error below
/// 1e-9 up to [`MAX_TASKS`]); only when that is within 1e-6 of alpha does `mcnemar_exact`
/// (whose cost grows with d) decide.
fn rejects(w: u64, d: u64) -> bool {
    let m = d - w;
    if d <= 1000 {
        return mcnemar_exact(w, m) <= ALPHA;
    }
    let (df, mf) = (d as f64, m as f64);
    let ln_pmf = libm::lgamma(df + 1.0)
        - libm::lgamma(mf + 1.0)
        - libm::lgamma(df - mf + 1.0)
        - df * std::f64::consts::LN_2;
    // P(X <= m) / pmf(m), the same series as mcnemar_exact.
    let (mut tail, mut ratio, mut i) = (1.0f64, 1.0f64, m);
    while i > 0 {
        ratio *= i as f64 / (d - i + 1) as f64;
        tail += ratio;
        if ratio < 1e-20 {
            break;
        }
        i -= 1;
    }
    let p = (2.0 * ln_pmf.exp() * tail).min(1.0);
    if (p - ALPHA).abs() <= 1e-6 * ALPHA {
        return mcnemar_exact(w, m) <= ALPHA;
    }
    p <= ALPHA
}

impl ExactMcNemar {
    /// The test over `n` paired tasks.
    pub fn new(n: u64) -> ExactMcNemar {
        ExactMcNemar { n }
    }

    /// The tasks the test is over.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The smallest number of wins out of `d` discordant pairs that rejects: found from the
    /// normal approximation's guess by steps (the p-value falls as w rises).
    pub fn critical(&self, d: u64) -> Option<u64> {
        if d < 6 {
            // 2 · 2^-5 > 0.05: fewer than six discordant pairs never reject.
            return None;
        }
        let guess = (d as f64 / 2.0 + 0.98 * (d as f64).sqrt()).round() as u64;
        let mut c = guess.clamp(d / 2 + 1, d);
        while c > d / 2 + 1 && rejects(c - 1, d) {
            c -= 1;
        }
        while c <= d && !rejects(c, d) {
            c += 1;
        }
        (c <= d).then_some(c)
    }

    /// The critical values of `lo..=hi` (each `c_(d+1)` is `c_d` or `c_d + 1`: one more pair
    /// lowers the p-value of the same wins, and one more loss raises it).
    fn criticals(&self, lo: u64, hi: u64) -> Vec<Option<u64>> {
        let mut out = Vec::with_capacity((hi - lo + 1) as usize);
        let mut prev: Option<u64> = None;
        for d in lo..=hi {
            let c = match prev {
                Some(c) => {
                    let c = c.max(d / 2 + 1);
                    if rejects(c, d) { Some(c) } else { Some(c + 1) }
                }
                None => self.critical(d),
            };
            out.push(c);
            prev = c;
        }
        out
    }

    /// The power over n tasks when a task is a win with probability `p10` and a loss with
    /// probability `p01` (see the module documentation).
    pub fn power(&self, p10: f64, p01: f64) -> f64 {
        let n = self.n();
        let q = p10 + p01;
        if q <= 0.0 {
            return 0.0;
        }
        let share = (p10 / q).clamp(0.0, 1.0);
        let (d_lo, d_hi) = window(n, q.min(1.0));
        let pd = binomial_pmfs(n, q.min(1.0), d_lo, d_hi);
        let critical = self.criticals(d_lo, d_hi);
        let mut total = 0.0f64;
        for ((d, p_d), c) in (d_lo..=d_hi).zip(pd).zip(critical) {
            let Some(c) = c else {
                continue;
            };
            if p_d == 0.0 {
                continue;
            }
            let (w_lo, w_hi) = window(d, share);
            let pw = binomial_pmfs(d, share, w_lo, w_hi);
            let reject: f64 = (w_lo..=w_hi)
                .zip(pw)
                .filter(|(w, _)| *w >= c || *w <= d - c)
                .map(|(_, p)| p)
                .sum();
            total += p_d * reject;
        }
        total.min(1.0)
    }
}

/// The outcomes of Binomial(n, p) within `8√n + 1` of its mean, clipped to 0..=n.
fn window(n: u64, p: f64) -> (u64, u64) {
    let nf = n as f64;
    let half = 8.0 * nf.sqrt() + 1.0;
    let mean = nf * p;
    let lo = (mean - half).floor().max(0.0) as u64;
    let hi = ((mean + half).ceil().max(0.0) as u64).min(n);
    (lo.min(hi), hi)
}

/// Binomial(n, p) probabilities of `lo..=hi`: the one at the mode from `lgamma`, the others
/// by the ratio `pmf(k + 1) / pmf(k) = (n - k) / (k + 1) · p / (1 - p)` outwards from it (so the
/// largest terms never underflow).
fn binomial_pmfs(n: u64, p: f64, lo: u64, hi: u64) -> Vec<f64> {
    if p <= 0.0 || p >= 1.0 {
        let at = if p <= 0.0 { 0 } else { n };
        return (lo..=hi).map(|k| if k == at { 1.0 } else { 0.0 }).collect();
    }
    let nf = n as f64;
    let mode = (((nf + 1.0) * p).floor() as u64).clamp(lo, hi);
    let kf = mode as f64;
    let ln_mode = libm::lgamma(nf + 1.0) - libm::lgamma(kf + 1.0) - libm::lgamma(nf - kf + 1.0)
        + kf * p.ln()
        + (nf - kf) * libm::log1p(-p);
    let odds = p / (1.0 - p);
    let mut out = vec![0.0f64; (hi - lo + 1) as usize];
    let at = |k: u64| (k - lo) as usize;
    out[at(mode)] = ln_mode.exp();
    for k in mode..hi {
        out[at(k + 1)] = out[at(k)] * ((n - k) as f64 / (k + 1) as f64 * odds);
    }
    for k in (lo + 1..=mode).rev() {
        out[at(k - 1)] = out[at(k)] * (k as f64 / (n - k + 1) as f64 / odds);
    }
    out
}

/// The discordant probabilities `(p10, p01)` of a change from `p0` to `p0 + delta` with
/// independent outcomes (the module's discordance assumption).
pub fn discordance(p0: f64, delta: f64) -> (f64, f64) {
    let p1 = p0 + delta;
    (p1 * (1.0 - p0), p0 * (1.0 - p1))
}

/// Power of `n` paired tasks to detect a change from `p0` to `p0 + delta` with the exact
/// McNemar test (under the discordance assumption).
pub fn paired_power(n: u64, p0: f64, delta: f64) -> f64 {
    let (p10, p01) = discordance(p0, delta);
    ExactMcNemar::new(n).power(p10, p01)
}

/// The smallest improvement over a baseline rate `p0` that `n` paired tasks detect with 80%
/// power (see the module documentation). `None` when `n` is 0, `p0` is outside [0, 1), or no
/// improvement up to 100% reaches 80%.
pub fn min_detectable_difference(n: u64, p0: f64) -> Option<f64> {
    if n == 0 || !(0.0..1.0).contains(&p0) {
        return None;
    }
    let test = ExactMcNemar::new(n);
    let power = |delta: f64| {
        let (p10, p01) = discordance(p0, delta);
        test.power(p10, p01)
    };
    let span = 1.0 - p0;
    let step = |i: u32| span * f64::from(i) / f64::from(SCAN_STEPS);
    let first = (1..=SCAN_STEPS).find(|&i| power(step(i)) >= POWER)?;
    let (mut lo, mut hi) = (step(first - 1), step(first));
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if power(mid) >= POWER {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The largest power any improvement over `p0` reaches with `n` tasks (the improvement to 100%).
pub fn max_power(n: u64, p0: f64) -> f64 {
    if !(0.0..1.0).contains(&p0) {
        return 0.0;
    }
    paired_power(n, p0, 1.0 - p0)
}

/// The paired tasks needed to detect a change of `delta` from `p0` with 80% power (see the
/// module documentation; a negative `delta` is a decline, which the two-sided test detects
/// too); `None` when `delta` is 0, `p0 + delta` leaves [0, 1], or more than [`MAX_TASKS`] would
/// be needed.
pub fn tasks_needed(p0: f64, delta: f64) -> Option<u64> {
    let p1 = p0 + delta;
    if delta == 0.0 || !(0.0..=1.0).contains(&p0) || !(0.0..=1.0).contains(&p1) {
        return None;
    }
    let reaches = |n: u64| paired_power(n, p0, delta) >= POWER;
    // Doubling to a sample that reaches it, then bisection for a crossing below it.
    let mut hi = 8u64;
    while !reaches(hi) {
        if hi >= MAX_TASKS {
            return None;
        }
        hi = (hi * 2).min(MAX_TASKS);
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    // The power zig-zags in n: an earlier n may reach it too.
    let earliest = (hi.saturating_sub(LOOK_BACK).max(1)..hi).find(|&n| reaches(n));
    Some(earliest.unwrap_or(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejection_regions_are_the_exact_test() {
        let t = ExactMcNemar::new(60);
        // Five discordant pairs all won: p = 2/32 > 0.05; six: 2/64 < 0.05.
        assert_eq!(t.critical(5), None);
        assert_eq!(t.critical(6), Some(6));
        let criticals = t.criticals(0, 60);
        for d in 0..=60 {
            assert_eq!(criticals[d as usize], t.critical(d), "{d}");
            for w in 0..=d {
                let rejects = t.critical(d).is_some_and(|c| w >= c || w <= d - c);
                assert_eq!(rejects, mcnemar_exact(w, d - w) <= ALPHA, "{w} of {d}");
            }
        }
    }

    #[test]
    fn large_rejection_regions_are_the_exact_test() {
        // Above 1000 pairs the p-value comes from lgamma first: the same boundary.
        let t = ExactMcNemar::new(200_000);
        let ds: Vec<u64> = (995..1_100)
            .chain([20_000, 20_001, 77_777, 199_999])
            .collect();
        for &d in &ds {
            let c = t.critical(d).expect("rejects");
            assert!(mcnemar_exact(c, d - c) <= ALPHA, "{d}: {c}");
            assert!(mcnemar_exact(c - 1, d - c + 1) > ALPHA, "{d}: {c}");
        }
        let run = t.criticals(995, 1_099);
        assert_eq!(
            run,
            ds[..105].iter().map(|&d| t.critical(d)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn power_is_the_full_enumeration() {
        // Eight tasks, a 50% baseline against a team that solves everything: every discordant
        // pair is a win, D ~ Bin(8, 1/2), and only D >= 6 rejects: (28 + 8 + 1) / 256.
        assert!((paired_power(8, 0.5, 0.5) - 37.0 / 256.0).abs() < 1e-15);
        // No difference: the size of the test, at most alpha.
        for n in [10, 40, 100] {
            let size = paired_power(n, 0.5, 0.0);
            assert!(size > 0.0 && size <= ALPHA, "{n}: {size}");
        }
        assert_eq!(ExactMcNemar::new(30).power(0.0, 0.0), 0.0);
    }

    #[test]
    fn detectable_difference_reaches_80_percent_and_no_less_does() {
        for (n, p0) in [(50u64, 0.5), (50, 0.3), (22, 0.0), (300, 0.7)] {
            let d = min_detectable_difference(n, p0).expect("detectable");
            assert!(paired_power(n, p0, d) >= POWER, "{n} {p0}");
            assert!(paired_power(n, p0, d * (1.0 - 1e-9)) < POWER, "{n} {p0}");
        }
        // Eight tasks cannot reach 80% on a 50% baseline (at most 14.5%).
        assert_eq!(min_detectable_difference(8, 0.5), None);
        assert!((max_power(8, 0.5) - 37.0 / 256.0).abs() < 1e-15);
        assert_eq!(min_detectable_difference(0, 0.5), None);
        assert_eq!(min_detectable_difference(5, 0.0), None);
    }

    #[test]
    fn tasks_needed_reaches_80_percent() {
        for (p0, delta) in [(0.5, 0.3), (0.3, 0.2), (0.5, 0.1)] {
            let n = tasks_needed(p0, delta).expect("size");
            assert!(paired_power(n, p0, delta) >= POWER, "{p0} {delta}");
            assert!(paired_power(n - 1, p0, delta) < POWER, "{p0} {delta}");
        }
        assert_eq!(tasks_needed(0.5, 0.0), None);
        assert_eq!(tasks_needed(0.9, 0.2), None);
    }
}
