"""The model's confidence as a learner input: on a constructed trace set where only the direct
answer's token log-probability tells a right direct answer from a wrong one, the learned rule reads
it and is right where the same rule without it cannot be; ``--no-confidence`` turns it off; the
report says what it adds per decision point."""
import copy

import pytest

from controller.pipeline import analyze
from controller.study.experiment import ExperimentConfig
from tracefactory import confidence_traces

CFG = dict(frontier_lambdas=(0.0,), rule_lambdas=(0.0,), bootstrap_resamples=200)


def test_the_rule_uses_a_confidence_feature_that_separates_right_from_wrong():
    """The rule alone (fast): fit on train, price and model chosen on dev, simulated on test."""
    from controller.env.confidence import without_confidence
    from controller.env.traceenv import TraceEnv
    from controller.learn.cost_rule import fit_learned_rule

    cfg = ExperimentConfig(**CFG)
    for recs, want in ((confidence_traces(), 12), ([without_confidence(r) for r in confidence_traces()], 6)):
        env = TraceEnv(recs)
        rule, _, _ = fit_learned_rule(env, env.split("train"), env.split("dev"), cfg)
        right, n, _ = env.right_and_cost(rule, env.split("test"))
        assert (right, n) == (want, 12) if want == 12 else right <= want
        # the constructed answers' mean and min log-probability separate alike: the tree may
        # split on either (which one is a tie, broken by sklearn's draw over the columns)
        assert ("direct_logprob_" in rule.describe()) == (want == 12)


@pytest.fixture(scope="module")
def with_confidence():
    return analyze(confidence_traces(), ExperimentConfig(**CFG), log=lambda *a: None)


@pytest.mark.slow  # the whole analysis (study sections included): ~10 s each on a quiet machine
def test_the_rule_reads_the_confidence_that_separates_right_from_wrong(with_confidence):
    summary, outcomes = with_confidence
    test = summary["policy_results"]
    assert test["learned_rule"]["test"]["exact"] == 12 == test["oracle_seq"]["test"]["exact"]
    # without the log-probabilities every state looks the same: at most the majority kind is right
    assert test["learned_rule_no_confidence"]["test"]["exact"] <= 6
    assert "direct_logprob" in summary["learned_rule"]["description"]
    assert "direct_logprob" not in summary["learned_rule_no_confidence"]["description"]
    adds = summary["confidence_adds"]
    assert adds["split"] == "test" and adds["wins"] >= 6 and adds["losses"] == 0
    # with lam = 0 writing costs nothing: both write, and part after the program passes (commit or not)
    after_pass = next(p for p in adds["points"] if p["point"] == "DIRECT/PROGRAM")
    assert after_pass["wins"] == adds["wins"] and after_pass["generations_saved"] == 0


@pytest.mark.slow  # the whole analysis (study sections included): ~10 s each on a quiet machine
def test_no_confidence_sees_the_traces_as_if_none_were_recorded(with_confidence):
    summary, _ = analyze(confidence_traces(), ExperimentConfig(confidence=False, **CFG), log=lambda *a: None)
    assert "learned_rule_no_confidence" not in summary["policy_results"]
    assert summary["confidence_adds"] is None and summary["confidence"]["recorded"] == 0
    assert "direct_logprob" not in summary["learned_rule"]["description"]
    assert summary["policy_results"]["learned_rule"]["test"]["exact"] == \
        with_confidence.summary["policy_results"]["learned_rule_no_confidence"]["test"]["exact"]


@pytest.mark.slow  # the whole analysis (study sections included): ~10 s each on a quiet machine
def test_the_report_says_what_confidence_adds(with_confidence):
    from controller.report.markdown import render_report

    md = render_report(with_confidence.summary)
    assert "## What confidence adds to the learned rule" in md and "| DIRECT/PROGRAM |" in md


def test_a_missing_confidence_is_nan_to_the_rule_never_zero():
    """States without log-probabilities (another backend's traces mixed in) reach the rule as NaN: the
    logistic model imputes them with a missing-indicator column, the trees route them natively."""
    from controller.env.traceenv import TraceEnv
    from controller.learn.rule import _matrix, fit_rule
    from controller.learn.training import labelled

    recs = confidence_traces()
    plain = copy.deepcopy(recs[:4])
    for r in plain:
        del r["direct"]["logprobs"], r["rounds"][0]["logprobs"]
        r["case_id"] += "_plain"
    env = TraceEnv(recs + plain)
    data = labelled(env.chain_pairs(recs + plain), 0.1, "generations", tie_weight=0.0)  # writing costs: the start has two labels
    for model in ("logistic", "tree_depth2", "forest"):
        rule = fit_rule(data, model, 0)
        assert "direct_logprob_mean" in rule.feature_names
        start = [s for s in data.states if s.revealed == 0 and s.case_id.endswith("_plain")]
        row = _matrix(start, rule.feature_names)[0]
        assert row[rule.feature_names.index("direct_logprob_mean")] != row[rule.feature_names.index("direct_logprob_mean")]
        assert len(rule.act(start)) == len(start)
    # at the start no program exists: the latest program's confidence is left out there, not imputed
    start_point = ("DIRECT", "WRITE")
    assert "last_logprob_mean" not in fit_rule(data, "logistic", 0).names_at(start_point)


@pytest.mark.slow  # traces with the hf backend (the tiny model), then the whole analysis
def test_a_run_on_hf_tiny_model_traces_reports_what_confidence_adds(tiny_model, run_cli, tmp_path):
    import json

    from e2e_helpers import small_case_dir

    cases = small_case_dir(tmp_path / "cases", families=4, per_family=2)
    root = tmp_path / "run"
    r = run_cli("--root", root, "--cases", cases, "--generate-traces", "--backend", "hf", "--model", tiny_model,
                "--max-repairs", "1", "--max-new-tokens", "8", "--gen-batch-size", "8", "--no-progress",
                "--test-families", "1", "--dev-families", "1", "--cache-dir", "none", "--frontier-lambdas", "0")
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((root / "reports" / "final_summary.json").read_text())
    assert summary["confidence"]["recorded"] == summary["confidence"]["n"] > 0
    adds = summary["confidence_adds"]
    assert adds is not None and adds["split"] == "test" and adds["n"] == summary["splits"]["test"]["n"]
    assert "learned_rule_no_confidence" in summary["policy_results"]
    assert "## What confidence adds to the learned rule" in (root / "reports" / "report.md").read_text()
