"""Imported records (docs/import.md) whose chains end where the source stopped: a chain stopped
while failing offers no repair past its end (``chain_repairs``), a case without programs offers
only DIRECT, and every fixed policy and the oracle play them without an invalid action."""
from controller.env.policies import Oracle
from controller.env.registry import fixed_policies
from controller.env.simulate import simulate
from controller.env.state import visible_state
from tracefactory import ANSWER, make_record, make_tree_record


def _stopped():
    """Two samples: sample 0 failed once and the source stopped; sample 1 passes after one repair."""
    rec = make_tree_record(chains=[[(False, None)], [(False, None), (True, ANSWER)]], max_repairs=2)
    rec["chain_repairs"] = [0, 2]
    return rec


def _no_programs():
    rec = make_record(rounds=(), max_repairs=0)
    rec["chain_repairs"] = []
    return rec


def test_a_stopped_chain_offers_no_repair_and_no_programs_offers_only_direct():
    rec = _stopped()
    assert visible_state(rec, (1,)).valid_actions == ("DIRECT", "RESAMPLE")  # without chain_repairs: FIX too
    assert visible_state(rec, (1, 1)).valid_actions == ("DIRECT", "FIX")
    del rec["chain_repairs"]
    assert "FIX" in visible_state(rec, (1,)).valid_actions
    assert visible_state(_no_programs(), ()).valid_actions == ("DIRECT",)


def test_every_fixed_policy_and_the_oracle_play_recorded_chains():
    recs = [_stopped(), _no_programs()]
    policies = {**fixed_policies(chain=True, samples=True, max_repairs=2), "oracle_seq": Oracle(recs)}
    for name, policy in policies.items():
        outs = simulate(policy, recs)
        assert outs[1]["actions"] == ["DIRECT"], name  # nothing but the direct answer to commit
    assert simulate(policies["oracle_seq"], recs)[0]["correct"] is True  # resample, repair, commit
