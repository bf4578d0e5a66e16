"""Report sections for the nulls (``nulls.py``) and the chosen-sample commit headroom.

Pure formatting of a ``final_summary.json``-shaped dict; a section whose data is missing is left out.
"""
from __future__ import annotations

from typing import Mapping

from controller.env.registry import REGISTRY



def _cell(r: Mapping | None) -> str:
    if not r:
        return "n/a"
    acc = r.get("accuracy")
    return f"{r.get('exact')}/{r.get('n')} ({'n/a' if acc is None else f'{100 * acc:.1f}%'}), {r.get('program_generations')} gens"


def nulls_section(s: Mapping) -> list[str]:
    pr = s.get("policy_results") or {}
    # the rows and their words are the policy table's (``PolicySpec.about``), in its order
    rows = [(name, spec.about) for name, spec in REGISTRY.items() if spec.about and name in pr]
    if "majority_action" not in pr:
        return []
    out = ["## Nulls and imitation baselines", "",
           "Every learner below uses the model the learned rule chose on dev; they differ in training "
           "data only. Read a learned controller against `majority_action` (what the label base rate "
           "alone gives) and the shuffled controls (what the same learner gets from labels unlinked "
           "from states).", "",
           "| Policy | What | Train states | Dev | Test |", "|---|---|---|---|---|"]
    sizes = {k.split(" ")[0]: v for k, v in ((s.get("nulls") or {}).get("bc_datasets") or {}).items()}
    if "learned_rule" in sizes:  # the nulls are fitted on the learned rule's own training states
        sizes.setdefault("majority_action", sizes["learned_rule"])
        sizes.setdefault("learned_rule_shuffled", sizes["learned_rule"])
    dagger = ((s.get("dagger") or {}).get("learned_rule") or [])
    if dagger:
        sizes["learned_rule_dagger"] = dagger[-1].get("dataset_size")
    for name, what in rows:
        out.append(f"| `{name}` | {what} | {sizes.get(name, 'n/a')} | {_cell(pr[name].get('dev'))} | "
                   f"{_cell(pr[name].get('test'))} |")
    maj = (s.get("nulls") or {}).get("majority_action") or {}
    if maj:
        out += ["", "`majority_action` per decision point: " + "; ".join(f"{p} -> {a}" for p, a in maj.items())]
    return out + [""]


def commit_any_section(s: Mapping) -> list[str]:
    ca = s.get("commit_any_sample") or {}
    splits = ca.get("splits") or {}
    if not splits or ca.get("k", 1) <= 1:
        return []
    order = [x for x in ("train", "dev", "test", "pooled") if x in splits]
    line = "; ".join(f"{x} +{splits[x]['gained']} ({splits[x]['oracle_majority_commit']} -> "
                     f"{splits[x]['oracle_commit_any']} of {splits[x]['n']})" for x in order)
    head = ["## Committing a chosen sample (PROGRAM:j)", "",
            f"With K = {ca['k']}, PROGRAM may commit any passing sample whose output differs from the "
            "majority commit (`PROGRAM:j`). Hindsight-oracle cases gained over the majority-commit "
            f"action space: {line}.", "",
            "| Split | n | Oracle, majority commit | Oracle, any sample | Gained | Chose a sample | "
            "Gens (majority) | Gens (any) |", "|---|---|---|---|---|---|---|---|"]
    return head + [f"| {x} | {splits[x]['n']} | {splits[x]['oracle_majority_commit']} | {splits[x]['oracle_commit_any']} | "
       f"{splits[x]['gained']} | {splits[x]['commits_of_a_chosen_sample']} | "
       f"{splits[x]['program_generations_majority_commit']} | {splits[x]['program_generations_commit_any']} |"
       for x in order] + [""]
