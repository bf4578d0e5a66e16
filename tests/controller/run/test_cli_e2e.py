"""End-to-end runs of the CLI on a few cases, as a user starts it."""
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from e2e_helpers import CLI, small_case_dir

SCRIPT = CLI
POLICIES = {"direct_only", "always_tool_visible", "visible_disagree_rule", "learned_rule", "oracle_seq"}
FIELDS = {"n", "exact", "accuracy", "accuracy_ci95", "program_generations", "repair_actions", "program_commits",
          "program_correct", "program_precision", "direct_miss_recoveries", "direct_correct_losses",
          "generated_tokens", "sandbox_ms"}


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=900)


def test_main_command_on_a_few_cases(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=8, per_family=2)
    r = cli("--root", str(tmp_path), "--cases", str(cases), "--generate-traces", "--max-repairs", "1",
            "--synth-fix-nodes", "5000", "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    rep = tmp_path / "reports"
    traces = [json.loads(l) for l in (rep / "fresh_traces.jsonl").read_text().splitlines()]
    assert len(traces) == 16
    schema = json.loads((SCRIPT.parent.parent / "tracegen" / "schemas" / "trace.schema.json").read_text())
    for t in traces:
        jsonschema.validate(t, schema)
    summary = json.loads((rep / "final_summary.json").read_text())
    assert POLICIES <= set(summary["policy_results"])
    for pol in POLICIES:
        for split in ("train", "dev", "test"):
            assert FIELDS <= set(summary["policy_results"][pol][split])
    manifest = json.loads((rep / "split_manifest.json").read_text())["split_families"]
    fams = [f for fs in manifest.values() for f in fs]
    assert len(fams) == len(set(fams)) == 8
    for name in ("heldout_accuracy", "dev_vs_test", "tool_budget", "recoveries_losses", "accuracy_vs_compute"):
        assert (rep / "figures" / f"{name}.png").stat().st_size > 1000
    preds = [json.loads(l) for l in (rep / "predictions" / "oracle_seq.jsonl").read_text().splitlines()]
    assert {p["case_id"] for p in preds} == {t["case_id"] for t in traces}
    assert "Held-out" in (rep / "report.md").read_text()
    # the oracle is never below direct-only, on every split
    for split in ("train", "dev", "test"):
        res = summary["policy_results"]
        assert res["oracle_seq"][split]["exact"] >= res["direct_only"][split]["exact"]


@pytest.mark.slow
def test_resume_on_an_empty_root_starts_and_rerun_reuses_traces(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    r = cli("--root", str(tmp_path), "--cases", str(cases), "--generate-traces", "--resume", "--max-repairs", "0",
            "--no-progress", "--test-families", "1", "--dev-families", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    first = (tmp_path / "reports" / "fresh_traces.jsonl").read_text()
    r = cli("--root", str(tmp_path), "--cases", str(cases), "--generate-traces", "--resume", "--max-repairs", "0",
            "--no-progress", "--test-families", "1", "--dev-families", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "reports" / "fresh_traces.jsonl").read_text() == first
    r = cli("--root", str(tmp_path), "--cases", str(cases), "--generate-traces", "--resume", "--max-repairs", "2",
            "--no-progress")
    assert r.returncode == 2 and "max_repairs" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_hf_backend_end_to_end_on_a_tiny_local_model(tmp_path):
    """The hf backend through the CLI: a tiny Qwen3.5-architecture model saved locally, loaded
    with from_pretrained; a second run over the same generation cache is identical."""
    from tracegen.tiny_model import build_tiny_model

    model = build_tiny_model(str(tmp_path / "tiny"), arch="qwen3_5")
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    args = ("--cases", str(cases), "--generate-traces", "--backend", "hf", "--model", model,
            "--max-repairs", "1", "--max-new-tokens", "24", "--no-progress", "--test-families", "1",
            "--dev-families", "1", "--cache-dir", str(tmp_path / "cache"))
    r = cli("--root", str(tmp_path / "a"), *args)
    assert r.returncode == 0, r.stderr[-3000:]
    traces = [json.loads(l) for l in (tmp_path / "a" / "reports" / "fresh_traces.jsonl").read_text().splitlines()]
    assert len(traces) == 4 and {t["backend"] for t in traces} == {"hf"}
    assert all(t["direct"]["completion_tokens"] > 0 and t["rounds"] for t in traces)
    r = cli("--root", str(tmp_path / "b"), *args)
    assert r.returncode == 0, r.stderr[-3000:]
    again = [json.loads(l) for l in (tmp_path / "b" / "reports" / "fresh_traces.jsonl").read_text().splitlines()]
    assert [t["direct"]["raw"] for t in again] == [t["direct"]["raw"] for t in traces]
    assert [t["rounds"][0]["raw"] for t in again] == [t["rounds"][0]["raw"] for t in traces]


@pytest.mark.slow
def test_cases_without_hidden_answer_are_traced_and_left_out_of_scoring(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=2)
    first = sorted(cases.rglob("*.json"))[0]
    d = json.loads(first.read_text())
    d["TestAnswer"] = [["NOT AVAILABLE, SORRY"]]
    first.write_text(json.dumps(d))
    r = cli("--root", str(tmp_path), "--cases", str(cases), "--generate-traces", "--max-repairs", "1",
            "--no-progress", "--test-families", "1", "--dev-families", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    rep = tmp_path / "reports"
    traces = [json.loads(l) for l in (rep / "fresh_traces.jsonl").read_text().splitlines()]
    unscored = [t for t in traces if t["hidden"]["answer"] is None]
    assert len(traces) == 8 and len(unscored) == 1 and unscored[0]["hidden"]["direct_exact"] is None
    summary = json.loads((rep / "final_summary.json").read_text())
    split = unscored[0]["split"]
    assert summary["splits"][split]["unscored"] == 1
    for pol, res in summary["policy_results"].items():
        assert res[split]["n"] == summary["splits"][split]["n"], pol  # scored cases only
