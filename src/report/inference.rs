//! Error bars beyond the binomial: the standard normal and Student t distributions, the cluster-robust
//! standard error of a mean (tasks of one repository are correlated), Holm's step-down
//! adjustment for several comparisons with one baseline, and the within/between-task split of
//! the variance of replicated outcomes. Pure functions with no I/O, checked against
//! statsmodels, scipy and numpy in `tests/fixtures/stats/reference.json` (written by
//! `scripts/stats_reference.py`, which `tests/stats_oracle.rs` reruns). It does not know what a
//! team or a report is: [`super::stats`] applies it.
//!
//! # Methods
//!
//! * **Clustered standard error** ([`clustered_mean`]): the CR1 sandwich estimator of an
//!   intercept-only regression, exactly what statsmodels'
//!   `OLS(y, ones).fit(cov_type="cluster", cov_kwds={"groups": g})` reports:
//!   `se² = G / (G - 1) · Σ_g (Σ_{i in g} (y_i - ȳ))² / N²` for N values in G clusters. The
//!   small-cluster correction of statsmodels is `G/(G-1) · (N-1)/(N-K)`; with the constant as
//!   the only regressor (K = 1) its second factor is 1. The interval is `ȳ ± t · se` with the
//!   0.975 quantile of Student's t with G - 1 degrees of freedom, as statsmodels reports with
//!   `use_t=True` (its cluster-robust inference uses G - 1 degrees of freedom) and as Stata's
//!   cluster-robust intervals do (Cameron, Gelbach & Miller 2008): with few clusters the normal
//!   quantile makes the interval too narrow (5 clusters: 2.776 against 1.960). Fewer than two
//!   clusters: no estimate (`None`).
//! * **Student t** ([`student_t_cdf`], [`student_t_quantile`]): for integer degrees of freedom
//!   the CDF is a finite series in `θ = atan(x/√ν)` (Abramowitz & Stegun 26.7.3-4), accurate
//!   to a few ulps; the quantile is bisection on it to the last bit (checked against scipy's
//!   `t.ppf`).
//! * **Holm** ([`holm`]): statsmodels `multipletests(p, method="holm")`: sort ascending,
//!   `p_(j) · (m - j + 1)`, running maximum, capped at 1, back in the input order.
//! * **Variance split** ([`variance_split`]): for tasks with n_i ≥ 2 replicates and c_i
//!   successes, the within-task variance is the mean of the tasks' sample variances
//!   (`c(n - c) / (n (n - 1))`, numpy `var(ddof=1)` of the 0/1 outcomes); the between-task
//!   variance is the sample variance of the task means minus the mean of `s_i² / n_i` (the part
//!   of their spread the replicates' own noise explains), floored at 0: a method-of-moments
//!   estimate of the variance of the tasks' true rates.

/// `1/sqrt(2)`.
const FRAC_1_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// Standard normal CDF, `Φ(x)`, accurate to a few ulps (erfc from musl, via `libm`).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// Standard normal survival function, `1 - Φ(x)`, without cancellation for large x.
pub fn normal_sf(x: f64) -> f64 {
    0.5 * libm::erfc(x * FRAC_1_SQRT_2)
}

/// Standard normal quantile `Φ⁻¹(p)` for `p` in (0, 1): Wichura's AS 241 (PPND16, relative
/// error about 1e-16), then one Newton step on [`normal_cdf`]. `NaN` outside (0, 1).
pub fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    let x = ppnd16(p);
    // One Newton step: x - (Φ(x) - p) / φ(x).
    let density = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let err = if p < 0.5 {
        normal_cdf(x) - p
    } else {
        (1.0 - p) - normal_sf(x)
    };
    if density > 0.0 { x - err / density } else { x }
}

