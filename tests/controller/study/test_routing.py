"""Routing metrics with known answers: mixing weights, hull, PGR curves, APGR, CPT, the mix test."""
import pytest

from controller.study.routing import (apgr, cost_gap_recovered, cpt, hull_value, mix_test, mix_weight, pgr_curve,
                                routing_table, upper_hull)


def test_random_router_has_apgr_one_half_and_cpt_equal_to_the_target():
    curve = pgr_curve([], weak=(0.0, 0.2), strong=(2.0, 0.8))
    assert curve == [(0.0, 0.0), (1.0, 1.0)]
    assert apgr(curve) == pytest.approx(0.5)
    assert cpt(curve, 0.5) == pytest.approx(0.5) and cpt(curve, 0.8) == pytest.approx(0.8)


def test_known_router_curve():
    # weak (0, 0.2), strong (2, 0.8): a point at cost 0.5 (share 0.25) with accuracy 0.65 (PGR 0.75)
    curve = pgr_curve([(0.5, 0.65)], weak=(0.0, 0.2), strong=(2.0, 0.8))
    assert curve == [(0.0, 0.0), (0.25, pytest.approx(0.75)), (1.0, 1.0)]
    # area: 0.25 * 0.75 / 2 + 0.75 * (0.75 + 1) / 2 = 0.09375 + 0.65625
    assert apgr(curve) == pytest.approx(0.75)
    assert cpt(curve, 0.5) == pytest.approx(0.25 * 0.5 / 0.75)
    assert cpt(curve, 0.8) == pytest.approx(0.25 + 0.75 * 0.05 / 0.25)
    # a point costlier than strong is clipped to share 1; references that tie give no curve
    assert pgr_curve([(3.0, 0.9)], (0.0, 0.2), (2.0, 0.8))[-1] == (1.0, pytest.approx(7 / 6))
    assert pgr_curve([(1.0, 0.5)], (0.0, 0.5), (2.0, 0.5)) is None and apgr(None) is None


def test_mix_weight_hull_and_cost_gap():
    assert mix_weight(1.5, 1.0, 2.0) == pytest.approx(0.5) and mix_weight(3.0, 1.0, 2.0) is None
    pts = [(0.0, 0.2, "direct"), (1.0, 0.6, "once"), (2.0, 0.7, "tool"), (2.5, 0.65, "worse"), (1.0, 0.3, "dup")]
    hull = upper_hull(pts)
    assert [h[2] for h in hull] == ["direct", "once", "tool"]
    # (1.0, 0.6) sits above the chord direct-tool (0.45 at cost 1): on the hull; a point below drops
    assert [h[2] for h in upper_hull([(0, 0.2, "a"), (1, 0.4, "b"), (2, 0.8, "c")])] == ["a", "c"]
    acc, a, b, w = hull_value(hull, 1.5)
    assert (a, b) == ("once", "tool") and w == pytest.approx(0.5) and acc == pytest.approx(0.65)
    assert hull_value(hull, 3.0)[:3] == (0.7, "tool", "tool") and hull_value(hull, -1) is None
    assert cost_gap_recovered(2.0, 1.5, 1.0) == pytest.approx(0.5) and cost_gap_recovered(1.0, 1.0, 1.0) is None


def test_mix_test_known_p_value():
    # 7 families, one case each: the learner is right everywhere, a (cheap) never, b (costly) always.
    # At w = 0.5 the mix expects 0.5 per case: d = +0.5 in all 7 families -> exact sign-flip p = 2/128.
    L = {f"c{i}": (True, 1.0, f"f{i}") for i in range(7)}
    a = {f"c{i}": (False, 0.0, f"f{i}") for i in range(7)}
    b = {f"c{i}": (True, 2.0, f"f{i}") for i in range(7)}
    t = mix_test(L, a, b, 0.5)
    assert t["expected_exact"] == pytest.approx(3.5) and t["learner_exact"] == 7
    assert t["diff"] == pytest.approx(0.5) and t["p_family"] == pytest.approx(2 / 128)


