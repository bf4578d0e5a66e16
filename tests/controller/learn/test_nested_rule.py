"""``nested_rule``: the learned rule with its model and price chosen by nested family
cross-validation on train + dev (``controller/learn/nested_rule.py``).

The synthetic traces (``tracefactory``) have three kinds of family, every case with the same
(wrong) direct answer, so the start state looks the same everywhere:

* ``cheap``: the first program passes and is right (one generation);
* ``dear``: two failing rounds, then a right program (three generations);
* ``lost``: a program passes the public example but is wrong on the new input (tools never help).

At price 0 the oracle says "use the tool" at the start; at price 0.5 the ``dear`` (and ``lost``)
cases outnumber the ``cheap`` ones and say "answer directly", so the rule at 0.5 is always-direct.
With the dev split all ``lost`` families, dev alone (the learned rule) finds always-tool as wrong
as always-direct there and keeps the cheap price 0.5; pooled over train + dev, always-direct is far
below always-tool and the nested choice keeps price 0.
"""
from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tracefactory import ANSWER, WRONG, make_record, foofah_one_per_family

ROOT = Path(__file__).resolve().parents[3]
KINDS = {"cheap": [(True, ANSWER)], "dear": [(False, None), (False, None), (True, ANSWER)],
         "lost": [(True, WRONG)]}


def _records(dev=("lost0", "lost1"), test=("cheap9", "dear9")):
    fams = ["cheap0", "cheap1", "dear0", "dear1", "dear2", "dear3", "lost0", "lost1", "cheap9", "dear9"]
    out = []
    for fam in fams:
        split = "dev" if fam in dev else "test" if fam in test else "train"
        for i in range(2):
            out.append(make_record(f"{fam}/{fam}_{i}", fam, split, rounds=KINDS[fam.rstrip("0123456789")]))
    return out


def _cfg(**kw):
    from controller.study.experiment import ExperimentConfig

    return ExperimentConfig(progress=False, nested_rule=True, rule_lambdas=(0.0, 0.5), **kw)


def _fit(records, cfg):
    from controller.env.traceenv import TraceEnv
    from controller.learn.nested_rule import fit_nested_rule

    env = TraceEnv(records)
    pol, info = fit_nested_rule(env, env.split("train"), env.split("dev"), cfg)
    return env, pol, info


def _actions(env, pol):
    return [tuple(o["actions"]) for o in env.simulate(pol)]


def test_the_choice_never_reads_the_test_records():
    from controller.env.traceenv import TraceEnv

    records, cfg = _records(), _cfg()
    env, pol, info = _fit(records, cfg)
    test_ids = {r["case_id"] for r in records if r["split"] == "test"}
    seen = []
    real = TraceEnv.right_and_cost

    def spy(self, policy, recs, cost="generations"):
        seen.extend(r["case_id"] for r in recs)
        return real(self, policy, recs, cost)

    TraceEnv.right_and_cost = spy
    try:
        corrupt = copy.deepcopy(records)
        for r in corrupt:  # every hidden grade of a test case flipped, and its answer replaced
            if r["split"] == "test":
                r["hidden"]["answer"] = [["nobody"]]
                r["hidden"]["direct_exact"] = not r["hidden"]["direct_exact"]
                r["hidden"]["rounds"] = [{"hidden_exact": not x["hidden_exact"]} for x in r["hidden"]["rounds"]]
        env2, pol2, info2 = _fit(corrupt, cfg)
    finally:
        TraceEnv.right_and_cost = real
    assert seen and not set(seen) & test_ids
    assert info2 == info
    assert _actions(env2, pol2) == _actions(env, pol)


def test_the_choice_is_pooled_inner_out_of_fold_not_dev_alone():
    from controller.learn.cost_rule import fit_learned_rule

    records, cfg = _records(), _cfg()
    env, pol, info = _fit(records, cfg)
    # dev alone (the learned rule): always-tool is 0 right on the lost dev families, so the cheapest price wins
    _, _, dev_only = fit_learned_rule(env, env.split("train"), env.split("dev"), cfg)
    assert dev_only["lambda"] == 0.5 and dev_only["guard_dev_accuracy"] == 0.0
    # pooled over the inner folds of train + dev: always-direct is far below always-tool, price 0 is kept
    assert (info["model"], info["lambda"]) == ("stump", 0.0) and info["guard_met"]
    pool = [r for r in records if r["split"] != "test"]
    assert info["n_inner_folds"] == 4 and sum(info["inner_fold_families"]) == 8
    rows = {(r["model"], r["lambda"]): r for r in info["candidates"]}
    assert len(rows) == 10 and all(r["n"] == len(pool) for r in rows.values())  # every train + dev case, once
    assert info["guard_inner_accuracy"] == pytest.approx(12 / 16)  # always-tool: right on cheap and dear
    assert rows[("stump", 0.5)]["accuracy"] == 0.0 and rows[("stump", 0.0)]["accuracy"] == pytest.approx(12 / 16)
    # train + dev are one pool: which of them is called dev does not move the choice
    swapped = _records(dev=("cheap0", "dear3"))
    _, pol2, info2 = _fit(swapped, cfg)
    assert info2 == info
    assert _actions(env, pol2) == _actions(env, pol)


