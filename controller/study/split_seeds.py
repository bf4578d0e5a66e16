"""Repeated family cross-validation: the same CV under several fold assignments (``--split-seeds N``).

One fold assignment is one draw of which families are tested together; a pooled CV result can
move when the draw changes. ``split_seed_outcomes`` reruns ``cv.run_cv`` with fold seeds
``split_seed .. split_seed + N - 1`` (each assignment depends on its seed and the family names
only, like every split) and returns, per split seed, the pooled per-case outcome records: every
scored case is held out exactly once per split seed, so each list holds one record per (policy,
case). Later code (hypotheses, routing baselines, new null policies) can recompute any statistic
per split seed from these records alone.

``spread_summary`` turns them into the summary's ``split_seeds``: per split seed the pooled
result of each policy (exact, n, program generations, completion tokens, search nodes), the
spread of each over split seeds (mean, min, max), and for every learned policy its difference
from ``always_tool_visible`` and ``direct_only`` (accuracy in percentage points, cost in each
unit) with the number of split seeds at which it is higher, equal and lower. The learners are
refit per fold with the base learner seed; only the fold assignment changes between split seeds.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from controller.env.cost import UNITS
from controller.env.registry import role
from controller.study.cv import run_cv

# per-case outcome fields kept in a split seed's records (the costs in every unit the study reports)
RECORD_FIELDS = ("policy", "case_id", "family", "fold", "correct", "direct_correct", "source", "actions",
                 "program_generations", "repair_actions", "generated_tokens", "search_nodes", "work")
COST_UNITS = tuple(u.spread_field for u in UNITS.values())  # the built-in units' spread fields


def cost_fields() -> tuple[str, ...]:
    """The outcome field each registered cost unit's split-seed spread sums (read at use)."""
    return tuple(u.spread_field for u in UNITS.values())
BASELINES = ("best_fixed", "always_tool_visible", "direct_only")



def split_seed_list(cfg) -> list[int]:
    """The fold seeds of a run: ``cfg.split_seed`` .. ``cfg.split_seed + cfg.split_seeds - 1``."""
    return [cfg.split_seed + i for i in range(max(1, cfg.split_seeds))]


def outcome_records(pooled: Mapping[str, Sequence[Mapping]], split_seed: int) -> list[dict]:
    """Flatten ``cv.run_cv``'s pooled outcomes into per-case records tagged with the split seed."""
    keys = RECORD_FIELDS + tuple(f for f in cost_fields() if f not in RECORD_FIELDS)
    return [{"split_seed": split_seed, **{k: o.get(k) for k in keys}, "policy": policy}
            for policy, outs in pooled.items() for o in outs]


def split_seed_outcomes(records: Sequence[dict], cfg, log: Callable = print, first_cv=None) -> list[dict]:
    """Per split seed: ``{"split_seed", "folds" (test families per fold), "records"}``.

    ``records`` holds one outcome record per (policy, scored case) (see ``RECORD_FIELDS``); the
    CV of the first split seed can be passed in (``first_cv``, ``run_cv``'s ``CVResult``) so it is
    not computed twice.
    """
    out = []
    for s in split_seed_list(cfg):
        cv = first_cv if (first_cv is not None and s == cfg.split_seed) else run_cv(records, cfg, log=log,
                                                                                      fold_seed=s)
        out.append({"split_seed": s, "folds": [f["test_families"] for f in cv.summary["folds"]],
                    "records": outcome_records(cv.pooled, s)})
    return out


def pooled_result(recs: Sequence[Mapping]) -> dict:
    """One policy's pooled CV result at one split seed: n, exact, accuracy, costs (scored cases)."""
    scored = [r for r in recs if r.get("correct") is not None]
    n, exact = len(scored), sum(1 for r in scored if r["correct"])
    out = {"n": n, "exact": exact, "accuracy": exact / n if n else None,
           "n_families": len({r["family"] for r in scored})}
    for unit in cost_fields():
        out[unit] = sum(int(r.get(unit) or 0) for r in recs)
    return out


def spread(values: Sequence[float | None]) -> dict:
    """``{"values", "mean", "min", "max"}`` over split seeds (None values are skipped)."""
    vals = [v for v in values if v is not None]
    return {"values": list(values), "mean": round(sum(vals) / len(vals), 6) if vals else None,
            "min": min(vals, default=None), "max": max(vals, default=None)}


def holds_at(diffs: Sequence[float | None]) -> dict:
    """At how many split seeds a difference is higher than, equal to and lower than zero."""
    d = [x for x in diffs if x is not None]
    return {"higher": sum(1 for x in d if x > 0), "equal": sum(1 for x in d if x == 0),
            "lower": sum(1 for x in d if x < 0), "of": len(d)}


def learned_policies(policies: Sequence[str]) -> list[str]:
    return [p for p in policies if role(p) not in ("fixed", "oracle")]


def spread_summary(per_seed: Sequence[Mapping], baselines: Sequence[str] = BASELINES) -> dict:
    """The summary's ``split_seeds`` from ``split_seed_outcomes``' list (see the module docstring)."""
    seeds = [p["split_seed"] for p in per_seed]
    results = []
    for p in per_seed:
        by_policy: dict[str, list] = {}
        for r in p["records"]:
            by_policy.setdefault(r["policy"], []).append(r)
        results.append({k: pooled_result(v) for k, v in by_policy.items()})
    policies = [k for k in results[0]] if results else []
    fields = ("exact", "accuracy", *cost_fields())
    out = {
        "seeds": seeds,
        "n_split_seeds": len(seeds),
        "per_seed": [{"split_seed": s, "folds": p["folds"], "pooled": res}
                     for s, p, res in zip(seeds, per_seed, results)],
        "spread": {pol: {f: spread([res[pol][f] if pol in res else None for res in results]) for f in fields}
                   | {"n": results[0][pol]["n"]} for pol in policies},
        "differences": {},
    }
    for pol in learned_policies(policies):
        out["differences"][pol] = {}
        for base in baselines:
            if base not in policies:
                continue
            row = {}
            acc = [100 * (res[pol]["accuracy"] - res[base]["accuracy"])
                   if pol in res and base in res and res[pol]["accuracy"] is not None
                   and res[base]["accuracy"] is not None else None for res in results]
            row["accuracy_pp"] = spread([round(a, 6) if a is not None else None for a in acc]) | {"holds_at": holds_at(acc)}
            for unit in cost_fields():
                d = [res[pol][unit] - res[base][unit] if pol in res and base in res else None for res in results]
                row[unit] = spread(d) | {"holds_at": holds_at(d)}
            out["differences"][pol][base] = row
    return out
