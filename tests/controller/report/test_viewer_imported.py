"""The viewer on imported records (docs/import.md): each attempt shows the prompt its file recorded,
or says none was recorded, never a prompt rebuilt from this toolkit's templates; no prompt-version
warning is raised for them (their prompts were not made here)."""
from __future__ import annotations

from pathlib import Path

from controller.report.viewer import case_view
from tracegen.backends import BackendConfig
from tracegen.backends.imported import ImportedBackend
from tracegen.conversations import prompt_version_note
from tracegen.importfile import read_import_file
from tracegen.rollout import RolloutConfig, trace_cases

from inprocess import InProcessSandbox

HAND = Path(__file__).resolve().parents[2] / "data" / "import" / "hand_written.jsonl"


def test_imported_attempts_show_their_recorded_prompts_only():
    source = read_import_file(HAND)
    recs = trace_cases([c.case() for c in source.cases], {}, ImportedBackend(BackendConfig(name="imported"), source),
                       InProcessSandbox(), RolloutConfig(max_repairs=2, program_samples=2, progress=False))
    assert all("prompts" not in r for r in recs)  # no template of this toolkit built them
    assert prompt_version_note(recs) is None
    table, grid = (case_view(r, [], {}) for r in recs[:2])
    assert table["prompts"] == {"recorded": True, "direct": None}  # the file recorded no direct prompt
    assert table["direct"]["model"] == "model-a"
    first = table["chains"][0][0]
    assert first["prompt"] == [{"role": "user", "content": "Write transform(table) ..."}] and first["model"] == "model-b"
    assert "fix_turns" not in first
    repair = grid["chains"][0][1]
    assert repair["prompt"] == [{"role": "user", "content": "Your program returned the input unchanged on example 1; "
                                                            "fix it."}]
    assert grid["chains"][0][0]["prompt"] is None  # shown as "no prompt recorded"
