"""Intervals, paired tests and outcome summaries against hand-computed answers."""
import pytest

from controller.stats import (
    mcnemar_exact,
    min_discordant_for_significance,
    paired_bootstrap_diff,
    paired_tests,
    summarize_outcomes,
    wilson_ci,
    within_noise,
)


def test_wilson_known_values():
    # 2/12 at 95%: the Wilson interval is [0.0470, 0.4480].
    lo, hi = wilson_ci(2, 12)
    assert lo == pytest.approx(0.04697, abs=1e-4)
    assert hi == pytest.approx(0.44803, abs=1e-4)
    lo, hi = wilson_ci(0, 12)
    assert lo == 0.0 and hi == pytest.approx(0.24249, abs=1e-4)
    assert wilson_ci(0, 0) == [0.0, 1.0]
    with pytest.raises(ValueError):
        wilson_ci(5, 3)


def test_mcnemar_known_p():
    # six discordant pairs all one way: p = 2 * 0.5**6 = 0.03125
    r = mcnemar_exact([True] * 6 + [True, False], [False] * 6 + [True, False])
    assert (r["b01"], r["b10"]) == (0, 6)
    assert r["p_value"] == pytest.approx(0.03125)
    # b01 counts a-wrong/b-right
    r = mcnemar_exact([False, False, True], [True, True, False])
    assert (r["b01"], r["b10"]) == (2, 1)
    assert r["p_value"] == pytest.approx(1.0)
    assert mcnemar_exact([True, False], [True, False]) == {"b01": 0, "b10": 0, "p_value": 1.0}
    assert mcnemar_exact([], [])["p_value"] == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact([True], [])
    assert min_discordant_for_significance() == 6


def test_bootstrap_deterministic_and_covers_truth():
    a = [True] * 30 + [False] * 10 + [True] * 5 + [False] * 15
    b = [True] * 30 + [False] * 10 + [False] * 5 + [True] * 15
    r1 = paired_bootstrap_diff(a, b, seed=3)
    r2 = paired_bootstrap_diff(a, b, seed=3)
    assert r1 == r2
    assert r1["diff"] == pytest.approx((5 - 15) / 60)
    lo, hi = r1["ci95"]
    assert lo <= r1["diff"] <= hi and hi - lo > 0
    assert not within_noise([0.05, 0.2]) and within_noise([-0.1, 0.2]) and within_noise(None)


def test_bootstrap_degenerate():
    assert paired_bootstrap_diff([], []) == {"diff": None, "ci95": None}
    r = paired_bootstrap_diff([True, False, True], [True, False, True])
    assert r == {"diff": 0.0, "ci95": [0.0, 0.0]}
    r = paired_bootstrap_diff([True] * 4, [False] * 4)
    assert r == {"diff": 1.0, "ci95": [1.0, 1.0]}


def _o(case, correct, source="direct", direct_correct=False, gens=0, repairs=0, tokens=10,
       ms=0.0, split="test", policy="p"):
    return {"policy": policy, "split": split, "case_id": case, "family": "f", "actions": [],
            "source": source, "correct": correct, "direct_correct": direct_correct,
            "program_generations": gens, "repair_actions": repairs, "generated_tokens": tokens,
            "sandbox_ms": ms}


def test_summarize_outcomes_every_field():
    outcomes = [
        _o("a", True, "program", False, gens=1, repairs=1, tokens=100, ms=2.5),  # recovery
        _o("b", False, "program", True, gens=1, tokens=50, ms=1.0),  # loss
        _o("c", True, "direct", True, tokens=20),
        _o("d", False, "direct", False, gens=1, repairs=2, tokens=30, ms=4.0),
        _o("e", True, "program", True, gens=1, tokens=40, ms=0.5),  # program right, not recovery
        _o("u", None, "program", None, gens=1, repairs=1, tokens=7, ms=1.0),  # unscored
    ]
    s = summarize_outcomes(outcomes)
    expected_keys = {"n", "exact", "accuracy", "accuracy_ci95", "program_generations",
                     "repair_actions", "program_commits", "program_correct", "program_precision",
                     "direct_miss_recoveries", "direct_correct_losses", "generated_tokens",
                     "sandbox_ms", "resample_actions", "search_nodes", "tool_productivity", "unscored"}
    assert set(s) == expected_keys
    assert s["n"] == 5 and s["exact"] == 3 and s["accuracy"] == pytest.approx(0.6)
    assert s["accuracy_ci95"] == pytest.approx(wilson_ci(3, 5))
    assert s["program_generations"] == 5  # includes the unscored case
    assert s["repair_actions"] == 4
    assert s["program_commits"] == 3 and s["program_correct"] == 2
    assert s["program_precision"] == pytest.approx(2 / 3)
    assert s["direct_miss_recoveries"] == 1 and s["direct_correct_losses"] == 1
    assert s["generated_tokens"] == 247
    assert s["sandbox_ms"] == pytest.approx(9.0)
    assert s["tool_productivity"] == pytest.approx(2 / 4)  # scored generations only
    assert s["unscored"] == 1


def test_summarize_empty_and_direct_only():
    s = summarize_outcomes([])
    assert s["n"] == 0 and s["accuracy"] is None and s["accuracy_ci95"] == [0.0, 1.0]
    s = summarize_outcomes([_o("a", True, direct_correct=True)])
    assert s["program_precision"] is None and s["tool_productivity"] is None


def test_paired_tests_aligned_by_case():
    cases = [f"c{i}" for i in range(8)]
    base = [_o(c, False, policy="direct_only") for c in cases]
    mine = [_o(c, i < 6, policy="learned_rule") for i, c in enumerate(reversed(cases))]
    mine.append(_o("dev1", True, split="dev", policy="learned_rule"))  # other split: ignored
    mine.append(_o("x", True, policy="learned_rule"))  # baseline lacks it: ignored
    res = paired_tests({"direct_only": base, "learned_rule": mine}, split="test", seed=0)
    t = res["learned_rule"]["direct_only"]
    assert t["n"] == 8 and t["b10"] == 6 and t["b01"] == 0
    assert t["mcnemar_p"] == pytest.approx(0.03125)
    assert t["diff"] == pytest.approx(0.75) and not t["within_noise"]
    assert set(res["learned_rule"]) == {"direct_only"} and res["direct_only"] == {}
