"""Intervals, paired tests and outcome summaries against hand-computed answers."""
import pytest

from controller.study.stats import (
    family_bootstrap,
    family_sign_flip_p,
    holm,
    mcnemar_exact,
    min_discordant_for_significance,
    paired_bootstrap_diff,
    paired_tests,
    summarize_outcomes,
    wilson_ci,
    verdict,
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
       ms=0.0, split="test", policy="p", family=None, work=0):
    return {"policy": policy, "split": split, "case_id": case, "family": family or f"fam_{case}",
            "actions": [], "source": source, "correct": correct, "direct_correct": direct_correct,
            "program_generations": gens, "repair_actions": repairs, "generated_tokens": tokens,
            "work": work, "sandbox_ms": ms}


def test_summarize_outcomes_every_field():
    outcomes = [
        _o("a", True, "program", False, gens=1, repairs=1, tokens=100, ms=2.5, work=40000),  # recovery
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
                     "sandbox_ms", "tool_productivity", "unscored", "n_families",
                     "accuracy_ci95_family", "work", "resample_actions", "search_nodes"}
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
    assert s["work"] == 40000 and s["n_families"] == 5


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
    assert t["diff"] == pytest.approx(0.75)
    # 8 families, 6 of them +1: exact sign-flip p = 2 / 2^6; one comparison, so Holm leaves it
    assert t["n_families"] == 8 and t["p_family"] == pytest.approx(2 / 64)
    assert t["p_holm"] == pytest.approx(2 / 64) and t["verdict"] == "better" and not t["within_noise"]
    assert set(res["learned_rule"]) == {"direct_only"} and res["direct_only"] == {}


# ----------------------------------------------------------------------------- family level


def test_family_bootstrap_two_families_known_interval():
    # f1: 2/2 right, f2: 0/2. Resampling 2 families: both f1 (acc 1), both f2 (0), mixed (0.5).
    fams = ["f1", "f1", "f2", "f2"]
    lo, hi = family_bootstrap(fams, [1, 1, 0, 0], n_resamples=4000, seed=3)
    assert (lo, hi) == (0.0, 1.0)
    assert family_bootstrap(fams, [1, 1, 0, 0], seed=3) == family_bootstrap(fams, [1, 1, 0, 0], seed=3)
    assert family_bootstrap(["f", "f", "f"], [1, 0, 1]) == pytest.approx([2 / 3, 2 / 3])  # one family
    assert family_bootstrap([], []) is None


def test_family_bootstrap_wider_than_case_level_when_families_cluster():
    # 10 families of 5 identical cases: the family interval must be wider than Wilson's over 50.
    fams = [f"f{i}" for i in range(10) for _ in range(5)]
    vals = [1.0 if i < 5 else 0.0 for i in range(10) for _ in range(5)]
    lo, hi = family_bootstrap(fams, vals, seed=0)
    wlo, whi = wilson_ci(25, 50)
    assert hi - lo > whi - wlo


@pytest.mark.parametrize("sums, expected", [
    ([1] * 5, 2 / 32),                 # all five families move the same way: exact 2/2^5
    ([1] * 6, 2 / 64),
    ([3, -1], 1.0),                    # every sign pattern is at least as extreme as |2|
    ([0, 0, 0], 1.0),                  # no family differs
    ([2, 1, 0, 0], 0.5),               # zero-sum families cannot move the statistic
])
def test_family_sign_flip_known_p(sums, expected):
    fams, diffs = [], []
    for i, d in enumerate(sums):  # spread each family's sum over cases of +-1 and 0
        step = 1 if d >= 0 else -1
        cells = [step] * abs(d) + [0]
        fams += [f"f{i}"] * len(cells)
        diffs += cells
    assert family_sign_flip_p(fams, diffs) == pytest.approx(expected)


def test_holm_known_values():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([]) == []


def test_verdict_rules():
    assert verdict(0.2, 0.01) == "better" and verdict(-0.2, 0.01) == "worse"
    assert verdict(0.2, 0.05) == "within noise" and verdict(None, None) == "within noise"


def test_case_level_significance_is_not_a_family_verdict():
    # 8 wins, all in one family: McNemar (cases) says p < 0.01, one family says nothing.
    base = [_o(f"c{i}", False, policy="always_tool_visible", family="one") for i in range(8)]
    mine = [_o(f"c{i}", True, policy="learned_rule", family="one") for i in range(8)]
    t = paired_tests({"always_tool_visible": base, "learned_rule": mine}, baselines=("always_tool_visible",))
    t = t["learned_rule"]["always_tool_visible"]
    assert t["mcnemar_p"] < 0.01 and t["n_families"] == 1
    assert t["p_family"] == 1.0 and t["verdict"] == "within noise" and t["within_noise"]


def test_holm_over_the_splits_distinct_comparisons():
    # Two policies vs two baselines that are identical (all wrong): a vs direct_only and a vs
    # always_tool_visible run the same test (the same per-family differences), so Holm counts them
    # once; likewise b's two; the baselines' own comparison is a tie (no family differs) and is left
    # out. Two distinct tests: Holm multiplies the smaller p by 2, not by 5.
    n = 7
    worst = [_o(f"c{i}", False, policy="direct_only") for i in range(n)]
    tool = [_o(f"c{i}", False, policy="always_tool_visible") for i in range(n)]
    a = [_o(f"c{i}", True, policy="a") for i in range(n)]
    b = [_o(f"c{i}", i == 0, policy="b") for i in range(n)]
    res = paired_tests({"direct_only": worst, "always_tool_visible": tool, "a": a, "b": b})
    pa, pb = res["a"]["direct_only"]["p_family"], res["b"]["direct_only"]["p_family"]
    assert pa == pytest.approx(2 / 128) and pb == pytest.approx(1.0)
    want_a, want_b = holm([pa, pb])
    assert want_a == pytest.approx(2 * 2 / 128)
    for base in ("direct_only", "always_tool_visible"):
        assert res["a"][base]["p_holm"] == pytest.approx(want_a)
        assert res["b"][base]["p_holm"] == pytest.approx(want_b)
        assert res["a"][base]["holm_family_size"] == 2
    assert res["a"]["direct_only"]["merged_with"] == ["a vs always_tool_visible"]
    tie = res["always_tool_visible"]["direct_only"]
    assert tie["p_holm"] == 1.0 and "holm_excluded" in tie
    assert res["a"]["direct_only"]["verdict"] == "better"  # 0.031; Holm over all 5 would give 0.078
    assert res["b"]["direct_only"]["verdict"] == "within noise"  # one family differs