/// Evaluates a polynomial with coefficients in increasing degree.
fn poly(coefficients: &[f64], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

/// AS 241 (Wichura 1988), the double-precision algorithm PPND16.
fn ppnd16(p: f64) -> f64 {
    const A: [f64; 8] = [
        3.387_132_872_796_366_5,
        1.331_416_678_917_843_8e2,
        1.971_590_950_306_551_3e3,
        1.373_169_376_550_946e4,
        4.592_195_393_154_987e4,
        6.726_577_092_700_87e4,
        3.343_057_558_358_813e4,
        2.509_080_928_730_122_7e3,
    ];
    const B: [f64; 8] = [
        1.0,
        4.231_333_070_160_091e1,
        6.871_870_074_920_579e2,
        5.394_196_021_424_751e3,
        2.121_379_430_158_66e4,
        3.930_789_580_009_271e4,
        2.872_908_573_572_194_3e4,
        5.226_495_278_852_545e3,
    ];
    const C: [f64; 8] = [
        1.423_437_110_749_683_5,
        4.630_337_846_156_546,
        5.769_497_221_460_691,
        3.647_848_324_763_204_5,
        1.270_458_252_452_368_4,
        2.417_807_251_774_506e-1,
        2.272_384_498_926_918_4e-2,
        7.745_450_142_783_414e-4,
    ];
    const D: [f64; 8] = [
        1.0,
        2.053_191_626_637_759,
        1.676_384_830_183_803_8,
        6.897_673_349_851e-1,
        1.481_039_764_274_800_8e-1,
        1.519_866_656_361_645_7e-2,
        5.475_938_084_995_345e-4,
        1.050_750_071_644_416_9e-9,
    ];
    const E: [f64; 8] = [
        6.657_904_643_501_103,
        5.463_784_911_164_114,
        1.784_826_539_917_291_3,
        2.965_605_718_285_048_7e-1,
        2.653_218_952_657_612_4e-2,
        1.242_660_947_388_078_4e-3,
        2.711_555_568_743_487_6e-5,
        2.010_334_399_292_288_1e-7,
    ];
    const F: [f64; 8] = [
        1.0,
        5.998_322_065_558_88e-1,
        1.369_298_809_227_358e-1,
        1.487_536_129_085_061_5e-2,
        7.868_691_311_456_133e-4,
        1.846_318_317_510_054_8e-5,
        1.421_511_758_316_446e-7,
        2.043_131_059_635_704_5e-15,
    ];
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180_625 - q * q;
        return q * poly(&A, r) / poly(&B, r);
    }
    let r = if q < 0.0 { p } else { 1.0 - p };
    let r = (-r.ln()).sqrt();
    let x = if r <= 5.0 {
        let r = r - 1.6;
        poly(&C, r) / poly(&D, r)
    } else {
        let r = r - 5.0;
        poly(&E, r) / poly(&F, r)
    };
    if q < 0.0 { -x } else { x }
}

/// `P(T ≤ x)` for Student's t with `df ≥ 1` degrees of freedom (`NaN` for `df == 0`).
pub fn student_t_cdf(x: f64, df: u64) -> f64 {
    if df == 0 || x.is_nan() {
        return f64::NAN;
    }
    if x.is_infinite() {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    let nu = df as f64;
    let ax = x.abs();
    // P(|T| <= |x|) with cos²θ = ν / (ν + x²), sinθ = |x| / √(ν + x²).
    let r = nu + ax * ax;
    let cos2 = nu / r;
    let sin = ax / r.sqrt();
    let inside = if df % 2 == 1 {
        // (2/π) (θ + sinθ (cosθ + 2/3 cos³θ + (2·4)/(3·5) cos⁵θ + ... + cos^(ν-2)θ)).
        let theta = ax.atan2(nu.sqrt());
        let mut sum = 0.0f64;
        if df > 1 {
            let mut term = cos2.sqrt();
            for k in 0..=(df - 3) / 2 {
                if k > 0 {
                    term *= cos2 * (2 * k) as f64 / (2 * k + 1) as f64;
                }
                sum += term;
            }
        }
        std::f64::consts::FRAC_2_PI * (theta + sin * sum)
    } else {
        // sinθ (1 + 1/2 cos²θ + (1·3)/(2·4) cos⁴θ + ... + cos^(ν-2)θ).
        let (mut term, mut sum) = (1.0f64, 0.0f64);
        for k in 0..=(df - 2) / 2 {
            if k > 0 {
                term *= cos2 * (2 * k - 1) as f64 / (2 * k) as f64;
            }
            sum += term;
        }
        sin * sum
    };
    let inside = inside.min(1.0);
    if x >= 0.0 {
        0.5 + 0.5 * inside
    } else {
        0.5 * (1.0 - inside)
    }
}

/// The quantile of Student's t with `df ≥ 1` degrees of freedom for `p` in (0, 1): bisection
/// on [`student_t_cdf`] to the last bit. `NaN` outside (0, 1) or for `df == 0`.
pub fn student_t_quantile(p: f64, df: u64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df == 0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while student_t_cdf(hi, df) < p {
        lo = hi;
        hi *= 2.0;
        if hi.is_infinite() {
            return f64::INFINITY;
        }
    }
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if student_t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // The closer of the two bracketing values.
    if p - student_t_cdf(lo, df) <= student_t_cdf(hi, df) - p {
        lo
    } else {
        hi
    }
}

/// A mean with its cluster-robust standard error and 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusteredMean {
    pub mean: f64,
    /// The CR1 standard error of the mean.
    pub se: f64,
    /// The multiplier of the interval: the 0.975 quantile of Student's t with `clusters - 1`
    /// degrees of freedom.
    pub t: f64,
    /// `mean ± t · se` (not clipped).
    pub low: f64,
    pub high: f64,
    /// Number of clusters.
    pub clusters: u64,
}

