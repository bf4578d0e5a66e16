"""``live-tool-dagger import`` and ``export`` (docs/import.md): a hand-written file of a table task, a
grid task with three examples, a string task and a chain continued after a pass becomes ordinary
records through the rollout; a bad line refuses the whole file; a synth run exported and imported
back is analysed the same."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_helpers import CLI, small_case_dir

HAND = Path(__file__).resolve().parents[2] / "data" / "import" / "hand_written.jsonl"


def cli(*args):
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, timeout=900)


def records(root):
    from tracegen.records import read_traces

    return {r["case_id"]: r for r in read_traces(Path(root) / "reports" / "fresh_traces.jsonl")}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("imported")
    r = cli("import", HAND, "--root", root, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    return root, r.stdout


def test_the_summary_line_counts_cases_attempts_cut_chains_and_unparsable_attempts(imported):
    _, out = imported
    assert ("imported 3 cases, 10 attempts (8 used): 1 chain cut after a pass (2 attempts dropped), "
            "1 unparsable attempt") in out, out
    assert "analyse with: live-tool-dagger --root" in out


def test_records_are_the_rollouts_with_provenance(imported):
    root, _ = imported
    recs = records(root)
    assert list(recs) == ["names/first_column", "recolor/one_to_two", "strings/upper"]
    for line, r in enumerate(recs.values(), 1):
        assert r["backend"] == "imported" and r["source"] == {"file": "hand_written.jsonl", "line": line}
        assert r["model"] == ("model-a, model-b" if line == 1 else "unknown")  # its attempts' models
        assert r["max_repairs"] == 2 and r["split"] == "unassigned"
        assert "gen_ms" not in r["direct"] and all("gen_ms" not in x for x in r["rounds"])  # no timing recorded

    table = recs["names/first_column"]
    assert table["direct"]["value"] == [["Cy"], ["Di"]] and table["hidden"]["direct_exact"] is True
    assert table["direct"]["model"] == "model-a" and table["direct"]["prompt_tokens"] == 120
    first = table["rounds"][0]
    assert first["visible_pass"] and first["test_output"] == [["Cy"], ["Di"]] and first["model"] == "model-b"
    assert first["prompt"] == [{"role": "user", "content": "Write transform(table) ..."}]
    assert first["logprobs"] == {"mean": -0.21, "min": -3.5, "tokens": 25, "source": "imported"}
    # sample 1: one unparsable attempt, then nothing recorded: its chain ends there, no repair offered
    assert [x["parse"]["status"] for x in table["samples"][0]] == ["failed"]
    assert table["chain_repairs"] == [2, 0]

    grid = recs["recolor/one_to_two"]
    assert len(grid["task"]["examples"]) == 3 and grid["task"]["value_type"] == "grid"
    assert grid["direct"]["parse"]["status"] == "given" and grid["hidden"]["direct_exact"] is False
    assert [x["visible_pass"] for x in grid["rounds"]] == [False, True]
    assert [h["hidden_exact"] for h in grid["hidden"]["rounds"]] == [False, True]
    assert grid["rounds"][1]["feedback"] == "Your program returned the input unchanged on example 1; fix it."
    assert "samples" not in grid or grid["samples"] == []  # one chain recorded: no second sample

    text = recs["strings/upper"]
    assert text["task"]["value_type"] == "json" and text["hidden"]["direct_exact"] is True
    assert len(text["rounds"]) == 1 and text["rounds"][0]["visible_pass"]  # the two attempts after the pass: cut
    assert text["hidden"]["rounds"][0]["hidden_exact"] is True


def test_a_bad_line_refuses_the_file_and_writes_nothing(tmp_path):
    bad = tmp_path / "outputs.jsonl"
    line = {"case_id": "x/1", "family": "x", "examples": [{"input": [[1]], "output": [[2]]}],
            "test": {"input": [[3]]}, "direct": [{"answer": [[4]]}]}
    bad.write_text(HAND.read_text() + json.dumps(line) + "\n")
    r = cli("import", bad, "--root", tmp_path / "root")
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {bad}: line 4: key `test.output`: missing; nothing was imported"
    assert not (tmp_path / "root").exists()


def test_resume_skips_the_cases_already_imported(imported, tmp_path):
    root, _ = imported
    again = tmp_path / "again"
    shutil.copytree(root, again)
    before = (again / "reports" / "fresh_traces.jsonl").read_bytes()
    r = cli("import", HAND, "--root", again, "--resume", "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (again / "reports" / "fresh_traces.jsonl").read_bytes() == before


def test_the_counts_say_what_was_dropped_and_why():
    from controller.importer import import_counts, summary_line
    from inprocess import InProcessSandbox
    from tracegen.backends import BackendConfig
    from tracegen.backends.imported import ImportedBackend
    from tracegen.importfile import read_import_file
    from tracegen.rollout import RolloutConfig, trace_cases

    source = read_import_file(HAND)
    recs = trace_cases([c.case() for c in source.cases], {}, ImportedBackend(BackendConfig(name="imported"), source),
                       InProcessSandbox(), RolloutConfig(max_repairs=0, program_samples=1, progress=False))
    n = import_counts(source, recs, k=1)
    # the string chain passes at once (2 cut after it); the grid chain's repair is past --max-repairs 0;
    # the table case's second chain is past --program-samples 1
    assert (n["cut_after_pass"], n["dropped_after_pass"], n["dropped_over_budget"], n["dropped_samples"]) == (1, 2, 1, 1)
    assert n["attempts"] == 10 and n["used"] == 6 and n["unparsable"] == 0
    line = summary_line(n)
    assert line.startswith("imported 3 cases, 10 attempts (6 used): 1 chain cut after a pass (2 attempts dropped), "
                           "0 unparsable attempts; 1 attempt past --max-repairs dropped; 1 attempt of chains past "
                           "--program-samples dropped"), line


def _summary(root):
    return json.loads((Path(root) / "reports" / "final_summary.json").read_text())


def _same_analysis(a, b):
    """The policies' outcomes: per policy and split, what they got right and what they spent (the
    synthesizer's search nodes and the sandbox's times are not part of the import format)."""
    keep = ("n", "exact", "accuracy", "program_generations", "repair_actions", "program_commits", "program_correct",
            "direct_miss_recoveries", "direct_correct_losses", "generated_tokens")
    pa, pb = _summary(a)["policy_results"], _summary(b)["policy_results"]
    assert sorted(pa) == sorted(pb)
    for name in pa:
        for split in ("dev", "test"):
            assert {k: pa[name][split][k] for k in keep} == {k: pb[name][split][k] for k in keep}, (name, split)
    for p in sorted((Path(a) / "reports" / "predictions").glob("*.jsonl")):
        rows = lambda path: [{k: x[k] for k in ("policy", "split", "case_id", "actions", "correct")}  # noqa: E731
                             for x in map(json.loads, path.read_text().splitlines())]
        assert rows(p) == rows(Path(b) / "reports" / "predictions" / p.name), p.name


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 3])
def test_export_then_import_reproduces_the_analysis(tmp_path, k):
    cases = small_case_dir(tmp_path / "cases", families=6, per_family=2)
    a, b = tmp_path / "a", tmp_path / "b"
    r = cli("--root", a, "--cases", cases, "--generate-traces", "--max-repairs", "2", "--program-samples", k,
            "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    rounds = [x for rec in records(a).values() for ch in [rec["rounds"], *rec.get("samples", [])] for x in ch]
    assert any(x["kind"] == "fix" for x in rounds)  # traces with repairs
    out = tmp_path / "exported.jsonl"
    r = cli("export", "--root", a, out)
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"--max-repairs 2 --program-samples {k}" in r.stdout
    r = cli("import", out, "--root", b, "--max-repairs", "2", "--program-samples", k, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    r = cli("--root", b, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    _same_analysis(a, b)
    assert _summary(b)["traces"]["backend"] == "imported"
    if k == 1:  # cases with only direct answers, and cases with only programs, are analysed too
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        for i, line in enumerate(lines):
            line.pop("programs" if i % 3 == 0 else "direct" if i % 3 == 1 else "nothing", None)
        out.write_text("".join(json.dumps(x) + "\n" for x in lines))
        c = tmp_path / "c"
        r = cli("import", out, "--root", c, "--no-progress")
        assert r.returncode == 0, r.stderr[-3000:]
        r = cli("--root", c, "--no-progress")
        assert r.returncode == 0, r.stderr[-3000:]
        recs = records(c)
        assert all(not rec["rounds"] and rec["chain_repairs"] == [] for rec in list(recs.values())[::3])
        assert all(rec["direct"]["finish_reason"] == "not_recorded" for rec in list(recs.values())[1::3])
        direct_only = _summary(c)["policy_results"]["direct_only"]["test"]
        assert direct_only["n"] > 0


def _chains(rec):
    """What a replay must reproduce of a record: each sample's rounds as parsed and graded."""
    keep = ("round", "kind", "raw", "code", "parse", "visible_pass", "test_output")
    return [[{k: x.get(k) for k in keep} for x in chain] for chain in [rec["rounds"], *(rec.get("samples") or [])]]


