"""The branching environment (RESAMPLE): tree positions, the commit rule, the oracle over the tree,
the tree policies, schema v2 and its reading of version-1 files, and K = 1 == the pilot's chain."""
import json
from pathlib import Path

import pytest

from controller.env.oracle import action_values, oracle_label
from controller.env.policies import AlwaysTool, CrossCheck, Oracle, ResampleVisible
from controller.env.simulate import InvalidAction, simulate
from controller.env.state import commit_choice, visible_state, visible_view
from tracegen.records import append_record, read_traces, upgrade_record, validate_record
from tracefactory import ANSWER, WRONG, make_record, make_tree_record
from tracefactory import ScriptedPolicy

ROOT = Path(__file__).resolve().parents[3]


def test_tree_valid_actions_follow_the_action_table():
    rec = make_tree_record(chains=[[(False, None), (False, None), (False, None)], [(True, ANSWER)], [(True, WRONG)]])
    validate_record(rec)
    assert visible_state(rec, ()).valid_actions == ("DIRECT", "WRITE")
    assert visible_state(rec, (1,)).valid_actions == ("DIRECT", "FIX", "RESAMPLE")
    assert visible_state(rec, (3,)).valid_actions == ("DIRECT", "RESAMPLE")  # no repairs left
    assert visible_state(rec, (1, 1)).valid_actions == ("DIRECT", "PROGRAM", "RESAMPLE")
    # no sample left; samples 1 and 2 pass with different outputs: PROGRAM (the commit rule's pick,
    # sample 1 at the 1-1 tie) or PROGRAM:2 (commit sample 2's output instead)
    assert visible_state(rec, (1, 1, 1)).valid_actions == ("DIRECT", "PROGRAM", "PROGRAM:2")
    s = visible_state(rec, (2, 1))
    assert s.features["samples_drawn"] == 2 and s.features["samples_left"] == 1
    assert s.features["generations_spent"] == 3 and s.revealed == 3 and s.key == (rec["case_id"], (2, 1))
    assert "sample 1 round 0 write: pass" in s.text and "samples: drawn=2 left=1" in s.text


def test_state_shows_agreement_but_not_correctness():
    rec = make_tree_record(chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]])
    flipped = make_tree_record(chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]], answer=WRONG)
    for pos in [(1,), (1, 1), (1, 1, 1)]:
        assert visible_state(rec, pos) == visible_state(flipped, pos)  # hidden answers never reach a state
    s = visible_state(rec, (1, 1))
    assert s.features["passing_programs"] == 2 and s.features["distinct_passing_outputs"] == 2
    assert s.features["commit_support"] == 1 and s.features["commit_equals_direct"] == 1  # direct is WRONG
    assert "samples" not in visible_view(rec, (1,)) and len(visible_view(rec, (1,))["chains"]) == 1


def test_commit_rule_majority_then_earliest():
    rec = make_tree_record(chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]])
    assert commit_choice(visible_view(rec, (1, 1))) == 0  # a 1-1 tie goes to the earliest sample
    assert commit_choice(visible_view(rec, (1, 1, 1))) == 1  # two of three agree on ANSWER
    outs = simulate(ScriptedPolicy(["WRITE", "RESAMPLE", "RESAMPLE", "PROGRAM"]), [rec])
    assert outs[0]["correct"] is True and outs[0]["committed_sample"] == 1
    assert outs[0]["program_generations"] == 3 and outs[0]["resample_actions"] == 2
    outs = simulate(ScriptedPolicy(["WRITE", "RESAMPLE", "PROGRAM"]), [rec])
    assert outs[0]["correct"] is False and outs[0]["committed_sample"] == 0
    # a passing program whose run on the new input failed ranks below any output
    rec2 = make_tree_record(chains=[[(True, None)], [(True, ANSWER)]])
    assert commit_choice(visible_view(rec2, (1, 1))) == 1



