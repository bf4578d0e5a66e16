"""The prompt templates' version (``tracegen.conversations.prompt_digest``): it changes when any
text that reaches a prompt changes, is the same in every process, and every new trace record
names it; records without it (written before) stay valid."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import Sandbox
from tracegen import prompts
from tracegen.conversations import prompt_digest, prompt_version_note
from tracegen.records import SCHEMA_VERSION, TraceFileError, validate_record
from tracegen.rollout import RolloutConfig, trace_cases

from replay_recording import CASE, _backend

ROOT = Path(__file__).resolve().parents[2]


def _child_digest(root: Path) -> str:
    code = "from tracegen.conversations import prompt_digest; print(prompt_digest())"
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "PYTHONHASHSEED": "random"})
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def test_the_digest_is_a_short_hex_prefix_and_the_same_in_another_process():
    d = prompt_digest()
    assert re.fullmatch(r"[0-9a-f]{12}", d)
    assert prompt_digest() == d
    assert _child_digest(ROOT) == d  # no salted hash, no per-process value


@pytest.mark.parametrize("name, value", [
    ("SYSTEM_PROMPT", prompts.SYSTEM_PROMPT + " Be brief."),
    ("_WRITE_RULES", prompts._WRITE_RULES.replace("one ```python code block", "a ```python block")),
    ("_FIX_ASK", prompts._FIX_ASK.replace("Fix the function.", "Repair the function.")),
    ("MAX_FEEDBACK_CHARS", 900),
    ("MAX_DIFF_ROWS", 3),
    ("MAX_ROW_CHARS", 50),
])
def test_any_template_text_changes_the_digest(monkeypatch, name, value):
    before = prompt_digest()
    monkeypatch.setattr(prompts, name, value)
    assert prompt_digest() != before


def test_feedback_wording_changes_the_digest(monkeypatch):
    before = prompt_digest()
    describe = prompts.describe_feedback
    monkeypatch.setattr(prompts, "describe_feedback", lambda fb: describe(fb).replace("failed", "broke"))
    assert prompt_digest() != before
    monkeypatch.undo()
    diff = prompts.table_diff
    monkeypatch.setattr(prompts, "table_diff", lambda e, p: diff(e, p).replace("Expected", "Wanted"))
    assert prompt_digest() != before


@pytest.mark.parametrize("old, new", [
    ("Your answer did not contain a usable", "Your answer had no usable"),  # parse feedback
    ("The rows are right but in the wrong order.", "Right rows, wrong order."),  # the row diff
    ("On the new input it failed too", "It also failed on the new input"),  # the new-input crash
    ("Apply the example's transformation to the new input.", "Transform the new input."),  # direct prompt
])
def test_editing_the_source_of_the_templates_changes_the_digest(tmp_path, old, new):
    """An edit of tracegen/prompts.py itself, in a copy of the packages, seen by a fresh process."""
    for pkg in ("tracegen", "sandbox", "cases"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "data", "foofah"))
    src = tmp_path / "tracegen" / "prompts.py"
    text = src.read_text()
    assert old in text
    src.write_text(text.replace(old, new))
    assert _child_digest(tmp_path) != prompt_digest()


def test_every_new_record_names_the_digest_and_old_records_stay_valid(tmp_path):
    backend, _ = _backend(tmp_path)
    with Sandbox(workers=1) as sb:
        [rec] = trace_cases([CASE], {}, backend, sb, RolloutConfig(max_repairs=2, progress=False))
    assert rec["prompts"] == prompt_digest() and rec["schema_version"] == SCHEMA_VERSION == 4
    validate_record(rec)
    old = {k: v for k, v in rec.items() if k != "prompts"}  # a record written before the key existed
    validate_record(old)
    with pytest.raises(TraceFileError, match="prompts"):
        validate_record({**rec, "prompts": "not a digest"})


def test_the_note_names_the_runs_prompt_version_and_todays():
    today = prompt_digest()
    assert prompt_version_note([{"prompts": today}] * 3) is None
    assert prompt_version_note([]) is None
    unknown = prompt_version_note([{}, {}])
    assert unknown.startswith("prompt version unknown") and today in unknown and "\n" not in unknown
    other = prompt_version_note([{"prompts": "0123456789ab"}, {"prompts": "0123456789ab"}])
    assert "0123456789ab (2 records)" in other and f"today's prompt templates are {today}" in other
    mixed = prompt_version_note([{"prompts": today}, {}])
    assert f"{today} (1 record)" in mixed and "unknown (1 record)" in mixed
