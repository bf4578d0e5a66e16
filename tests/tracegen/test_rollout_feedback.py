"""What a repair prompt shows, end to end through the rollout with real programs in the real
sandbox: a crash on the new input is part of the feedback, and --repair-history shows every
earlier attempt. The "model" is the replay backend answering from a hand-written trace file."""
from sandbox import Sandbox
from tracegen.rollout import RolloutConfig, trace_cases

from replay_recording import CASE, _backend


def _fix_prompts(tmp_path, history):
    backend, seen = _backend(tmp_path)
    with Sandbox(workers=1) as sb:
        trace_cases([CASE], {}, backend, sb, RolloutConfig(max_repairs=2, progress=False, repair_history=history))
    return [r.messages for r in seen if r.kind == "fix"]


def test_new_input_crash_reaches_the_repair_prompt(tmp_path):
    first_fix = _fix_prompts(tmp_path, False)[0][-1]["content"]
    assert "differs from the example output" in first_fix
    assert "On the new input it failed too (error: exception)" in first_fix and "IndexError" in first_fix


def test_repair_history_shows_all_earlier_attempts(tmp_path):
    plain = _fix_prompts(tmp_path, False)
    full = _fix_prompts(tmp_path, True)
    assert plain[0] == full[0]  # the first repair has no history yet
    second = full[1]
    assert [m["role"] for m in second[2:]] == ["assistant", "user", "assistant", "user"]
    assert "r[1]" in second[2]["content"] and "r[0]]" in second[4]["content"]
    assert "r[1]" not in "".join(m["content"] for m in plain[1][2:])  # default: only the latest
