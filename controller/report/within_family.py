"""The report's secondary section: the value of the task type (``controller.study.within_family``).

Placed right after the answer, labelled secondary: the family-disjoint primary answers a new
user's question; this one answers "how much would a controller gain once it has seen this kind of
task", side by side with the primary, policy by policy, and the ceiling computed the same way.
"""
from __future__ import annotations

from typing import Mapping

from controller.env.registry import BEST_FIXED, ORACLE, ordered, role
from controller.report.fmt import table
from controller.study.within_family import gap_shares

LEAD = ("direct_only", "always_tool_visible", BEST_FIXED)


def _share(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _cells(r: Mapping | None) -> list:
    if not r:
        return ["n/a"] * 4
    return [f"{r['exact']}/{r['n']}", r["program_generations"], _share(r.get("accuracy_gap_share")),
            _share(r.get("generation_gap_share"))]


def within_family_md(s: Mapping) -> list[str]:
    w = s.get("within_family")
    if not w:
        return []
    out = ["## Secondary: the value of the task type (every family seen in training)", "",
           "*Secondary analysis; it does not replace the family-disjoint answer above.* Case-level cross-validation "
           f"within families: each family's scored cases dealt over {w['k']} folds (seeded by the split seed "
           f"{w['split_seed']} and the family name), fold i+1 as dev, the rest train, the same fixed policies, best fixed "
           "policy, oracle and learners as the family-disjoint CV (`controller/study/within_family.py`). It answers how "
           "much a controller would gain once it has seen this kind of task.", ""]
    if w.get("reason"):
        return out + [f"Not run: {w['reason']} ({w['families_left_out']} families).", ""]
    notes = [f"{w['n']} cases of {w['families']} families; {w['test_family_in_training']} of {w['n']} test cases have "
             "their family in their fold's training cases"]
    if w["families_left_out"]:
        notes.append(f"{w['families_left_out']} families with fewer than {w['min_cases']} scored cases left out")
    if w.get("lora"):
        notes.append(f"the LoRA policies are {w['lora']}")
    out += ["; ".join(notes) + ".", ""]
    primary = gap_shares((s.get("cv") or {}).get("pooled") or {})
    second = w.get("gap_shares") or {}
    names = [p for p in (*LEAD, *ordered([p for p in second if role(p) in ("learned", "null", "control")]), ORACLE)
             if p in second]
    rows = [[f"`{p}`", *_cells(primary.get(p)), *_cells(second.get(p))] for p in names]
    out += ["Share of the always-tool -> oracle gap each policy recovers, in cases right and in program generations "
            "saved (pooled; 100% = the oracle, 0% = always-tool):", ""]
    out += table(["policy", "family-disjoint: right", "generations", "accuracy gap", "generation gap",
                  "within families: right", "generations", "accuracy gap", "generation gap"], rows)
    c = w.get("ceiling") or {}
    if c.get("sentence"):
        out += [f"The ceiling computed the same way (case folds): {c['sentence']}", ""]
    return out
