"""Registration provenance of a study file: its git commit against the time the traces started."""
import subprocess

import pytest

from controller.study.provenance import registration, registration_words, study_file_git, study_provenance


def _git(cwd, *args, when=None):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd)}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "s.toml").write_text("name = 's'\n")
    _git(tmp_path, "add", "s.toml")
    _git(tmp_path, "commit", "-qm", "study", when="2026-01-02T10:00:00+00:00")
    return tmp_path


def test_committed_before_the_traces_is_pre_registered(repo):
    g = study_file_git(str(repo / "s.toml"))
    assert g["state"] == "committed" and len(g["commit"]) == 40 and g["committed_utc"] == "2026-01-02T10:00:00+00:00"
    r = study_provenance(str(repo / "s.toml"), "2026-01-02T11:00:00+00:00")
    assert r["pre_registered"] is True and r["registration"] == "pre-registered"
    assert r["traces_started_utc"] == "2026-01-02T11:00:00+00:00"
    assert registration_words({"source": "s.toml", **r}).startswith("pre-registered in `s.toml`")


def test_committed_after_the_traces_or_unknown_start(repo):
    r = registration(study_file_git(str(repo / "s.toml")), "2026-01-02T09:00:00+00:00")
    assert r["pre_registered"] is False and r["registration"] == "registered after the traces existed"
    r = study_provenance(str(repo / "s.toml"), None)  # an older run_config.json: no traces_started_utc
    assert r["pre_registered"] is False and r["registration"] == "unknown" and r["traces_started_utc"] == "unknown"
    words = registration_words({"source": "s.toml", **r})
    assert "pre-registered" not in words and "registration unknown" in words


def test_modified_or_untracked_files_are_uncommitted(repo):
    (repo / "s.toml").write_text("name = 'changed'\n")
    g = study_file_git(str(repo / "s.toml"))
    assert g["state"] == "uncommitted" and g["commit"] is not None
    assert registration(g, "2026-01-03T00:00:00+00:00")["pre_registered"] is False
    (repo / "new.toml").write_text("x = 1\n")
    g = study_file_git(str(repo / "new.toml"))
    assert g["state"] == "uncommitted" and g["commit"] is None
    assert registration(g, "2026-01-03T00:00:00+00:00")["registration"] == "unknown"


def test_outside_git_and_without_a_study_file(tmp_path):
    (tmp_path / "s.toml").write_text("x = 1\n")
    assert study_file_git(str(tmp_path / "s.toml"))["state"] in ("no git", "uncommitted")
    r = study_provenance(None)
    assert r["pre_registered"] is False and r["study_file_git"] is None
    assert "pre-registered" not in registration_words(r)


def test_pipeline_records_when_the_traces_started_and_keeps_it_on_resume(tmp_path):
    import json

    from controller.checks import traces_started_utc
    from controller.config import RunConfig
    from controller.run_folder import run_config_path

    cfg = RunConfig(root=str(tmp_path))
    assert traces_started_utc(cfg) is None  # no run_config.json yet
    p = run_config_path(cfg)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"trace_config": {}}))
    assert traces_started_utc(cfg) is None  # an older run_config.json
    p.write_text(json.dumps({"trace_config": {}, "traces_started_utc": "2026-01-02T11:00:00+00:00"}))
    assert traces_started_utc(cfg) == "2026-01-02T11:00:00+00:00"


@pytest.mark.slow
def test_cli_run_records_traces_started_and_settles_the_registration(repo):
    import json
    import sys
    from pathlib import Path

    from e2e_helpers import small_case_dir

    script = Path(__file__).resolve().parents[3] / "scripts" / "run_live_tool_dagger.py"
    (repo / "s.toml").write_text('[[hypotheses]]\nname = "p"\nprimary = true\nkind = "accuracy_diff"\n'
                                 'policies = ["always_tool_visible", "direct_only"]\nsplit = "test"\n')
    _git(repo, "commit", "-qam", "the study", when="2026-01-02T12:00:00+00:00")
    cases = small_case_dir(repo / "cases", families=4, per_family=1)
    args = [sys.executable, str(script), "--root", str(repo / "run"), "--cases", str(cases), "--generate-traces",
            "--resume", "--max-repairs", "0", "--no-progress", "--test-families", "1", "--dev-families", "1",
            "--study", str(repo / "s.toml")]
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    rc = json.loads((repo / "run" / "reports" / "run_config.json").read_text())
    started = rc["traces_started_utc"]
    study = json.loads((repo / "run" / "reports" / "final_summary.json").read_text())["study"]
    assert study["traces_started_utc"] == started and study["study_file_git"]["state"] == "committed"
    assert study["pre_registered"] is True and study["registration"] == "pre-registered"
    assert "## Pre-registered hypotheses" in (repo / "run" / "reports" / "report.md").read_text()
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)  # --resume keeps the start
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((repo / "run" / "reports" / "run_config.json").read_text())["traces_started_utc"] == started
