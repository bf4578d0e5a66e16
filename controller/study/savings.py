"""Where a policy's saving comes from: each case's actions against always-tool's on the same case.

The first step at which a policy leaves always-tool's path names the case's category:

* ``direct_instead_of_write``: it answered directly where always-tool writes the first program;
* ``stop_before_fix_<r>``: it answered directly where always-tool makes repair ``r``;
* ``resample_instead_of_fix_<r>``: it drew a new program where always-tool makes repair ``r``;
* ``direct_over_passing_program``: it answered directly where always-tool commits a passing program;
* ``more_tools``: it went on where always-tool stops (a repair or sample always-tool does not make);
* ``other``: any other departure (another commit choice at K > 1);
* ``same``: the same actions.

Per category: cases, program generations saved (always-tool's minus the policy's; negative when it
spent more), and the cases it lost (always-tool right, it wrong) and gained.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.registry import ORACLE

REFERENCE = "always_tool_visible"


def category(actions: Sequence[str], reference: Sequence[str]) -> str:
    for i, (a, b) in enumerate(zip(actions, reference)):
        if a == b:
            continue
        repair = sum(1 for x in reference[:i] if x == "FIX") + 1
        if b == "WRITE":
            return "direct_instead_of_write" if a == "DIRECT" else "other"
        if b == "FIX":
            return {"DIRECT": f"stop_before_fix_{repair}", "RESAMPLE": f"resample_instead_of_fix_{repair}"}.get(a, "other")
        if b.startswith("PROGRAM"):
            return "direct_over_passing_program" if a == "DIRECT" else "other"
        if b == "DIRECT":
            return "more_tools" if a in ("FIX", "RESAMPLE", "WRITE") else "other"
        return "other"
    return "same" if len(actions) == len(reference) else "other"


def savings(outcomes: Sequence[Mapping], reference: Sequence[Mapping]) -> dict:
    """``{category: {cases, generations_saved, right_lost, right_gained}}`` over the scored cases
    both outcome lists share."""
    ref = {o["case_id"]: o for o in reference if o.get("correct") is not None}
    out: dict = {}
    for o in outcomes:
        r = ref.get(o["case_id"])
        if r is None or o.get("correct") is None:
            continue
        row = out.setdefault(category(o["actions"], r["actions"]),
                             {"cases": 0, "generations_saved": 0, "right_lost": 0, "right_gained": 0})
        row["cases"] += 1
        row["generations_saved"] += int(r["program_generations"]) - int(o["program_generations"])
        row["right_lost"] += int(bool(r["correct"]) and not o["correct"])
        row["right_gained"] += int(bool(o["correct"]) and not r["correct"])
    return dict(sorted(out.items()))


def savings_table(outcomes: Mapping[str, Sequence[Mapping]], splits: Sequence[str] = ("dev", "test"),
                  pooled: Mapping[str, Sequence[Mapping]] | None = None) -> dict:
    """``{split: {policy: savings}}`` for every policy but always-tool and the oracle; with
    ``pooled`` (cross-validation's pooled outcomes) also ``cv_pooled``."""
    blocks = {s: {p: [o for o in outs if o.get("split") == s] for p, outs in outcomes.items()} for s in splits}
    if pooled:
        blocks["cv_pooled"] = dict(pooled)
    out = {}
    for split, by_policy in blocks.items():
        ref = by_policy.get(REFERENCE)
        if not ref:
            continue
        out[split] = {p: savings(outs, ref) for p, outs in by_policy.items() if p not in (REFERENCE, ORACLE)}
    return out
