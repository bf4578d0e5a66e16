"""Leak audit: deployable policies must act identically when the test split's hidden answers change.

With the split held fixed, the same cases are traced twice: once as shipped and once with every
test-split TestAnswer replaced by another table. Everything is retrained. A deployable policy
(all but the oracle) reads only visible state, so its actions on every test case must be the
same; the oracle, which reads hidden grades, must change. A deliberately leaky state builder
must make the audit fail.
"""
import json
import shutil

import pytest

import controller.env.state as state_mod
from controller.pipeline import RunConfig, run
from controller.study.experiment import ExperimentConfig
from tracegen.backends import BackendConfig
from tracegen.rollout import RolloutConfig

from e2e_helpers import small_case_dir


def _run(root, cases_dir, manifest=None, lora=False):
    from controller.learn.lora import LoraPolicyConfig

    cfg = RunConfig(
        root=str(root), cases=str(cases_dir), generate_traces=True, split_manifest=manifest,
        backend=BackendConfig(synth_write_nodes=800, synth_fix_nodes=4000, synth_time_budget_s=5),
        rollout=RolloutConfig(max_repairs=1, progress=False),
        experiment=ExperimentConfig(seed=0, train_lora=lora, frontier_lambdas=(0.0,),
                                    lora=LoraPolicyConfig(cache_dir=str(root / "tiny"), max_steps=8, batch_size=8),
                                    adapters_dir=str(root / "adapters")),
    )
    run(cfg, log=lambda *a: None)
    preds = {}
    for f in (root / "reports" / "predictions").glob("*.jsonl"):
        rows = [json.loads(l) for l in f.read_text().splitlines()]
        preds[f.stem] = {r["case_id"]: (r["actions"], r["correct"]) for r in rows if r["split"] == "test"}
    return preds


def _swap_test_answers(src, dst, test_families):
    shutil.copytree(src, dst)
    for f in dst.rglob("*.json"):
        d = json.loads(f.read_text())
        if d["TestName"] in test_families:
            d["TestAnswer"] = [["replaced", "answer"], ["not", "the", "truth"]]
            f.write_text(json.dumps(d))


def _audit(tmp_path, lora=False):
    cases = small_case_dir(tmp_path / "cases")
    a = _run(tmp_path / "a", cases, lora=lora)
    manifest = tmp_path / "a" / "reports" / "split_manifest.json"
    test_fams = json.loads(manifest.read_text())["split_families"]["test"]
    _swap_test_answers(cases, tmp_path / "cases_swapped", set(test_fams))
    b = _run(tmp_path / "b", tmp_path / "cases_swapped", manifest=str(manifest), lora=lora)
    return a, b


def _deployable(preds):
    return [p for p in preds if not p.startswith("oracle")]


@pytest.mark.slow
def test_deployable_policies_ignore_hidden_answers(tmp_path):
    a, b = _audit(tmp_path)
    assert set(a) == set(b) and "learned_rule" in a
    for policy in _deployable(a):
        assert {k: v[0] for k, v in a[policy].items()} == {k: v[0] for k, v in b[policy].items()}, policy
    assert a["oracle_seq"] != b["oracle_seq"]  # actions or scores move with the answers


@pytest.mark.slow
def test_audit_catches_a_leaky_state_builder(tmp_path, monkeypatch):
    """A state builder that lets one hidden bit through (is the latest program right?) fails the audit."""
    answers = {}
    real_view, real_features = state_mod.visible_view, state_mod._features

    def visible_view(record, revealed):
        view = real_view(record, revealed)
        pos = state_mod.as_pos(revealed)
        if pos:  # the latest revealed round of sample 0 (the chain the fixed policies walk)
            answers[record["case_id"]] = record["hidden"]["rounds"][pos[0] - 1]["hidden_exact"]
        return view

    def leaky(view):
        f = real_features(view)
        if view["rounds"]:
            f["prog_equals_direct"] = float(bool(answers.get(view["case_id"])))
        return f

    monkeypatch.setattr(state_mod, "visible_view", visible_view)
    monkeypatch.setattr(state_mod, "_features", leaky)
    a, b = _audit(tmp_path)
    changed = [p for p in _deployable(a)
               if {k: v[0] for k, v in a[p].items()} != {k: v[0] for k, v in b[p].items()}]
    assert changed, "the audit should notice a state builder that reads hidden grades"


