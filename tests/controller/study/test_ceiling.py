"""Known-answer tests of the learnability ceiling (controller/study/ceiling.py) and its report section."""
from controller.report.ceiling import ceiling_md
from controller.study.ceiling import ceiling_table, decision_rows
from tests.tracefactory import ANSWER, WRONG, make_record


def _three():
    a = make_record("a/1", "a", "train", direct=ANSWER, rounds=[(True, ANSWER)])            # safe, 1 round
    b = make_record("b/1", "b", "train", direct=WRONG, rounds=[(False, None), (True, ANSWER)])  # unsafe, 2 rounds
    c = make_record("c/1", "c", "dev", direct=ANSWER,
                    rounds=[(False, None), (False, None), (True, ANSWER)])                 # safe, 3 rounds
    return [a, b, c]


def test_decision_rows_follow_the_always_tool_chain():
    a, b, c = _three()
    assert [(r["point"], r["remaining"], r["safe"]) for r in decision_rows(c)] == [(0, 3, True), (1, 2, True), (2, 1, True)]
    assert [(r["point"], r["remaining"], r["safe"]) for r in decision_rows(b)] == [(0, 2, False), (1, 1, False)]
    # always-tool wrong: stopping loses nothing, so it is safe
    w = make_record("w/1", "w", "test", direct=WRONG, rounds=[(True, WRONG)])
    assert decision_rows(w)[0]["safe"]
    # the budget stops the chain: max_repairs 1 means the third round is never reached
    short = make_record("s/1", "s", "test", direct=WRONG, rounds=[(False, None), (False, None), (True, ANSWER)],
                        max_repairs=1)
    assert [r["point"] for r in decision_rows(short)] == [0, 1]


def test_gap_points_and_in_sample_trees():
    c = ceiling_table(_three() + [make_record("u/1", "u", "unassigned", rounds=[(True, ANSWER)])], seed=0)
    assert c["n"] == 3 and c["always_tool_generations"] == 6 and c["gap_generations"] == 4
    assert [(p["point"], p["cases"], p["safe"], p["savings_if_all_safe_stop"]) for p in c["points"]] == \
        [(0, 3, 2, 4), (1, 2, 1, 2), (2, 1, 1, 1)]
    assert c["points"][0]["gap_share_earliest"] == 1.0 and c["points"][1]["gap_share_if_all_safe_stop"] == 0.5
    # a stump on the direct answer's shape separates the safe cases at the start: the whole gap, no loss
    assert c["in_sample"][0] == {"depth": 1, "saved_generations": 4, "lost": 0, "gap_share": 1.0}
    assert c["commit_direct_wins"] == 0
    assert c["folds"] == 3 and {r["model"] for r in c["out_of_sample"]} == {"logistic", "tree_depth_3", "forest"}


def test_commit_direct_wins_and_out_of_family_ceiling():
    recs = []
    for i in range(6):  # safe cases look alike (direct right), unsafe ones alike (direct wrong): separable
        recs.append(make_record(f"s{i}/1", f"s{i}", "train", direct=ANSWER, rounds=[(False, None), (True, ANSWER)]))
        recs.append(make_record(f"u{i}/1", f"u{i}", "train", direct=WRONG, rounds=[(False, None), (True, ANSWER)]))
    recs.append(make_record("x/1", "x", "test", direct=ANSWER, rounds=[(True, WRONG)]))
    c = ceiling_table(recs, seed=0)
    assert c["commit_direct_wins"] == 1 and c["folds"] == 5
    assert c["gap_generations"] == 6 * 2 + 1
    aucs = [r["auc"] for r in c["separability"] if r["point"] == 0]
    assert all(a is not None and a > 0.9 for a in aucs)
    assert c["ceiling_share"] > 0.5 and "learnable out of family" in c["sentence"]
    md = "\n".join(ceiling_md({"ceiling": c}))
    assert "the ceiling" in md and "start (before write)" in md and "Out-of-sample ceiling" in md
    assert "Learn-Then-Test" in md and len(c["risk_controlled"]) == 3
    assert all(r["lost_share"] <= 1 for r in c["risk_controlled"])


def test_ltt_threshold_accepts_only_thresholds_within_the_risk_bound():
    import numpy as np
    from controller.study.ceiling import ltt_threshold
    rows = [{"case_id": f"c{i}", "point": 0, "remaining": 1, "lost_if_stop": int(i < 2)} for i in range(400)]
    scores = np.array([0.1 if i < 2 else 0.9 for i in range(400)])
    # stopping above 0.9 loses nothing (bound 3/400 < 0.02); going down to 0.1 loses 2 of 400
    assert ltt_threshold(rows, scores, margin=0.02, delta=0.05) < 0.1  # 2/400: upper bound ~0.016, accepted
    assert 0.1 < ltt_threshold(rows, scores, margin=0.01, delta=0.05) < 0.9  # at 0.01 only the strict one passes
    few = rows[:20]
    assert ltt_threshold(few, scores[:20], margin=0.02, delta=0.05) == np.inf  # 20 cases: even 0 lost fails


def test_report_puts_the_ceiling_after_headroom_and_before_the_answer():
    from controller.report.markdown import SECTIONS
    names = [f.__name__ for f in SECTIONS]
    assert names[:3] == ["headroom_md", "ceiling_md", "answer_md"]
    assert ceiling_md({}) == []


def test_nothing_right_anywhere_is_nothing_to_learn():
    """Direct and every program wrong on every case: stopping at once is always safe, so the "gap" is
    all of always-tool's rounds; the ceiling says there is nothing to learn instead of "100% learnable"."""
    recs = [make_record(f"f{i}/1", f"f{i}", ("train", "dev", "test")[i % 3], direct=WRONG,
                        rounds=[(False, None), (True, WRONG)]) for i in range(6)]
    c = ceiling_table(recs, seed=0)
    assert c["gap_generations"] == c["always_tool_generations"] == 12
    assert c["nothing_to_learn"].startswith("no answer is right anywhere in the 6 scored cases")
    assert c["sentence"].startswith("Nothing to learn:") and c["ceiling_share"] is None
    md = "\n".join(ceiling_md({"ceiling": c}))
    assert "Nothing to learn" in md and "Out-of-sample ceiling" not in md and "learnable" not in md
    assert ceiling_table(_three(), seed=0)["nothing_to_learn"] is None


def test_k_above_one_counts_every_sample_at_the_commit_as_the_headroom_does():
    from controller.study.headroom import headroom_cells
    from tests.tracefactory import make_tree_record

    recs = [make_tree_record(f"k{i}/1", f"k{i}", ("train", "dev", "test")[i % 3], direct=ANSWER if i % 2 else WRONG,
                             chains=[[(True, WRONG)], [(True, ANSWER)]]) for i in range(6)]
    c = ceiling_table(recs, seed=0)
    cells = headroom_cells(recs)
    assert c["k"] == 2 and c["sample_wins"] == cells["passing_right_commit_wrong"] == 6
    assert c["commit_direct_wins"] == cells["direct_right_commit_wrong"] == 3
    assert "with every one of the K = 2 samples drawn" in "\n".join(ceiling_md({"ceiling": c}))
