"""The prompt version of a run: ``trace_config.prompts`` and every record's ``prompts``; a resume
after a prompt edit is refused (``force`` continues, with a warning); a run made before prompt
versions were recorded resumes with a warning; the viewer and the SFT export, which rebuild
prompts from today's templates, warn when those are not the traces' templates."""
import json
import shutil

import pytest

from controller.checks import UsageError, check_trace_file
from controller.config import RunConfig, trace_config
from controller.pipeline import run
from controller.report.sft import export_sft
from controller.report.viewer import build_viewer, read_page_data
from tracegen import prompts
from tracegen.conversations import prompt_digest
from tracegen.rollout import RolloutConfig

from e2e_helpers import small_case_dir

OTHER = "0123456789ab"  # a prompt version that is not today's


def _cfg(root, cases, **kw) -> RunConfig:
    return RunConfig(root=str(root), cases=str(cases), generate_traces=True, resume=True, progress=False,
                     test_families=1, dev_families=1, rollout=RolloutConfig(max_repairs=0), **kw)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One traced run of 4 cases: (its root, the case folder)."""
    tmp = tmp_path_factory.mktemp("prompts")
    cases = small_case_dir(tmp / "cases", families=4, per_family=1)
    run(_cfg(tmp / "run", cases), log=lambda *a: None)
    return tmp / "run", cases


def _copy(traced, tmp_path):
    root, cases = traced
    shutil.copytree(root, tmp_path / "run")
    return tmp_path / "run", cases


def _records(root):
    return [json.loads(line) for line in (root / "reports" / "fresh_traces.jsonl").read_text().splitlines()]


def _rewrite(root, edit_config, edit_records):
    rc = root / "reports" / "run_config.json"
    conf = json.loads(rc.read_text())
    edit_config(conf["trace_config"])
    rc.write_text(json.dumps(conf))
    recs = edit_records(_records(root))
    (root / "reports" / "fresh_traces.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_a_run_records_its_prompt_version_in_every_record_and_its_trace_config(traced):
    root, cases = traced
    today = prompt_digest()
    assert {r["prompts"] for r in _records(root)} == {today}
    tcfg = json.loads((root / "reports" / "run_config.json").read_text())["trace_config"]
    assert tcfg["prompts"] == today == trace_config(_cfg(root, cases), [])["prompts"]
    page = read_page_data(root / "reports" / "viewer" / "index.html")["run"]["prompts"]
    assert page == {"traces": [today], "trace_config": today, "today": today}  # no note: the same templates


def test_resume_after_a_prompt_edit_is_refused_naming_the_setting(traced, tmp_path, monkeypatch):
    """A fixed hole: before, a resume after an edit of tracegen/prompts.py went on without a word,
    mixing two prompt versions in one trace file."""
    root, cases = _copy(traced, tmp_path)
    before = (root / "reports" / "fresh_traces.jsonl").read_bytes()
    traced_with = json.loads((root / "reports" / "run_config.json").read_text())["trace_config"].get("prompts")
    monkeypatch.setattr(prompts, "SYSTEM_PROMPT", prompts.SYSTEM_PROMPT + " Think step by step.")
    with pytest.raises(UsageError) as err:
        run(_cfg(root, cases), log=lambda *a: None)
    msg = str(err.value)
    assert err.value.field == "resume" and "\n" not in msg
    assert f"prompts: {traced_with!r} -> {prompt_digest()!r}" in msg and "other settings" in msg
    assert (root / "reports" / "fresh_traces.jsonl").read_bytes() == before  # nothing written


def test_force_continues_a_run_of_other_prompts_with_a_warning(traced, tmp_path):
    root, cases = _copy(traced, tmp_path)
    _rewrite(root, lambda t: t.update(prompts=OTHER), lambda rs: [{**r, "prompts": OTHER} for r in rs])
    cfg = _cfg(root, cases)
    tcfg = {**json.loads((root / "reports" / "run_config.json").read_text())["trace_config"], "prompts": prompt_digest()}
    with pytest.raises(UsageError, match=f"prompts: '{OTHER}' -> '{prompt_digest()}'"):
        check_trace_file(cfg, tcfg, lambda *a: None)
    lines = []
    done, _ = check_trace_file(_cfg(root, cases, force=True), tcfg, lines.append)
    assert len(done) == 4
    [line] = lines
    assert line.startswith("warning:") and OTHER in line and prompt_digest() in line


def test_an_old_run_without_a_prompt_version_resumes_with_a_warning(traced, tmp_path):
    """A run made before prompt versions were recorded (no ``prompts`` anywhere) is continued, not
    refused; the viewer and the export then say which records' prompt version is unknown."""
    root, cases = _copy(traced, tmp_path)
    _rewrite(root, lambda t: t.pop("prompts"), lambda rs: [{k: v for k, v in r.items() if k != "prompts"} for r in rs[:-1]])
    lines = []
    run(_cfg(root, cases, export_sft=True), log=lines.append)
    today = prompt_digest()
    warned = [x for x in lines if x.startswith("warning:")]
    assert len(warned) == 3, lines  # the resume, the viewer, the export: one line each
    assert "prompt version unknown" in warned[0] and today in warned[0]
    recs = _records(root)
    assert [r.get("prompts") for r in recs].count(today) == 1 and [r.get("prompts") for r in recs].count(None) == 3
    assert json.loads((root / "reports" / "run_config.json").read_text())["trace_config"]["prompts"] == today
    note = read_page_data(root / "reports" / "viewer" / "index.html")["run"]["prompts"]["note"]
    assert "unknown (3 records)" in note and f"{today} (1 record)" in note
    assert warned[1] == f"warning: viewer: {note}" and warned[2] == f"warning: sft export: {note}"
    export = json.loads((root / "reports" / "sft" / "export.json").read_text())
    assert export["prompts"] == {"rebuilt_with": today, "traces": sorted([today, "unknown"])}


