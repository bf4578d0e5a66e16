"""Power of a family-level test: the smallest effect it could have found with the families at hand.

A null result means little unless it says what it could have detected. For one hypothesis with
per-case differences ``d`` in F families, the simulation (seeded, vectorised numpy):

1. builds a null world from the data: each family's summed difference minus its share of the
   observed mean (the residual), so the spread between families is the observed one and the
   mean is 0; each simulated study draws F families with replacement (keeping each family's
   number of cases) and gives each residual a random sign;
2. adds an effect ``delta`` per case (``delta * cases`` to each family's sum);
3. runs the same two-sided sign-flip test as ``stats.family_sign_flip_p`` (every sign pattern
   when 2^F <= ``EXACT_MAX``, else a fixed set of random patterns) at level ``alpha``.

The minimum detectable effect (MDE) is the smallest ``delta`` on a grid whose rejection rate
reaches ``power`` (0.8). When the observed families do not spread at all, the test's resolution
is set by F alone: the smallest p the exact sign-flip test over F families can reach is 2 / 2^F,
so with fewer than log2(2 / alpha) families (6 at alpha = 0.05) nothing is detectable at any
effect. (Above 20 families the study's test is Monte Carlo with 9,999 patterns, floor 1e-4.)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from controller.study.stats import _family_arrays, min_attainable_p, sign_flip_method

EXACT_MAX = 4096
RANDOM_FLIPS = 2000


def _sign_matrix(f: int, rng) -> np.ndarray:
    if 2 ** f <= EXACT_MAX:
        codes = np.arange(2 ** f)[:, None] >> np.arange(f)[None, :] & 1
        return (1 - 2 * codes).astype(float)
    return rng.choice([-1.0, 1.0], size=(RANDOM_FLIPS, f))


def rejection_rate(sums: np.ndarray, counts: np.ndarray, delta: float, *, alpha: float = 0.05, sims: int = 200,
                   seed: int = 0) -> float:
    """Share of simulated studies (see module doc) whose sign-flip p is below ``alpha``."""
    rng = np.random.default_rng(seed)
    f = len(sums)
    if f < 2:
        return 0.0
    resid = sums - counts * (sums.sum() / counts.sum())
    pick = rng.integers(0, f, size=(sims, f))
    signs = rng.choice([-1.0, 1.0], size=(sims, f))
    world = resid[pick] * signs + delta * counts[pick]  # sims x F family sums
    flips = _sign_matrix(f, rng)  # R x F
    t_obs = np.abs(world.sum(axis=1))  # sims
    t_perm = np.abs(flips @ world.T)  # R x sims
    exact = 2 ** f <= EXACT_MAX
    ge = (t_perm >= t_obs[None, :] - 1e-9).sum(axis=0)
    p = ge / flips.shape[0] if exact else (ge + 1) / (flips.shape[0] + 1)
    return float(np.mean(p < alpha))


def min_detectable_effect(families: Sequence[str], diffs: Sequence[float], *, alpha: float = 0.05,
                          power: float = 0.8, scale: float = 1.0, grid: int = 25, sims: int = 200,
                          seed: int = 0) -> dict:
    """MDE per case (same unit as ``diffs``) on a grid up to ``scale``; None when even ``scale`` is
    not detected with the given power. (No power at the observed effect: post-hoc power is a
    function of the p-value and adds nothing to it.) ``min_attainable_p`` is the smallest p the
    study's test (``stats.family_sign_flip_p``) can return when all F families differ: 2 / 2^F when
    it enumerates every sign pattern (F <= 20), 1 / (B + 1) with B random patterns above."""
    sums, counts = _family_arrays(families, diffs)
    f = len(sums)
    floor = min_attainable_p(f)
    out = {"n_families": f, "alpha": alpha, "power": power, "sims": sims, "min_attainable_p": floor,
           "test_method": sign_flip_method(f), "mde": None, "grid_max": scale}
    if f < 2 or floor >= alpha:
        out["note"] = f"{f} families: the sign-flip test cannot reach p < {alpha} whatever the effect"
        return out
    observed = float(np.sum(diffs) / max(len(diffs), 1))
    out["observed_effect"] = observed
    rate = lambda d: rejection_rate(sums, counts, d, alpha=alpha, sims=sims, seed=seed)
    lo = 0.0
    for delta in np.linspace(scale / grid, scale, grid):
        if rate(float(delta)) >= power:
            hi = float(delta)
            for _ in range(6):  # bisect between the last grid point that failed and this one
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if rate(mid) >= power else (mid, hi)
            out["mde"] = hi
            break
        lo = float(delta)
    return out
