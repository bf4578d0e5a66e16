"""--split-seeds: repeated family CV with different fold assignments, its spread, and learner seeds."""
from __future__ import annotations

import random

import pytest

from cases import make_cv_folds
from controller.study.experiment import ExperimentConfig, run_experiment
from controller.report.split_seeds import split_seed_note
from controller.study.split_seeds import split_seed_outcomes, spread_summary
from test_experiment_study import _records

def _cfg(**kw):
    return ExperimentConfig(progress=False, frontier_lambdas=(0.0,), **kw)


def _assignment(folds):
    return {f: i for i, fs in enumerate(folds) for f in fs}


def test_split_seeds_give_different_fold_assignments():
    fams = [f"fam{i}" for i in range(12)]
    assigns = [frozenset(frozenset(f) for f in make_cv_folds(fams, k=3, seed=s)) for s in range(5)]
    assert len(set(assigns)) == 5  # five seeds, five different partitions of the families
    assert make_cv_folds(fams, k=3, seed=2) == make_cv_folds(list(reversed(fams)), k=3, seed=2)


@pytest.mark.slow
def test_each_case_held_out_exactly_once_per_split_seed():
    recs = _records()
    per_seed = split_seed_outcomes(recs, _cfg(cv_folds=3, split_seed=4, split_seeds=3), log=lambda *a: None)
    assert [p["split_seed"] for p in per_seed] == [4, 5, 6]
    scored = sorted(r["case_id"] for r in recs)
    parts = set()
    for p in per_seed:
        assert sorted(f for fs in p["folds"] for f in fs) == sorted({r["family"] for r in recs})
        parts.add(frozenset(frozenset(f) for f in p["folds"]))
        policies = {r["policy"] for r in p["records"]}
        assert {"learned_rule", "always_tool_visible", "direct_only", "oracle_seq"} <= policies
        for pol in policies:
            ids = [r["case_id"] for r in p["records"] if r["policy"] == pol]
            assert sorted(ids) == scored, pol  # every scored case once, none twice
        fold_of = _assignment(p["folds"])
        assert all(r["fold"] == fold_of[r["family"]] for r in p["records"])
        assert all(r["split_seed"] == p["split_seed"] for r in p["records"])
    assert len(parts) == 3  # the three split seeds drew three different fold assignments


@pytest.mark.slow
def test_fold_assignment_is_outcome_blind():
    recs = _records()
    rng = random.Random(0)
    permuted = []
    for n in sorted({len(r["rounds"]) for r in recs}):  # permute grades among traces of the same shape
        group = [r for r in recs if len(r["rounds"]) == n]
        hidden = [r["hidden"] for r in group]
        rng.shuffle(hidden)
        permuted += [dict(r, hidden=h) for r, h in zip(group, hidden)]
    assert [r["hidden"] for r in permuted] != [r["hidden"] for r in sorted(recs, key=lambda r: len(r["rounds"]))]
    cfg = _cfg(cv_folds=3, split_seeds=2)
    a = split_seed_outcomes(recs, cfg, log=lambda *x: None)
    b = split_seed_outcomes(permuted, cfg, log=lambda *x: None)
    assert [p["folds"] for p in a] == [p["folds"] for p in b]


def _rec(seed, policy, case, fam, correct, gens, tokens, nodes):
    return {"split_seed": seed, "policy": policy, "case_id": case, "family": fam, "fold": 0, "correct": correct,
            "program_generations": gens, "generated_tokens": tokens, "search_nodes": nodes}


