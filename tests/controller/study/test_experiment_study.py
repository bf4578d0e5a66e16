"""run_experiment on hand-built traces: family-level keys everywhere, --seeds, --cost work, dev ties."""
from __future__ import annotations

import pytest

from controller.env.cost import round_cost, round_work, work_unit
from controller.study.experiment import ExperimentConfig, run_experiment
from tracefactory import ANSWER, WRONG, make_record


def _records():
    """12 families x 3 cases over train/dev/test; kinds rotate so every split has each situation."""
    kinds = [
        dict(direct=WRONG, rounds=[(False, None), (True, ANSWER)]),  # recovery after a repair
        dict(direct=ANSWER, rounds=[(True, WRONG)]),                 # program overfits; direct right
        dict(direct=WRONG, rounds=[(True, ANSWER)]),                 # first program right
        dict(direct=WRONG, rounds=[(False, None), (False, None), (False, None)]),  # unsolvable
    ]
    recs = []
    for f in range(12):
        split = "train" if f < 6 else "dev" if f < 9 else "test"
        for c in range(3):
            r = make_record(f"fam{f}/fam{f}_{c}", f"fam{f}", split, **kinds[(f + c) % 4])
            for i, rnd in enumerate(r["rounds"]):
                rnd["search_nodes"] = 100 if i == 0 else 40000
            recs.append(r)
    return recs


def test_work_cost_reads_search_nodes_and_names_its_unit():
    rec = _records()[0]
    assert [round_work(rec, r) for r in rec["rounds"]] == [100, 40000]
    assert round_cost(rec, rec["rounds"][1], "work") == 40.0 and round_cost(rec, rec["rounds"][1], "generations") == 1
    assert work_unit([rec]) == "search nodes"
    model = dict(rec, backend="hf")  # a model backend counts tokens even if a round carried nodes
    assert round_work(model, rec["rounds"][1]) == 50 and work_unit([model]) == "completion tokens"
    old = make_record(rounds=[(True, ANSWER)])  # synth traces written before search_nodes existed
    assert round_work(old, old["rounds"][0]) == 50 and work_unit([old]) == "completion tokens"


def test_summary_has_family_keys_seeds_and_work():
    cfg = ExperimentConfig(seeds=3, cv_folds=3, cost="work", progress=False, frontier_lambdas=(0.0, 1.0))
    summary, outcomes = run_experiment(_records(), cfg, log=lambda *a: None)
    for policy, per in summary["policy_results"].items():
        for split in ("dev", "test"):
            r = per[split]
            assert r["n_families"] == 3 and r["accuracy_ci95_family"] is not None, (policy, split)
    always = summary["policy_results"]["always_tool_visible"]["test"]
    # work = 100 per WRITE + 40,000 per FIX over the test cases' revealed rounds
    test_outs = [o for o in outcomes["always_tool_visible"] if o["split"] == "test"]
    assert always["work"] == sum(100 * min(o["program_generations"], 1) + 40000 * o["repair_actions"]
                                 for o in test_outs)
    assert summary["cost_units"]["work"] == "search nodes"
    assert summary["frontier"]["learned_rule"]["cost"] == "work"
    for split in ("dev", "test"):
        for t in summary["paired_tests"][split]["learned_rule"].values():
            assert {"p_family", "p_holm", "verdict", "diff_ci95_family", "n_families", "mcnemar_p"} <= set(t)
    seeds = summary["seeds"]["learned_rule"]["test"]
    assert seeds["seeds"] == [0, 1, 2] and len(seeds["exact"]) == 3
    assert seeds["min"] <= seeds["mean"] <= seeds["max"]
    assert seeds["exact"][0] == summary["policy_results"]["learned_rule"]["test"]["exact"]
    assert set(summary["seeds"]) == {"learned_rule"}  # no LoRA or DAgger asked for
    pooled = summary["cv"]["pooled"]["always_tool_visible"]
    assert pooled["n_families"] == 12 and pooled["accuracy_ci95_family"] is not None
    assert "p_holm" in summary["cv"]["pooled_paired_tests"]["learned_rule"]["always_tool_visible"]


def test_seeds_cover_dagger_learners():
    cfg = ExperimentConfig(seeds=2, dagger_iters=1, progress=False, frontier_lambdas=(0.0,))
    summary, _ = run_experiment(_records(), cfg, log=lambda *a: None)
    assert set(summary["seeds"]) == {"learned_rule", "learned_rule_dagger"}
    assert summary["seeds"]["learned_rule_dagger"]["dev"]["seeds"] == [0, 1]


def test_dev_tie_is_flagged():
    summary, _ = run_experiment(_records(), ExperimentConfig(progress=False, frontier_lambdas=(0.0,)),
                                log=lambda *a: None)
    table = summary["learned_rule"]["candidates"]
    keys = {(v["dev_accuracy"], v["dev_program_generations"]) for v in table.values()}
    assert summary["learned_rule"]["dev_tie"] == (len(keys) == 1)


def test_dev_tie_rule():
    from controller.learn.rule import dev_tie

    same = {"stump": {"dev_accuracy": 1.0, "dev_program_generations": 41},
            "forest": {"dev_accuracy": 1.0, "dev_program_generations": 41}}
    assert dev_tie(same)
    assert not dev_tie(dict(same, logistic={"dev_accuracy": 1.0, "dev_program_generations": 40}))
    assert not dev_tie({"stump": same["stump"]})  # one candidate: nothing to tie with


def test_cv_labels_and_oracle_use_the_run_cost():
    """A case two paths solve, a repair (40,000 search nodes) or a second sample (100): one
    generation each, so only the work cost prefers the sample. CV must rank them by ``--cost``."""
    from controller.study.cv import run_cv
    from controller.env.policies import Oracle
    from controller.env.simulate import simulate
    from tracefactory import make_tree_record

    recs = []
    for f in range(6):
        for c in range(2):
            r = make_tree_record(f"fam{f}/fam{f}_{c}", f"fam{f}", "train",
                                 chains=[[(False, None), (True, ANSWER)], [(True, ANSWER)]])
            for chain in (r["rounds"], *r["samples"]):
                for i, rnd in enumerate(chain):
                    rnd["search_nodes"] = 100 if i == 0 else 40000
            recs.append(r)
    actions = {}
    for cost in ("generations", "work"):
        cv = run_cv(recs, ExperimentConfig(cv_folds=3, cost=cost, progress=False), log=lambda *a: None)
        pooled = {o["case_id"]: o["actions"] for o in cv.pooled["oracle_seq"]}
        whole = {o["case_id"]: o["actions"] for o in simulate(Oracle(recs, cost=cost), recs)}
        assert pooled == whole, cost  # the hindsight oracle of a case does not depend on the fold
        actions[cost] = whole
    assert actions["generations"] != actions["work"]  # the two costs do rank the paths differently
    assert all("RESAMPLE" in a and "FIX" not in a for a in actions["work"].values())
