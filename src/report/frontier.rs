//! Frontier-SWE's gated score, ported from its reference scorer (`scripts/score_from_reward.py`
//! of Proximal-Labs/frontier-swe, as a parity-tested port reads it): `extract_score(reward,
//! task, ssim_threshold)` turns a trial's `reward.json` into (correctness in [0, 1], speedup or
//! none), and `compute_gated_score` gates it by the task's category:
//!
//! - IMPLEMENTATION (git-to-zig, dart-style-haskell, lua-native-compiler,
//!   postgres-sqlite-wire-adapter, modular-stack-wan21): the correctness.
//! - PERFORMANCE (libexpat-to-x86asm, ffmpeg-swscale-rewrite, pyright-type-checking-optimization,
//!   granite-mamba2-inference-optimization, notebook-compression, revideo-perf-opt,
//!   cranelift-codegen-opt, dependent-type-checker, inference-system-optimization):
//!   `0.5 + 0.5 * speedup` once fully correct with a speedup, else `0.5 * correctness`;
//!   notebook-compression is the speedup when fully correct, else 0; libexpat-to-x86asm is
//!   uncapped and takes partial correctness from its weighted modules.
//! - ML_RESEARCH (pcqm4mv2-autoresearch, frogsgame-rl, optimizer-design): the raw reward;
//!   frogsgame-rl's board count is divided by 500.
//!
//! The raw reward is `reward or score or 0.0` with Python's truthiness (a 0.0 falls through).
//! A task outside the 17 has no gated score (`None`; upstream raises). Anti-cheat zeroing
//! (`scoring/anticheat.json`) is applied upstream separately and is not ported.
//!
//! Not here: where rewards come from (`protocols/harbor.rs`), their statistics (`stats.rs`).

use serde_json::Value;

/// The SSIM threshold of revideo-perf-opt's correctness gate: the reference CLI's default
/// (the library function's is 0.99).
pub const DEFAULT_SSIM_THRESHOLD: f64 = 0.95;

/// A Frontier-SWE task's scoring category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Implementation,
    Performance,
    MlResearch,
}

const IMPLEMENTATION: [&str; 5] = [
    "git-to-zig",
    "dart-style-haskell",
    "lua-native-compiler",
    "postgres-sqlite-wire-adapter",
    "modular-stack-wan21",
];

const PERFORMANCE: [&str; 9] = [
    "libexpat-to-x86asm",
    "ffmpeg-swscale-rewrite",
    "pyright-type-checking-optimization",
    "granite-mamba2-inference-optimization",
    "notebook-compression",
    "revideo-perf-opt",
    "cranelift-codegen-opt",
    "dependent-type-checker",
    "inference-system-optimization",
];

const ML_RESEARCH: [&str; 3] = ["pcqm4mv2-autoresearch", "frogsgame-rl", "optimizer-design"];

/// libexpat-to-x86asm's module weights (acc_tests counts 0).
const LIBEXPAT_WEIGHTS: [(&str, f64); 7] = [
    ("smoke_tier", 1.0),
    ("basic_tests", 3.0),
    ("ns_tests", 2.0),
    ("misc_tests", 1.0),
    ("alloc_tests", 2.0),
    ("nsalloc_tests", 1.0),
    ("acc_tests", 0.0),
];

pub fn category(task: &str) -> Option<Category> {
    if IMPLEMENTATION.contains(&task) {
        Some(Category::Implementation)
    } else if PERFORMANCE.contains(&task) {
        Some(Category::Performance)
    } else if ML_RESEARCH.contains(&task) {
        Some(Category::MlResearch)
    } else {
        None
    }
}

fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// `reward or score or 0.0`.
fn raw_reward(r: &Value) -> f64 {
    for k in ["reward", "score"] {
        if let Some(f) = num(r.get(k))
            && f != 0.0
        {
            return f;
        }
    }
    0.0
}

