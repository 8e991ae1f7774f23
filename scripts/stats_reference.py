#!/usr/bin/env python3
"""Reference values for bench's report statistics (src/report/stats.rs).

Writes tests/fixtures/stats/reference.json (or the path given as the first
argument), which the unit tests of src/report/{stats,inference,power}.rs load
and compare against to 1e-9. The file is checked in, and CI reruns this script
(tests/stats_oracle.rs, with the versions .ci/run pins: scipy 1.17.1,
statsmodels 0.15.0, numpy 2.4.6) and fails when its output drifts from the
checked-in file. Re-run it after changing the semantics:

    python3 scripts/stats_reference.py

Everything here is computed independently of the Rust code: Wilson intervals
with statsmodels, McNemar p-values exactly with Python integers (checked
against statsmodels mcnemar(exact=True) and scipy binomtest), pass@k exactly
with fractions (checked against the numpy product of Chen et al. and, for small
n, by enumerating every k-subset), medians with numpy, clustered standard
errors with statsmodels' cluster-robust OLS on a constant (use_t=True: Student
t with G - 1 degrees of freedom, whose quantiles are scipy's t.ppf), Holm with
statsmodels multipletests, the power of the exact McNemar test by enumerating
the discordant pairs and wins with scipy's binom and binomtest (scipy's brentq
for the detectable difference, a scan over n for the tasks needed), the normal
distribution with scipy, the
variance split with numpy, the bootstrap with the same splitmix64 generator and
resampling as the Rust code and numpy's percentile (exact agreement with
scipy.stats.bootstrap is impossible: it draws from numpy's PCG64; its
percentile interval is checked to agree within Monte Carlo error), and the
team_statistics scenarios with a plain-Python implementation of the semantics
documented at the top of src/report/stats.rs.
"""

import itertools
import json
import math
import random
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy
import statsmodels
import statsmodels.api as sm
from scipy import optimize, stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "stats" / "reference.json"
Z = float(stats.norm.isf(0.025))
NO_GROUP = "(none)"


def rel_close(a, b, tol):
    if a == b:
        return True
    return abs(a - b) <= tol * max(abs(a), abs(b))


# --- primitives --------------------------------------------------------------


def wilson(k, n):
    if n == 0:
        return (0.0, 1.0)  # documented choice (statsmodels gives NaN)
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return (float(low), float(high))


def mcnemar_p_exact(b, c):
    """min(1, 2 * P(X <= min(b, c))), X ~ Bin(b + c, 1/2), exactly, correctly rounded."""
    n, m = b + c, min(b, c)
    if n == 0:
        return 1.0
    total, term = 0, 1
    for i in range(m + 1):
        total += term
        term = term * (n - i) // (i + 1)
    return float(min(Fraction(1), Fraction(2 * total, 2**n)))


def mcnemar_p_libraries(b, c):
    sm = float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)
    if b + c == 0:
        return sm, sm
    sp = float(stats.binomtest(min(b, c), b + c, 0.5, alternative="two-sided").pvalue)
    return sm, sp


def pass_at_k_exact(n, c, k):
    if k == 0 or k > n or c > n:
        return None
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_at_k_chen(n, c, k):
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_enumerated(n, c, k):
    """The share of the k-subsets of n samples (c of them correct) holding a correct one."""
    hits = total = 0
    for subset in itertools.combinations(range(n), k):
        total += 1
        hits += any(i < c for i in subset)
    return Fraction(hits, total)


# --- clustered errors, Holm, variance split, bootstrap, power ------------------


