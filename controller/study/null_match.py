"""Is a learner a null in disguise? Per learner, how many cases it takes exactly a null's actions on.

A learned controller whose actions equal the majority-action null's, always-tool's, direct-only's
or the best fixed policy's on every case learned nothing a reader should credit it with: the report
names it as that null (``equals``). Read from the main comparison's outcomes (pooled
cross-validation when it ran, else the test split), case by case: the same action sequence on the
same case. Pure function of the outcomes; no hidden field is read.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.registry import BEST_FIXED, role

NULLS = ("majority_action", "always_tool_visible", "direct_only", BEST_FIXED)


def _actions(outs: Sequence[Mapping]) -> dict[str, tuple]:
    return {o["case_id"]: tuple(o.get("actions") or ()) for o in outs}


def null_matches(by_split: Mapping[str, Mapping[str, Sequence[Mapping]]]) -> dict:
    """``{"split", "learners": {learner: {"n", "same": {null: cases with identical actions}, "equals": [...]}}}``."""
    split = "cv_pooled" if by_split.get("cv_pooled") else "test"
    outs = by_split.get(split) or {}
    nulls = {p: _actions(outs[p]) for p in NULLS if outs.get(p)}
    learners = {}
    for name, o in outs.items():
        if role(name) != "learned" or not o:
            continue
        mine = _actions(o)
        same = {p: sum(1 for cid, a in mine.items() if acts.get(cid) == a) for p, acts in nulls.items()}
        learners[name] = {"n": len(mine), "same": same, "equals": [p for p, k in same.items() if k == len(mine)]}
    return {"split": split, "learners": learners}


def null_words(m: Mapping) -> list[str]:
    """One sentence per learner that equals a null on every case (none otherwise)."""
    out = []
    for name, r in (m.get("learners") or {}).items():
        if r["equals"]:
            names = " = ".join(f"`{p}`" for p in r["equals"])
            out.append(f"`{name}` learned a null: it takes {names}'s actions on {r['n']}/{r['n']} cases "
                       f"({m['split'].replace('_', ' ')}); its results are that null's, not a learned controller's.")
    return out
