"""What the model's confidence adds to the learned rule: the same learner with and without it.

``learned_rule`` reads the confidence features where the traces record them;
``learned_rule_no_confidence`` is the same rule (same candidates, price chosen on the same dev)
fit on the same records with the log-probabilities taken out (``controller.learn.registry``), in
the same cross-validation folds. Both are simulated on the same held-out cases; the comparison is
at the family level like every other (sign-flip test on per-case differences summed per family,
family-bootstrap interval):

* ``overall``: cases right and program generations of each, wins (right with confidence, wrong
  without) and losses, the accuracy and generation differences with their family tests;
* ``points``: per decision point, the cases whose two action sequences first part there (the
  state before the first differing action, named by its valid actions: ``DIRECT/WRITE`` is the
  start, ``DIRECT/PROGRAM`` after a pass, ``DIRECT/FIX`` after a failure with a repair left), with
  the wins, losses and generations saved there. Cases where both act alike count under ``same``.

Reads ``hidden`` only through the outcomes' ``correct`` (this is analysis).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from controller.env.oracle import next_pos
from controller.env.state import is_commit, shared_view, valid_actions
from controller.learn.rule import canonical
from controller.study.stats import family_bootstrap, family_sign_flip_p

WITH, WITHOUT = "learned_rule", "learned_rule_no_confidence"


def parting_point(record: Mapping, a: Sequence[str], b: Sequence[str]) -> str | None:
    """The decision point where action sequences ``a`` and ``b`` first differ (None: they do not)."""
    pos: tuple = ()
    for x, y in zip(a, b):
        if x != y:
            return "/".join(canonical(valid_actions(shared_view(dict(record), pos))))
        if x == "DIRECT" or is_commit(x):
            return None
        pos = next_pos(pos, x)
    return None if len(a) == len(b) else "/".join(canonical(valid_actions(shared_view(dict(record), pos))))


def _test(fams: list, diffs: list, seed: int) -> dict:
    return {"diff": sum(diffs) / len(diffs) if diffs else None,
            "ci95_family": family_bootstrap(fams, diffs, seed=seed) if diffs else None,
            "p_family": family_sign_flip_p(fams, diffs, seed=seed) if diffs else None}


def confidence_adds(records: Sequence[Mapping], by_split: Mapping[str, Mapping[str, Sequence[Mapping]]],
                    seed: int = 0) -> dict | None:
    """The summary's ``confidence_adds`` (None when the rule was not refit without confidence)."""
    split = "cv_pooled" if WITHOUT in (by_split.get("cv_pooled") or {}) else "test"
    outs = by_split.get(split) or {}
    if WITHOUT not in outs or WITH not in outs:
        return None
    recs = {r["case_id"]: r for r in records}
    w = {o["case_id"]: o for o in outs[WITH] if o.get("correct") is not None}
    wo = {o["case_id"]: o for o in outs[WITHOUT] if o.get("correct") is not None}
    ids = sorted(set(w) & set(wo))
    fams = [w[i]["family"] for i in ids]
    acc = [int(bool(w[i]["correct"])) - int(bool(wo[i]["correct"])) for i in ids]
    gens = [int(w[i]["program_generations"]) - int(wo[i]["program_generations"]) for i in ids]
    points: dict[str, dict] = {}
    for i, a, g in zip(ids, acc, gens):
        p = parting_point(recs[i], w[i]["actions"], wo[i]["actions"]) or "same"
        row = points.setdefault(p, {"point": p, "cases": 0, "wins": 0, "losses": 0, "generations_saved": 0})
        row["cases"] += 1
        row["wins"] += int(a > 0)
        row["losses"] += int(a < 0)
        row["generations_saved"] -= g
    return {"split": split, "n": len(ids), "n_families": len(set(fams)),
            "with": {"exact": sum(int(bool(w[i]["correct"])) for i in ids),
                     "program_generations": sum(int(w[i]["program_generations"]) for i in ids)},
            "without": {"exact": sum(int(bool(wo[i]["correct"])) for i in ids),
                        "program_generations": sum(int(wo[i]["program_generations"]) for i in ids)},
            "wins": sum(1 for x in acc if x > 0), "losses": sum(1 for x in acc if x < 0),
            "accuracy": _test(fams, acc, seed), "generations": _test(fams, gens, seed),
            "points": sorted(points.values(), key=lambda r: (r["point"] == "same", r["point"]))}
