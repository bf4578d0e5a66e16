"""Headroom cells on hand-built records with known cells."""
from controller.study.headroom import CELLS, case_cell, headroom_cells, headroom_table
from tests.tracefactory import ANSWER, WRONG, make_record, make_tree_record

OTHER = [["x"], ["y"], ["z"]]


def _rec(i, direct, rounds, family="f", split="test", answer=ANSWER):
    return make_record(f"{family}/{family}_{i}", family, split, direct=direct, rounds=rounds, answer=answer)


def test_every_cell_on_a_known_case():
    cases = {
        "direct_only_right": _rec(0, ANSWER, [(False, None), (False, None), (False, None)]),
        "both_right": _rec(1, ANSWER, [(True, ANSWER)]),
        "direct_right_commit_wrong": _rec(2, ANSWER, [(False, None), (True, OTHER)]),
        "program_only_right": _rec(3, WRONG, [(False, None), (True, ANSWER)]),
        "both_wrong": _rec(4, WRONG, [(True, OTHER)]),
        "nothing_right": _rec(5, WRONG, [(False, None)]),
    }
    for cell, rec in cases.items():
        assert case_cell(rec)["cell"] == cell, cell
    counts = headroom_cells(list(cases.values()) + [_rec(6, WRONG, [(True, ANSWER)], answer=None)])
    assert {c: counts[c] for c in CELLS} == {c: 1 for c in CELLS}
    assert counts["n"] == 6 and counts["unscored"] == 1 and counts["families"] == 1
    assert counts["accuracy_headroom_cases"] == 1 and counts["unreachable_cases"] == 2


def test_k3_passing_sample_right_while_the_majority_commit_is_wrong():
    # samples 0 and 1 pass with the same wrong output; sample 2 passes right: the majority rule
    # commits the wrong output, so a right passing sample is hidden by the commit rule.
    rec = make_tree_record("t/t_1", "t", "test", direct=WRONG,
                           chains=([(True, OTHER)], [(True, OTHER)], [(True, ANSWER)]))
    c = case_cell(rec)
    assert c == {"cell": "both_wrong", "k": 3, "passing_right_commit_wrong": True}
    h = headroom_cells([rec])
    assert h["accuracy_headroom_cases"] == 1 and h["unreachable_cases"] == 0 and h["k"] == 3
    # direct right too: one case of headroom, not two
    both = make_tree_record("t/t_2", "t", "test", direct=ANSWER,
                            chains=([(True, OTHER)], [(True, OTHER)], [(True, ANSWER)]))
    assert case_cell(both)["cell"] == "direct_right_commit_wrong"
    assert headroom_cells([both])["accuracy_headroom_cases"] == 1


def test_table_splits_pooled_gap_and_the_sentence_when_no_headroom():
    recs = [_rec(0, ANSWER, [(True, ANSWER)], "a", "train"), _rec(1, WRONG, [(True, ANSWER)], "b", "test"),
            _rec(2, WRONG, [(False, None)], "c", "dev")]
    res = {"oracle_seq": {s: {"exact": 1, "program_generations": 1} for s in ("train", "dev", "test")},
           "always_tool_visible": {s: {"exact": 1, "program_generations": 3} for s in ("train", "dev", "test")}}
    h = headroom_table(recs, res)
    assert h["cells"]["pooled"]["n"] == 3 and h["cells"]["test"]["program_only_right"] == 1
    assert h["gap"]["test"]["accuracy_gap"] == 0 and h["gap"]["test"]["cost_gap_generations"] == 2
    assert h["questions"][0].startswith("No case where a controller can beat always-tool on accuracy")
    assert "only cost can be won" in h["questions"][0].lower()


def test_the_sentence_names_the_headroom_when_there_is_some():
    recs = [_rec(0, ANSWER, [(True, OTHER)], "a", "test")]
    q = headroom_table(recs)["questions"][0]
    assert q.startswith("1 of 1 scored cases have the direct answer right while the committed program is wrong")


def test_identical_first_programs_in_every_sample_are_counted_and_said():
    """K samples that came out the same (a greedy server, an ignored seed) are named in the
    headroom, since resampling can change nothing there."""
    same = make_tree_record("t/t_1", "t", "test", direct=WRONG, chains=([(True, OTHER)], [(True, OTHER)]))
    for ch in same["samples"]:
        ch[0]["raw"] = same["rounds"][0]["raw"]
    differ = make_tree_record("t/t_2", "t", "test", direct=WRONG, chains=([(True, OTHER)], [(True, ANSWER)]))
    differ["samples"][0][0]["raw"] = differ["rounds"][0]["raw"] + "\n# another"
    h = headroom_table([same, differ])
    assert h["samples"] == {"cases": 2, "identical_first_programs": 1}
    assert any(q.startswith("1 of 2 scored cases drew identical first programs") for q in h["questions"])
    assert "samples" not in headroom_table([_rec(0, ANSWER, [(True, ANSWER)])])  # K = 1: nothing to say


def test_a_coder_right_nowhere_is_said_first():
    """A coder with no committable right answer anywhere (a base model): the first sentence says the
    traces answer nothing, before the generic cost-only sentence."""
    recs = [_rec(i, WRONG, [(True, OTHER), (False, None)], family=f"f{i}") for i in range(3)]
    q = headroom_table(recs)["questions"]
    assert q[0].startswith("None of the 3 scored cases has a committable right answer")
