#!/usr/bin/env python3
"""Reference values for bench's report statistics (src/report/stats.rs).

Writes tests/fixtures/stats/reference.json, which the unit tests of
src/report/stats.rs load and compare against to 1e-9. The file is checked in;
CI does not run this script. Re-run it after changing the semantics:

    python3 -m venv /tmp/statsvenv
    /tmp/statsvenv/bin/pip install scipy statsmodels numpy
    /tmp/statsvenv/bin/python scripts/stats_reference.py

Everything here is computed independently of the Rust code: Wilson intervals
with statsmodels, McNemar p-values exactly with Python integers (checked
against statsmodels mcnemar(exact=True) and scipy binomtest), pass@k exactly
with fractions (checked against the numpy product of Chen et al.), medians with
numpy, and the team_statistics scenarios with a plain-Python implementation of
the semantics documented at the top of src/report/stats.rs.
"""

import json
import math
import random
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
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

    def rate(k, n):
        return k / n if n else 0.0

    team_out = []
    for team in order:
        resolved = sum(first_solved(t, team) for t in common)
        low, high = wilson(resolved, n_common)
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
            replicates = {
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
            sm, _ = mcnemar_p_libraries(wins, losses)
            vs = {
                "wins": wins,
                "losses": losses,
                "p_value": sm,
                "rate_diff": rate(resolved, n_common) - rate(base_resolved, n_common),
            }
        team_out.append(
            {
                "team": team,
                "tasks": n_common,
                "resolved": resolved,
                "rate": rate(resolved, n_common),
                "wilson_low": low,
                "wilson_high": high,
                "errored": sum(e["team"] == team for e in errored),
                "timed_out": sum(kind(p) == "unresolved" and p["state"].get("timed_out", False) for p in runs),
                "not_run": sum(e["team"] == team for e in not_run),
                "cost": cost,
                "wall_time_median_s": py_median(walls),
                "mean_score": py_mean(task_scores),
                "scored_tasks": len(task_scores),
                "replicates": replicates,
                "vs_baseline": vs,
            }
        )

    def group_of(task, field):
        vals = [p[field] for team in order for p in cells.get((task, team), {}).values() if p.get(field) is not None]
        return min(vals) if vals else NO_GROUP

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
        "by_language": breakdown("language"),
        "by_repo": breakdown("repo"),
    }


# --- scenarios -------------------------------------------------------------------

LANGS = ["c", "cpp", "go", "java", "python", "rust"]
REPOS = ["acme/alpha", "acme/beta", "corp/gamma", "corp/delta", "solo/epsilon", "zeta/eta"]


def pair(task, team, state, replicate=0, cost=None, wall=None, language=None, repo=None, score=None):
    return {
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
        "scenarios": build_scenarios(),
    }


def main():
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
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
    OUT.write_text("\n".join(lines) + "\n")
    counts = {k: len(v) for k, v in data.items() if isinstance(v, list)}
    print(f"wrote {OUT}: {counts}")


if __name__ == "__main__":
    main()
