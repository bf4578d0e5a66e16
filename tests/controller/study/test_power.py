"""Power by simulation: known limits of the sign-flip test and a monotone, seeded MDE."""
import pytest

from controller.study.power import min_detectable_effect, rejection_rate


def test_too_few_families_can_never_reject():
    # 5 families: the smallest attainable two-sided p is 2/32 = 0.0625 > 0.05
    out = min_detectable_effect([f"f{i}" for i in range(5)], [1.0] * 5)
    assert out["mde"] is None and out["min_attainable_p"] == pytest.approx(2 / 32) and "cannot reach" in out["note"]


def test_no_spread_any_effect_is_found_with_enough_families():
    # 8 families with identical differences: no noise, so the smallest grid effect is detected
    out = min_detectable_effect([f"f{i}" for i in range(8)], [0.0] * 8, scale=1.0, grid=10)
    assert out["mde"] == pytest.approx(0.1, abs=0.1) and out["mde"] <= 0.1


def test_more_families_detect_smaller_effects_and_the_result_is_seeded():
    import random

    rng = random.Random(0)
    def data(f):
        fams = [f"f{i}" for i in range(f) for _ in range(5)]
        return fams, [rng.choice([-1, 0, 0, 0, 1]) for _ in fams]
    small = min_detectable_effect(*data(12), scale=0.5, sims=150)
    big = min_detectable_effect(*data(60), scale=0.5, sims=150)
    assert small["mde"] is not None and big["mde"] is not None and big["mde"] < small["mde"]
    fams, d = data(20)
    assert min_detectable_effect(fams, d, seed=3) == min_detectable_effect(fams, d, seed=3)


def test_rejection_rate_is_alpha_like_under_the_null_and_one_under_a_huge_effect():
    import numpy as np

    rng = np.random.default_rng(0)
    sums = rng.normal(size=30)
    counts = np.ones(30)
    assert rejection_rate(sums, counts, 0.0, sims=400) < 0.12
    assert rejection_rate(sums, counts, 5.0, sims=100) == 1.0