def test_the_viewer_warns_when_todays_templates_are_not_the_traces(traced, tmp_path, monkeypatch, capsys):
    """A fixed hole: before, a rebuilt viewer paired the completions with today's prompts without a word."""
    root, _ = _copy(traced, tmp_path)
    traced_with = prompt_digest()
    monkeypatch.setattr(prompts, "_FIX_ASK", "Repair it.")
    build_viewer(root)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and traced_with in err[0] and prompt_digest() in err[0] and err[0].startswith("warning:")
    page = read_page_data(root / "reports" / "viewer" / "index.html")["run"]["prompts"]
    assert page["traces"] == [traced_with] and page["today"] == prompt_digest() != traced_with
    assert traced_with in page["note"] and prompt_digest() in page["note"]


def test_the_viewer_of_a_run_without_prompt_versions_says_unknown(traced, tmp_path, capsys):
    root, _ = _copy(traced, tmp_path)
    _rewrite(root, lambda t: t.pop("prompts"), lambda rs: [{k: v for k, v in r.items() if k != "prompts"} for r in rs])
    build_viewer(root)
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "prompt version unknown" in line
    page = read_page_data(root / "reports" / "viewer" / "index.html")["run"]["prompts"]
    assert page["traces"] == ["unknown"] and page["trace_config"] is None and page["note"].startswith("prompt version unknown")


def test_the_sft_export_warns_naming_both_versions(traced, tmp_path):
    root, _ = traced
    recs = [{**r, "prompts": OTHER} for r in _records(root)]
    lines = []
    summary = export_sft(recs, tmp_path / "sft", warn=lines.append)
    [line] = lines
    assert line.startswith("warning: sft export: ") and OTHER in line and prompt_digest() in line
    assert summary["prompts"] == {"rebuilt_with": prompt_digest(), "traces": [OTHER]}
    lines.clear()
    export_sft(_records(root), tmp_path / "same", warn=lines.append)
    assert lines == []  # today's templates made the traces: nothing to say
