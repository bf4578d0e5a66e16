"""The "resample instead of repair" baseline, budget-matched to the tool-using policies.

With ``--program-samples k`` a trace holds k independent first programs per case (round 0 and
``samples``). This baseline never repairs: it takes the first program, and while it fails the
public example it draws the next independent sample instead of a FIX, up to the same number of
generations a repairing policy may spend (1 + max_repairs). It commits the first program that
passes, else the direct answer. It is not a state-machine policy (RESAMPLE is not one of the
controller's actions), so its outcomes are computed here in the same format as ``simulate``'s.
"""
from __future__ import annotations

from typing import Sequence

NAME = "resample_visible"


def has_samples(records: Sequence[dict]) -> bool:
    return bool(records) and all(r.get("samples") for r in records)


def resample_outcomes(records: Sequence[dict]) -> list[dict]:
    outs = []
    for rec in records:
        cands = [(rec["rounds"][0], rec["hidden"]["rounds"][0])]
        cands += list(zip(rec.get("samples", []), rec["hidden"].get("samples", [])))
        cands = cands[: 1 + rec["max_repairs"]]
        actions, used, source, correct = [], [], "direct", rec["hidden"]["direct_exact"]
        for i, (prog, grade) in enumerate(cands):
            actions.append("WRITE" if i == 0 else "RESAMPLE")
            used.append(prog)
            if prog["visible_pass"]:
                source, correct = "program", grade["hidden_exact"]
                break
        actions.append("PROGRAM" if source == "program" else "DIRECT")
        outs.append({
            "policy": NAME, "split": rec["split"], "case_id": rec["case_id"], "family": rec["family"],
            "actions": actions, "source": source, "correct": correct,
            "direct_correct": rec["hidden"]["direct_exact"],
            "program_generations": len(used), "repair_actions": 0,
            "generated_tokens": rec["direct"]["completion_tokens"] + sum(p["completion_tokens"] for p in used),
            "sandbox_ms": round(sum(p["visible"]["wall_ms"] + p["test"]["wall_ms"] for p in used), 3),
        })
    return outs
