"""The nested rule: the learned rule's model AND price of tools chosen by nested family
cross-validation on the split's train + dev families together (exploratory, not a registered
hypothesis).

The learned rule (``cost_rule.fit_learned_rule``) chooses its model and price on the dev split
alone: a few families, so its choice jumps from fold to fold. Here the train + dev families are
dealt into ``cfg.nested_folds`` family-grouped inner folds (``cases.make_cv_folds``, seeded by the
learner seed ``cfg.seed``: deterministic, from family names only). Every candidate, each model of
``rule.CANDIDATES`` at each price of ``cfg.rule_lambdas``, is fitted on all inner folds but one
(the oracle's labels and regret weights at that price, ``training.labelled``; ``rule.fit_rule``)
and simulated on the held-out inner fold; its right answers and cost are pooled over the inner
folds. The risk-controlled rule is the learned rule's, on those pooled results: among the
candidates whose pooled inner accuracy is within ``cfg.margin`` of always-tool's pooled inner
accuracy, the cheapest; when none is, the most accurate. Ties, in order: the cheaper (pooled cost
per case), more cases right, the smaller price, the simpler model (``CANDIDATES`` order: stump,
tree_depth2, tree_depth3, logistic, forest). The chosen candidate is then refitted once on all of
train + dev. Test records are never read (``Fitting`` holds train and dev only).

Cost: with F inner folds, F x |CANDIDATES| x |prices| fits and inner simulations (140 at the
defaults), against the learned rule's |CANDIDATES| x |prices| (35): see docs/learners.md.
"""
from __future__ import annotations

import time
from typing import Sequence

from cases import make_cv_folds
from controller.env.policies import AlwaysTool
from controller.learn.rule import CANDIDATES, fit_rule
from controller.learn.training import TrainingSet, labelled

NAME = "nested_rule"
TIE_ORDER = ("the cheaper (pooled inner cost per case), more cases right, the smaller price, "
             "the simpler model (" + ", ".join(CANDIDATES) + ")")


def _join(parts: Sequence[TrainingSet]) -> TrainingSet:
    """One training set from per-record ones, in the given order: ``labelled`` over the records'
    pairs in that order gives exactly this (each record's labels depend on that record alone)."""
    out = TrainingSet()
    for p in parts:
        out.states += p.states
        out.labels += p.labels
        out.weights += p.weights
    return out


def inner_folds(records: Sequence[dict], k: int, seed: int) -> list[list[str]]:
    """The family-grouped inner folds of ``records`` (at most one fold per family)."""
    fams = sorted({r["family"] for r in records})
    return make_cv_folds(fams, k=min(k, len(fams)), seed=seed)


def choose(rows: Sequence[dict], guard: float, margin: float) -> tuple[dict, bool]:
    """(the chosen row, whether any row met the guard): the cheapest row whose ``accuracy`` is
    within ``margin`` of ``guard``, else the most accurate; ties as ``TIE_ORDER`` says."""
    order = {m: i for i, m in enumerate(CANDIDATES)}
    ok = [r for r in rows if r["accuracy"] >= guard - margin - 1e-12]
    tie = lambda r: (r["lambda"], order.get(r["model"], len(order)))  # noqa: E731
    if ok:
        return min(ok, key=lambda r: (round(r["cost"], 9), -r["right"], *tie(r))), True
    return min(rows, key=lambda r: (-r["right"], round(r["cost"], 9), *tie(r))), False


def fit_nested_rule(env, train: Sequence[dict], dev: Sequence[dict], cfg, *, name: str = NAME):
    """(policy, info) or (None, info) when train + dev hold fewer than two families.

    ``cfg``: an ``ExperimentConfig`` (``nested_folds``, ``rule_lambdas``, ``margin``, ``cost``, ``seed``)."""
    # one pool in a fixed order: which of train + dev a family was called does not move the choice
    pool = sorted((r for r in (*train, *dev) if r["hidden"]["answer"] is not None),
                  key=lambda r: (r["family"], r["case_id"]))
    fams = sorted({r["family"] for r in pool})
    info = {"on": "train+dev", "margin": cfg.margin, "unit": cfg.cost, "inner_seed": cfg.seed, "tie_order": TIE_ORDER}
    if len(fams) < 2:
        return None, {**info, "skipped": f"train + dev hold {len(fams)} family: no inner cross-validation"}
    folds = inner_folds(pool, cfg.nested_folds, cfg.seed)
    fold_of = {f: j for j, fam in enumerate(folds) for f in fam}
    held = [[r for r in pool if fold_of[r["family"]] == j] for j in range(len(folds))]
    guard_right = sum(env.right_and_cost(AlwaysTool(), h, cfg.cost)[0] for h in held)
    n = len(pool)
    guard = guard_right / n
    pairs = {id(r): env.chain_pairs([r]) for r in pool}  # the same states at every price: built once
    rows, parts_at = [], {}
    for lam in cfg.rule_lambdas:
        parts = [labelled(pairs[id(r)], lam, cfg.cost, commit_any=True, tie_weight=0.0) for r in pool]
        parts_at[lam] = parts
        tally = {m: [0, 0.0] for m in CANDIDATES}  # model -> [right, cost summed over cases]
        for j, recs in enumerate(held):
            data = _join([p for r, p in zip(pool, parts) if fold_of[r["family"]] != j])
            for m in CANDIDATES:
                right, k, per_case = env.right_and_cost(fit_rule(data, m, cfg.seed, name=name), recs, cfg.cost)
                tally[m][0] += right
                tally[m][1] += per_case * k
        rows += [{"model": m, "lambda": lam, "right": r, "n": n, "accuracy": r / n, "cost": round(c / n, 4)}
                 for m, (r, c) in tally.items()]
    pick, met = choose(rows, guard, cfg.margin)
    data = _join(parts_at[pick["lambda"]])
    pol = fit_rule(data, pick["model"], cfg.seed, name=name)
    info.update(model=pick["model"], **{"lambda": pick["lambda"]}, inner_accuracy=pick["accuracy"],
                inner_cost=pick["cost"], guard_inner_accuracy=guard, guard_met=met, n_inner_folds=len(folds),
                inner_fold_families=[len(f) for f in folds], n_cases=n, n_families=len(fams),
                n_train_states=len(data), n_candidates=len(rows),
                n_eligible=sum(r["accuracy"] >= guard - cfg.margin - 1e-12 for r in rows), candidates=rows)
    return pol, info


def fit(ctx) -> dict:
    """The learner entry's fit (``registry.Learner``): off unless ``cfg.nested_rule``."""
    cfg = ctx.cfg
    if not getattr(cfg, "nested_rule", False):
        return {}
    t0 = time.monotonic()
    pol, info = fit_nested_rule(ctx.env, ctx.train, ctx.dev, cfg)
    if ctx.fold is not None:  # a fold's record: its choice, beside the learned rule's rule_model / rule_lambda
        ctx.info[NAME] = {k: info.get(k) for k in ("model", "lambda", "inner_accuracy", "inner_cost",
                                                    "guard_inner_accuracy", "guard_met", "n_inner_folds",
                                                    "skipped") if k in info}
    else:
        ctx.info[NAME] = {**info, "description": pol.describe() if pol is not None else None}
        ctx.timing["nested_rule_s"] = round(time.monotonic() - t0, 2)
    return {NAME: pol} if pol is not None else {}
