"""Known answers for the comparators: best-fixed rule, dominance, NI tolerance, family bound."""
import pytest

from controller.learn.best_fixed import choose_best_fixed
from controller.study.comparators import dominance, family_bound, max_losses_tolerated, ni_tolerance
from controller.study.stats import noninferiority_lower_bound


def test_ni_tolerance_at_the_foofah_n():
    # the numbers: at n = 225 and margin 0.02 only zero losses pass ((0, 1) -> -0.0245)
    assert noninferiority_lower_bound(0, 1, 225) == pytest.approx(-0.0245, abs=5e-4)
    assert max_losses_tolerated(225, 0.02) == 0
    assert max_losses_tolerated(2000, 0.02) > 10
    assert max_losses_tolerated(20, 0.02) is None  # even 0 losses fail at n = 20
    t = ni_tolerance(225, 0.02)
    assert t["max_losses_tolerated"] == 0
    assert t["power_at_loss_rate"]["0.01"] == pytest.approx(0.99 ** 225)


def _rec(seed, policy, case, correct, gens):
    return {"split_seed": seed, "policy": policy, "case_id": case, "correct": correct, "program_generations": gens}


def test_dominance_counts_seeds_where_a_fixed_policy_beats_best_fixed():
    seeds = []
    for s, (bf, r1) in enumerate([((1, 3), (1, 2)), ((1, 2), (1, 2)), ((1, 1), (0, 0))]):
        recs = [_rec(s, "best_fixed", "c", bool(bf[0]), bf[1]), _rec(s, "repair_at_most_1", "c", bool(r1[0]), r1[1]),
                _rec(s, "learned_rule", "c", True, 0)]  # a learner never counts as a dominating fixed policy
        seeds.append({"split_seed": s, "records": recs})
    d = dominance(seeds)
    assert d["n_seeds"] == 3 and d["dominated_seeds"] == 1
    assert d["per_seed"][0]["dominated_by"] == ["repair_at_most_1"] and d["per_seed"][1]["dominated_by"] == []


def test_family_bound_widens_with_clustered_losses():
    fams = [f"f{i // 5}" for i in range(200)]
    spread = [0.0] * 200
    for i in (0, 50, 100):
        spread[i] = -1.0
    clustered = [0.0] * 200
    for i in (0, 1, 2):
        clustered[i] = -1.0
    a, b = family_bound(fams, spread)["lower_bound"], family_bound(fams, clustered)["lower_bound"]
    assert b < a < 0
    assert family_bound(fams, [0.0] * 200)["lower_bound"] == 0.0


class _Env:
    def __init__(self, table):
        self.table = table

    def right_and_cost(self, pol, records, cost):
        return self.table[pol]


def test_best_fixed_is_the_cheapest_within_the_margin():
    env = _Env({"always": (100, 100, 2.0), "r1": (99, 100, 1.5), "once": (90, 100, 1.0)})
    pols = {k: k for k in ("always", "r1", "once")}
    _, info = choose_best_fixed(env, pols, [], margin=0.02)
    assert info["chosen"] == "r1" and info["most_accurate"] == "always"
    _, info = choose_best_fixed(env, pols, [], margin=0.0)
    assert info["chosen"] == "always"
