"""The rollout traces the whole tree (every sample's WRITE and FIX chain, batched by wave), and
with --program-samples 1 the environment is exactly the pilot's chain."""
import json
from pathlib import Path

import pytest

from controller.learn.dagger import run_dagger
from controller.study.experiment import _scored, by_split
from controller.env.policies import Oracle
from controller.env.registry import fixed_policies
from controller.learn.rule import fit_rule, select_rule
from controller.env.simulate import simulate
from controller.learn.training import full_state_pairs, labelled
from tracegen.records import read_traces, validate_record

from scripted import JSON_X, ScriptedBackend, program

ROOT = Path(__file__).resolve().parents[2]

PASS_RIGHT = "def transform(table):\n    return table[:1]"
FAIL = "def transform(table):\n    return table"
PASS_WRONG = "def transform(table):\n    return [table[0]] if table[0][0] == 'a' else [['w']]"
# sample j -> program of round r (the FIX rounds exist only while the chain fails)
PLAN = {0: [FAIL, PASS_RIGHT], 1: [PASS_WRONG], 2: [FAIL, FAIL, FAIL]}


def _answer(r):
    return JSON_X if r.kind == "direct" else program(PLAN[r.sample][r.round])


def _trace(k):
    sandbox = pytest.importorskip("sandbox")
    from cases import Case
    from tracegen import rollout

    cases = [Case.from_tables(f"f/c{i}", "f", [["a"], ["b"]], [["a"]], [[str(i)], ["z"]], [[str(i)]]) for i in range(3)]
    backend = ScriptedBackend(_answer, tokens=(9, 4), search_nodes=7)
    with sandbox.Sandbox(workers=1) as sb:
        recs = rollout.trace_cases(cases, {}, backend, sb, rollout.RolloutConfig(max_repairs=2, program_samples=k,
                                                                                 progress=False))
    return recs, [[(r.kind, r.round, r.sample) for r in b] for b in backend.batches]


def _untimed(x):
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if not k.endswith("_ms")}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def test_rollout_traces_every_sample_chain_batched_by_wave():
    recs, batches = _trace(3)
    for r in recs:
        validate_record(r)
        assert [x["visible_pass"] for x in r["rounds"]] == [False, True]
        assert [[x["visible_pass"] for x in ch] for ch in r["samples"]] == [[True], [False, False, False]]
        assert [[h["hidden_exact"] for h in ch] for ch in r["hidden"]["samples"]] == [[False], [False, False, False]]
        assert r["hidden"]["rounds"][-1]["hidden_exact"] is True
        assert all(x["search_nodes"] == 7 for ch in [r["rounds"], *r["samples"]] for x in ch)
        assert r["direct"]["search_nodes"] == 7 and r["totals"]["completion_tokens"] == 4 * (1 + 2 + 1 + 3)
    # one backend call per wave across cases and samples: direct, WRITE x3 samples, FIX 1, FIX 2
    assert [len(b) for b in batches] == [3, 9, 6, 3]
    assert sorted({s for _, _, s in batches[2]}) == [0, 2] and {s for _, _, s in batches[3]} == {2}
    assert all(kind == "fix" for b in batches[2:] for kind, _, _ in b)


def test_k1_rollout_is_sample_zero_of_the_tree():
    tree, _ = _trace(3)
    chain, batches = _trace(1)
    assert [len(b) for b in batches] == [3, 3, 3]
    for t, c in zip(tree, chain):
        assert "samples" not in c and "samples" not in c["hidden"]
        assert _untimed(c["rounds"]) == _untimed(t["rounds"]) and c["hidden"]["rounds"] == t["hidden"]["rounds"]
        # policies that never resample act the same on the tree and on the chain
        for p in fixed_policies().values():
            a, b = simulate(p, [t])[0], simulate(p, [c])[0]
            assert (a["actions"], a["correct"], a["program_generations"]) == \
                   (b["actions"], b["correct"], b["program_generations"])


def test_k1_results_equal_the_chain_environment_on_v1_traces():
    """``tests/data/chain_golden.json`` holds every fixed policy's, the oracle's, the learned rule's
    and its DAgger version's outcomes computed by the chain environment (the code before RESAMPLE)
    on the version-1 trace file in tests/data; the tree environment with K = 1 must reproduce them."""
    golden = json.loads((ROOT / "tests" / "data" / "chain_golden.json").read_text())
    recs = read_traces(ROOT / "tests" / "data" / "v1_library_traces.jsonl")
    splits = by_split(recs)
    train = _scored(splits["train"])
    pols = {k: v for k, v in fixed_policies().items() if k in golden}  # the policies of the chain code
    pols["oracle_seq"], pols["oracle_lam0.3"] = Oracle(recs), Oracle(recs, 0.3)
    data = labelled(full_state_pairs(train))
    assert len(data) == golden["n_train_states"]
    rule, _ = select_rule(data, _scored(splits["dev"]), seed=0)
    assert rule.model_name == golden["rule_model"]
    pols["learned_rule"] = rule
    final, hist = run_dagger(lambda d, i: fit_rule(d, rule.model_name, 0, name="d"), train, iters=2)
    assert [h["dataset_size"] for h in hist] == golden["dagger_sizes"]
    pols["learned_rule_dagger"] = final
    for name, p in pols.items():
        got = [[o["case_id"], o["actions"], o["source"], o["correct"], o["program_generations"],
                o["generated_tokens"]] for o in simulate(p, recs)]
        assert got == golden[name], name
