"""`--cases 1d-arc --generate-traces` end to end, offline, as a user runs it: schema-v4 records of
grid tasks with three examples each, synth declining them explicitly, family-disjoint splits, a
report that names the case set and a viewer whose data holds every example and draws grids."""
import gzip
import json

import pytest

from tracegen.records import read_traces


@pytest.mark.slow
def test_1d_arc_traces_report_and_viewer(tmp_path, run_cli, browser):
    root = tmp_path / "run"
    r = run_cli("--cases", "1d-arc", "--generate-traces", "--root", root, "--limit-total", 36, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    rep = root / "reports"
    records = read_traces(rep / "fresh_traces.jsonl")
    assert len(records) == 36 and len({x["family"] for x in records}) == 18
    for rec in records:
        assert rec["schema_version"] == 4 and rec["task"]["value_type"] == "grid"
        assert len(rec["task"]["examples"]) == 3 and rec["case_id"].startswith("dataset/" + rec["family"] + "/")
        assert rec["direct"]["finish_reason"] == rec["direct"]["parse"]["status"] == "declined"
        assert all(x["finish_reason"] == "declined" and x["code"] is None for x in rec["rounds"])
    splits = {}
    for rec in records:
        splits.setdefault(rec["family"], set()).add(rec["split"])
    assert all(len(s) == 1 for s in splits.values())  # family-disjoint
    report = (rep / "report.md").read_text()
    assert "- cases: `1d-arc`" in report
    assert "- tasks: 36 grid (public examples: 36 with 3); declined by the backend: 36 of 36 direct answers" in report
    # the viewer's data: every example of every case, as grids
    data = json.loads(gzip.decompress((rep / "viewer" / "data.json.gz").read_bytes()))
    assert data["run"]["case_set"] == "1d-arc"
    case = data["cases"][0]
    assert [e["input"] for e in case["task"]["examples"]] == [e["input"] for e in records[0]["task"]["examples"]]
    assert "Example 3 input:" in case["prompts"]["write"][1]["content"]
    # the page draws them as coloured ARC cells
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((rep / "viewer" / "index.html").as_uri() + "#case/" + case["id"].replace("/", "%2F"))
    page.wait_for_selector("body[data-ready]", state="attached", timeout=20_000)
    page.wait_for_selector("#case-title")
    arcs = page.locator("#case .panel").first.locator("table.arc")
    assert arcs.count() == 7  # three examples (input, output) and the new input
    assert page.locator("#case .panel").first.locator("table.arc td.c0").count() > 0
    assert errors == []


@pytest.mark.slow
def test_1d_arc_traced_by_the_tiny_hf_model(tmp_path, run_cli, tiny_model):
    """A model backend gets the value prompts (every example, grids as rows of numbers) and its
    answers go through the same parsing, sandbox kinds and grading as any."""
    root = tmp_path / "hf"
    r = run_cli("--cases", "1d-arc", "--generate-traces", "--root", root, "--backend", "hf", "--model", tiny_model,
                "--limit-total", 3, "--max-new-tokens", 24, "--max-repairs", 1, "--test-families", 1,
                "--dev-families", 1, "--cache-dir", "none", "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    records = read_traces(root / "reports" / "fresh_traces.jsonl")
    assert len(records) == 3
    for rec in records:
        assert rec["backend"] == "hf" and rec["task"]["value_type"] == "grid" and len(rec["task"]["examples"]) == 3
        assert rec["direct"]["finish_reason"] in ("stop", "length") and rec["direct"]["completion_tokens"] > 0
        assert rec["direct"]["parse"]["status"] != "declined"
        assert rec["rounds"] and all(x["feedback"] is None for x in rec["rounds"][:1])
        assert all(isinstance(x["feedback"], str) for x in rec["rounds"][1:])  # every repair records its text
    data = json.loads(gzip.decompress((root / "reports" / "viewer" / "data.json.gz").read_bytes()))
    write = data["cases"][0]["prompts"]["write"][1]["content"]
    first = records[0]["task"]["examples"][0]["input"][0]
    assert "Example 3 input:" in write and " ".join(map(str, first)) in write and "def transform(grid):" in write