/// The mean of `values` with its cluster-robust (CR1) standard error, `clusters[i]` naming the
/// cluster of `values[i]`; `None` with fewer than two clusters (or unequal lengths). See the
/// module documentation for the formula (statsmodels' cluster-robust OLS on a constant, with
/// `use_t=True`).
pub fn clustered_mean<K: Ord>(values: &[f64], clusters: &[K]) -> Option<ClusteredMean> {
    if values.len() != clusters.len() || values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = super::stats::mean(values)?;
    let mut sums: std::collections::BTreeMap<&K, Vec<f64>> = std::collections::BTreeMap::new();
    for (v, k) in values.iter().zip(clusters) {
        sums.entry(k).or_default().push(v - mean);
    }
    let g = sums.len();
    if g < 2 {
        return None;
    }
    let scores: Vec<f64> = sums
        .values()
        .map(|residuals| {
            let s = neumaier_sum(residuals.iter().copied());
            s * s
        })
        .collect();
    let meat = neumaier_sum(scores.iter().copied());
    let gf = g as f64;
    let se = (gf / (gf - 1.0) * meat).sqrt() / n;
    let t = student_t_quantile(0.975, g as u64 - 1);
    Some(ClusteredMean {
        mean,
        se,
        t,
        low: mean - t * se,
        high: mean + t * se,
        clusters: g as u64,
    })
}

/// Neumaier-compensated sum (every sum the report's statistics take).
pub(crate) fn neumaier_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    for v in values {
        let t = sum + v;
        if sum.abs() >= v.abs() {
            comp += (sum - t) + v;
        } else {
            comp += (v - t) + sum;
        }
        sum = t;
    }
    sum + comp
}

/// Holm's step-down adjusted p-values, in the order of `p` (statsmodels
/// `multipletests(p, method="holm")[1]`).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]).then(a.cmp(b)));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(p[i] * (m - rank) as f64);
        adjusted[i] = running.min(1.0);
    }
    adjusted
}

/// The variance of replicated 0/1 outcomes split into its parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VarianceSplit {
    /// Mean over tasks of the sample variance of a task's replicates.
    pub within: f64,
    /// Variance of the tasks' true rates (method of moments, floored at 0).
    pub between: f64,
    /// Tasks with at least two replicates the split is computed on.
    pub tasks: u64,
}