def test_a_replay_of_the_imported_run_reproduces_every_sample(imported, tmp_path):
    """``--backend replay`` of an imported run with the settings it was made with, the cases read from
    its trace file: given programs taken as parsed, unparsable text parsed again, the second sample's
    chain replayed from ``samples``, the samples the source never drew answered absent as the import did."""
    root, _ = imported
    traces = Path(root) / "reports" / "fresh_traces.jsonl"
    r = cli("--backend", "replay", "--replay", traces, "--cases", traces, "--max-repairs", 2,
            "--program-samples", 2, "--generate-traces", "--root", tmp_path, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    before, after = records(root), records(tmp_path)
    assert sorted(after) == sorted(before)
    assert any(rec.get("samples") for rec in before.values())  # the file has a second sample
    for cid, rec in before.items():
        assert _chains(after[cid]) == _chains(rec), cid
        assert after[cid]["hidden"] == rec["hidden"] and after[cid]["direct"]["value"] == rec["direct"]["value"]


def test_a_trace_file_as_cases_that_is_no_trace_file_is_one_line(tmp_path):
    bad = tmp_path / "notes.jsonl"
    bad.write_text("not json\n{}\n")
    r = cli("--backend", "replay", "--replay", bad, "--cases", bad, "--generate-traces", "--root", tmp_path / "r",
            "--no-progress")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "notes.jsonl" in r.stderr and "--cases" in r.stderr, r.stderr
    assert not (tmp_path / "r" / "reports" / "fresh_traces.jsonl").exists()
