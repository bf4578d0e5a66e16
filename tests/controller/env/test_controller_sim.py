"""Oracle, fixed policies and simulation on hand-built traces with known answers."""
import pytest

from controller import AlwaysTool, DirectOnly, InvalidAction, Oracle, VisibleDisagree, WriteOnce, oracle_label, simulate
from controller.env.state import visible_state
from tracegen.records import upgrade_record, validate_record

from tracefactory import ANSWER, WRONG, make_record

# A: direct wrong; round 0 fails; round 1 passes and is right  -> a program recovery after one repair
A = make_record("f/a_1", "fa", direct=WRONG, rounds=[(False, None), (True, ANSWER)])
# B: direct right; round 0 passes but is wrong (overfit)        -> committing the program loses
B = make_record("f/b_1", "fb", direct=ANSWER, rounds=[(True, WRONG)])
# C: direct wrong; all three rounds fail                         -> nothing can be right
C = make_record("f/c_1", "fc", direct=WRONG, rounds=[(False, None), (False, None), (False, None)])
# D: direct unparsed; round 0 passes and is right
D = make_record("f/d_1", "fd", direct=None, rounds=[(True, ANSWER)])
# E: no hidden answer: traced, unscored
E = make_record("f/e_1", "fe", direct=WRONG, rounds=[(True, ANSWER)], answer=None)
RECS = [A, B, C, D, E]


def test_factory_records_follow_the_schema():
    for r in RECS:
        validate_record(r)


def by_id(outs):
    return {o["case_id"]: o for o in outs}


def test_direct_only():
    o = by_id(simulate(DirectOnly(), RECS))
    assert [o[k]["correct"] for k in ("f/a_1", "f/b_1", "f/c_1", "f/d_1", "f/e_1")] == [False, True, False, False, None]
    assert all(x["program_generations"] == 0 and x["actions"] == ["DIRECT"] for x in o.values())
    assert o["f/a_1"]["generated_tokens"] == 10


def test_always_tool():
    o = by_id(simulate(AlwaysTool(), RECS))
    assert o["f/a_1"]["actions"] == ["WRITE", "FIX", "PROGRAM"] and o["f/a_1"]["correct"] is True
    assert o["f/a_1"]["repair_actions"] == 1 and o["f/a_1"]["program_generations"] == 2
    assert o["f/a_1"]["generated_tokens"] == 10 + 2 * 50
    assert o["f/b_1"]["actions"] == ["WRITE", "PROGRAM"] and o["f/b_1"]["correct"] is False
    assert o["f/c_1"]["actions"] == ["WRITE", "FIX", "FIX", "DIRECT"] and o["f/c_1"]["source"] == "direct"
    assert o["f/d_1"]["correct"] is True


def test_visible_disagree_keeps_direct_when_program_agrees():
    same = make_record("f/s_1", "fs", direct=ANSWER, rounds=[(True, ANSWER)])
    o = simulate(VisibleDisagree(), [same])[0]
    assert o["actions"] == ["WRITE", "DIRECT"] and o["correct"] is True


def test_write_once_never_repairs():
    o = by_id(simulate(WriteOnce(), RECS))
    assert o["f/a_1"]["actions"] == ["WRITE", "DIRECT"] and o["f/a_1"]["correct"] is False
    assert all(x["repair_actions"] == 0 for x in o.values())


def test_oracle_takes_the_cheapest_correct_path():
    o = by_id(simulate(Oracle(RECS), RECS))
    assert o["f/a_1"]["actions"] == ["WRITE", "FIX", "PROGRAM"]
    assert o["f/b_1"]["actions"] == ["DIRECT"]
    assert o["f/c_1"]["actions"] == ["DIRECT"] and o["f/c_1"]["program_generations"] == 0
    assert o["f/d_1"]["actions"] == ["WRITE", "PROGRAM"]
    scored = [x for x in o.values() if x["correct"] is not None]
    assert sum(x["correct"] for x in scored) == 3


def test_oracle_labels_off_the_oracle_path():
    # after a wrong-but-passing program in B the oracle still prefers the direct answer
    assert oracle_label(B, 1) == "DIRECT"
    assert oracle_label(A, 0) == "WRITE" and oracle_label(A, 1) == "FIX" and oracle_label(A, 2) == "PROGRAM"


def test_cost_weight_makes_the_oracle_stop_paying():
    # with each round costing more than a correct answer is worth, the oracle answers directly
    assert oracle_label(A, 0, lam=0.6) == "DIRECT"
    assert oracle_label(A, 0, lam=0.4) == "WRITE"
    assert oracle_label(A, 0, lam=0.004, cost="tokens") == "WRITE"
    assert oracle_label(A, 0, lam=20.0, cost="tokens") == "DIRECT"


def test_invalid_action_is_refused():
    class Bad:
        name = "bad"

        def act(self, states):
            return ["PROGRAM"] * len(states)

    with pytest.raises(InvalidAction):
        simulate(Bad(), [A])


def test_valid_actions_follow_the_state_table():
    assert visible_state(A, 0).valid_actions == ("DIRECT", "WRITE")
    assert visible_state(A, 1).valid_actions == ("DIRECT", "FIX")
    assert visible_state(A, 2).valid_actions == ("DIRECT", "PROGRAM")
    assert visible_state(C, 3).valid_actions == ("DIRECT",)


def test_state_reveals_nothing_before_write():
    s0 = visible_state(A, 0)
    assert s0.features["revealed"] == 0 and s0.features["last_pass"] == 0
    assert "round" not in s0.text
    # the start state of A and D differ only through the direct answer, never through rounds
    a2 = make_record("f/a_1", "fa", direct=WRONG, rounds=[(True, WRONG)])
    assert visible_state(a2, 0) == visible_state(A, 0)


def test_resample_baseline_draws_samples_instead_of_repairs():
    from controller.env.resample import resample_outcomes

    rec = make_record("f/r_1", "fr", direct=WRONG, rounds=[(False, None), (True, ANSWER)])
    sample_rec = make_record("x", "x", rounds=[(False, None), (True, ANSWER), (True, WRONG)])
    rec["samples"] = sample_rec["rounds"][:3]  # a version-1 record: a flat list of extra WRITE rounds
    rec["hidden"]["samples"] = sample_rec["hidden"]["rounds"][:3]
    rec["schema_version"] = 1
    rec = upgrade_record(rec)
    validate_record(rec)
    o = resample_outcomes([rec])[0]
    # round 0 fails, sample 1 fails, sample 2 passes and is right: 3 generations, no repair
    assert o["actions"] == ["WRITE", "RESAMPLE", "RESAMPLE", "PROGRAM"] and o["correct"] is True
    assert o["program_generations"] == 3 and o["repair_actions"] == 0
    rec["max_repairs"] = 1  # budget: 1 + max_repairs generations, then the direct answer
    o = resample_outcomes([rec])[0]
    assert o["actions"] == ["WRITE", "RESAMPLE", "DIRECT"] and o["correct"] is False
