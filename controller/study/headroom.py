"""Headroom first: what any controller could gain on these traces, before anything is learned.

Every scored case falls in exactly one outcome cell, read off the recorded tree with every
program sample drawn and every chain run to its end (the most a tool-using policy can reveal),
the program committed by the one commit rule (``state.commit_choice``):

==========================  ==========================================================
``direct_only_right``       direct right, no program passes the public example
``both_right``              direct right, the committed program right
``direct_right_commit_wrong``  direct right, the committed program wrong (accuracy headroom)
``program_only_right``      direct wrong, the committed program right (what tools add)
``both_wrong``              direct wrong, a program passes but the committed one is wrong
``nothing_right``           direct wrong, no program passes
==========================  ==========================================================

The issue's five cells are the first, second, fourth, fifth and sixth; ``direct_right_commit_wrong``
is the sixth that completes the partition. With K > 1 samples, ``passing_right_commit_wrong``
counts cases where some passing sample is right while the commit rule picks a wrong one (headroom
the fixed commit rule hides). A case whose direct answer is right but no program passes is no
headroom over always-tool: always-tool falls back to the direct answer there.

Accuracy headroom over always-tool exists only in ``direct_right_commit_wrong`` and (K > 1)
``passing_right_commit_wrong``; when both are 0, the hindsight oracle equals always-tool on
accuracy and a controller can only win cost. Pure functions; reads ``hidden`` (this is analysis,
never a policy's input).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from controller.env.state import chains, commit_choice, shared_view

CELLS = ("direct_only_right", "both_right", "direct_right_commit_wrong", "program_only_right", "both_wrong",
         "nothing_right")
CELL_TEXT = {
    "direct_only_right": "direct right, nothing passes",
    "both_right": "direct and committed program right",
    "direct_right_commit_wrong": "direct right, committed program wrong",
    "program_only_right": "committed program right, direct wrong",
    "both_wrong": "passing program wrong, direct wrong",
    "nothing_right": "nothing passes, direct wrong",
}


def full_position(record: Mapping) -> tuple:
    """The tree position with every recorded sample drawn and every chain at its last round."""
    return tuple(len(rounds) for rounds, _ in chains(dict(record)))


def case_cell(record: Mapping) -> dict:
    """One scored case: its cell, whether a passing sample is right while the commit is wrong,
    and the number of program samples (K)."""
    rec = dict(record)
    chs = chains(rec)
    pos = full_position(rec)
    direct = bool(rec["hidden"]["direct_exact"])
    passing = [(j, bool(grades[len(rounds) - 1]["hidden_exact"])) for j, (rounds, grades) in enumerate(chs)
               if rounds and rounds[-1]["visible_pass"]]
    if not passing:
        cell = "direct_only_right" if direct else "nothing_right"
        commit_right = None
    else:
        j = commit_choice(shared_view(rec, pos))
        commit_right = bool(chs[j][1][pos[j] - 1]["hidden_exact"])
        cell = ("both_right" if commit_right else "direct_right_commit_wrong") if direct else \
            ("program_only_right" if commit_right else "both_wrong")
    return {"cell": cell, "k": len(chs), "passing_right_commit_wrong": bool(
        commit_right is False and any(ok for _, ok in passing))}


def headroom_cells(records: Iterable[Mapping]) -> dict:
    """Counts of every cell over the scored records (unscored ones are counted apart)."""
    out = {c: 0 for c in CELLS}
    out.update(n=0, unscored=0, families=0, passing_right_commit_wrong=0, unreachable_cases=0, k=1,
               accuracy_headroom_cases=0)
    fams = set()
    for r in records:
        if r["hidden"]["answer"] is None:
            out["unscored"] += 1
            continue
        c = case_cell(r)
        out["n"] += 1
        out[c["cell"]] += 1
        out["passing_right_commit_wrong"] += int(c["passing_right_commit_wrong"])
        # a case always-tool's commit gets wrong while some answer in the tree is right (counted once)
        out["accuracy_headroom_cases"] += int(c["cell"] == "direct_right_commit_wrong" or c["passing_right_commit_wrong"])
        # no right answer anywhere in the tree: no policy, the oracle included, can get it
        out["unreachable_cases"] += int(c["cell"] in ("nothing_right", "both_wrong")
                                        and not c["passing_right_commit_wrong"])
        out["k"] = max(out["k"], c["k"])
        fams.add(r["family"])
    out["families"] = len(fams)
    out["tools_needed_cases"] = out["program_only_right"]
    return out


def policy_gap(results: Mapping, split: str, oracle: str = "oracle_seq",
               fixed: Sequence[str] = ("always_tool_visible",)) -> dict | None:
    """Oracle exact minus the best of ``fixed`` policies' exact on ``split`` (None when missing),
    with the oracle's and always-tool's program generations: the cost a controller could save."""
    if oracle not in results or split not in results[oracle]:
        return None
    have = [p for p in fixed if p in results and split in results[p]]
    if not have:
        return None
    best = max(have, key=lambda p: results[p][split]["exact"])
    o, b = results[oracle][split], results[best][split]
    return {"best_fixed": best, "oracle_exact": o["exact"], "best_fixed_exact": b["exact"],
            "accuracy_gap": o["exact"] - b["exact"], "oracle_generations": o["program_generations"],
            "best_fixed_generations": b["program_generations"],
            "cost_gap_generations": b["program_generations"] - o["program_generations"]}


def headroom_table(records: Sequence[Mapping], results: Mapping | None = None,
                   cv_results: Mapping | None = None) -> dict:
    """``headroom`` summary key: cells per split (train, dev, test) and pooled over every assigned
    split; ``gap`` (oracle vs always-tool, counted by the simulator) per split and for CV pooled."""
    out: dict = {"cells": {}, "gap": {}}
    for split in ("train", "dev", "test"):
        out["cells"][split] = headroom_cells(r for r in records if r.get("split") == split)
    out["cells"]["pooled"] = headroom_cells(r for r in records if r.get("split") in ("train", "dev", "test"))
    for split in ("train", "dev", "test"):
        if results:
            g = policy_gap(results, split)
            if g:
                out["gap"][split] = g
    if cv_results:
        g = policy_gap({p: {"cv_pooled": r} for p, r in cv_results.items()}, "cv_pooled")
        if g:
            out["gap"]["cv_pooled"] = g
    same = identical_first_programs(records)
    if same:
        out["samples"] = same
    out["questions"] = answerable_questions(out)
    return out


def identical_first_programs(records: Sequence[Mapping]) -> dict | None:
    """With K > 1 program samples: how many scored cases drew K identical first programs (a
    server that samples greedily, or a seed it ignores). There RESAMPLE and cross-checks can
    add nothing, so it bounds what sampling can answer. None at K = 1."""
    n = same = 0
    for r in records:
        chains = [c for c in [r.get("rounds") or [], *(r.get("samples") or [])] if c]
        if len(chains) < 2 or r.get("split") not in ("train", "dev", "test") or r["hidden"]["answer"] is None:
            continue
        n += 1
        same += len({c[0].get("raw") for c in chains}) == 1
    return {"cases": n, "identical_first_programs": same} if n else None


def answerable_questions(h: Mapping) -> list[str]:
    """Sentences saying which questions these traces can and cannot answer (from the counts)."""
    pooled = h["cells"]["pooled"]
    n = pooled["n"]
    if not n:
        return ["No scored case: no question about accuracy can be answered."]
    out = []
    if pooled["unreachable_cases"] == n:
        out.append(f"None of the {n} scored cases has a committable right answer anywhere in the recorded tree: "
                   "every policy, the hindsight oracle included, is right on none, so these traces can answer no "
                   "question about when to trust the coder's code; the cheapest policy (no tool call) is optimal.")
    acc = pooled["accuracy_headroom_cases"]
    gaps = [g for g in h.get("gap", {}).values()]
    oracle_ties = gaps and all(g["accuracy_gap"] == 0 for g in gaps)
    if acc == 0:
        out.append(f"No case where a controller can beat always-tool on accuracy: of {n} scored cases, none has "
                   "the direct answer" + (" (or another passing sample)" if pooled["k"] > 1 else "") + " right while the committed program is wrong"
                   + (", and the hindsight oracle equals always-tool on accuracy in every split" if oracle_ties
                      else "") + ". Only cost can be won: the question the data can answer is whether a controller "
                   "spends fewer tool calls at the same accuracy.")
    else:
        out.append(f"{acc} of {n} scored cases have the direct answer"
                   + (" or another passing sample" if pooled["k"] > 1 else "")
                   + " right while the committed program is wrong: at most that many cases can be won over "
                   "always-tool on accuracy, so an accuracy claim needs a family-level test over few cases.")
    out.append(f"Tools are needed in {pooled['program_only_right']} of {n} cases (committed program right, direct "
               f"wrong); direct answering suffices in {pooled['direct_only_right'] + pooled['both_right']} "
               "(cases where a controller can save the tool call without losing accuracy).")
    out.append(f"{pooled['unreachable_cases']} of {n} cases have no committable right answer in the recorded tree "
               "(the direct answer wrong and no program that passes the public example right; a round right on the "
               "hidden answer that fails the public example cannot be committed): "
               "they bound every policy's accuracy, the oracle's included.")
    sm = h.get("samples")
    if sm and sm["identical_first_programs"]:
        out.append(f"{sm['identical_first_programs']} of {sm['cases']} scored cases drew identical first programs in every "
                   "sample: resampling and cross-checks can change nothing there.")
    return out
