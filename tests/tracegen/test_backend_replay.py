"""The replay backend answers with the raw outputs of an earlier trace file."""
import json

import pytest

from tracegen.backends import BackendConfig, GenerationRequest, Task, get_backend
from tracegen.backends.replay import ReplayMissError
from tracegen.parsing import parse_code

T1 = Task.from_tables("fam/a_1", [["a"]], [["A"]], [["b"]])
T2 = Task.from_tables("fam/a_2", [["c"]], [["C"]], [["d"]])


def _record(case_id, direct_raw, round_raws):
    return {
        "schema_version": 1, "case_id": case_id, "backend": "hf", "model": "Qwen/Qwen3.5-4B",
        "direct": {"raw": direct_raw, "prompt_tokens": 50, "completion_tokens": 8, "gen_ms": 12.5,
                   "finish_reason": "stop"},
        "rounds": [{"round": i, "kind": "write" if i == 0 else "fix", "raw": raw, "prompt_tokens": 60 + i,
                    "completion_tokens": 20, "gen_ms": 30.0, "finish_reason": "length" if i else "stop"}
                   for i, raw in enumerate(round_raws)],
        "hidden": {"answer": [["B"]]},
    }


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "fresh_traces.jsonl"
    lines = [
        {"type": "header", "schema_version": 1, "backend": "hf"},
        _record("fam/a_1", '```json\n[["B"]]\n```', ["```python\ndef transform(t):\n    return t\n```",
                                                     "```python\ndef transform(t):\n    return [[c.upper() for c in r] for r in t]\n```"]),
        _record("fam/a_2", "[['D']]", ["def transform(t):\n    return t"]),
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"case_id": "fam/a_3", "dir')  # torn tail
    return path


def test_replays_stored_outputs_with_their_counts(trace):
    b = get_backend(BackendConfig(name="replay", replay_path=str(trace)))
    assert (b.name, b.model_name) == ("replay", "Qwen/Qwen3.5-4B")
    reqs = [
        GenerationRequest("direct", [], T2),
        GenerationRequest("fix", [], T1, round=1),
        GenerationRequest("write", [], T1),
        GenerationRequest("direct", [], T1),
    ]
    out = b.generate(reqs)
    assert out[0].text == "[['D']]"
    assert "upper" in parse_code(out[1].text).value and out[1].finish_reason == "length"
    assert out[1].prompt_tokens == 61 and out[1].latency_ms == 30.0
    assert out[2].text.endswith("return t\n```") and out[3].text.startswith("```json")
    assert all(c.cached for c in out)


def test_missing_generation_is_a_clear_error(trace):
    b = get_backend(BackendConfig(name="replay", replay_path=str(trace)))
    with pytest.raises(ReplayMissError, match=r"no stored output for case 'fam/a_2', fix round 1 sample 0"):
        b.generate([GenerationRequest("fix", [], T2, round=1)])
    with pytest.raises(ReplayMissError, match="fam/zzz"):
        b.generate([GenerationRequest("direct", [], Task.from_tables("fam/zzz", [], [], []))])
    with pytest.raises(ReplayMissError, match="sample 1"):
        b.generate([GenerationRequest("direct", [], T1, sample=1)])


def test_bad_trace_files(tmp_path):
    with pytest.raises(ValueError, match="replay_path: the replay backend needs one"):  # the field (CLI: --replay)
        get_backend(BackendConfig(name="replay"))
    with pytest.raises(ValueError, match="cannot read replay trace"):
        get_backend(BackendConfig(name="replay", replay_path=str(tmp_path / "nope.jsonl")))
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type": "header"}\n')
    with pytest.raises(ValueError, match="no case records"):
        get_backend(BackendConfig(name="replay", replay_path=str(empty)))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"case_id": \n' + json.dumps(_record("x", "[]", [])) + "\n")
    with pytest.raises(ValueError, match="line 1 is not valid JSON"):
        get_backend(BackendConfig(name="replay", replay_path=str(broken)))
