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

# per-case outcome fields kept in a split seed's records (the costs in every unit the study reports)
RECORD_FIELDS = ("policy", "case_id", "family", "fold", "correct", "direct_correct", "source", "actions",
                 "program_generations", "repair_actions", "generated_tokens", "search_nodes", "work")
COST_UNITS = ("program_generations", "generated_tokens", "search_nodes")
BASELINES = ("always_tool_visible", "direct_only")
NOT_LEARNED = ("direct_only", "always_tool_visible", "visible_disagree_rule", "write_once", "oracle_seq",
               "cross_check", "resample_visible")


def split_seed_list(cfg) -> list[int]:
    """The fold seeds of a run: ``cfg.split_seed`` .. ``cfg.split_seed + cfg.split_seeds - 1``."""
    return [cfg.split_seed + i for i in range(max(1, cfg.split_seeds))]


def outcome_records(pooled: Mapping[str, Sequence[Mapping]], split_seed: int) -> list[dict]:
    """Flatten ``cv.run_cv``'s pooled outcomes into per-case records tagged with the split seed."""
    return [{"split_seed": split_seed, **{k: o.get(k) for k in RECORD_FIELDS}, "policy": policy}
            for policy, outs in pooled.items() for o in outs]


def split_seed_outcomes(records: Sequence[dict], cfg, log: Callable = print, first_cv: Mapping | None = None
                        ) -> list[dict]:
    """Per split seed: ``{"split_seed", "folds" (test families per fold), "records"}``.

    ``records`` holds one outcome record per (policy, scored case) (see ``RECORD_FIELDS``); the
    CV of the first split seed can be passed in (``first_cv``, ``run_cv``'s result with its
    ``pooled_outcomes``) so it is not computed twice.
    """
    from .cv import run_cv

    out = []
    for s in split_seed_list(cfg):
        cv = first_cv if (first_cv is not None and s == cfg.split_seed) else run_cv(records, cfg, log=log,
                                                                                      fold_seed=s)
        out.append({"split_seed": s, "folds": [f["test_families"] for f in cv["folds"]],
                    "records": outcome_records(cv["pooled_outcomes"], s)})
    return out


# ---- statistics over split seeds (pure) ------------------------------------------------------

def pooled_result(recs: Sequence[Mapping]) -> dict:
    """One policy's pooled CV result at one split seed: n, exact, accuracy, costs (scored cases)."""
    scored = [r for r in recs if r.get("correct") is not None]
    n, exact = len(scored), sum(1 for r in scored if r["correct"])
    out = {"n": n, "exact": exact, "accuracy": exact / n if n else None,
           "n_families": len({r["family"] for r in scored})}
    for unit in COST_UNITS:
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
    return [p for p in policies if p not in NOT_LEARNED]


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
    fields = ("exact", "accuracy", *COST_UNITS)
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
            for unit in COST_UNITS:
                d = [res[pol][unit] - res[base][unit] if pol in res and base in res else None for res in results]
                row[unit] = spread(d) | {"holds_at": holds_at(d)}
            out["differences"][pol][base] = row
    return out


# ---- report lines --------------------------------------------------------------------------------

def _rng(sp: Mapping, digits: int = 0, sign: bool = False, unit: str = "") -> str:
    """``mean [min, max]`` over split seeds, or one number when every split seed gave it."""
    if sp.get("mean") is None:
        return "n/a"
    f = (lambda x: f"{x:+,.{digits}f}") if sign else (lambda x: f"{x:,.{digits}f}")
    if sp["min"] == sp["max"]:
        return f"{f(sp['min'])}{unit} at every split seed"
    return f"{f(sp['mean'])}{unit} [{f(sp['min'])}, {f(sp['max'])}]"


def _holds(h: Mapping) -> str:
    return f"higher {h['higher']}, equal {h['equal']}, lower {h['lower']} of {h['of']}"


def render_split_seeds(summary: Mapping) -> list[str]:
    """Markdown lines for the report's cross-validation section: the spread over split seeds."""
    ss = summary.get("split_seeds") or {}
    if not ss.get("spread"):
        return []
    n = ss.get("n_split_seeds", len(ss.get("seeds", [])))
    out = [f"Spread over {n} split seeds (fold assignments {', '.join(map(str, ss.get('seeds', [])))}; "
           "each seeds the folds from the family names only; every scored case held out once per split seed). "
           "Mean [min, max] over split seeds of the pooled totals:", "",
           "| Policy | n | Exact | Program generations | Completion tokens | Search nodes |",
           "|---|---|---|---|---|---|"]
    for pol, sp in ss["spread"].items():
        out.append(f"| `{pol}` | {sp.get('n')} | {_rng(sp['exact'], 1)} | {_rng(sp['program_generations'], 1)} | "
                   f"{_rng(sp['generated_tokens'], 0)} | {_rng(sp['search_nodes'], 0)} |")
    out.append("")
    rows = []
    for pol, bases in (ss.get("differences") or {}).items():
        for base, row in bases.items():
            cells = [f"{_rng(row['accuracy_pp'], 1, True, ' pp')} ({_holds(row['accuracy_pp']['holds_at'])})"]
            cells += [f"{_rng(row[u], 0, True)} ({_holds(row[u]['holds_at'])})" for u in COST_UNITS]
            rows.append(f"| `{pol}` | `{base}` | " + " | ".join(cells) + " |")
    if rows:
        out += ["Learned policy minus baseline over split seeds (accuracy in percentage points, costs as pooled "
                "totals; negative cost = cheaper), with the number of split seeds at which the difference is "
                "higher, equal and lower:", "",
                "| Policy | Baseline | Accuracy (pp) | Program generations | Completion tokens | Search nodes |",
                "|---|---|---|---|---|---|", *rows, ""]
    return out


def split_seed_note(summary: Mapping, policy: str, baseline: str) -> str:
    """The accuracy difference of ``policy`` minus ``baseline`` over split seeds, for a CV claim's row."""
    ss = summary.get("split_seeds") or {}
    per = ss.get("per_seed") or []
    if len(per) < 2:
        return "one split seed (`--split-seeds N`)"
    acc = [100 * (p["pooled"][policy]["accuracy"] - p["pooled"][baseline]["accuracy"])
           if policy in p["pooled"] and baseline in p["pooled"]
           and None not in (p["pooled"][policy]["accuracy"], p["pooled"][baseline]["accuracy"]) else None
           for p in per]
    gens = [p["pooled"][policy]["program_generations"] - p["pooled"][baseline]["program_generations"]
            if policy in p["pooled"] and baseline in p["pooled"] else None for p in per]
    return (f"{_rng(spread(acc), 1, True, ' pp')} ({_holds(holds_at(acc))}); "
            f"gens {_rng(spread(gens), 0, True)} ({_holds(holds_at(gens))})")