def _o(policy, i, right, gens, fam=None, split="test"):
    return {"policy": policy, "split": split, "case_id": f"c{i}", "family": fam or f"f{i}", "correct": right,
            "program_generations": gens, "generated_tokens": 10 + 100 * gens, "work": 1000 * gens}


def test_routing_table_end_to_end_on_hand_built_outcomes():
    n = 8
    outs = {"direct_only": [_o("direct_only", i, i < 2, 0) for i in range(n)],
            "always_tool_visible": [_o("always_tool_visible", i, i < 6, 2) for i in range(n)],
            "visible_disagree_rule": [_o("visible_disagree_rule", i, i < 6, 2) for i in range(n)],
            "oracle_seq": [_o("oracle_seq", i, i < 6, 1 if i >= 2 and i < 6 else 0) for i in range(n)],
            # the learner: direct on the cases direct gets right, tools elsewhere
            "learned_rule": [_o("learned_rule", i, i < 6, 0 if i < 2 else 2) for i in range(n)]}
    outs["direct_only"].append(dict(_o("direct_only", 99, None, 0)))  # unscored: left out of every point
    front = {"learned_rule": {"points": [{"split": "test", "lambda": 0, "n": n, "accuracy": 0.75,
                                          "program_generations": 12, "work": 12000, "generated_tokens": 80 + 1200}]}}
    r = routing_table({"test": outs}, ["direct_only", "always_tool_visible", "visible_disagree_rule"],
                      ["learned_rule"], direct_tokens={f"c{i}": 10 for i in range(n)}, frontier=front)
    g = r["test"]["generations"]
    assert g["points"]["direct_only"]["n"] == n and g["same_as"] == {"visible_disagree_rule": "always_tool_visible"}
    L = g["learners"]["learned_rule"]
    assert L["cost"] == pytest.approx(1.5) and L["accuracy"] == pytest.approx(0.75)
    assert L["pgr"] == pytest.approx(1.0) and L["cost_gap_recovered"] == pytest.approx((2 - 1.5) / (2 - 0.5))
    assert [m["a"] + "/" + m["b"] for m in L["mixes"]] == ["direct_only/always_tool_visible"]
    # mix at w = 0.75 expects 2 + 0.75 * 4 = 5 right; the learner has 6
    assert L["mixes"][0]["expected_exact"] == pytest.approx(5.0) and L["mixes"][0]["learner_exact"] == 6
    # frontier point (cost 1.5, acc 0.75): share 0.75, PGR 1. RouteLLM's estimator: budgets 0.1..0.7
    # reach only the weak reference (PGR 0), 0.8..1.0 the point (PGR 1): APGR = 3/10. (The trapezoid
    # through (0, 0), (0.75, 1), (1, 1) gave 0.625, kept as apgr_interpolated.)
    assert L["frontier"]["apgr"] == pytest.approx(0.3) and L["frontier"]["apgr_interpolated"] == pytest.approx(0.625)
    assert L["frontier"]["cpt50"] == pytest.approx(0.375) and "RouteLLM" in L["frontier"]["apgr_method"]
    assert L["apgr"]["learner"]["value"] == pytest.approx(0.3) and L["apgr"]["frontier"]["value"] == pytest.approx(0.3)
    lo, hi = L["apgr"]["learner"]["spread95_family"]  # a step function's spread, not named a CI
    assert lo <= 0.3 <= hi and "ci95_family" not in L["apgr"]["learner"]
    # at the learner's cost share 0.75 the random mix has PGR 0.75, credited at budgets 0.8 and 0.9
    # (and the strong reference, 1, at 1.0): (2 * 0.75 + 1) / 10 = 0.25; the hull here is that mix
    mt = L["apgr"]["matched"]
    assert mt["random_mix"] == pytest.approx(0.25) and mt["hull"] == pytest.approx(0.25)
    assert mt["learner_minus_random_mix"] == pytest.approx(0.05)
    assert L["apgr"]["frontier"]["matched"]["learner"] == pytest.approx(0.3)
    # the learner is exactly as accurate as always-tool: the cost gap is recovered at matched accuracy
    m = L["cost_gap_recovered_matched"]
    assert m["operating_point"] == "learner" and m["value"] == pytest.approx(1 / 3) and m["matched_share"] == 1.0
    assert m["ci95_family"][0] <= 1 / 3 <= m["ci95_family"][1]
    # tokens: program-round tokens only (the direct answer's 10 are not tool cost)
    assert r["test"]["tokens"]["points"]["always_tool_visible"]["cost"] == pytest.approx(0.2)
    assert r["test"]["tokens"]["learners"]["learned_rule"]["frontier"]["apgr_interpolated"] == pytest.approx(0.625)


