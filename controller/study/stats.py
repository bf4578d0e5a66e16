"""Small pure statistics over policy outcomes: intervals, paired tests, per-policy summaries.

An *outcome* is one (policy, case) result, a dict with ``policy, split, case_id, family,
actions, source ("direct"|"program"), correct (bool, or None when the case has no hidden
answer), direct_correct, program_generations, repair_actions, generated_tokens, sandbox_ms``.

Every function here is pure and deterministic for a given seed; reports and figures only call
them. Interval and test formulas come from statsmodels; the bootstrap is a seeded numpy paired
percentile bootstrap (scipy's BCa bootstrap fails on the all-equal samples that small splits
produce routinely).

Two levels. Case level (Wilson intervals, exact McNemar, case bootstrap) treats cases as
independent; they are not: the cases of one family share near-identical visible states, and
splits are drawn by family. So every accuracy also gets a family-level interval (a cluster
bootstrap: families are resampled with replacement, accuracy is pooled over their cases), and
every paired comparison a family-level test: the per-family sums of case differences
(policy right minus baseline right) are tested with a sign-flip permutation test (exact
enumeration up to ``EXACT_FAMILIES`` = 20 non-zero families, Monte Carlo above), Holm-adjusted over the *distinct* comparisons
of the split (statsmodels ``multipletests``): comparisons whose per-family difference vectors are
identical (or negated: the test is two-sided) are one test, counted once; comparisons with the
hindsight oracle (a ceiling, not a hypothesis) and ties (no family with a non-zero difference:
the test cannot reach any alpha, Tarone 1990) are left out of the count. The ``verdict`` is
decided by that adjusted family-level p-value alone.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Sequence

import numpy as np

DEFAULT_BASELINES = ("always_tool_visible", "direct_only")
ALPHA = 0.05
FAMILY_PERMUTATIONS = 9999  # random sign flips drawn above EXACT_FAMILIES non-zero families (else exact)
FAMILY_TEST = ("sign-flip permutation test on per-family sums of paired case differences (exact up to 20 "
               "non-zero families, 9,999 random sign patterns above)")


# ----------------------------------------------------------------------------- intervals


def wilson_ci(k: int, n: int, alpha: float = 0.05) -> list[float]:
    """Wilson score interval ``[lo, hi]`` for ``k`` successes out of ``n``.

    With ``n == 0`` nothing is known, so the interval is the whole range ``[0.0, 1.0]``
    (never None: callers can always draw an error bar).
    """
    if n <= 0:
        return [0.0, 1.0]
    if not 0 <= k <= n:
        raise ValueError(f"wilson_ci: k={k} outside 0..n={n}")
    from statsmodels.stats.proportion import proportion_confint  # imported here: statsmodels is slow to load

    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    # Clamp float noise (e.g. -1e-17) so the interval stays inside [0, 1].
    return [max(0.0, float(lo)), min(1.0, float(hi))]


def within_noise(ci: Sequence[float] | None) -> bool:
    """True when a difference interval covers 0 (or is missing: no evidence of a difference)."""
    if ci is None:
        return True
    lo, hi = ci
    return lo <= 0.0 <= hi


# ----------------------------------------------------------------------------- paired tests


def _as_bools(a: Sequence[bool], b: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} vs {len(b)}")
    return np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict:
    """Exact McNemar test for two policies' correctness on the same cases.

    ``b01`` counts cases where ``a`` is wrong and ``b`` right, ``b10`` cases where ``a`` is
    right and ``b`` wrong, so ``b10 - b01`` is ``a``'s net gain. With no discordant pairs the
    test has nothing to say and ``p_value`` is 1.0.
    """
    x, y = _as_bools(a, b)
    b01 = int(np.sum(~x & y))
    b10 = int(np.sum(x & ~y))
    if b01 + b10 == 0:
        return {"b01": 0, "b10": 0, "p_value": 1.0}
    n11 = int(np.sum(x & y))
    n00 = int(np.sum(~x & ~y))
    from statsmodels.stats.contingency_tables import mcnemar

    res = mcnemar([[n11, b10], [b01, n00]], exact=True)
    return {"b01": b01, "b10": b10, "p_value": min(1.0, float(res.pvalue))}


def min_discordant_for_significance(alpha: float = 0.05, limit: int = 1000) -> int:
    """Fewest discordant cases, all favouring one side, for which exact McNemar gives p < alpha.

    This is the best case for a case-level paired test, so ``m / n`` is a lower bound on the
    accuracy difference that ``n`` paired cases can ever show as significant with McNemar (6 for
    alpha = 0.05). The study's verdicts use the family-level test, whose floor is
    ``min_attainable_p`` of the number of families that differ.
    """
    for m in range(1, limit + 1):
        if mcnemar_exact([True] * m, [False] * m)["p_value"] < alpha:
            return m
    return limit


def paired_bootstrap_diff(
    a: Sequence[bool],
    b: Sequence[bool],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """Accuracy(a) - accuracy(b) with a paired percentile bootstrap interval over cases.

    Cases are resampled with replacement, keeping each case's pair together. The same seed
    gives the same interval. With ``n == 0`` there is no estimate: ``diff`` and ``ci95`` are
    None. When every pair agrees the interval collapses to ``[diff, diff]``.
    """
    x, y = _as_bools(a, b)
    n = len(x)
    if n == 0:
        return {"diff": None, "ci95": None}
    per_case = x.astype(float) - y.astype(float)
    diff = float(per_case.mean())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    means = per_case[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return {"diff": diff, "ci95": [float(lo), float(hi)]}


# ----------------------------------------------------------------------------- non-inferiority

NONINFERIORITY_METHOD = ("exact binomial bound: Clopper-Pearson lower(wins, n, alpha/2) - Clopper-Pearson "
                         "upper(losses, n, alpha/2), one-sided at level alpha (Bonferroni over the two bounds)")


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds (lower, upper) of a binomial share k/n, each at error ``level``."""
    if n <= 0:
        return 0.0, 1.0
    from scipy.stats import beta

    lo = 0.0 if k <= 0 else float(beta.ppf(level, k, n - k + 1))
    hi = 1.0 if k >= n else float(beta.ppf(1 - level, k + 1, n - k))
    return lo, hi


