"""The report's lines for repeated cross-validation (``summary["split_seeds"]``, computed by
``controller.study.split_seeds``)."""
from __future__ import annotations

from typing import Mapping

from controller.env.cost import UNITS
from controller.study.split_seeds import holds_at, spread

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
           "| Policy | n | Exact | " + " | ".join(u.column for u in UNITS.values()) + " |",
           "|---|---|---|" + "---|" * len(UNITS)]
    for pol, sp in ss["spread"].items():
        out.append(f"| `{pol}` | {sp.get('n')} | {_rng(sp['exact'], 1)} | "
                   + " | ".join(_rng(sp.get(u.spread_field) or {}, u.digits) for u in UNITS.values()) + " |")
    out.append("")
    rows = []
    for pol, bases in (ss.get("differences") or {}).items():
        for base, row in bases.items():
            cells = [f"{_rng(row['accuracy_pp'], 1, True, ' pp')} ({_holds(row['accuracy_pp']['holds_at'])})"]
            cells += [f"{_rng(row[f], 0, True)} ({_holds(row[f]['holds_at'])})" if f in row else "n/a"
                      for f in (u.spread_field for u in UNITS.values())]
            rows.append(f"| `{pol}` | `{base}` | " + " | ".join(cells) + " |")
    if rows:
        out += ["Learned policy minus baseline over split seeds (accuracy in percentage points, costs as pooled "
                "totals; negative cost = cheaper), with the number of split seeds at which the difference is "
                "higher, equal and lower:", "",
                "| Policy | Baseline | Accuracy (pp) | " + " | ".join(u.column for u in UNITS.values()) + " |",
                "|---|---|---|" + "---|" * len(UNITS), *rows, ""]
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