/// `extract_score`: (correctness, speedup).
pub fn extract_score(r: &Value, task: &str, ssim_threshold: f64) -> (f64, Option<f64>) {
    if !truthy(Some(r)) {
        return (0.0, None);
    }
    let raw = raw_reward(r);
    let empty = Value::Object(Default::default());
    let ad = r
        .get("additional_data")
        .filter(|v| v.is_object())
        .unwrap_or(&empty);
    let subscores: &[Value] = r
        .get("subscores")
        .and_then(Value::as_array)
        .map_or(&[], |v| v.as_slice());
    match task {
        "git-to-zig" | "dart-style-haskell" | "postgres-sqlite-wire-adapter" => (raw, None),
        "lua-native-compiler" => lua_native_compiler(ad, subscores).unwrap_or((raw, None)),
        "libexpat-to-x86asm" => libexpat_to_x86asm(ad, subscores),
        "ffmpeg-swscale-rewrite" => {
            let passed = match ad.get("correctness_passed") {
                Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
                _ => 0.0,
            };
            let total = num(ad.get("correctness_total")).unwrap_or(30.0).max(1.0);
            let c = passed / total;
            let speedup = (c >= 1.0).then(|| {
                num(ad.get("geometric_mean_speedup"))
                    .or_else(|| num(ad.get("geo_mean_speedup")))
                    .unwrap_or(raw)
            });
            (c, speedup)
        }
        "optimizer-design" => (raw, None),
        "notebook-compression" => match num(r.get("reward")) {
            Some(v) if v > 0.0 => (1.0, Some(1.0 - v)),
            _ => (0.0, None),
        },
        "revideo-perf-opt" => revideo(r, raw, ssim_threshold),
        "cranelift-codegen-opt" => match ad.get("correctness_passed") {
            Some(Value::Bool(true)) => (
                1.0,
                Some(num(ad.get("weighted_harmonic_mean")).unwrap_or(1.0)),
            ),
            _ => (0.0, None),
        },
        "dependent-type-checker" => match ad.get("correctness").filter(|c| c.is_object()) {
            Some(c) => {
                let g = |k: &str| num(c.get(k)).unwrap_or(0.0);
                let total = g("accept_total") + g("reject_total");
                let passed = g("accept_passed") + g("reject_passed");
                if truthy(c.get("gate_passed")) && raw > 0.0 {
                    (1.0, Some(raw))
                } else {
                    (if total > 0.0 { passed / total } else { 0.0 }, None)
                }
            }
            None => positive(raw),
        },
        "modular-stack-wan21" => modular_stack_wan21(r, subscores, raw),
        "inference-system-optimization" => match ad.get("correctness").filter(|c| c.is_object()) {
            Some(c) => {
                if num(c.get("token_match_rate")).unwrap_or(0.0) >= 0.95 {
                    (1.0, (raw > 0.0).then_some(raw))
                } else {
                    (num(c.get("exact_match_rate")).unwrap_or(0.0), None)
                }
            }
            None => positive(raw),
        },
        "pyright-type-checking-optimization" => {
            if raw > 0.0 {
                (1.0, Some(raw))
            } else {
                match num(r.get("parity_pass_rate")) {
                    Some(p) if p > 0.0 => (p, None),
                    _ => (0.0, None),
                }
            }
        }
        "granite-mamba2-inference-optimization" => positive(raw),
        // ML research (pcqm4mv2-autoresearch, frogsgame-rl) and anything else.
        _ => (raw, None),
    }
}

/// All or nothing: solved (1.0) with the raw reward as its speedup when `raw` is positive.
fn positive(raw: f64) -> (f64, Option<f64>) {
    if raw > 0.0 {
        (1.0, Some(raw))
    } else {
        (0.0, None)
    }
}

/// lua-native-compiler's correctness: the `test_pass_rate` subscore when positive, else the
/// share of `tests_passed` in `tests_total` when any passed; `None` leaves it to the raw reward.
fn lua_native_compiler(ad: &Value, subscores: &[Value]) -> Option<(f64, Option<f64>)> {
    for s in subscores {
        if s.get("subtask").and_then(Value::as_str) == Some("test_pass_rate")
            && let Some(v) = num(s.get("score"))
            && v > 0.0
        {
            return Some((v, None));
        }
    }
    if let Some(p) = num(ad.get("tests_passed"))
        && p > 0.0
    {
        let total = num(ad.get("tests_total"))
            .filter(|t| *t > 1.0)
            .unwrap_or(1.0);
        return Some((p / total, None));
    }
    None
}