@pytest.mark.slow
def test_lora_policy_ignores_hidden_answers(tmp_path):
    a, b = _audit(tmp_path, lora=True)
    for policy in ("lora_seq_policy",):
        assert {k: v[0] for k, v in a[policy].items()} == {k: v[0] for k, v in b[policy].items()}


def test_confidence_features_read_only_what_is_revealed():
    """The token log-probability features (schema v3) come from the direct answer and the revealed
    rounds alone: changing the hidden answer, or a round not yet revealed, changes nothing; a trace
    without them gives no such feature (absent, never 0)."""
    import copy

    from controller.env.state import LOGPROB_FEATURE_NAMES, confidence_vector, visible_state
    from tracefactory import make_record

    plain = make_record(rounds=[(False, [["x"]]), (True, [["y"]])])
    rec = copy.deepcopy(plain)
    rec["schema_version"] = 3
    rec["direct"]["logprobs"] = {"mean": -0.7, "min": -3.0, "sum": -7.0, "tokens": 10, "source": "hf"}
    for i, r in enumerate(rec["rounds"]):
        r["logprobs"] = {"mean": -0.1 * (i + 1), "min": -1.0 - i, "sum": -1.0, "tokens": 5, "source": "hf"}
    s0, s1 = visible_state(rec, 0), visible_state(rec, 1)
    assert s0.features["direct_logprob_mean"] == -0.7 and "last_logprob_mean" not in s0.features
    assert s1.features["last_logprob_min"] == -1.0 and "confidence: " in s1.text
    swapped = copy.deepcopy(rec)
    swapped["hidden"] = {"answer": [["other"]], "direct_exact": True, "rounds": [{"hidden_exact": True}] * 2}
    swapped["rounds"][1]["logprobs"]["mean"] = -9.0  # round 1 is not revealed at step 1
    assert visible_state(swapped, 1).features == s1.features and visible_state(swapped, 0).features == s0.features
    none = visible_state(plain, 1)
    assert not any(n in none.features for n in LOGPROB_FEATURE_NAMES) and "confidence" not in none.text
    assert all(v != v for v in confidence_vector(none))  # NaN, not a fake zero


def test_the_rule_reading_confidence_ignores_hidden_answers():
    """The leak audit over the confidence features: a rule trained on traces with token
    log-probabilities (train split) acts identically on the test cases when their hidden answers
    (and grades) are swapped; the oracle does not."""
    import copy

    from tracefactory import CONF_DIRECT as DIRECT, CONF_PROGRAM as PROGRAM, confidence_traces

    from controller.env.policies import Oracle
    from controller.env.traceenv import TraceEnv
    from controller.learn.cost_rule import fit_learned_rule

    recs = confidence_traces()
    env = TraceEnv(recs)
    rule, _, _ = fit_learned_rule(env, env.split("train"), env.split("dev"), ExperimentConfig(rule_lambdas=(0.0,)))
    assert "direct_logprob" in rule.describe()
    swapped = copy.deepcopy(recs)
    for r in swapped:
        if r["split"] == "test":
            right = PROGRAM if r["hidden"]["direct_exact"] else DIRECT
            r["hidden"].update(answer=right, direct_exact=right == DIRECT,
                               rounds=[{"hidden_exact": right == PROGRAM}])
    test_a = [r for r in recs if r["split"] == "test"]
    test_b = [r for r in swapped if r["split"] == "test"]
    acts = lambda policy, rs: [o["actions"] for o in TraceEnv(rs).simulate(policy, rs)]
    assert acts(rule, test_a) == acts(rule, test_b)
    assert acts(Oracle(test_a), test_a) != acts(Oracle(test_b), test_b)