def test_the_choice_rule_and_its_tie_order():
    from controller.learn.nested_rule import choose

    row = lambda m, lam, right, cost: {"model": m, "lambda": lam, "right": right, "accuracy": right / 10,  # noqa: E731
                                       "cost": cost}
    rows = [row("forest", 0.1, 9, 1.0), row("logistic", 0.1, 9, 1.0), row("stump", 0.2, 9, 1.0),
            row("stump", 0.5, 5, 0.0), row("tree_depth2", 0.0, 10, 2.0)]
    # within 0.1 of a guard of 1.0: the cheapest; ties to the smaller price, then the simpler model
    assert choose(rows, 1.0, 0.1) == (rows[1], True)
    assert choose(rows, 1.0, 0.0) == (rows[4], True)
    # none within the margin: the most accurate (ties: cheaper, smaller price, simpler model)
    assert choose(rows[:4], 1.0, 0.0) == (rows[1], False)


def test_the_choice_is_deterministic_for_a_seed():
    records = _records()
    env, pol, info = _fit(records, _cfg(seed=3))
    env2, pol2, info2 = _fit(copy.deepcopy(records), _cfg(seed=3))
    assert info2 == info and _actions(env2, pol2) == _actions(env, pol)
    assert info["inner_seed"] == 3


def test_inner_folds_and_the_config():
    from controller.learn.nested_rule import inner_folds
    from controller.study.experiment import ExperimentConfig
    from tracegen.errors import ConfigError

    recs = _records()
    assert inner_folds(recs, 4, 0) == inner_folds(list(reversed(recs)), 4, 0)  # family names and seed only
    assert sorted(f for fold in inner_folds(recs, 20, 0) for f in fold) == sorted({r["family"] for r in recs})
    assert ExperimentConfig().nested_rule is False and ExperimentConfig().nested_folds == 4  # opt-in (cost)
    with pytest.raises(ConfigError):
        ExperimentConfig(nested_folds=1)
    _, pol, info = _fit([r for r in recs if r["family"] == "cheap0"], _cfg())
    assert pol is None and "skipped" in info


_one_per_family = foofah_one_per_family


def test_it_is_reported_beside_the_learned_rule():
    from controller import analyze
    from controller.env.registry import ordered
    from controller.report.markdown import render_report

    cfg = replace(_cfg(cv_folds=2, nested_folds=3), rule_lambdas=(0.0, 0.1), frontier_lambdas=(0.0,))
    summary, outcomes = analyze(_one_per_family(), cfg, log=lambda *a: None)
    assert outcomes["nested_rule"] and {"dev", "test"} <= set(summary["policy_results"]["nested_rule"])
    info = summary["nested_rule"]
    assert info["n_inner_folds"] == 3 and len(info["candidates"]) == 10 and info["model"] and "description" in info
    assert summary["cv"]["pooled"]["nested_rule"]["n"] == summary["cv"]["pooled"]["learned_rule"]["n"]
    assert all(f["nested_rule"]["n_inner_folds"] == 3 for f in summary["cv"]["folds"])
    assert "nested_rule" in summary["paired_tests"]["test"] and "nested_rule_s" in summary["timing"]
    for split in ("test", "cv_pooled"):  # the routing comparisons (random mix, hull at matched cost)
        assert "nested_rule" in summary["routing"][split]["generations"]["learners"]
    order = ordered(summary["policy_results"])
    assert order.index("learned_rule") + 1 == order.index("nested_rule")
    json.dumps(summary)  # final_summary.json holds it as is
    md = render_report(summary)
    assert "## Nested rule (exploratory)" in md and "not a registered hypothesis" in md
    assert "| `nested_rule` |" in md and "Choice per CV fold" in md
    # off (the default): neither fitted nor reported
    off, _ = analyze(_one_per_family(), replace(cfg, nested_rule=False, cv_folds=0), log=lambda *a: None)
    assert "nested_rule" not in off["policy_results"] and "## Nested rule" not in render_report(off)