def test_routellm_apgr_known_values():
    from controller.study.routing import ROUTELLM_RANDOM_APGR, routellm_apgr

    # the committed Foofah study's test frontier of learned_rule (cost share, PGR; references at (0,0), (1,1)):
    # budgets 0.1, 0.2: nothing but the weak reference (0); 0.3..0.8: 0.2162; 0.9: 0.8919; 1.0: 1 -> 0.3189
    pts = [(0.2796, 0.2162), (0.8925, 0.8919), (0.957, 1.0), (0.9892, 1.0)]
    assert routellm_apgr(pts, (0.0, 0.0), (1.0, 1.0)) == pytest.approx((6 * 0.2162 + 0.8919 + 1) / 10)
    # the references alone: only the last budget reaches the strong one
    assert routellm_apgr([], (0.0, 0.2), (2.0, 0.8)) == pytest.approx(0.1)
    # the random router (every point of the diagonal) scores 0.55 on this estimator
    diag = [(x / 100, x / 100) for x in range(101)]
    assert routellm_apgr(diag, (0.0, 0.0), (1.0, 1.0)) == pytest.approx(ROUTELLM_RANDOM_APGR)
    # in cost units: weak (0, 0.2), strong (2, 0.8); (0.5, 0.65) is share 0.25, PGR 0.75 -> (8 * 0.75 ... )
    assert routellm_apgr([(0.5, 0.65)], (0.0, 0.2), (2.0, 0.8)) == pytest.approx((0 + 0 + 7 * 0.75 + 1) / 10)
    assert routellm_apgr([(1.0, 0.5)], (0.0, 0.5), (2.0, 0.5)) is None  # the references tie on accuracy


def test_cost_gap_recovered_only_at_matched_accuracy():
    from controller.study.routing import matched_cost_gap, point

    n = 10
    S = {f"c{i}": (True, 2.0, f"f{i}") for i in range(n)}
    O = {f"c{i}": (True, 1.0, f"f{i}") for i in range(n)}
    # cheap but loses 3 cases: the raw ratio would be (2 - 0.5) / (2 - 1) = 1.5; at matched accuracy: none
    L = {f"c{i}": (i >= 3, 0.5, f"f{i}") for i in range(n)}
    vecs = {"learned_rule": L, "always_tool_visible": S, "oracle_seq": O}
    pts = {k: point(v) for k, v in vecs.items()}
    m = matched_cost_gap("learned_rule", vecs, pts, None)
    assert m["value"] is None and "no operating point" in m["reason"] and m["ci95_family"] is None
    # a lambda-sweep point at cost 1.5 with always-tool's accuracy: (2 - 1.5) / (2 - 1) = 0.5, no interval
    m = matched_cost_gap("learned_rule", vecs, pts, [(1.8, 1.0), (1.5, 1.0), (0.9, 0.9)])
    assert m["value"] == pytest.approx(0.5) and m["operating_point"] == "lambda sweep" and m["ci95_family"] is None
