"""A one-case replay "model" that records the requests it is sent: the repair-feedback tests
and the viewer's prompt test share it (a helper module: pytest puts this folder on sys.path)."""
import json

from cases.case import Case
from tracegen.backends import BackendConfig, get_backend

CASE = Case.from_tables(case_id="fam/c_1", family="fam", input_table=[["a", "1"]], output_table=[["1"]],
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
