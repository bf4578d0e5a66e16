"""The value of the task type: a secondary analysis with every family seen in training.

The primary answer is family-disjoint: a controller is scored on families it never saw, which is
what a new user's tasks are. Whether to write a program at all is partly a task-type decision
(some families never yield a right program, others usually do): out of family that is unlearnable
by design, in family it may be most of the gap. This analysis asks "how much would a controller
gain once it has seen this kind of task": case-level cross-validation *within* families.

Folds: each family's scored cases are shuffled (seeded by the split seed and the family name, so no
answer or grade moves them) and dealt round-robin over the ``k`` folds from a family-specific
starting fold. Fold i tests on its cases, fold i+1 is dev (model choice, the rule's price of tools)
and the rest train, exactly as in the family CV (``cv.run_cv`` with ``fold_of``), with the same
fixed policies, best fixed policy, oracle and learners (those refit per fold, except the LoRA
policies: F more trainings; ``lora`` says so). A family with fewer than 3 scored cases cannot be in
a fold's test, dev and train at once: it is left out (``families_left_out``), and
``test_family_in_training`` counts the test cases whose family has a training case in their fold.

Beside each policy, the share of the always-tool -> oracle gap it recovers, in accuracy
((right - always-tool's) / (oracle's - always-tool's)) and in program generations ((always-tool's -
spent) / (always-tool's - oracle's)), for this analysis and for the family-disjoint primary alike;
and the ceiling (``ceiling.ceiling_table``) computed the same way with these case folds. It never
replaces the family-disjoint answer: the report labels it secondary.
"""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Mapping, Sequence

from controller.env.registry import ORACLE
from controller.study.cv import run_cv, scored_assigned

MIN_CASES = 3  # a family in a fold's test, dev and train at once


def case_folds(records: Sequence[Mapping], k: int, seed: int) -> tuple[dict[str, int], list[str]]:
    """(case id -> fold, families left out for having fewer than ``MIN_CASES`` scored cases)."""
    by_family: dict[str, list[str]] = {}
    for r in records:
        by_family.setdefault(r["family"], []).append(r["case_id"])
    out, left_out = {}, []
    for fam in sorted(by_family):
        ids = sorted(by_family[fam])
        if len(ids) < MIN_CASES:
            left_out.append(fam)
            continue
        rng = random.Random(f"{seed}:{fam}")
        rng.shuffle(ids)
        start = rng.randrange(k)
        out.update({cid: (start + j) % k for j, cid in enumerate(ids)})
    return out, left_out


def gap_shares(pooled: Mapping[str, Mapping]) -> dict:
    """Per policy, the share of the always-tool -> oracle gap recovered in accuracy and in program
    generations (None where that gap is zero or a policy is missing)."""
    at, orc = pooled.get("always_tool_visible"), pooled.get(ORACLE)
    if not at or not orc:
        return {}
    acc_gap = orc["exact"] - at["exact"]
    gen_gap = at["program_generations"] - orc["program_generations"]
    return {p: {"exact": r["exact"], "n": r["n"], "program_generations": r["program_generations"],
                "accuracy_gap_share": (r["exact"] - at["exact"]) / acc_gap if acc_gap else None,
                "generation_gap_share": (at["program_generations"] - r["program_generations"]) / gen_gap
                if gen_gap else None}
            for p, r in pooled.items()}


def within_family(records: Sequence[Mapping], cfg, log=print) -> dict:
    """The summary's ``within_family`` key (``reason`` alone when no family has enough cases)."""
    from controller.study.ceiling import ceiling_table

    scored = scored_assigned(records)
    k = cfg.cv_folds
    fold_of, left_out = case_folds(scored, k, cfg.split_seed)
    base = {"k": k, "split_seed": cfg.split_seed, "min_cases": MIN_CASES, "families_left_out": len(left_out),
            "families": len({r["family"] for r in scored if r["case_id"] in fold_of})}
    if not fold_of:
        return {**base, "reason": f"no family has {MIN_CASES} or more scored cases: a family cannot be in a fold's "
                                  "train, dev and test at once"}
    lora = cfg.train_lora or cfg.train_shuffled_lora
    quiet = replace(cfg, train_lora=False, train_shuffled_lora=False)
    cv = run_cv(scored, quiet, log=log, fold_of=fold_of, tag="within-family cv")
    seen = 0
    for i in range(k):
        train_fams = {r["family"] for r in scored if r["case_id"] in fold_of and fold_of[r["case_id"]] not in (i, (i + 1) % k)}
        seen += sum(1 for r in scored if fold_of.get(r["case_id"]) == i and r["family"] in train_fams)
    ceiling = ceiling_table([r for r in scored if r["case_id"] in fold_of], seed=cfg.seed, fold_of=fold_of)
    return {**base, "n": len(fold_of), "test_family_in_training": seen,
            "lora": "not refit within families (F more trainings)" if lora else None,
            "pooled": cv.summary["pooled"], "pooled_paired_tests": cv.summary["pooled_paired_tests"],
            "best_fixed": [f["best_fixed"] for f in cv.summary["folds"]],
            "gap_shares": gap_shares(cv.summary["pooled"]), "ceiling": ceiling}
