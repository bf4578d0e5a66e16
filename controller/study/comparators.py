"""Comparators that match the claim: dominance of the chosen best fixed policy, what a
non-inferiority claim tolerates at the study's n, and a family-level bound beside the case-level one.

* ``dominance``: per split seed, from the pooled CV outcome records, every fixed policy that
  dominates ``best_fixed`` (at least as many cases right and at most its cost, one of them strictly).
  A fixed policy is its own comparator; when one dominates the chosen best fixed policy pooled, the
  report says so.
* ``ni_tolerance``: the largest number of lost cases (with no win) at which the exact case-level
  bound (``stats.noninferiority_lower_bound``) still stays above -margin at n, and the power of the
  no-loss claim when each case is lost independently with probability q (``scipy.stats.binom``).
* ``family_bound``: a cluster-robust lower bound of the mean accuracy difference (``statsmodels``
  OLS on a constant, covariance clustered by family, one-sided at alpha / 2 as the exact bound):
  it assumes families independent and many enough for the t approximation, not cases.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.registry import BEST_FIXED, role
from controller.study.stats import noninferiority_lower_bound

LOSS_RATES = (0.0025, 0.005, 0.01)


def _pooled(records: Sequence[Mapping], field: str) -> dict[str, tuple[int, float]]:
    out: dict[str, list] = {}
    for r in records:
        row = out.setdefault(r["policy"], [0, 0.0])
        row[0] += int(bool(r.get("correct")))
        row[1] += float(r.get(field) or 0)
    return {p: (e, c) for p, (e, c) in out.items()}


def dominating(pooled: Mapping[str, tuple[int, float]], target: str = BEST_FIXED) -> list[str]:
    """Fixed policies dominating ``target`` on (cases right, total cost)."""
    if target not in pooled:
        return []
    e0, c0 = pooled[target]
    return sorted(p for p, (e, c) in pooled.items() if p != target and role(p) == "fixed"
                  and e >= e0 and c <= c0 + 1e-9 and (e > e0 or c < c0 - 1e-9))


def dominance(split_seed_records: Sequence[Mapping] | None, field: str = "program_generations") -> dict:
    """``{"per_seed": [{split_seed, best_fixed: (exact, cost), dominated_by}], "dominated_seeds", "n_seeds"}``."""
    rows = []
    for s in split_seed_records or []:
        pooled = _pooled(s["records"], field)
        if BEST_FIXED not in pooled:
            continue
        dom = dominating(pooled)
        rows.append({"split_seed": s["split_seed"], "best_fixed_exact": pooled[BEST_FIXED][0],
                     "best_fixed_cost": pooled[BEST_FIXED][1], "dominated_by": dom,
                     "dominators": {p: {"exact": pooled[p][0], "cost": pooled[p][1]} for p in dom}})
    return {"cost_field": field, "per_seed": rows, "n_seeds": len(rows),
            "dominated_seeds": sum(1 for r in rows if r["dominated_by"])}


def max_losses_tolerated(n: int, margin: float, alpha: float = 0.05, wins: int = 0) -> int | None:
    """Largest L with the exact bound of (wins, L) at n >= -margin (None: even 0 losses fail)."""
    best = None
    for L in range(0, n + 1):
        lo = noninferiority_lower_bound(wins, L, n, alpha)
        if lo is None or lo < -margin - 1e-12:
            break
        best = L
    return best


def ni_tolerance(n: int, margin: float, alpha: float = 0.05) -> dict:
    """What a no-loss claim at n tolerates, and its power at per-case loss rates ``LOSS_RATES``."""
    from scipy.stats import binom
    L = max_losses_tolerated(n, margin, alpha)
    power = {f"{q:g}": (0.0 if L is None else float(binom.cdf(L, n, q))) for q in LOSS_RATES}
    return {"n": n, "margin": margin, "alpha": alpha, "max_losses_tolerated": L, "power_at_loss_rate": power}


def family_bound(families: Sequence[str], diffs: Sequence[float], alpha: float = 0.05) -> dict:
    """Cluster-robust (by family) one-sided lower bound at alpha / 2 of the mean per-case difference."""
    import numpy as np
    if len(diffs) < 2 or len(set(families)) < 2:
        return {"method": "cluster_robust_t", "lower_bound": None}
    d = np.asarray(diffs, dtype=float)
    if np.allclose(d, d[0]):
        return {"method": "cluster_robust_t", "lower_bound": float(d[0]), "assumes": FAMILY_ASSUMES}
    import statsmodels.api as sm
    codes = np.unique(np.asarray(families), return_inverse=True)[1]
    fit = sm.OLS(d, np.ones((len(d), 1))).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    lo = float(fit.conf_int(alpha=alpha)[0][0])  # two-sided at alpha = one-sided at alpha / 2
    return {"method": "cluster_robust_t", "lower_bound": lo, "assumes": FAMILY_ASSUMES}


CASE_ASSUMES = "cases independent (exact binomial, Clopper-Pearson at alpha/2 each side)"
FAMILY_ASSUMES = "families independent, cases within a family may be dependent (cluster-robust t, df = families - 1)"