def test_spread_matches_a_hand_computation():
    # two split seeds, two cases; learned_rule vs always_tool_visible and direct_only
    s0 = [_rec(0, "always_tool_visible", "a", "A", True, 2, 100, 10), _rec(0, "always_tool_visible", "b", "B", False, 3, 150, 40),
          _rec(0, "direct_only", "a", "A", False, 0, 10, 0), _rec(0, "direct_only", "b", "B", False, 0, 10, 0),
          _rec(0, "learned_rule", "a", "A", True, 1, 60, 10), _rec(0, "learned_rule", "b", "B", False, 0, 10, 0)]
    s1 = [_rec(1, "always_tool_visible", "a", "A", True, 2, 100, 10), _rec(1, "always_tool_visible", "b", "B", True, 3, 150, 40),
          _rec(1, "direct_only", "a", "A", False, 0, 10, 0), _rec(1, "direct_only", "b", "B", True, 0, 10, 0),
          _rec(1, "learned_rule", "a", "A", True, 2, 100, 10), _rec(1, "learned_rule", "b", "B", False, 0, 10, 0)]
    ss = spread_summary([{"split_seed": 0, "folds": [["A"], ["B"]], "records": s0},
                         {"split_seed": 1, "folds": [["B"], ["A"]], "records": s1}])
    assert ss["seeds"] == [0, 1] and ss["n_split_seeds"] == 2
    at = ss["spread"]["always_tool_visible"]
    assert at["exact"] == {"values": [1, 2], "mean": 1.5, "min": 1, "max": 2}
    assert at["program_generations"]["values"] == [5, 5] and at["n"] == 2
    lr = ss["spread"]["learned_rule"]
    assert lr["exact"]["values"] == [1, 1] and lr["generated_tokens"]["values"] == [70, 110]
    assert lr["search_nodes"] == {"values": [10, 10], "mean": 10.0, "min": 10, "max": 10}
    d = ss["differences"]["learned_rule"]["always_tool_visible"]
    # accuracy: seed 0 50% vs 50% -> 0 pp; seed 1 50% vs 100% -> -50 pp
    assert d["accuracy_pp"]["values"] == [0.0, -50.0] and d["accuracy_pp"]["mean"] == -25.0
    assert d["accuracy_pp"]["holds_at"] == {"higher": 0, "equal": 1, "lower": 1, "of": 2}
    # generations 1 - 5 = -4, 2 - 5 = -3: cheaper at both split seeds
    assert d["program_generations"] == {"values": [-4, -3], "mean": -3.5, "min": -4, "max": -3,
                                        "holds_at": {"higher": 0, "equal": 0, "lower": 2, "of": 2}}
    assert d["generated_tokens"]["values"] == [-180, -140]
    assert d["search_nodes"]["values"] == [-40, -40]
    dd = ss["differences"]["learned_rule"]["direct_only"]
    assert dd["accuracy_pp"]["values"] == [50.0, 0.0] and dd["program_generations"]["values"] == [1, 2]
    assert set(ss["differences"]) == {"learned_rule"}  # fixed policies and the oracle are not learners
    note = split_seed_note({"split_seeds": ss}, "learned_rule", "always_tool_visible")
    assert "-25.0 pp [-50.0, +0.0]" in note and "lower 1 of 2" in note


@pytest.mark.slow
def test_run_experiment_reports_split_seeds_and_deterministic_learner_seeds():
    cfg = _cfg(cv_folds=3, split_seeds=3, seeds=3)
    result = run_experiment(_records(), cfg, log=lambda *a: None)
    summary = result.summary
    ss = summary["split_seeds"]
    assert ss["seeds"] == [0, 1, 2]
    first = ss["per_seed"][0]["pooled"]
    for pol, r in summary["cv"]["pooled"].items():  # split seed 0 is the run's own CV, not a recomputation
        assert (first[pol]["exact"], first[pol]["n"]) == (r["exact"], r["n"])
        assert first[pol]["program_generations"] == r["program_generations"]
    assert summary["cv"]["split_seed"] == 0
    # the records behind every number are kept for later statistics
    recs = result.split_seed_records
    assert len(recs) == 3 and all(len(p["records"]) == len(summary["cv"]["pooled"]) * 36 for p in recs)
    d = ss["differences"]["learned_rule"]["always_tool_visible"]
    assert d["accuracy_pp"]["holds_at"]["of"] == 3
    # every cross-validated hypothesis is re-tested at every split seed; split seed 0 is the run's own CV
    rule = summary["study"]["split_seed_rule"]
    assert rule["of"] == 3 and rule["min_supported"] == 3 and "states no rule" in rule["rule"]
    for h in summary["hypotheses"]:
        assert h["split"] == "cv_pooled" and [e["split_seed"] for e in h["per_split_seed"]] == [0, 1, 2]
        assert h["per_split_seed"][0]["p_family"] == h["p_family"]
        assert h["per_split_seed"][0]["verdict"] == h["verdict_first_split_seed"]
        assert h["supported_at"].endswith(" of 3")
    # the rule on these traces takes the same actions at every learner seed: one observation
    assert summary["seeds"]["learned_rule"]["test"]["deterministic"] is True
    from controller.report.markdown import render_report

    text = render_report(summary)
    assert "Spread over 3 split seeds" in text and "Over split seeds" in text
    assert "deterministic: the same actions at every seed" in text