def test_distinct_holm_merges_identical_and_negated_vectors_and_excludes_the_oracle():
    from controller.study.stats import comparison_key, distinct_holm

    fams = ["f1", "f1", "f2", "f3"]
    k1 = comparison_key(fams, [1, 0, 1, -1])
    k2 = comparison_key(fams, [0, 1, 1, -1])  # same per-family sums, different cases: the same test
    k3 = comparison_key(fams, [-1, 0, -1, 1])  # the negation: a two-sided test gives the same p
    k4 = comparison_key(fams, [1, 1, 1, 1])
    assert k1 == k2 == k3 != k4 and comparison_key(fams, [0, 0, 0, 0]) == ()
    p = [0.01, 0.01, 0.01, 0.02, 0.001, 1.0]
    keys = [k1, k2, k3, k4, k4, ()]
    excluded = [None, None, None, None, "oracle", None]
    adj, merged = distinct_holm(keys, p, excluded)
    # two distinct tests (k1, k4): Holm gives 0.02 and 0.02; the oracle keeps its own p; the tie 1.0
    assert adj == pytest.approx([0.02, 0.02, 0.02, 0.02, 0.001, 1.0])
    assert merged == [[0, 1, 2]]


def test_a_pair_compared_both_ways_is_one_holm_comparison():
    n = 6
    worst = [_o(f"c{i}", False, policy="direct_only") for i in range(n)]
    tool = [_o(f"c{i}", True, policy="always_tool_visible") for i in range(n)]
    res = paired_tests({"direct_only": worst, "always_tool_visible": tool})
    fwd, back = res["always_tool_visible"]["direct_only"], res["direct_only"]["always_tool_visible"]
    assert fwd["p_family"] == pytest.approx(2 / 64) and fwd["p_holm"] == pytest.approx(2 / 64)  # one test
    assert back["p_holm"] == fwd["p_holm"] and back["diff"] == -fwd["diff"]
    assert (back["wins"], back["losses"]) == (fwd["losses"], fwd["wins"])
    assert fwd["verdict"] == "better" and back["verdict"] == "worse"
    assert back["diff_ci95_family"] == [-fwd["diff_ci95_family"][1], -fwd["diff_ci95_family"][0]]


def test_sign_flip_enumeration_matches_monte_carlo_and_scipy():
    import numpy as np
    from scipy.stats import permutation_test

    from controller.study import stats

    rng = np.random.default_rng(3)
    for m in (4, 9, 14):  # 14 > 13: scipy's old default (9,999 draws) sampled here; enumeration is exact
        x = rng.integers(-4, 5, size=m).astype(float)
        x[x == 0] = 2
        fams = [f"f{i}" for i in range(m)]
        exact = family_sign_flip_p(fams, list(x))
        ref = permutation_test((x,), lambda v, axis: np.sum(v, axis=axis), permutation_type="samples",
                               n_resamples=2 ** m, alternative="two-sided").pvalue
        assert exact == pytest.approx(ref)
        # the Monte Carlo branch (forced) agrees within its sampling error
        old = stats.EXACT_FAMILIES
        stats.EXACT_FAMILIES = 0
        try:
            mc = stats._sign_flip_p.__wrapped__(tuple(sorted(x.tolist())), 0)
        finally:
            stats.EXACT_FAMILIES = old
        assert abs(mc - exact) < 4 * (exact * (1 - exact) / stats.FAMILY_PERMUTATIONS) ** 0.5 + 2e-4


def test_smallest_attainable_p_exact_and_monte_carlo():
    from controller.study.stats import EXACT_FAMILIES, min_attainable_p, sign_flip_method

    # 13 families all moving one way: exact 2 / 2^13 = 2.44e-4, and the test reaches it
    assert min_attainable_p(13) == pytest.approx(2.44e-4, rel=1e-3)
    assert family_sign_flip_p([f"f{i}" for i in range(13)], [1.0] * 13) == pytest.approx(2 / 2 ** 13)
    assert family_sign_flip_p([f"f{i}" for i in range(20)], [1.0] * 20) == pytest.approx(2 / 2 ** 20)
    # 45 families: Monte Carlo with 9,999 flips cannot go below 1 / 10,000 (not 2 / 2^45 = 5.7e-14)
    assert EXACT_FAMILIES == 20 and min_attainable_p(45) == pytest.approx(1e-4)
    assert family_sign_flip_p([f"f{i}" for i in range(45)], [1.0] * 45) == pytest.approx(1e-4)
    assert "Monte Carlo" in sign_flip_method(45) and "exact" in sign_flip_method(13)
    # zero-sum families are dropped before counting: 13 differing of 30
    assert family_sign_flip_p([f"f{i}" for i in range(30)], [1.0] * 13 + [0.0] * 17) == pytest.approx(2 / 2 ** 13)
