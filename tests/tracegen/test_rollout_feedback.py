"""What a repair prompt shows, end to end through the rollout with real programs in the real
sandbox: a crash on the new input is part of the feedback, and --repair-history shows every
earlier attempt. The "model" is the replay backend answering from a hand-written trace file."""
import json

from cases.case import Case
from sandbox import Sandbox
from tracegen.backends import BackendConfig, get_backend
from tracegen.rollout import RolloutConfig, trace_cases

CASE = Case(case_id="fam/c_1", family="fam", input_table=[["a", "1"]], output_table=[["1"]],
            test_table=[["b"]], test_answer=[["?"]])
# round 0: wrong on the example (keeps both cells) and crashes on the new input (one cell)
V0 = "def transform(table):\n    return [[r[0], r[1]] for r in table]"
V1 = "def transform(table):\n    return [[r[0]] for r in table]"
V2 = "def transform(table):\n    return [[r[-1]] for r in table]"


def _backend(tmp_path):
    def part(i, code):
        return {"round": i, "kind": "write" if i == 0 else "fix", "raw": f"```python\n{code}\n```",
                "prompt_tokens": 1, "completion_tokens": 1, "gen_ms": 1.0, "finish_reason": "stop"}
    rec = {"case_id": CASE.case_id, "model": "m", "direct": {"raw": '[["1"]]', "prompt_tokens": 1,
           "completion_tokens": 1, "gen_ms": 1.0}, "rounds": [part(0, V0), part(1, V1), part(2, V2)]}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    inner = get_backend(BackendConfig(name="replay", replay_path=str(path)))
    seen = []

    class Recording(type(inner)):
        def generate(self, requests):
            seen.extend(requests)
            return super().generate(requests)
    inner.__class__ = Recording
    return inner, seen


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