def test_seed_table_marks_only_identical_action_sequences_deterministic():
    from controller.study.experiment import seed_table

    res = {"dev": {"exact": 3, "n": 5, "program_generations": 4}, "test": {"exact": 2, "n": 5, "program_generations": 4}}
    per_seed = {0: {"p": res, "q": res}, 1: {"p": res, "q": res}}
    acts = {0: {"p": (("a", ("DIRECT",)),), "q": (("a", ("DIRECT",)),)},
            1: {"p": (("a", ("DIRECT",)),), "q": (("a", ("WRITE", "PROGRAM")),)}}
    t = seed_table(per_seed, acts)
    assert t["p"]["test"]["deterministic"] is True
    assert t["q"]["test"]["deterministic"] is False  # same counts, different actions: two observations


def test_split_seeds_need_cv(tmp_path):
    from controller.pipeline import RunConfig, check_flags
    from tracegen.errors import ConfigError

    with pytest.raises(ConfigError, match="split_seeds"):
        check_flags(RunConfig(experiment=ExperimentConfig(split_seeds=3)))
    with pytest.raises(ConfigError, match="split_seeds"):
        check_flags(RunConfig(experiment=ExperimentConfig(split_seeds=0, cv_folds=3)))


# ---- the quickstart trains what the report needs once --------------------------------------------

def test_quickstart_flags_train_no_lora_frontier():
    from controller.cli import build_config, make_parser

    cfg = build_config(make_parser().parse_args(["--generate-traces", "--train-lora"]))
    assert cfg.experiment.train_lora and cfg.experiment.lora_frontier_lambdas == ()
    asked = build_config(make_parser().parse_args(["--train-lora", "--lora-frontier", "0,0.5"]))
    assert asked.experiment.lora_frontier_lambdas == (0.0, 0.5)
    assert ExperimentConfig().lora_frontier_lambdas == ()


class _CountingFit:
    """Stands in for the LoRA trainer: counts trainings, acts like always-tool."""

    def __init__(self):
        self.calls = []

    def __call__(self, cfg, name, shuffle, dev_data=None, meta_out=None, *worker_and_timing, **kw):
        from controller.env.policies import AlwaysTool

        def fit(data, iteration=None):
            self.calls.append((name, iteration))
            pol = AlwaysTool()
            pol.name = name
            return pol

        return fit


@pytest.mark.slow
@pytest.mark.parametrize("frontier,trainings", [((), 1), ((0.0, 0.5), 3)])
def test_lora_trains_once_unless_the_frontier_is_asked_for(monkeypatch, frontier, trainings):
    import controller.learn.registry as learners  # the LoRA learner's entry trains through lora_fit

    counter = _CountingFit()
    monkeypatch.setattr(learners, "lora_fit", counter)
    cfg = _cfg(train_lora=True, lora_frontier_lambdas=frontier)
    summary, outcomes = run_experiment(_records(), cfg, log=lambda *a: None)
    assert len(counter.calls) == trainings
    assert ("lora_seq_policy" in summary["frontier"]) == bool(frontier)
    assert "lora_seq_policy" in outcomes


@pytest.mark.parametrize("price", [0.0, 0.5])
def test_rule_frontier_at_its_price_is_the_learned_rule(price):
    cfg = ExperimentConfig(progress=False, frontier_lambdas=(0.0, 0.5), rule_lambdas=(price,))
    summary, _ = run_experiment(_records(), cfg, log=lambda *a: None)
    assert summary["learned_rule"]["price"]["lambda"] == price
    pts = {(p["lambda"], p["split"]): p for p in summary["frontier"]["learned_rule"]["points"]}
    for split in ("dev", "test"):  # every record is scored here, so the totals match exactly
        r = summary["policy_results"]["learned_rule"][split]
        assert (pts[(price, split)]["exact"], pts[(price, split)]["program_generations"]) == (
            r["exact"], r["program_generations"])