def noninferiority_lower_bound(wins: int, losses: int, n: int, alpha: float = ALPHA) -> float | None:
    """Lower confidence bound of the accuracy difference (wins - losses) / n, valid for rare events.

    ``wins``: cases where a is right and b wrong; ``losses`` the reverse. The bound is the
    Clopper-Pearson lower bound of the win share minus the Clopper-Pearson upper bound of the loss
    share, each one-sided at alpha / 2, so the difference bound holds with probability at least
    1 - alpha (Bonferroni). With 0 wins and 1 loss in 225 cases it is about -0.0245 (the percentile
    bootstrap gives about -0.013 there: it cannot see a loss it never resamples). It treats cases as
    independent binomial draws; the family-bootstrap interval is reported beside it. None with no case."""
    if n <= 0:
        return None
    return clopper_pearson(wins, n, alpha / 2)[0] - clopper_pearson(losses, n, alpha / 2)[1]


# ----------------------------------------------------------------------------- family level


def _family_arrays(families: Sequence[str], values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per family (sorted by name): the sum of ``values`` and the number of cases."""
    if len(families) != len(values):
        raise ValueError(f"{len(families)} families but {len(values)} values")
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for f, v in zip(families, values):
        sums[f] = sums.get(f, 0.0) + float(v)
        counts[f] = counts.get(f, 0) + 1
    names = sorted(sums)
    return np.array([sums[f] for f in names]), np.array([counts[f] for f in names], dtype=float)


def family_bootstrap(families: Sequence[str], values: Sequence[float], *, n_resamples: int = 2000,
                     seed: int = 0, alpha: float = ALPHA) -> list[float] | None:
    """Percentile interval of the pooled mean of ``values`` when whole families are resampled.

    The pooled mean is sum(values) / cases over the drawn families (a family drawn twice counts
    twice). With no case there is no interval (None); with one family it collapses to the point.
    """
    sums, counts = _family_arrays(families, values)
    if not len(sums):
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(sums), size=(n_resamples, len(sums)))
    means = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return [float(lo), float(hi)]


def family_sign_flip_p(families: Sequence[str], diffs: Sequence[float], *, seed: int = 0) -> float:
    """Two-sided p-value that the per-family sums of ``diffs`` are symmetric around 0.

    Under the null (the two policies are exchangeable within each family) each family's summed
    difference is as likely negated. Families whose sum is 0 cannot move the statistic and are
    dropped; with m non-zero families all 2^m sign patterns are enumerated when m <=
    ``EXACT_FAMILIES`` (p = share of patterns with |sum| >= the observed |sum|; smallest attainable
    2 / 2^m), else ``FAMILY_PERMUTATIONS`` seeded random patterns are drawn (p = (1 + hits) / (B + 1),
    smallest attainable 1 / (B + 1)). No family with a non-zero sum: p = 1.
    """
    sums, _ = _family_arrays(families, diffs)
    nz = sums[np.abs(sums) > 1e-12]
    if not len(nz):
        return 1.0
    return _sign_flip_p(tuple(sorted(nz.tolist())), seed)


EXACT_FAMILIES = 20  # enumerate every sign pattern up to this many non-zero families


def sign_flip_method(m: int) -> str:
    """How ``family_sign_flip_p`` tests m non-zero families."""
    return (f"exact (all 2^{m} sign patterns)" if m <= EXACT_FAMILIES
            else f"Monte Carlo ({FAMILY_PERMUTATIONS} seeded random sign patterns)")


def min_attainable_p(m: int) -> float:
    """The smallest p ``family_sign_flip_p`` can return with m non-zero families: 2 / 2^m when
    exact (the observed pattern and its negation), 1 / (B + 1) with B random patterns."""
    if m < 1:
        return 1.0
    return min(1.0, 2.0 / 2 ** m) if m <= EXACT_FAMILIES else 1.0 / (FAMILY_PERMUTATIONS + 1)


def _exact_tail(x: np.ndarray, t: float) -> float:
    """Share of the 2^m sign patterns s with |s . x| >= t, by meeting in the middle: the 2^(m/2)
    partial sums of each half, sorted, and a search per partial sum (vectorised numpy)."""
    def partial(v):
        codes = (np.arange(2 ** len(v))[:, None] >> np.arange(len(v))[None, :]) & 1
        return (1 - 2 * codes).astype(float) @ v if len(v) else np.zeros(1)

    h = len(x) // 2
    a, b = partial(x[:h]), np.sort(partial(x[h:]))
    hi = len(b) - np.searchsorted(b, t - a, side="left")   # a + b >= t
    lo = np.searchsorted(b, -t - a, side="right")           # a + b <= -t
    return float((hi + lo).sum()) / (len(a) * len(b))


@lru_cache(maxsize=4096)
def _sign_flip_p(sums: tuple, seed: int) -> float:
    """The test of ``family_sign_flip_p`` on the non-zero per-family sums; a pure function of them
    and the seed, so it runs once per distinct vector (a run's policies share many)."""
    x = np.array(sums, dtype=float)
    t = abs(float(x.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(x).sum()))
    if t <= tol:
        return 1.0
    if len(x) <= EXACT_FAMILIES:
        return min(1.0, _exact_tail(x, t - tol))
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(FAMILY_PERMUTATIONS, len(x)))
    hits = int(np.sum(np.abs(signs @ x) >= t - tol))
    return min(1.0, (1 + hits) / (FAMILY_PERMUTATIONS + 1))


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Holm-adjusted p-values (statsmodels), in the input order."""
    if not len(pvalues):
        return []
    import gc

    from statsmodels.stats.multitest import multipletests

    # statsmodels' Holm branch ends in gc.collect(): a full collection over every live object
    # (torch and transformers loaded: ~0.3 s a call). Frozen objects are skipped, nothing else changes.
    gc.freeze()
    try:
        adjusted = multipletests(list(pvalues), alpha=alpha, method="holm")[1]
    finally:
        gc.unfreeze()
    return [min(1.0, float(p)) for p in adjusted]


from controller.env.registry import ORACLE  # noqa: E402  (re-exported for the study modules)
EXCLUDE_ORACLE = "the hindsight oracle reads hidden answers: a ceiling, not a hypothesis"
EXCLUDE_TIE = "no family with a non-zero difference (identical outcomes): the test cannot reject at any alpha"


def comparison_key(families: Sequence[str], diffs: Sequence[float]) -> tuple:
    """The test a paired comparison runs, as a hashable key: its non-zero per-family sums, sign
    normalised (a two-sided sign-flip test gives the same p for a vector and its negation).
    Equal keys are the same test; the empty key is a tie."""
    sums, _ = _family_arrays(families, diffs)
    names = sorted(set(map(str, families)))
    items = tuple((f, round(float(v), 9)) for f, v in zip(names, sums) if abs(v) > 1e-12)
    if items and items[0][1] < 0:  # sign of the first non-zero family decides the orientation
        items = tuple((f, -v) for f, v in items)
    return items


def distinct_holm(keys: Sequence[tuple], pvalues: Sequence[float], excluded: Sequence[str | None],
                  alpha: float = ALPHA) -> tuple[list[float], list[list[int]]]:
    """Holm over distinct tests only. ``keys`` from ``comparison_key``; ``excluded[i]`` a reason
    to leave comparison i out of the family (then its adjusted p is its own p). Comparisons with
    equal keys share one adjusted p. Returns (adjusted p per comparison, groups of merged indices)."""
    groups: dict[tuple, list[int]] = {}
    for i, (k, why) in enumerate(zip(keys, excluded)):
        if why is None and k:
            groups.setdefault(k, []).append(i)
    reps = list(groups.values())
    adj = holm([pvalues[g[0]] for g in reps], alpha)
    out = [float(p) if why is not None or not k else 1.0 for p, k, why in zip(pvalues, keys, excluded)]
    out = [min(1.0, p) for p in out]
    for g, p in zip(reps, adj):
        for i in g:
            out[i] = p
    return out, [g for g in reps if len(g) > 1]


def verdict(diff: float | None, p_adjusted: float | None, alpha: float = ALPHA) -> str:
    """``better`` / ``worse`` when the family-level adjusted p is below alpha, else ``within noise``."""
    if diff is None or p_adjusted is None or p_adjusted >= alpha or diff == 0:
        return "within noise"
    return "better" if diff > 0 else "worse"


# ----------------------------------------------------------------------------- summaries


def summarize_outcomes(outcomes: Sequence[Mapping], *, seed: int = 0, n_resamples: int = 2000) -> dict:
    """Contract summary of one policy's outcomes on one split.

    Correctness fields (``n``, ``exact``, ``accuracy``, ``program_commits``,
    ``program_correct``, recoveries, losses) count only scored cases; outcomes with
    ``correct is None`` are counted in ``unscored``. Budget sums (``program_generations``,
    ``repair_actions``, ``generated_tokens``, ``work``, ``sandbox_ms``) include unscored cases,
    because the tool work was done either way. ``accuracy`` is None when ``n == 0``.
    ``tool_productivity`` is correct program commits per program generation on scored cases
    (None when no program was generated there). ``accuracy_ci95`` is the case-level Wilson
    interval; ``accuracy_ci95_family`` the family bootstrap (None with no scored case).
    """
    scored = [o for o in outcomes if o.get("correct") is not None]
    n = len(scored)
    exact = sum(1 for o in scored if o["correct"])
    commits = [o for o in scored if o.get("source") == "program"]
    program_correct = sum(1 for o in commits if o["correct"])
    recoveries = sum(1 for o in commits if o["correct"] and o.get("direct_correct") is False)
    losses = sum(1 for o in commits if not o["correct"] and o.get("direct_correct") is True)
    scored_gens = sum(int(o.get("program_generations", 0)) for o in scored)
    fams = [str(o.get("family", o.get("case_id"))) for o in scored]
    return {
        "n": n,
        "exact": exact,
        "accuracy": exact / n if n else None,
        "accuracy_ci95": wilson_ci(exact, n),
        "n_families": len(set(fams)),
        "accuracy_ci95_family": family_bootstrap(fams, [bool(o["correct"]) for o in scored],
                                                 n_resamples=n_resamples, seed=seed),
        "program_generations": sum(int(o.get("program_generations", 0)) for o in outcomes),
        "repair_actions": sum(int(o.get("repair_actions", 0)) for o in outcomes),
        "program_commits": len(commits),
        "program_correct": program_correct,
        "program_precision": program_correct / len(commits) if commits else None,
        "direct_miss_recoveries": recoveries,
        "direct_correct_losses": losses,
        "generated_tokens": sum(int(o.get("generated_tokens", 0)) for o in outcomes),
        "work": sum(int(o.get("work", 0)) for o in outcomes),
        "sandbox_ms": round(sum(float(o.get("sandbox_ms", 0.0)) for o in outcomes), 3),
        "resample_actions": sum(int(o.get("resample_actions", 0)) for o in outcomes),
        "search_nodes": sum(int(o.get("search_nodes", 0)) for o in outcomes),
        "tool_productivity": program_correct / scored_gens if scored_gens else None,
        "unscored": len(outcomes) - n,
    }


def _scored_by_case(outcomes: Sequence[Mapping], split: str | None) -> dict[str, tuple[bool, str]]:
    return {
        o["case_id"]: (bool(o["correct"]), str(o.get("family", o["case_id"])))
        for o in outcomes
        if o.get("correct") is not None and (split is None or o.get("split") == split)
    }


def paired_tests(
    outcomes_by_policy: Mapping[str, Sequence[Mapping]],
    *,
    baselines: Sequence[str] = DEFAULT_BASELINES,
    split: str | None = "test",
    seed: int = 0,
    n_resamples: int = 2000,
) -> dict:
    """Each policy against each baseline, paired on the scored cases of ``split`` both share.

    Returns ``{policy: {baseline: {...}}}`` with, case level: ``n``, ``mcnemar_p``, ``b01``,
    ``b10`` (``wins`` = ``b10``: the policy right and the baseline wrong; ``losses`` = ``b01``),
    ``diff`` and its case bootstrap ``diff_ci95``; family level: ``n_families``,
    ``diff_ci95_family``, ``p_family`` (``family_sign_flip_p``), ``p_holm`` (Holm over the
    distinct comparisons of this split, ``distinct_holm``: a pair compared both ways, or two pairs
    with the same per-family differences, count once (``merged_with`` names the others); the
    oracle and ties are left out (``holm_excluded`` says why); ``holm_family_size`` is the number of
    distinct tests) and ``verdict``; ``within_noise`` is
    ``verdict == "within noise"``. A policy is not compared with itself; baselines missing from
    ``outcomes_by_policy`` are skipped. ``split=None`` pairs over all splits.
    """
    by_case = {p: _scored_by_case(o, split) for p, o in outcomes_by_policy.items()}
    result: dict[str, dict] = {}
    flat: list[dict] = []
    names: list[str] = []
    keys: list[tuple] = []
    excluded: list[str | None] = []
    mirrors: list[tuple[dict, dict]] = []
    for policy, mine in by_case.items():
        row = {}
        for base in baselines:
            if base == policy or base not in by_case:
                continue
            done = result.get(base, {}).get(policy)
            if done is not None:  # the same pair the other way round: one test, counted once by Holm
                row[base] = _mirrored(done)
                mirrors.append((row[base], done))
                continue
            theirs = by_case[base]
            ids = sorted(set(mine) & set(theirs))
            a = [mine[i][0] for i in ids]
            b = [theirs[i][0] for i in ids]
            fams = [mine[i][1] for i in ids]
            d = [float(x) - float(y) for x, y in zip(a, b)]
            test = mcnemar_exact(a, b)
            boot = paired_bootstrap_diff(a, b, n_resamples=n_resamples, seed=seed)
            row[base] = {
                "n": len(ids),
                "n_families": len(set(fams)),
                "wins": test["b10"],
                "losses": test["b01"],
                "mcnemar_p": test["p_value"],
                "b01": test["b01"],
                "b10": test["b10"],
                "diff": boot["diff"],
                "diff_ci95": boot["ci95"],
                "diff_ci95_family": family_bootstrap(fams, d, n_resamples=n_resamples, seed=seed),
                "p_family": family_sign_flip_p(fams, d, seed=seed),
            }
            flat.append(row[base])
            names.append(f"{policy} vs {base}")
            keys.append(comparison_key(fams, d))
            excluded.append(EXCLUDE_ORACLE if ORACLE in (policy, base) else EXCLUDE_TIE if not keys[-1] else None)
        result[policy] = row
    adjusted, merged = distinct_holm(keys, [e["p_family"] for e in flat], excluded)
    merged_with = {i: [names[j] for j in g if j != i] for g in merged for i in g}
    n_distinct = len({k for k, why in zip(keys, excluded) if why is None and k})
    for i, (entry, p_adj) in enumerate(zip(flat, adjusted)):
        entry["p_holm"] = p_adj
        entry["holm_family_size"] = n_distinct
        if excluded[i] is not None:
            entry["holm_excluded"] = excluded[i]
        if merged_with.get(i):
            entry["merged_with"] = merged_with[i]
        entry["verdict"] = verdict(entry["diff"], p_adj)
        entry["within_noise"] = entry["verdict"] == "within noise"
    for mirror, entry in mirrors:
        mirror.update({k: entry[k] for k in ("p_holm", "holm_family_size", "holm_excluded", "merged_with")
                       if k in entry})
        mirror["verdict"] = verdict(mirror["diff"], entry["p_holm"])
        mirror["within_noise"] = mirror["verdict"] == "within noise"
    return result


def _mirrored(t: dict) -> dict:
    """The entry of the reverse comparison: differences negated, wins and losses swapped."""
    neg = lambda ci: None if ci is None else [-ci[1], -ci[0]]
    return dict(t, wins=t["losses"], losses=t["wins"], b01=t["b10"], b10=t["b01"],
                diff=None if t["diff"] is None else -t["diff"], diff_ci95=neg(t["diff_ci95"]),
                diff_ci95_family=neg(t["diff_ci95_family"]))