/// libexpat-to-x86asm: the passed share of each module's tests, weighted by
/// [`LIBEXPAT_WEIGHTS`], and the second subscore as its speedup; 0 without modules.
fn libexpat_to_x86asm(ad: &Value, subscores: &[Value]) -> (f64, Option<f64>) {
    let Some(modules) = ad.get("modules").and_then(Value::as_object) else {
        return (0.0, None);
    };
    if modules.is_empty() {
        return (0.0, None);
    }
    let total_w: f64 = LIBEXPAT_WEIGHTS.iter().map(|(_, w)| w).sum();
    let mut weighted = 0.0;
    for (m, w) in LIBEXPAT_WEIGHTS {
        if w == 0.0 {
            continue;
        }
        let st = modules.get(m);
        let total = num(st.and_then(|s| s.get("total"))).unwrap_or(0.0);
        let passed = num(st.and_then(|s| s.get("passed"))).unwrap_or(0.0);
        if total > 0.0 {
            weighted += passed / total * w;
        }
    }
    let perf = subscores
        .get(1)
        .and_then(|s| num(s.get("score")))
        .unwrap_or(0.0);
    (weighted / total_w, Some(perf))
}

/// modular-stack-wan21: the first positive correctness subscore (with the raw reward as its
/// speedup once fully correct), else the first `N/D` of the reason, else all or nothing.
fn modular_stack_wan21(r: &Value, subscores: &[Value], raw: f64) -> (f64, Option<f64>) {
    for s in subscores {
        let name = s
            .get("subtask")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_lowercase();
        if name.contains("correctness") {
            let c = num(s.get("score")).unwrap_or(0.0);
            if c > 0.0 {
                return if c >= 1.0 && raw > 0.0 {
                    (c, Some(raw))
                } else {
                    (c, None)
                };
            }
        }
    }
    if let Some(reason) = r.get("reason").and_then(Value::as_str)
        && let Some((n, d)) = first_fraction(reason)
        && d != 0.0
    {
        return (n / d, None);
    }
    positive(raw)
}

/// The first `N/D` in a string (digits only).
fn first_fraction(s: &str) -> Option<(f64, f64)> {
    let re = regex::Regex::new(r"(\d+)/(\d+)").expect("valid regex");
    let c = re.captures(s)?;
    Some((c[1].parse().ok()?, c[2].parse().ok()?))
}

fn revideo(r: &Value, raw: f64, ssim_threshold: f64) -> (f64, Option<f64>) {
    let ok = truthy(r.get("correctness_ok"));
    let geo = num(r.get("geometric_mean_speedup")).unwrap_or(0.0);
    let details: &[Value] = r
        .get("correctness_details")
        .and_then(Value::as_array)
        .map_or(&[], |v| v.as_slice());
    if ssim_threshold < 0.99 {
        if !details.is_empty() {
            let pass = details
                .iter()
                .filter(|d| num(d.get("ssim")).unwrap_or(0.0) >= ssim_threshold)
                .count();
            if pass == details.len() {
                return (1.0, (geo != 0.0).then_some(geo));
            }
            return (pass as f64 / details.len() as f64, None);
        }
        return if ok && raw > 0.0 {
            (1.0, Some(raw))
        } else {
            (0.0, None)
        };
    }
    if ok && raw > 0.0 {
        return (1.0, Some(raw));
    }
    let reasons: Vec<&str> = r
        .get("hard_fail_reasons")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !reasons.is_empty() && geo != 0.0 {
        for reason in reasons {
            if reason.contains("correctness_failed:") {
                let failing = reason.split_once(':').map_or("", |(_, rest)| rest);
                let n_fail = failing.split(',').filter(|f| !f.trim().is_empty()).count();
                let n_total = if details.is_empty() { 8 } else { details.len() };
                let n_pass = n_total as f64 - n_fail as f64;
                return (n_pass / n_total as f64, None);
            }
        }
    }
    (0.0, None)
}

/// `compute_gated_score`; `None` for a task outside Frontier-SWE's 17.
pub fn gated_score(correctness: f64, speedup: Option<f64>, task: &str) -> Option<f64> {
    if task == "libexpat-to-x86asm" {
        return Some(match speedup {
            Some(s) if correctness >= 1.0 => 0.5 + 0.5 * s,
            _ => 0.5 * correctness,
        });
    }
    Some(match category(task)? {
        Category::Implementation => correctness,
        Category::Performance if task == "notebook-compression" => match speedup {
            Some(s) if correctness >= 1.0 => s,
            _ => 0.0,
        },
        Category::Performance => match speedup {
            Some(s) if correctness >= 1.0 => 0.5 + 0.5 * s,
            _ => 0.5 * correctness,
        },
        Category::MlResearch if task == "frogsgame-rl" => correctness / 500.0,
        Category::MlResearch => correctness,
    })
}

