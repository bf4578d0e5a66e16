"""A completion that stopped at the token limit is visible to a controller (its finish reason is
part of what the model returned, not of the hidden answer)."""
from controller.env.state import FEATURE_NAMES, visible_state
from tracefactory import ANSWER, make_record


def test_cut_off_is_a_feature_and_in_the_text():
    rec = make_record(rounds=[(False, None), (False, ANSWER)])
    rec["direct"]["finish_reason"] = "length"
    rec["rounds"][0]["finish_reason"] = "length"
    assert {"direct_cut_off", "last_cut_off"} <= set(FEATURE_NAMES)
    s1, s2 = visible_state(rec, 1), visible_state(rec, 2)
    assert s1.features["direct_cut_off"] == 1.0 and s1.features["last_cut_off"] == 1.0
    assert s2.features["last_cut_off"] == 0.0  # the latest attempt finished
    assert "round 0 write: wrong_output cut_off" in s1.text
    plain = make_record(rounds=[(False, None)])
    assert visible_state(plain, 1).features["last_cut_off"] == 0.0 and "cut_off" not in visible_state(plain, 1).text
