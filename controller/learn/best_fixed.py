"""The best fixed policy: the one fixed policy a careful user would pick from the training data.

Every learner is compared with it. It is chosen on the train and dev cases together (never on
test; in cross-validation on each fold's own train and dev families): the most cases right,
then the lowest cost per case in the run's unit, then registry order. Its outcomes are the
chosen policy's, under the name ``best_fixed``.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.registry import BEST_FIXED


class Renamed:
    """A policy acting exactly like ``inner`` under another name."""

    def __init__(self, inner, name: str):
        self.inner, self.name = inner, name

    def act(self, states):
        return self.inner.act(states)


def choose_best_fixed(env, fixed: Mapping[str, object], records: Sequence[dict], cost: str = "generations"
                      ) -> tuple[Renamed, dict]:
    """(``best_fixed`` policy, info) chosen on ``records`` (scored train + dev cases of ``env``).

    info: ``chosen``, ``criterion`` and each candidate's ``exact``, ``n`` and per-case ``cost``."""
    table, best = {}, None
    for i, (name, pol) in enumerate(fixed.items()):
        exact, n, per_case = env.right_and_cost(pol, records, cost)
        table[name] = {"exact": exact, "n": n, "cost": round(per_case, 4)}
        key = (exact, -round(per_case, 9), -i)
        if best is None or key > best[0]:
            best = (key, name)
    chosen = best[1] if best else None
    info = {"chosen": chosen, "unit": cost, "on": "train+dev",
            "criterion": "most cases right on train + dev, then the lowest cost per case, then registry order",
            "candidates": table}
    return Renamed(fixed[chosen], BEST_FIXED), info
