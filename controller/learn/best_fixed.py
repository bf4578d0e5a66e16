"""The best fixed policy: the one fixed policy a careful user would pick from the training data.

Every learner is compared with it. It is chosen on the train and dev cases together (never on
test; in cross-validation on each fold's own train and dev families): **the cheapest fixed policy
whose accuracy is within ``margin`` (the study's non-inferiority margin, a share of cases) of the
most accurate one**, ties to the most cases right, then registry order. Why: "most right, then
cost" keeps always-tool wherever it wins one case more, and a cheaper policy at (nearly) the same
accuracy then dominates it pooled; the claim under test is "cheaper at no loss beyond the
margin", so the comparator is the cheapest policy meeting that very bar. No fixed policy
dominates the chosen one on train + dev (a dominating one would be as accurate, hence within the
margin, and cheaper). Its outcomes are the chosen policy's, under the name ``best_fixed``.
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


def choose_best_fixed(env, fixed: Mapping[str, object], records: Sequence[dict], cost: str = "generations",
                      margin: float = 0.02) -> tuple[Renamed, dict]:
    """(``best_fixed`` policy, info) chosen on ``records`` (scored train + dev cases of ``env``).

    info: ``chosen``, ``criterion``, ``margin``, ``most_accurate`` and each candidate's ``exact``,
    ``n``, per-case ``cost`` and whether it was ``eligible`` (within the margin)."""
    table = {}
    for name, pol in fixed.items():
        exact, n, per_case = env.right_and_cost(pol, records, cost)
        table[name] = {"exact": exact, "n": n, "cost": round(per_case, 4), "_cost": per_case}
    top = max(table, key=lambda p: (table[p]["exact"], -table[p]["_cost"]), default=None)
    chosen = None
    if top is not None:
        n = max(table[top]["n"], 1)
        for name, row in table.items():
            row["eligible"] = row["exact"] / n >= table[top]["exact"] / n - margin - 1e-12
        order = list(table)
        chosen = min((p for p in table if table[p]["eligible"]),
                     key=lambda p: (round(table[p]["_cost"], 9), -table[p]["exact"], order.index(p)))
    for row in table.values():
        row.pop("_cost")
    info = {"chosen": chosen, "unit": cost, "on": "train+dev", "margin": margin, "most_accurate": top,
            "criterion": f"the cheapest fixed policy on train + dev whose accuracy is within {margin:g} (the "
                         "non-inferiority margin) of the most accurate, then most cases right, then registry order: "
                         "not dominated on train + dev, and the bar the no-loss claim sets",
            "candidates": table}
    return Renamed(fixed[chosen], BEST_FIXED), info