/// Extract then gate: (gated score, correctness); `None` outside the 17 tasks.
pub fn score(reward: &Value, task: &str, ssim_threshold: f64) -> Option<(f64, f64)> {
    let (c, s) = extract_score(reward, task, ssim_threshold);
    Some((gated_score(c, s, task)?, c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    fn gs(r: Value, task: &str) -> f64 {
        score(&r, task, DEFAULT_SSIM_THRESHOLD).unwrap().0
    }

    #[test]
    fn the_lists_have_17_tasks() {
        assert_eq!(
            IMPLEMENTATION.len() + PERFORMANCE.len() + ML_RESEARCH.len(),
            17
        );
        assert_eq!(category("git-to-zig"), Some(Category::Implementation));
        assert_eq!(
            category("modular-stack-wan21"),
            Some(Category::Implementation)
        );
        assert_eq!(category("libexpat-to-x86asm"), Some(Category::Performance));
        assert_eq!(category("optimizer-design"), Some(Category::MlResearch));
        assert_eq!(category("answer"), None);
        assert_eq!(score(&json!({"reward": 1}), "answer", 0.95), None);
    }

    #[test]
    fn implementation_is_correctness() {
        close(gs(json!({"reward": 0.75}), "git-to-zig"), 0.75);
        // `reward or score`: a 0.0 reward falls through to score.
        close(
            gs(json!({"reward": 0.0, "score": 0.4}), "dart-style-haskell"),
            0.4,
        );
        close(gs(json!({}), "git-to-zig"), 0.0);
        // lua: the test_pass_rate subscore, else tests_passed / tests_total.
        close(
            gs(
                json!({"reward": 0.1, "subscores": [{"subtask": "test_pass_rate", "score": 0.6}]}),
                "lua-native-compiler",
            ),
            0.6,
        );
        close(
            gs(
                json!({"additional_data": {"tests_passed": 30, "tests_total": 40}}),
                "lua-native-compiler",
            ),
            0.75,
        );
        // modular-stack: a correctness subscore, else N/M in the reason.
        close(
            gs(
                json!({"reward": 2.0, "subscores": [{"subtask": "Correctness", "score": 0.5}]}),
                "modular-stack-wan21",
            ),
            0.5,
        );
        close(
            gs(
                json!({"reason": "correctness failed on 3/4 prompts"}),
                "modular-stack-wan21",
            ),
            0.75,
        );
    }

    #[test]
    fn performance_gates_on_full_correctness() {
        // ffmpeg: 30/30 correct with a 2.4x geometric-mean speedup: 0.5 + 0.5 * 2.4 = 1.7.
        close(
            gs(
                json!({"reward": 2.4, "additional_data": {"correctness_passed": 30, "correctness_total": 30, "geometric_mean_speedup": 2.4}}),
                "ffmpeg-swscale-rewrite",
            ),
            1.7,
        );
        // 15/30 correct: 0.5 * 0.5 = 0.25, whatever the speed.
        close(
            gs(
                json!({"reward": 3.0, "additional_data": {"correctness_passed": 15, "geometric_mean_speedup": 3.0}}),
                "ffmpeg-swscale-rewrite",
            ),
            0.25,
        );
        // notebook-compression: 1 - reward when correct, else 0.
        close(
            gs(json!({"reward": 0.3175}), "notebook-compression"),
            0.6825,
        );
        close(gs(json!({"reward": 0}), "notebook-compression"), 0.0);
        // libexpat: weighted modules (uncapped): all modules pass and perf 3.0: 0.5 + 1.5 = 2.0.
        let all = json!({"smoke_tier": {"passed": 1, "total": 1}, "basic_tests": {"passed": 10, "total": 10},
            "ns_tests": {"passed": 4, "total": 4}, "misc_tests": {"passed": 2, "total": 2},
            "alloc_tests": {"passed": 5, "total": 5}, "nsalloc_tests": {"passed": 3, "total": 3},
            "acc_tests": {"passed": 0, "total": 9}});
        close(
            gs(
                json!({"additional_data": {"modules": all}, "subscores": [{"subtask": "c", "score": 1}, {"subtask": "perf", "score": 3.0}]}),
                "libexpat-to-x86asm",
            ),
            2.0,
        );
        // Half of basic_tests (weight 3 of 10): correctness 0.85, score 0.425.
        let half = json!({"smoke_tier": {"passed": 1, "total": 1}, "basic_tests": {"passed": 5, "total": 10},
            "ns_tests": {"passed": 4, "total": 4}, "misc_tests": {"passed": 2, "total": 2},
            "alloc_tests": {"passed": 5, "total": 5}, "nsalloc_tests": {"passed": 3, "total": 3}});
        close(
            gs(
                json!({"additional_data": {"modules": half}}),
                "libexpat-to-x86asm",
            ),
            0.425,
        );
        // cranelift: a bare-bool gate and the weighted harmonic mean.
        close(
            gs(
                json!({"additional_data": {"correctness_passed": true, "weighted_harmonic_mean": 1.2}}),
                "cranelift-codegen-opt",
            ),
            1.1,
        );
        close(
            gs(
                json!({"additional_data": {"correctness_passed": false}}),
                "cranelift-codegen-opt",
            ),
            0.0,
        );
        // dependent-type-checker: the gate with a reward, else the accept/reject fraction.
        close(
            gs(
                json!({"reward": 1.0005, "additional_data": {"correctness": {"gate_passed": true}}}),
                "dependent-type-checker",
            ),
            1.00025,
        );
        close(
            gs(
                json!({"reward": 1.0, "additional_data": {"correctness": {"accept_total": 10, "accept_passed": 8, "reject_total": 10, "reject_passed": 10}}}),
                "dependent-type-checker",
            ),
            0.45,
        );
        // inference-system-optimization: token match >= 0.95 passes the gate.
        close(
            gs(
                json!({"reward": 1.5, "additional_data": {"correctness": {"token_match_rate": 0.96}}}),
                "inference-system-optimization",
            ),
            1.25,
        );
        close(
            gs(
                json!({"additional_data": {"correctness": {"token_match_rate": 0.5, "exact_match_rate": 0.4}}}),
                "inference-system-optimization",
            ),
            0.2,
        );
        // pyright: a reward, else the parity pass rate.
        close(
            gs(json!({"reward": 1.3}), "pyright-type-checking-optimization"),
            1.15,
        );
        close(
            gs(
                json!({"reward": 0, "parity_pass_rate": 0.8}),
                "pyright-type-checking-optimization",
            ),
            0.4,
        );
        close(
            gs(
                json!({"reward": 2.0}),
                "granite-mamba2-inference-optimization",
            ),
            1.5,
        );
    }

    #[test]
    fn revideo_uses_the_ssim_threshold() {
        let r = json!({"reward": 1.8, "geometric_mean_speedup": 1.8, "correctness_ok": false,
            "correctness_details": [{"ssim": 0.97}, {"ssim": 0.96}, {"ssim": 0.999}, {"ssim": 0.98}]});
        // At 0.95 every scene passes: 0.5 + 0.5 * 1.8 = 1.4.
        close(score(&r, "revideo-perf-opt", 0.95).unwrap().0, 1.4);
        // At 0.97, 3 of 4 pass: 0.5 * 0.75.
        close(score(&r, "revideo-perf-opt", 0.97).unwrap().0, 0.375);
        // At the library default 0.99, the details are not read: not correctness_ok, no
        // hard-fail reasons: 0.
        close(score(&r, "revideo-perf-opt", 0.99).unwrap().0, 0.0);
        let hf = json!({"reward": 1.8, "geometric_mean_speedup": 1.8, "hard_fail_reasons": ["correctness_failed:s1,s2"]});
        // 8 scenes by default, 2 failing: 6/8 correct, 0.5 * 0.75.
        close(score(&hf, "revideo-perf-opt", 0.99).unwrap().0, 0.375);
        let ok = json!({"reward": 1.8, "correctness_ok": true});
        close(score(&ok, "revideo-perf-opt", 0.99).unwrap().0, 1.4);
    }

    #[test]
    fn ml_research_is_the_raw_reward() {
        close(gs(json!({"reward": 0.83}), "pcqm4mv2-autoresearch"), 0.83);
        close(gs(json!({"score": 1.1}), "optimizer-design"), 1.1);
        close(gs(json!({"reward": 250}), "frogsgame-rl"), 0.5);
    }
}
