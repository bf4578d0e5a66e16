"""The import file reader (tracegen/importfile.py): every line checked before anything is used, a bad
line named by its number and key in one line, and the hand-written example read as written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracegen.importfile import ImportFileError, export_case, read_import_file

HAND = Path(__file__).resolve().parents[1] / "data" / "import" / "hand_written.jsonl"

GOOD = {"case_id": "f/a", "family": "f", "examples": [{"input": "ab", "output": "AB"}],
        "test": {"input": "cd", "output": "CD"}, "direct": [{"text": "\"CD\""}]}


def _file(tmp_path, *lines) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return p


def test_the_hand_written_file_reads_as_written():
    f = read_import_file(HAND)
    assert [c.case_id for c in f.cases] == ["names/first_column", "recolor/one_to_two", "strings/upper"]
    assert [c.line for c in f.cases] == [1, 2, 3]
    assert f.max_samples == 2 and f.longest_chain == 3
    grid = f.cases[1]
    assert len(grid.examples) == 3 and grid.direct[0].kind == "answer" and grid.programs[0][0].kind == "code"
    assert f.cases[0].programs[0][0].meta["logprobs"] == {"mean": -0.21, "min": -3.5, "tokens": 25}
    assert f.cases[0].programs[0][0].meta["prompt"][0]["role"] == "user"


@pytest.mark.parametrize("change, key, words", [
    (lambda d: d.pop("family"), "family", "missing"),
    (lambda d: d.update(case_id=""), "case_id", "non-empty string"),
    (lambda d: d.update(examples=[]), "examples", "non-empty list"),
    (lambda d: d["examples"].append({"input": 1}), "examples[1].output", "missing"),
    (lambda d: d.update(test={"input": 1}), "test.output", "missing"),
    (lambda d: d.update(programms=[]), "programms", "unknown key"),
    (lambda d: d.update(entry="not a name"), "entry", "Python function name"),
    (lambda d: d.update(direct=[{"code": "def transform(x): pass"}]), "direct[0].code", "not a program"),
    (lambda d: d.update(direct=[{"text": "a", "answer": 1}]), "direct[0]", "exactly one"),
    (lambda d: d.update(programs=[[]]), "programs[0]", "non-empty list"),
    (lambda d: d.update(programs=[[{"answer": 1}]]), "programs[0][0].answer", "chain holds programs"),
    (lambda d: d.update(programs=[[{"code": "x", "tokens": {"prompt": -1}}]]), "programs[0][0].tokens.prompt", ">= 0"),
    (lambda d: d.update(direct=[{"text": "1", "prompt": [{"role": "user"}]}]), "direct[0].prompt[0].content",
     "missing"),
    (lambda d: d.update(direct=[], programs=[]), "direct", "no attempt"),
])
def test_a_bad_line_is_named_by_number_and_key(tmp_path, change, key, words):
    bad = json.loads(json.dumps(GOOD))
    bad["case_id"] = "f/b"
    change(bad)
    p = _file(tmp_path, GOOD, bad, dict(GOOD, case_id="f/c"))
    with pytest.raises(ImportFileError) as e:
        read_import_file(p)
    msg = str(e.value)
    assert "\n" not in msg and f"{p}: line 2: key `{key}`" in msg and words in msg, msg
    assert "nothing was imported" in msg


def test_not_json_a_repeated_id_and_the_count_of_further_bad_lines(tmp_path):
    p = _file(tmp_path, GOOD, "{not json", GOOD, '{"x": NaN}')
    with pytest.raises(ImportFileError) as e:
        read_import_file(p)
    msg = str(e.value)
    assert "line 2:" in msg and "not a JSON value" in msg and "(2 more bad lines after it)" in msg, msg
    p = _file(tmp_path, GOOD, GOOD)
    with pytest.raises(ImportFileError, match=r"line 2: key `case_id`: 'f/a' repeats line 1"):
        read_import_file(p)


def test_blank_lines_are_skipped_and_an_empty_file_is_refused(tmp_path):
    assert len(read_import_file(_file(tmp_path, "", GOOD, "  ")).cases) == 1
    with pytest.raises(ImportFileError, match="holds no case"):
        read_import_file(_file(tmp_path, ""))


def test_export_writes_raw_text_or_the_given_value_and_leaves_out_a_missing_direct_answer():
    def part(raw, status, **kw):
        return {"raw": raw, "parse": {"status": status, "detail": ""}, "prompt_tokens": 3, "completion_tokens": 4,
                "finish_reason": "stop", **kw}

    rec = {"case_id": "c", "family": "f", "model": "the-model", "hidden": {"answer": [[1]]},
           "task": {"examples": [{"input": [[0]], "output": [[1]]}], "test_input": [[0]], "value_type": "grid",
                    "entry": "solve"},
           "direct": dict(part("", "failed"), finish_reason="not_recorded", value=None),
           "rounds": [dict(part("", "given"), code="def solve(x): return x", model="m")],
           "samples": [[dict(part("```python\ndef solve(x): ...```", "ok"), code="def solve(x): ...", gen_ms=2.5,
                             logprobs={"mean": -0.5, "min": -2.0, "tokens": 4, "source": "vllm"})]]}
    line = export_case(rec)
    assert line["entry"] == "solve" and "direct" not in line
    assert line["test"] == {"input": [[0]], "output": [[1]]}
    assert line["programs"][0][0] == {"code": "def solve(x): return x", "model": "m",
                                      "tokens": {"prompt": 3, "completion": 4}, "finish_reason": "stop"}
    assert line["programs"][1][0]["text"].startswith("```python") and line["programs"][1][0]["gen_ms"] == 2.5
    assert "model" not in line["programs"][1][0]  # the record's attempts name their models: none here
    del rec["rounds"][0]["model"]  # a live backend's record: the model named once, for every attempt
    assert {a["model"] for ch in export_case(rec)["programs"] for a in ch} == {"the-model"}
    assert line["programs"][1][0]["logprobs"] == {"mean": -0.5, "min": -2.0, "tokens": 4}
