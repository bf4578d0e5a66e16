"""The ``imported`` backend through the rollout (tracegen/backends/imported.py): the hand-written file's
table, grid (three examples) and string tasks become records the way a live backend's outputs do;
a chain continued after a pass is cut there; a chain the source stopped, and a sample it never drew,
end without a made-up round; text is parsed, answers and code are taken as given; provenance kept."""
from __future__ import annotations

import json
from pathlib import Path

from tracegen.backends import BackendConfig
from tracegen.backends.imported import ImportedBackend
from tracegen.importfile import read_import_file
from tracegen.records import validate_record
from tracegen.rollout import RolloutConfig, trace_cases

from inprocess import InProcessSandbox

HAND = Path(__file__).resolve().parents[1] / "data" / "import" / "hand_written.jsonl"


def _trace(path=HAND, **rollout):
    source = read_import_file(path)
    backend = ImportedBackend(BackendConfig(name="imported"), source)
    cfg = RolloutConfig(max_repairs=rollout.pop("max_repairs", max(source.longest_chain - 1, 0)),
                        program_samples=rollout.pop("program_samples", source.max_samples), progress=False, **rollout)
    recs = trace_cases([c.case() for c in source.cases], {}, backend, InProcessSandbox(), cfg)
    for r in recs:
        validate_record(r)
    return {r["case_id"]: r for r in recs}


def test_the_hand_written_file_traces_as_recorded():
    recs = _trace()
    table, grid, text = recs["names/first_column"], recs["recolor/one_to_two"], recs["strings/upper"]
    for line, r in enumerate(recs.values(), 1):
        assert r["backend"] == "imported" and r["source"] == {"file": HAND.name, "line": line}
        assert r["model"] == ("model-a, model-b" if line == 1 else "unknown") and r["max_repairs"] == 2
        assert "gen_ms" not in r["totals"] and "gen_ms" not in r["direct"]

    assert table["direct"]["value"] == [["Cy"], ["Di"]] and table["direct"]["parse"]["status"] == "ok"
    assert table["hidden"]["direct_exact"] is True and table["direct"]["model"] == "model-a"
    first = table["rounds"][0]
    assert first["visible_pass"] and first["test_output"] == [["Cy"], ["Di"]] and first["prompt_tokens"] == 300
    assert first["model"] == "model-b" and first["prompt"][0]["content"] == "Write transform(table) ..."
    assert first["logprobs"] == {"mean": -0.21, "min": -3.5, "tokens": 25, "source": "imported"}
    # sample 1: one unparsable attempt, then the source stopped: no repair round is made up
    assert [x["parse"]["status"] for x in table["samples"][0]] == ["failed"]
    assert table["chain_repairs"] == [2, 0]

    assert grid["task"]["value_type"] == "grid" and len(grid["task"]["examples"]) == 3
    assert grid["direct"]["parse"]["status"] == "given" and grid["hidden"]["direct_exact"] is False
    assert [x["visible_pass"] for x in grid["rounds"]] == [False, True]
    assert [h["hidden_exact"] for h in grid["hidden"]["rounds"]] == [False, True]
    assert grid["rounds"][0]["feedback"] is None  # a WRITE
    # the repair's feedback is the prompt the file recorded, not a text this toolkit would write
    assert grid["rounds"][1]["feedback"] == "Your program returned the input unchanged on example 1; fix it."
    assert grid.get("samples", []) == [] and "chain_repairs" not in grid  # K = 2, one chain: one sample

    assert text["task"]["value_type"] == "json" and text["direct"]["value"] == "XYZ"
    assert len(text["rounds"]) == 1 and text["rounds"][0]["visible_pass"]  # cut after its pass
    assert text["hidden"]["rounds"] == [{"hidden_exact": True}]


def test_a_repair_without_a_recorded_prompt_has_no_feedback_and_flags_cut_chains(tmp_path):
    line = {"case_id": "s/rev", "family": "s", "examples": [{"input": "ab", "output": "ba"}],
            "test": {"input": "xyz", "output": "zyx"},
            "programs": [[{"code": "def transform(x):\n    return x"},
                          {"code": "def transform(x):\n    return x.upper()"},
                          {"code": "def transform(x):\n    return x[::-1]"}]]}
    p = tmp_path / "one.jsonl"
    p.write_text(json.dumps(line) + "\n")
    rec = _trace(p)["s/rev"]
    assert [x["feedback"] for x in rec["rounds"]] == [None, None, None]
    assert rec["rounds"][-1]["visible_pass"] and rec["hidden"]["rounds"][-1]["hidden_exact"] is True
    # no direct answer recorded: an empty one that commits nothing
    assert rec["direct"]["finish_reason"] == "not_recorded" and rec["direct"]["value"] is None
    assert rec["hidden"]["direct_exact"] is False
    # --max-repairs 1 cuts the chain before its passing repair: the chain fails, out of repairs
    rec = _trace(p, max_repairs=1)["s/rev"]
    assert len(rec["rounds"]) == 2 and not rec["rounds"][-1]["visible_pass"] and "chain_repairs" not in rec


def test_an_imported_trace_exported_and_imported_again_gives_the_same_records(tmp_path):
    from tracegen.importfile import export_case

    first = _trace()
    out = tmp_path / "again.jsonl"
    out.write_text("".join(json.dumps(export_case(r)) + "\n" for r in first.values()))
    again = _trace(out, max_repairs=2)  # the chain cut after its pass is shorter now: the budget as traced

    def same(r):  # the file it came from is another one; the rest is the same
        return {k: v for k, v in r.items() if k != "source"}

    assert [same(r) for r in again.values()] == [same(r) for r in first.values()]
    assert [r["source"]["file"] for r in again.values()] == ["again.jsonl"] * 3