/// The within/between-task split of `(runs, successes)` per task, over the tasks with at least
/// two runs; `None` when fewer than two such tasks.
pub fn variance_split(tasks: &[(u64, u64)]) -> Option<VarianceSplit> {
    let used: Vec<(f64, f64)> = tasks
        .iter()
        .filter(|(n, c)| *n >= 2 && c <= n)
        .map(|&(n, c)| (n as f64, c as f64))
        .collect();
    if used.len() < 2 {
        return None;
    }
    let k = used.len() as f64;
    let rates: Vec<f64> = used.iter().map(|(n, c)| c / n).collect();
    let variances: Vec<f64> = used
        .iter()
        .map(|(n, c)| c * (n - c) / (n * (n - 1.0)))
        .collect();
    let noise: Vec<f64> = variances
        .iter()
        .zip(&used)
        .map(|(s2, (n, _))| s2 / n)
        .collect();
    let mean_rate = neumaier_sum(rates.iter().copied()) / k;
    let spread: Vec<f64> = rates.iter().map(|r| (r - mean_rate).powi(2)).collect();
    let var_rates = neumaier_sum(spread.iter().copied()) / (k - 1.0);
    Some(VarianceSplit {
        within: neumaier_sum(variances.iter().copied()) / k,
        between: (var_rates - neumaier_sum(noise.iter().copied()) / k).max(0.0),
        tasks: used.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_inverts_the_cdf() {
        for p in [1e-300, 1e-12, 0.001, 0.025, 0.2, 0.5, 0.8, 0.975, 0.999_999] {
            let x = normal_quantile(p);
            let back = if p < 0.5 {
                normal_cdf(x)
            } else {
                1.0 - normal_sf(x)
            };
            assert!(
                (back - p).abs() <= 1e-15 * p.max(1e-300) + 1e-16,
                "{p}: {x} -> {back}"
            );
        }
        assert!((normal_quantile(0.975) - super::super::stats::Z_95).abs() < 1e-15);
        assert!(normal_quantile(0.0).is_nan() && normal_quantile(1.0).is_nan());
    }

    #[test]
    fn holm_edges() {
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.03]), vec![0.03]);
        assert_eq!(holm(&[0.01, 0.04, 0.03]), vec![0.03, 0.06, 0.06]);
        assert_eq!(holm(&[0.6, 0.9]), vec![1.0, 1.0]);
    }

    #[test]
    fn clustered_needs_two_clusters() {
        assert_eq!(clustered_mean(&[1.0, 0.0], &["a", "a"]), None);
        assert_eq!(clustered_mean::<&str>(&[], &[]), None);
        let c = clustered_mean(&[1.0, 1.0, 1.0], &["a", "b", "c"]).expect("estimate");
        assert_eq!((c.mean, c.se, c.clusters), (1.0, 0.0, 3));
        // Three clusters: t with 2 degrees of freedom, 4.303 rather than 1.960.
        assert!((c.t - 4.302_652_729_749_464).abs() < 1e-12, "{}", c.t);
    }

    #[test]
    fn student_t_closed_forms() {
        // df 1 is Cauchy: tan(π(p - 1/2)); df 2: (2p - 1) / sqrt(2p(1 - p)).
        for p in [0.6, 0.9, 0.975, 0.995] {
            let cauchy = (std::f64::consts::PI * (p - 0.5)).tan();
            let q1 = student_t_quantile(p, 1);
            assert!(
                (q1 - cauchy).abs() <= 1e-13 * cauchy.abs(),
                "{p}: {q1} {cauchy}"
            );
            let two = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
            let q2 = student_t_quantile(p, 2);
            assert!((q2 - two).abs() <= 1e-13 * two.abs(), "{p}: {q2} {two}");
            assert_eq!(student_t_quantile(1.0 - p, 3), -student_t_quantile(p, 3));
        }
        assert_eq!(student_t_cdf(0.0, 7), 0.5);
        assert!(student_t_quantile(0.0, 3).is_nan() && student_t_quantile(0.5, 0).is_nan());
        // Many degrees of freedom approach the normal.
        assert!((student_t_quantile(0.975, 100_000) - normal_quantile(0.975)).abs() < 1e-4);
    }

    #[test]
    fn variance_split_edges() {
        assert_eq!(variance_split(&[(3, 1)]), None);
        assert_eq!(variance_split(&[(1, 1), (1, 0), (3, 1)]), None);
        // Every task 0 or all: no within-task variance, all of it between tasks.
        let s = variance_split(&[(4, 0), (4, 4)]).expect("split");
        assert_eq!(s.within, 0.0);
        assert!((s.between - 0.5).abs() < 1e-15);
    }
}