def test_oracle_searches_the_tree_with_the_cost_weight():
    # sample 0 never passes; sample 1 passes and is right: resampling beats repairing
    rec = make_tree_record(chains=[[(False, None), (False, None), (False, None)], [(True, ANSWER)]])
    assert oracle_label(rec, (1,)) == "RESAMPLE"
    outs = simulate(Oracle([rec]), [rec])
    assert outs[0]["actions"] == ["WRITE", "RESAMPLE", "PROGRAM"] and outs[0]["correct"] is True
    # with a high cost per generation the oracle answers directly (here: wrong, but cheaper)
    assert oracle_label(rec, (), lam=2.0) == "DIRECT"
    vals = action_values(rec, (1,), lam=0.1)
    # from (1,): RESAMPLE then PROGRAM (one more round) vs FIX, RESAMPLE then PROGRAM (two)
    assert vals["RESAMPLE"][0] == pytest.approx(1 - 0.1) and vals["FIX"][0] == pytest.approx(1 - 0.2)
    # counting search nodes as the cost
    for r in rec["rounds"]:
        r["search_nodes"] = 5000
    rec["samples"][0][0]["search_nodes"] = 100
    assert rec["backend"] == "synth"  # work = search nodes for the synthesizer
    assert action_values(rec, (), lam=0.1, cost="work")["WRITE"][0] == pytest.approx(1 - 0.1 * 5.1)


def test_cross_check_commits_only_on_agreement():
    agree = make_tree_record("f/a", chains=[[(True, ANSWER)], [(True, ANSWER)], [(True, WRONG)]])
    disagree = make_tree_record("f/d", chains=[[(True, WRONG)], [(True, ANSWER)], [(True, ANSWER)]], direct=ANSWER)
    check_fails = make_tree_record("f/c", chains=[[(True, ANSWER)], [(False, None), (False, None), (True, WRONG)],
                                                 [(True, WRONG)]])
    o = {x["case_id"]: x for x in simulate(CrossCheck(), [agree, disagree, check_fails])}
    assert o["f/a"]["actions"] == ["WRITE", "RESAMPLE", "PROGRAM"] and o["f/a"]["correct"] is True
    assert o["f/d"]["actions"] == ["WRITE", "RESAMPLE", "DIRECT"] and o["f/d"]["correct"] is True
    assert o["f/c"]["actions"] == ["WRITE", "RESAMPLE", "PROGRAM"] and o["f/c"]["correct"] is True
    # with one sample it is the always-tool policy
    chain = make_record(rounds=[(False, None), (True, ANSWER)])
    assert simulate(CrossCheck(), [chain])[0]["actions"] == simulate(AlwaysTool(), [chain])[0]["actions"]


def test_resample_visible_on_the_tree_is_budget_matched():
    rec = make_tree_record(chains=[[(False, None)], [(False, None)], [(True, ANSWER)]], max_repairs=2)
    o = simulate(ResampleVisible(), [rec])[0]
    assert o["actions"] == ["WRITE", "RESAMPLE", "RESAMPLE", "PROGRAM"] and o["repair_actions"] == 0
    rec["max_repairs"] = 1
    o = simulate(ResampleVisible(), [rec])[0]
    assert o["actions"] == ["WRITE", "RESAMPLE", "DIRECT"] and o["program_generations"] == 2


def test_v1_records_are_upgraded_on_read(tmp_path):
    rec = make_record("f/r_1", "fr", rounds=[(False, None), (True, ANSWER)])
    flat = make_record("x", "x", rounds=[(False, None), (True, ANSWER)])
    rec["samples"], rec["hidden"]["samples"] = flat["rounds"], flat["hidden"]["rounds"]
    plain = make_record("f/r_2", "fr", rounds=[(True, ANSWER)])
    rec["schema_version"] = plain["schema_version"] = 1
    path = tmp_path / "v1.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(plain) + "\n")
    got = read_traces(path)
    assert [r["schema_version"] for r in got] == [4, 4]
    assert got[0]["samples"] == [[flat["rounds"][0]], [flat["rounds"][1]]] and got[0]["sample_repairs"] == 0
    assert got[0]["rounds"] == rec["rounds"] and "samples" not in got[1]
    # v1 samples were never repaired: FIX is not valid on them
    assert "FIX" not in visible_state(got[0], (1, 1)).valid_actions
    assert upgrade_record(got[1]) is got[1]
    append_record(tmp_path / "v4.jsonl", got[0])  # the upgraded record is a valid v4 record
    assert "examples" in got[0]["task"] and "value" in got[0]["direct"]
    with pytest.raises(Exception):
        validate_record(rec)  # a raw v1 record is not v4


def test_the_v1_trace_file_loads():
    recs = read_traces(ROOT / "tests" / "data" / "v1_library_traces.jsonl")
    assert len(recs) > 100 and all(r["schema_version"] == 4 for r in recs)


def test_simulate_refuses_moves_the_trace_does_not_hold():
    rec = make_tree_record(chains=[[(False, None)]], max_repairs=0)
    with pytest.raises(InvalidAction):
        simulate(ScriptedPolicy(["WRITE", "RESAMPLE"]), [rec])
