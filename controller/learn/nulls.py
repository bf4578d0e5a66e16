"""The nulls and imitation baselines a learned controller is read against, and the headroom of
committing a chosen sample.

* ``majority_action``: the base-rate null. At each decision point, the weighted-majority action of
  the learned rule's own training labels (``rule.fit_majority``); it reads no feature.
* ``learned_rule_shuffled``: the rule refitted on the same states with (label, weight) pairs
  permuted across states (``training.TrainingSet.shuffled``); its base rate is ``majority_action``.
* ``learned_rule_bc_oracle``: behaviour cloning on the oracle's own trajectories: the same data as
  DAgger's iteration 0 (so DAgger's later iterations compare like for like).
* ``learned_rule_bc_all``: behaviour cloning on every reachable state of the recorded tree
  (``training.all_state_pairs``): what imitation of this oracle can learn at best from these traces.

All reuse the model ``learned_rule`` chose on dev, so they differ from it in data only.
``commit_any_headroom``: how many cases the oracle gains when PROGRAM may commit a chosen passing
sample (``PROGRAM:j``, K > 1) rather than only the commit rule's majority output.
"""
from __future__ import annotations

from typing import Sequence

from controller.env.policies import Oracle
from controller.learn.rule import fit_majority, fit_rule
from controller.env.simulate import simulate
from controller.env.state import chains
from controller.learn.training import all_state_pairs, labelled, oracle_pairs



def train_nulls(train: Sequence[dict], data, model_name: str, *, seed: int = 0, cost: str = "generations",
                lam: float = 0.0):
    """(policies, info) for the null and imitation baselines. ``data``: the learned rule's training
    set; ``lam``: its price of tools (the imitation baselines label their states at the same price)."""
    majority = fit_majority(data)
    shuffled = data.shuffled(seed)
    bc_oracle = labelled(oracle_pairs(train, lam, cost), lam, cost, tie_weight=0.0).dedupe()
    bc_all = labelled(all_state_pairs(train), lam, cost, tie_weight=0.0)
    policies = {
        "majority_action": majority,
        "learned_rule_shuffled": fit_rule(shuffled, model_name, seed, name="learned_rule_shuffled"),
        "learned_rule_bc_oracle": fit_rule(bc_oracle, model_name, seed, name="learned_rule_bc_oracle"),
        "learned_rule_bc_all": fit_rule(bc_all, model_name, seed, name="learned_rule_bc_all"),
    }
    info = {"majority_action": {"/".join(p): a for p, a in sorted(majority.models.items())},
            "bc_datasets": {"learned_rule (recorded sample-0 chains)": len(data),
                            "learned_rule_bc_oracle (oracle trajectories = DAgger iteration 0)": len(bc_oracle),
                            "learned_rule_bc_all (every reachable state)": len(bc_all)},
            "shuffled_control": "rule refitted on (label, weight) pairs permuted together across states"}
    return policies, info


def commit_any_headroom(records: Sequence[dict], oracle_outcomes: Sequence[dict] | None = None,
                        cost: str = "generations") -> dict:
    """Per split and pooled: the oracle's exact count over the majority-commit action space vs over
    the one with ``PROGRAM:j``, the cases gained (and lost: none at lam = 0), and the program
    generations each spends. Only meaningful at K > 1 (``k`` says which); at K = 1 the two agree."""
    scored = [r for r in records if r["hidden"]["answer"] is not None]
    any_outs = oracle_outcomes if oracle_outcomes is not None else simulate(Oracle(scored, cost=cost), scored)
    any_by = {o["case_id"]: o for o in any_outs if o.get("correct") is not None}
    maj_by = {o["case_id"]: o for o in simulate(Oracle(scored, cost=cost, commit_any=False), scored)}
    out = {"k": max((len(chains(r)) for r in scored), default=1), "splits": {}}
    groups: dict[str, list[str]] = {}
    for r in scored:
        groups.setdefault(r["split"], []).append(r["case_id"])
    groups["pooled"] = [r["case_id"] for r in scored]
    for split, ids in groups.items():
        ids = [i for i in ids if i in any_by]
        gained = [i for i in ids if any_by[i]["correct"] and not maj_by[i]["correct"]]
        lost = [i for i in ids if maj_by[i]["correct"] and not any_by[i]["correct"]]
        chose = [i for i in ids if any(a.startswith("PROGRAM:") for a in any_by[i]["actions"])]
        out["splits"][split] = {
            "n": len(ids), "oracle_majority_commit": sum(bool(maj_by[i]["correct"]) for i in ids),
            "oracle_commit_any": sum(bool(any_by[i]["correct"]) for i in ids),
            "gained": len(gained), "lost": len(lost), "gained_cases": sorted(gained),
            "commits_of_a_chosen_sample": len(chose),
            "program_generations_majority_commit": sum(maj_by[i]["program_generations"] for i in ids),
            "program_generations_commit_any": sum(any_by[i]["program_generations"] for i in ids)}
    return out
