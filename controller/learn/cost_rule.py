"""The cost-sensitive rule: a classifier per decision point trained on what each choice is worth,
with its price of tools chosen on dev under an accuracy guard (risk control).

For each price ``lam`` of the grid (value = right - lam x cost per case, in the run's unit) the
oracle's labels and regret weights at that price train one rule (``rule.select_rule``: every
candidate model, the best on dev). A state weighs what a wrong choice there loses in that value,
so a state where a repair is wasted weighs lam per generation, not a fixed tie weight.
Risk control: among the prices whose rule keeps dev accuracy within ``margin`` of the guard (the
accuracy of always-tool on dev), the cheapest on dev is kept (ties: more right, then the smaller
price); when none keeps it, the most accurate. The dev split is small (a few families), so the
guard is noisy: the held-out and cross-validated results are what count.
"""
from __future__ import annotations

from typing import Sequence

from controller.env.policies import AlwaysTool
from controller.learn.rule import select_rule
from controller.learn.training import labelled

LAMBDAS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def dev_cost(env, policy, records: Sequence[dict], cost: str) -> tuple[float, float]:
    """(accuracy, cost per case in ``cost``'s unit) on scored ``records``."""
    right, n, per_case = env.right_and_cost(policy, records, cost)
    return (right / n if n else 0.0), per_case


def fit_cost_rule(env, train: Sequence[dict], dev: Sequence[dict], *, guard: float | None, margin: float = 0.02,
                  lambdas: Sequence[float] = LAMBDAS, cost: str = "generations", seed: int = 0,
                  name: str = "learned_rule", commit_any: bool = True):
    """(policy, info): the risk-controlled cost-sensitive rule and its choice table.

    ``guard``: the dev accuracy to stay within ``margin`` of (None: no guard, the cheapest
    price with the best dev accuracy is kept)."""
    pairs = env.chain_pairs(train)  # the same states at every price: built once
    rows, fitted = [], {}
    for lam in lambdas:
        data = labelled(pairs, lam, cost, commit_any=commit_any, tie_weight=0.0)
        pol, table = select_rule(data, dev, env.score, seed=seed, name=name)
        acc, c = dev_cost(env, pol, dev, cost)
        fitted[lam] = (pol, data)
        rows.append({"lambda": lam, "model": pol.model_name, "dev_accuracy": acc, "dev_cost": round(c, 4),
                     "n_train_states": len(data), "candidates": table})
    ok = [r for r in rows if guard is None or r["dev_accuracy"] >= guard - margin - 1e-12]
    if guard is None:
        top = max(r["dev_accuracy"] for r in rows)
        ok = [r for r in rows if r["dev_accuracy"] >= top - 1e-12]
    pick = (min(ok, key=lambda r: (r["dev_cost"], -r["dev_accuracy"], r["lambda"])) if ok
            else max(rows, key=lambda r: (r["dev_accuracy"], -r["dev_cost"], -r["lambda"])))
    pol, data = fitted[pick["lambda"]]
    info = {"lambda": pick["lambda"], "model": pick["model"], "guard_dev_accuracy": guard, "margin": margin,
            "guard_met": bool(ok), "unit": cost, "lambdas": rows,
            "training": "full_state_bc; labels and regret weights at the chosen price of tools "
                        "(right - lambda x cost); price chosen on dev under the accuracy guard"}
    return pol, data, info


def fit_learned_rule(env, train: Sequence[dict], dev: Sequence[dict], cfg, *, name: str = "learned_rule"):
    """``fit_cost_rule`` with the study's settings (``cfg``: an ``ExperimentConfig``): the guard
    is always-tool's dev accuracy, the margin ``cfg.margin``, the prices ``cfg.rule_lambdas``."""
    guard = dev_cost(env, AlwaysTool(), dev, cfg.cost)[0] if dev else None
    return fit_cost_rule(env, train, dev, guard=guard, margin=cfg.margin, lambdas=cfg.rule_lambdas,
                         cost=cfg.cost, seed=cfg.seed, name=name)