def clustered(values, clusters):
    """statsmodels OLS of values on a constant with cluster-robust (CR1) errors."""
    if not values or len(set(clusters)) < 2:
        return None
    _, codes = np.unique(np.array(clusters, dtype=object).astype(str), return_inverse=True)
    fit = sm.OLS(np.asarray(values, dtype=float), np.ones((len(values), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": codes}, use_t=True
    )
    low, high = fit.conf_int(alpha=0.05)[0]
    g = len(set(codes.tolist()))
    # statsmodels' cluster-robust t inference has G - 1 degrees of freedom.
    t = float(stats.t.ppf(0.975, g - 1))
    assert rel_close(float(fit.params[0]) + t * float(fit.bse[0]), float(high), 1e-12) or fit.bse[0] == 0
    return {"mean": float(fit.params[0]), "se": float(fit.bse[0]), "low": float(low), "high": float(high), "t": t}


def holm(pvalues):
    if not pvalues:
        return []
    return [float(x) for x in multipletests(pvalues, alpha=0.05, method="holm")[1]]


def variance_split(counts):
    used = [(n, c) for n, c in counts if n >= 2 and c <= n]
    if len(used) < 2:
        return None
    rates = np.array([c / n for n, c in used])
    s2 = np.array([np.var([1.0] * c + [0.0] * (n - c), ddof=1) for n, c in used])
    ns = np.array([n for n, _ in used], dtype=float)
    within = float(np.mean(s2))
    between = max(0.0, float(np.var(rates, ddof=1) - np.mean(s2 / ns)))
    return {"within": within, "between": between}


MASK64 = (1 << 64) - 1
BOOTSTRAP_SEED = 0x5EEDBE4C00000001
BOOTSTRAP_RESAMPLES = 2000


class SplitMix64:
    def __init__(self, seed):
        self.state = seed

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def bootstrap_means(values):
    rng = SplitMix64(BOOTSTRAP_SEED)
    n = len(values)
    return np.array([math.fsum(values[rng.next() % n] for _ in range(n)) / n for _ in range(BOOTSTRAP_RESAMPLES)])


def bootstrap_interval(values):
    if not values:
        return None
    low, high = np.percentile(bootstrap_means(values), [2.5, 97.5])
    return (float(low), float(high))


def scipy_bootstrap_agrees(values):
    """scipy.stats.bootstrap's percentile interval (its own generator, 100,000 resamples)
    within Monte Carlo error: the 2.5% and 97.5% quantiles of 2,000 resampled means have a
    standard error of about 0.06 standard errors of the mean; 0.3 is five of those."""
    ours = bootstrap_interval(values)
    res = stats.bootstrap((np.asarray(values),), np.mean, n_resamples=100_000, method="percentile", rng=1)
    sd = float(np.std(values, ddof=0)) / math.sqrt(len(values))
    for a, b in zip(ours, (res.confidence_interval.low, res.confidence_interval.high)):
        assert abs(a - b) <= 0.3 * sd + 1e-12, (values, ours, res.confidence_interval)


def mean_interval(values):
    if not values:
        return None
    if all(v in (0.0, 1.0) for v in values):
        low, high = wilson(sum(1 for v in values if v == 1.0), len(values))
        method = "wilson"
    else:
        low, high = bootstrap_interval(values)
        method = "bootstrap"
    return {"mean": py_mean(values), "low": low, "high": high, "method": method, "n": len(values)}


def z_power_at(n, p0, delta):
    """The old figure: the normal approximation (statsmodels NormalIndPower, ratio=0)."""
    p1 = p0 + delta
    var = p0 * (1 - p0) + p1 * (1 - p1)
    es = abs(delta) / math.sqrt(var)
    return float(NormalIndPower().power(es, n, 0.05, ratio=0))


def z_min_detectable(n, p0):
    f = lambda d: z_power_at(n, p0, d) - 0.8
    return float(optimize.brentq(f, 1e-12, 1.0 - p0, xtol=1e-15, rtol=1e-15, maxiter=500))


_REJECT = [np.zeros((0, 0), dtype=bool)]


def rejection_mask(n):
    """mask[d, w]: whether the exact McNemar test (scipy binomtest, two-sided, p = 1/2)
    rejects at 0.05 with w wins of d discordant pairs; checked against the exact integers.
    It does not depend on n: one table, grown on demand, sliced."""
    have = _REJECT[0].shape[0]
    if have < n + 1:
        size = max(n + 1, 2 * have)
        mask = np.zeros((size, size), dtype=bool)
        mask[:have, :have] = _REJECT[0]
        for d in range(have, size):
            for w in range(d + 1):
                p = stats.binomtest(w, d, 0.5).pvalue if d else 1.0
                assert (p <= 0.05) == (mcnemar_p_exact(w, d - w) <= 0.05), (w, d, p)
                mask[d, w] = p <= 0.05
        _REJECT[0] = mask
    return _REJECT[0][: n + 1, : n + 1]


def mcnemar_power(n, p10, p01):
    """Power of the exact McNemar test over n pairs: D ~ Bin(n, p10 + p01), W | D = d ~
    Bin(d, p10 / (p10 + p01)); the sum of P(D = d) P(W = w | d) over the rejection region."""
    q = p10 + p01
    if q <= 0:
        return 0.0
    share = min(1.0, p10 / q)
    d = np.arange(n + 1)
    w = np.arange(n + 1)
    pd = stats.binom.pmf(d, n, min(q, 1.0))
    pw = stats.binom.pmf(w[None, :], d[:, None], share)  # zero where w > d
    return float(math.fsum((pd[:, None] * np.where(rejection_mask(n), pw, 0.0)).ravel()))


def independent(p0, delta):
    p1 = p0 + delta
    return p1 * (1 - p0), p0 * (1 - p1)


def exact_power_at(n, p0, delta):
    return mcnemar_power(n, *independent(p0, delta))


def exact_min_detectable(n, p0):
    """The smallest improvement reaching 80%: the first of 200 steps of (0, 1 - p0] that
    reaches it, then brentq inside that step."""
    f = lambda x: exact_power_at(n, p0, x) - 0.8
    span = 1.0 - p0
    steps = [span * i / 200 for i in range(201)]
    for i in range(1, 201):
        if f(steps[i]) >= 0:
            if i > 1 and f(steps[i - 1]) >= 0:
                raise AssertionError((n, p0, i))
            lo = steps[i - 1] if i > 1 else 1e-12
            return float(optimize.brentq(f, lo, steps[i], xtol=1e-15, rtol=8.9e-16, maxiter=500))
    return None


def exact_tasks_needed(p0, delta):
    """The smallest n whose exact power reaches 80%, by scanning n upwards from 1."""
    for n in range(1, 2000):
        if exact_power_at(n, p0, delta) >= 0.8:
            return n
    return None


def py_median(values):
    return float(np.median(values)) if values else None


def py_mean(values):
    return math.fsum(values) / len(values) if values else None


# --- team_statistics, independently --------------------------------------------


def team_statistics(pairs, teams, options):
    baseline_opt = options.get("baseline")
    as_failures = options.get("count_errors_as_failures", False)
    order = []
    for t in teams:
        if t not in order:
            order.append(t)

    cells = {}  # (task, team) -> {replicate: pair}; last occurrence wins
    for p in pairs:
        if p["team"] in order:
            cells.setdefault((p["task"], p["team"]), {})[p.get("replicate", 0)] = p

    universe = sorted({task for task, _ in cells})

    def kind(p):
        return p["state"]["kind"]

    errored = sorted(
        (
            {"task": p["task"], "team": p["team"], "replicate": p.get("replicate", 0), "reason": p["state"]["reason"]}
            for reps in cells.values()
            for p in reps.values()
            if kind(p) == "errored"
        ),
        key=lambda e: (e["task"], e["team"], e["replicate"], e["reason"]),
    )
    not_run = sorted(
        (
            {"task": p["task"], "team": p["team"], "replicate": p.get("replicate", 0)}
            for reps in cells.values()
            for p in reps.values()
            if kind(p) == "not_run"
        ),
        key=lambda e: (e["task"], e["team"], e["replicate"]),
    )
    missing = sorted(
        ({"task": task, "team": team} for task in universe for team in order if (task, team) not in cells),
        key=lambda e: (e["task"], e["team"]),
    )

    def valid_pair(p):
        k = kind(p)
        return k in ("resolved", "unresolved") or (k == "errored" and as_failures)

    def cell_valid(task, team):
        reps = cells.get((task, team))
        return bool(reps) and all(valid_pair(p) for p in reps.values())

    common = [task for task in universe if all(cell_valid(task, team) for team in order)]
    excluded = [task for task in universe if task not in common]

    def runs_of(task, team):
        return [cells[(task, team)][r] for r in sorted(cells[(task, team)])]

    def solved(p):
        return kind(p) == "resolved"

    def first_solved(task, team):
        return solved(runs_of(task, team)[0])

    baseline = baseline_opt if baseline_opt in order else None
    n_common = len(common)

    def group_of(task, field):
        vals = [p[field] for team in order for p in cells.get((task, team), {}).values() if p.get(field) is not None]
        return min(vals) if vals else NO_GROUP

    clusters = [("r", group_of(t, "repo")) if group_of(t, "repo") != NO_GROUP else ("t", t) for t in common]
    cluster_keys = [f"{a}:{b}" for a, b in clusters]

    def rate(k, n):
        return k / n if n else 0.0

    team_out = []
    for team in order:
        resolved = sum(first_solved(t, team) for t in common)
        low, high = wilson(resolved, n_common)
        cl = clustered([float(first_solved(t, team)) for t in common], cluster_keys)
        cl_low = max(0.0, cl["low"]) if cl else None
        cl_high = min(1.0, cl["high"]) if cl else None
        if cl and cl_high - cl_low > high - low:
            headline = ("clustered", cl_low, cl_high)
        else:
            headline = ("wilson", low, high)
        runs = [p for t in common for p in runs_of(t, team)]
        priced = [p["cost_usd"] for p in runs if p.get("cost_usd") is not None]
        resolved_runs = sum(solved(p) for p in runs)
        total = math.fsum(priced)
        cost = {
            "runs": len(runs),
            "priced_runs": len(priced),
            "resolved_runs": resolved_runs,
            "total_priced_usd": total,
            "mean_usd": total / len(runs) if runs else None,
            "median_usd": py_median(priced),
            "per_resolved_usd": total / resolved_runs if resolved_runs else None,
            "lower_bound": len(priced) < len(runs),
        }
        walls = [p["wall_time_s"] for p in runs if p.get("wall_time_s") is not None]
        task_scores = []
        best_scores = []
        for t in common:
            sc = [p["score"] for p in runs_of(t, team) if p.get("score") is not None]
            if sc:
                task_scores.append(py_mean(sc))
                best_scores.append(max(sc))
        counts = [len(runs_of(t, team)) for t in common]
        replicates = None
        if counts and max(counts) > 1:
            lo = min(counts)
            pak = {}
            for k in range(1, lo + 1):
                vals = []
                for t in common:
                    rs = runs_of(t, team)
                    vals.append(pass_at_k_exact(len(rs), sum(solved(p) for p in rs), k))
                pak[str(k)] = py_mean(vals)
            best = sum(any(solved(p) for p in runs_of(t, team)) for t in common)
            counts_nc = [(len(runs_of(t, team)), sum(solved(p) for p in runs_of(t, team))) for t in common]
            task_means = [c / n for n, c in counts_nc]
            if len(set(cluster_keys)) >= 2:
                est, by = clustered(task_means, cluster_keys), "repository"
            else:
                est, by = clustered(task_means, list(range(len(task_means)))), "task"
            split = variance_split(counts_nc)
            replicates = {
                "mean": py_mean(task_means) if task_means else 0.0,
                "mean_se": est["se"] if est else None,
                "mean_low": max(0.0, est["low"]) if est else None,
                "mean_high": min(1.0, est["high"]) if est else None,
                "mean_clusters": by,
                "within_task_variance": split["within"] if split else None,
                "between_task_variance": split["between"] if split else None,
                "min_replicates": lo,
                "max_replicates": max(counts),
                "pass_at_k": pak,
                "best_of_resolved": best,
                "best_of_rate": rate(best, n_common),
                "best_score": py_mean(best_scores),
            }
        vs = None
        if baseline is not None and team != baseline:
            wins = sum(first_solved(t, team) and not first_solved(t, baseline) for t in common)
            losses = sum(first_solved(t, baseline) and not first_solved(t, team) for t in common)
            base_resolved = sum(first_solved(t, baseline) for t in common)
            p_sm, _ = mcnemar_p_libraries(wins, losses)
            d = clustered([float(first_solved(t, team)) - float(first_solved(t, baseline)) for t in common], cluster_keys)

            def task_score(t, tm):
                return py_mean([p["score"] for p in runs_of(t, tm) if p.get("score") is not None])

            diffs = [task_score(t, team) - task_score(t, baseline) for t in common if task_score(t, team) is not None and task_score(t, baseline) is not None]
            score_diff = None
            if diffs:
                b_low, b_high = bootstrap_interval(diffs)
                score_diff = {"mean": py_mean(diffs), "low": b_low, "high": b_high, "method": "bootstrap", "n": len(diffs)}
            vs = {
                "wins": wins,
                "losses": losses,
                "p_value": p_sm,
                "p_holm": p_sm,
                "rate_diff": rate(resolved, n_common) - rate(base_resolved, n_common),
                "diff_se": d["se"] if d else None,
                "diff_low": max(-1.0, d["low"]) if d else None,
                "diff_high": min(1.0, d["high"]) if d else None,
                "score_diff": score_diff,
            }
        team_out.append(
            {
                "team": team,
                "tasks": n_common,
                "resolved": resolved,
                "rate": rate(resolved, n_common),
                "wilson_low": low,
                "wilson_high": high,
                "cluster_se": cl["se"] if cl else None,
                "cluster_low": cl_low,
                "cluster_high": cl_high,
                "headline_interval": headline[0],
                "ci_low": headline[1],
                "ci_high": headline[2],
                "errored": sum(e["team"] == team for e in errored),
                "timed_out": sum(kind(p) == "unresolved" and p["state"].get("timed_out", False) for p in runs),
                "not_run": sum(e["team"] == team for e in not_run),
                "cost": cost,
                "wall_time_median_s": py_median(walls),
                "mean_score": py_mean(task_scores),
                "scored_tasks": len(task_scores),
                "score_interval": mean_interval(task_scores),
                "mean_correctness": py_mean(
                    [
                        m
                        for m in (py_mean([p["correctness"] for p in runs_of(t, team) if p.get("correctness") is not None]) for t in common)
                        if m is not None
                    ]
                ),
                "replicates": replicates,
                "vs_baseline": vs,
            }
        )

    comparisons = [t["vs_baseline"] for t in team_out if t["vs_baseline"] is not None]
    for c, adjusted in zip(comparisons, holm([c["p_value"] for c in comparisons])):
        c["p_holm"] = adjusted

    def breakdown(field):
        groups = {}
        for t in common:
            g = groups.setdefault(group_of(t, field), {})
            for team in order:
                s = g.setdefault(team, {"tasks": 0, "resolved": 0, "rate": 0.0})
                s["tasks"] += 1
                s["resolved"] += int(first_solved(t, team))
        for g in groups.values():
            for s in g.values():
                s["rate"] = rate(s["resolved"], s["tasks"])
        return groups

    return {
        "baseline": baseline,
        "count_errors_as_failures": as_failures,
        "common_tasks": common,
        "excluded_tasks": excluded,
        "teams": team_out,
        "errored": errored,
        "not_run": not_run,
        "missing": missing,
        "repositories": len(set(cluster_keys)),
        "by_language": breakdown("language"),
        "by_repo": breakdown("repo"),
    }


# --- scenarios -------------------------------------------------------------------

LANGS = ["c", "cpp", "go", "java", "python", "rust"]
REPOS = ["acme/alpha", "acme/beta", "corp/gamma", "corp/delta", "solo/epsilon", "zeta/eta"]


def pair(task, team, state, replicate=0, cost=None, wall=None, language=None, repo=None, score=None, correctness=None):
    extra = {} if correctness is None else {"correctness": correctness}
    return extra | {
        "task": task,
        "team": team,
        "replicate": replicate,
        "state": state,
        "cost_usd": cost,
        "wall_time_s": wall,
        "language": language,
        "repo": repo,
        "score": score,
    }


RES = {"kind": "resolved"}
UNRES = {"kind": "unresolved", "timed_out": False}
TIMEOUT = {"kind": "unresolved", "timed_out": True}
NOT_RUN = {"kind": "not_run"}


def err(reason):
    return {"kind": "errored", "reason": reason}


def random_pairs(rng, teams, n_tasks, rates, *, errors=0, timeouts=0, unpriced=0, not_run=0, prefix="task"):
    """Pairs for teams x tasks with independent outcomes, then some special states."""
    pairs = []
    for i in range(n_tasks):
        task = f"{prefix}-{i:03d}"
        lang = rng.choice(LANGS) if rng.random() > 0.1 else None
        repo = rng.choice(REPOS)
        for team, r in zip(teams, rates):
            state = RES if rng.random() < r else UNRES
            pairs.append(
                pair(
                    task,
                    team,
                    state,
                    cost=round(rng.uniform(0.05, 4.0), 4),
                    wall=round(rng.uniform(30.0, 3600.0), 2),
                    language=lang,
                    repo=repo,
                )
            )
    idx = list(range(len(pairs)))
    rng.shuffle(idx)
    cursor = 0

    def take(k):
        nonlocal cursor
        chosen = idx[cursor : cursor + k]
        cursor += k
        return chosen

    for j in take(errors):
        pairs[j]["state"] = err(rng.choice(["sandbox exec lost", "grading failed", "rate limited before first token"]))
        pairs[j]["cost_usd"] = None
    for j in take(timeouts):
        pairs[j]["state"] = TIMEOUT
        pairs[j]["cost_usd"] = None
    for j in take(unpriced):
        pairs[j]["cost_usd"] = None
    for j in take(not_run):
        pairs[j]["state"] = NOT_RUN
        pairs[j]["cost_usd"] = None
        pairs[j]["wall_time_s"] = None
    return pairs


def scenario(name, teams, options, pairs):
    return {
        "name": name,
        "teams": teams,
        "options": options,
        "pairs": pairs,
        "expected": team_statistics(pairs, teams, options),
    }


def discordant_pairs(wins, losses, both, neither, teams=("base", "team")):
    """Pairs for exactly the given 2x2 table (baseline first)."""
    base, team = teams
    pairs = []
    i = 0
    for b_ok, t_ok, count in [(False, True, wins), (True, False, losses), (True, True, both), (False, False, neither)]:
        for _ in range(count):
            task = f"t{i:03d}"
            pairs.append(pair(task, base, RES if b_ok else UNRES, cost=1.0 + i / 100, wall=100.0 + i, language="rust", repo="r/a"))
            pairs.append(pair(task, team, RES if t_ok else UNRES, cost=2.0 + i / 100, wall=200.0 + i, language="rust", repo="r/a"))
            i += 1
    return pairs


def build_scenarios():
    out = []
    rng = random.Random(20261130)

    # 2 teams x 50 tasks: errored, timed-out, unpriced and not-run pairs.
    p50 = random_pairs(rng, ["solo", "review"], 50, [0.45, 0.55], errors=3, timeouts=4, unpriced=5, not_run=3)
    # One task not run for both teams (budget halt hits the whole task).
    for p in p50:
        if p["task"] == "task-049":
            p["state"], p["cost_usd"], p["wall_time_s"] = NOT_RUN, None, None
    out.append(scenario("two_teams_50_tasks", ["solo", "review"], {"baseline": "solo", "count_errors_as_failures": False}, p50))
    out.append(
        scenario(
            "two_teams_50_tasks_errors_as_failures",
            ["solo", "review"],
            {"baseline": "solo", "count_errors_as_failures": True},
            p50,
        )
    )
    out.append(
        scenario(
            "two_teams_50_tasks_baseline_review",
            ["review", "solo"],
            {"baseline": "review", "count_errors_as_failures": False},
            p50,
        )
    )

    # 0 of n and n of n.
    pz = []
    for i in range(12):
        pz.append(pair(f"z{i:02d}", "none", UNRES, cost=0.5, wall=10.0 * (i + 1), language="go"))
        pz.append(pair(f"z{i:02d}", "all", RES, cost=1.5 + i, wall=5.0 * (i + 1), language="java"))
    out.append(scenario("zero_and_all_successes", ["none", "all"], {"baseline": "none"}, pz))

    # No discordant tasks.
    out.append(scenario("no_discordant", ["base", "team"], {"baseline": "base"}, discordant_pairs(0, 0, 7, 5)))
    # The seed's worked examples: 6-0 (p = 0.031), 5-0 (0.063), 12-3 (0.035).
    out.append(scenario("six_wins_no_losses", ["base", "team"], {"baseline": "base"}, discordant_pairs(6, 0, 20, 24)))
    out.append(scenario("five_wins_no_losses", ["base", "team"], {"baseline": "base"}, discordant_pairs(5, 0, 20, 25)))
    out.append(scenario("twelve_wins_three_losses", ["base", "team"], {"baseline": "base"}, discordant_pairs(12, 3, 15, 20)))
    # Five repositories, one win in each and no loss: the clustered interval of the
    # difference excludes 0 while the exact McNemar p is 0.0625 (the report says p decides).
    pd5 = []
    for r, size in enumerate([3, 4, 5, 4, 4]):
        for i in range(size):
            task = f"r{r}-t{i}"
            both = RES if i == 1 else UNRES
            pd5.append(pair(task, "base", both, repo=f"org/repo{r}"))
            pd5.append(pair(task, "team", RES if i in (0, 1) else UNRES, repo=f"org/repo{r}"))
    out.append(scenario("five_repositories_disagree", ["base", "team"], {"baseline": "base"}, pd5))

    # A single task.
    out.append(
        scenario(
            "single_task",
            ["solo", "best"],
            {"baseline": "solo"},
            [
                pair("only", "solo", UNRES, cost=0.75, wall=61.5, language="rust", repo="o/r"),
                pair("only", "best", RES, cost=2.25, wall=300.0, language="rust", repo="o/r"),
            ],
        )
    )

    # Every task excluded: zero common tasks.
    pe = [
        pair("a", "x", err("workspace creation failed")),
        pair("a", "y", RES, cost=1.0),
        pair("b", "x", RES, cost=1.0),
        pair("b", "y", NOT_RUN),
    ]
    out.append(scenario("all_excluded", ["x", "y"], {"baseline": "x"}, pe))

    # No pairs at all.
    out.append(scenario("empty", ["x", "y"], {"baseline": "x"}, []))
    out.append(scenario("no_teams", [], {}, [pair("a", "x", RES)]))

    # Missing cells, a duplicated pair (last wins), an unlisted team, a duplicated team name.
    pm = [
        pair("m1", "a", RES, cost=1.0, wall=10.0, language="rust", repo="r/one"),
        pair("m1", "b", UNRES, cost=2.0, wall=20.0, language="rust", repo="r/one"),
        pair("m2", "a", UNRES, cost=3.0, wall=30.0, language="python", repo="r/two"),
        pair("m2", "b", RES, cost=4.0, wall=40.0),
        pair("m2", "a", RES, cost=5.0, wall=50.0, language="python", repo="r/two"),  # replaces the m2/a above
        pair("m3", "a", RES, cost=6.0, wall=60.0, language="c"),  # b has nothing for m3
        pair("m4", "a", RES, cost=7.0, wall=70.0, language="rust"),
        pair("m4", "b", RES, cost=None, wall=80.0, language="c", repo="r/one"),  # language disagrees: min wins
        pair("m4", "ghost", err("not a listed team")),
        pair("m5", "ghost", RES),  # only an unlisted team: not in the universe
    ]
    out.append(scenario("missing_duplicates_unlisted", ["a", "b", "a"], {"baseline": "a"}, pm))

    # No baseline, and a baseline that is not a listed team.
    p3 = random_pairs(rng, ["s", "r", "b"], 30, [0.3, 0.4, 0.5], errors=2, timeouts=3, unpriced=4, prefix="nb")
    out.append(scenario("three_teams_no_baseline", ["s", "r", "b"], {}, p3))
    out.append(scenario("baseline_not_listed", ["s", "r", "b"], {"baseline": "ghost"}, p3))

    # Larger three-team run.
    pl = random_pairs(
        rng, ["solo", "review", "best"], 200, [0.40, 0.48, 0.52], errors=7, timeouts=9, unpriced=11, not_run=5, prefix="big"
    )
    out.append(scenario("three_teams_200_tasks", ["solo", "review", "best"], {"baseline": "solo"}, pl))

    # Replicates with scores, varying replicate counts, an errored and a timed-out replicate.
    pr = []
    for i in range(12):
        task = f"rep-{i:02d}"
        lang = LANGS[i % 4]
        for team, r, reps in [("solo", 0.4, 3), ("review", 0.55, 4), ("best", 0.6, 5)]:
            n_reps = reps if i % 3 else reps - 1
            for rep in range(n_reps):
                ok = rng.random() < r
                score = round(rng.uniform(0.0, 1.0), 3) if rng.random() > 0.2 else None
                cost = round(rng.uniform(0.1, 3.0), 3) if rng.random() > 0.1 else None
                pr.append(
                    pair(task, team, RES if ok else UNRES, replicate=rep, cost=cost, wall=round(rng.uniform(60, 900), 1), language=lang, repo=REPOS[i % 3], score=score)
                )
    for p in pr:
        if p["task"] == "rep-05" and p["team"] == "review" and p["replicate"] == 2:
            p["state"], p["cost_usd"] = err("fork lost"), None
        if p["task"] == "rep-07" and p["team"] == "solo" and p["replicate"] == 1:
            p["state"], p["cost_usd"] = TIMEOUT, None
    out.append(scenario("replicates_with_scores", ["solo", "review", "best"], {"baseline": "review"}, pr))
    out.append(
        scenario(
            "replicates_with_scores_errors_as_failures",
            ["solo", "review", "best"],
            {"baseline": "review", "count_errors_as_failures": True},
            pr,
        )
    )
    # Replicate numbers that do not start at 0: the lowest one is the first.
    pq = [
        pair("q1", "a", UNRES, replicate=2, cost=1.0),
        pair("q1", "a", RES, replicate=5, cost=1.0),
        pair("q1", "b", RES, replicate=1, cost=2.0),
        pair("q2", "a", RES, replicate=3, cost=1.0),
        pair("q2", "b", UNRES, replicate=0, cost=2.0),
    ]
    out.append(scenario("replicates_first_is_lowest", ["a", "b"], {"baseline": "b"}, pq))
    out.extend(clustered_scenarios(random.Random(20261204)))
    return out


def clustered_scenarios(rng):
    """Tasks of a repository share a difficulty: clustered errors, Holm, scores, replicates."""
    out = []
    repos = [f"org/r{j}" for j in range(7)]
    difficulty = {r: rng.uniform(-1.5, 1.5) for r in repos}
    teams = [("solo", 0.0), ("review", 0.5), ("best", 0.9)]
    pc = []
    for i in range(84):
        repo = repos[rng.randrange(len(repos))] if i % 11 else None  # some tasks without a repo
        level = difficulty[repo] if repo else 0.0
        task = f"cl-{i:03d}"
        for team, skill in teams:
            chance = 1 / (1 + math.exp(-(level + skill - 0.3)))
            ok = rng.random() < chance
            score = round(min(1.0, max(0.0, chance + rng.uniform(-0.3, 0.3))), 4) if rng.random() > 0.1 else None
            correctness = round(rng.uniform(0, 1), 3) if team == "best" else None
            pc.append(pair(task, team, RES if ok else UNRES, cost=round(rng.uniform(0.1, 2.0), 3), wall=100.0 + i, language=LANGS[i % 6], repo=repo, score=score, correctness=correctness))
    out.append(scenario("clustered_three_teams", ["solo", "review", "best"], {"baseline": "solo"}, pc))

    pb = []
    for i in range(30):
        repo = repos[i % 4]
        for team, r in [("a", 0.4), ("b", 0.6)]:
            ok = rng.random() < r
            pb.append(pair(f"bin-{i:02d}", team, RES if ok else UNRES, cost=1.0, repo=repo, score=1.0 if ok else 0.0))
    out.append(scenario("binary_scores", ["a", "b"], {"baseline": "a"}, pb))

    prc = []
    for i in range(40):
        repo = repos[i % 5]
        level = difficulty[repo]
        for team, skill, reps in [("solo", 0.0, 4), ("review", 0.6, 4)]:
            n_reps = reps if i % 7 else 2
            for rep in range(n_reps):
                chance = 1 / (1 + math.exp(-(level + skill)))
                ok = rng.random() < chance
                prc.append(pair(f"rc-{i:02d}", team, RES if ok else UNRES, replicate=rep, cost=0.5, repo=repo, score=round(rng.uniform(0, 1), 3)))
    out.append(scenario("replicates_clustered", ["solo", "review"], {"baseline": "solo"}, prc))
    one = [pair(f"one-{i}", t, RES if (i + len(t)) % 3 else UNRES, replicate=r, repo="only/repo") for i in range(6) for t in ("x", "y") for r in range(3)]
    out.append(scenario("replicates_one_repository", ["x", "y"], {"baseline": "x"}, one))
    return out


# --- tables ------------------------------------------------------------------------


def build():
    wilson_rows = []
    ns = list(range(0, 61)) + [100, 1000, 10000, 100000]
    for n in ns:
        ks = range(n + 1) if n <= 100 else sorted({0, 1, 2, 3, 5, n // 10, n // 3, n // 2, n - 1, n} | {n * j // 37 for j in range(38)})
        for k in ks:
            low, high = wilson(k, n)
            assert 0.0 <= low <= high <= 1.0
            wilson_rows.append([k, n, low, high])

    mcnemar_rows = []
    cases = [(b, c) for b in range(61) for c in range(61) if b + c <= 60]
    cases += [(3000, 3100), (3100, 3000), (4990, 5010), (4500, 5500), (4000, 6000), (0, 10000), (1, 9999), (100, 200), (5000, 5000), (2000, 8000), (700, 1000), (10000, 10100), (49500, 51000), (120, 121), (0, 1074), (0, 1075), (0, 1100)]
    for b, c in cases:
        exact = mcnemar_p_exact(b, c)
        sm, sp = mcnemar_p_libraries(b, c)
        # statsmodels / scipy lose relative accuracy only deep in the tail.
        if exact > 1e-290:
            assert rel_close(exact, sm, 1e-10), (b, c, exact, sm)
            assert rel_close(exact, sp, 1e-10), (b, c, exact, sp)
        mcnemar_rows.append([b, c, exact])

    pass_rows = []
    for n in range(0, 21):
        for c in range(0, n + 2):
            for k in range(0, n + 2):
                v = pass_at_k_exact(n, c, k)
                if v is not None:
                    assert abs(v - pass_at_k_chen(n, c, k)) < 1e-12, (n, c, k)
                pass_rows.append([n, c, k, v])
    for n, c, k in [(100, 3, 10), (200, 150, 7), (1000, 1, 1), (1000, 999, 500), (500, 10, 250)]:
        pass_rows.append([n, c, k, pass_at_k_exact(n, c, k)])

    rng = random.Random(7)
    median_rows = [{"values": [], "median": None, "mean": None}]
    fixed = [[1.0], [2.0, 1.0], [3.0, 1.0, 2.0], [-1.5, 4.0, 4.0, 0.25], [5.0, 5.0, 5.0, 5.0], [1e300, 1e300], [0.1, 0.2, 0.3]]
    for values in fixed:
        median_rows.append({"values": values, "median": py_median(values), "mean": py_mean(values)})
    for _ in range(60):
        length = rng.randint(1, 25)
        values = [round(rng.uniform(-100, 1000), rng.randint(0, 6)) for _ in range(length)]
        median_rows.append({"values": values, "median": py_median(values), "mean": py_mean(values)})

    extra = build_inference_tables()
    return {
        "generator": "scripts/stats_reference.py",
        "versions": {
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__,
        },
        "z": Z,
        "wilson": wilson_rows,
        "mcnemar": mcnemar_rows,
        "pass_at_k": pass_rows,
        "median_mean": median_rows,
        **extra,
        "scenarios": build_scenarios(),
    }


def build_inference_tables():
    rng = random.Random(36)
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k_enumerated(n, c, k) == 1 - Fraction(math.comb(n - c, k), math.comb(n, k)), (n, c, k)

    normal_rows = [[x, float(stats.norm.cdf(x)), float(stats.norm.sf(x))] for x in [-30.0, -12.5, -8.0, -3.3, -1.959963984540054, -1.0, -0.3, 0.0, 0.2, 0.8416, 1.0, 1.96, 2.5, 5.0, 9.0, 30.0]]
    quantile_rows = [[p, float(stats.norm.ppf(p))] for p in [1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 0.001, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.9, 0.925, 0.95, 0.975, 0.99, 0.999, 1 - 1e-10]]

    clustered_rows = []
    for case in range(80):
        n = rng.randint(2, 120)
        g = rng.randint(1, min(n, 15))
        labels = [f"g{rng.randrange(g)}" for _ in range(n)]
        if case % 3 == 0:
            values = [float(rng.random() < 0.4) for _ in range(n)]
        elif case % 3 == 1:
            values = [float(rng.randint(-1, 1)) for _ in range(n)]
        else:
            values = [round(rng.uniform(-2.0, 5.0), 6) for _ in range(n)]
        r = clustered(values, labels)
        clustered_rows.append({"values": values, "clusters": labels, "expected": r})

    holm_rows = []
    for _ in range(60):
        m = rng.randint(1, 8)
        ps = [round(rng.random() ** 3, 6) for _ in range(m)]
        if m > 2 and rng.random() < 0.3:
            ps[1] = ps[0]  # ties
        holm_rows.append([ps, holm(ps)])

    split_rows = []
    for _ in range(40):
        k = rng.randint(1, 25)
        counts = []
        for _ in range(k):
            n = rng.randint(1, 9)
            counts.append([n, rng.randint(0, n)])
        r = variance_split(counts)
        split_rows.append({"counts": counts, "within": r["within"] if r else None, "between": r["between"] if r else None})

    boot_rows = []
    for case in range(12):
        n = rng.randint(3, 60)
        values = [round(rng.uniform(-1.0, 1.0) if case % 2 else rng.random() ** 2, 5) for _ in range(n)]
        scipy_bootstrap_agrees(values)
        boot_rows.append([values, *bootstrap_interval(values)])
    boot_rows.append([[0.5, 0.5, 0.5], *bootstrap_interval([0.5, 0.5, 0.5])])

    t_rows = [[p, df, float(stats.t.ppf(p, df))] for df in [1, 2, 3, 4, 5, 6, 9, 14, 29, 60, 119, 500, 2000] for p in [0.6, 0.9, 0.975, 0.995]]

    power_rows = []
    for n in [5, 8, 20, 22, 50, 100, 300]:
        for p0 in [0.0, 0.1, 0.3, 0.5, 0.7]:
            for delta in [0.0, 0.05, 0.1, 0.2, 0.3]:
                if p0 + delta <= 1.0:
                    power_rows.append([n, p0, delta, exact_power_at(n, p0, delta)])
    # A decline and strongly agreeing teams (few discordant pairs).
    for n, p10, p01 in [(22, 0.05, 0.3), (50, 0.2, 0.02), (50, 0.0, 0.1), (8, 0.7, 0.0)]:
        power_rows.append([n, p10, p01, mcnemar_power(n, p10, p01), "discordant"])
    mdd_rows = [[n, p0, exact_min_detectable(n, p0)] for n in [1, 5, 8, 12, 22, 30, 50, 100, 300] for p0 in [0.0, 0.1, 0.3, 0.5, 0.7, 0.9]]
    size_rows = [[p0, delta, exact_tasks_needed(p0, delta)] for p0, delta in [(0.5, 0.5), (0.5, 0.4), (0.5, 0.3), (0.5, 0.2), (0.3, 0.3), (0.3, 0.2), (0.1, 0.2), (0.7, 0.2), (0.5, -0.3)]]
    # What the normal approximation promised at 8, 22 and 50 tasks, and the exact power there.
    z_rows = []
    for n in [8, 22, 50]:
        d = z_min_detectable(n, 0.5)
        z_rows.append([n, 0.5, d, exact_power_at(n, 0.5, d)])
    return {
        "normal": normal_rows,
        "normal_quantile": quantile_rows,
        "clustered": clustered_rows,
        "holm": holm_rows,
        "variance_split": split_rows,
        "bootstrap": boot_rows,
        "student_t_quantile": t_rows,
        "mcnemar_power": power_rows,
        "mcnemar_min_detectable": mdd_rows,
        "mcnemar_tasks_needed": size_rows,
        "z_test_promise": z_rows,
    }


def main():
    data = build()
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    # One table row / pair per line keeps the checked-in file small and its diffs readable.
    lines = ["{"]
    keys = list(data)
    for i, key in enumerate(keys):
        value = data[key]
        sep = "," if i + 1 < len(keys) else ""
        if key == "scenarios":
            lines.append(f"  {json.dumps(key)}: [")
            for j, sc in enumerate(value):
                lines.append("    {")
                for field in ("name", "teams", "options"):
                    lines.append(f"      {json.dumps(field)}: {json.dumps(sc[field])},")
                lines.append('      "pairs": [')
                lines.extend(f"        {json.dumps(p)}" + ("," if m + 1 < len(sc["pairs"]) else "") for m, p in enumerate(sc["pairs"]))
                lines.append("      ],")
                lines.append(f'      "expected": {json.dumps(sc["expected"], separators=(",", ":"))}')
                lines.append("    }" + ("," if j + 1 < len(value) else ""))
            lines.append(f"  ]{sep}")
        elif isinstance(value, list):
            lines.append(f"  {json.dumps(key)}: [")
            lines.extend(f"    {json.dumps(row)}" + ("," if j + 1 < len(value) else "") for j, row in enumerate(value))
            lines.append(f"  ]{sep}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{sep}")
    lines.append("}")
    out.write_text("\n".join(lines) + "\n")
    counts = {k: len(v) for k, v in data.items() if isinstance(v, list)}
    print(f"wrote {out}: {counts}")


if __name__ == "__main__":
    main()
