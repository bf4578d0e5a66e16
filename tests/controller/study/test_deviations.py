"""Deviations from registration, generated from git (a throwaway repository with known history)."""
import json
import subprocess

from controller.report.deviations import deviations_md
from controller.study.deviations import deviations


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def _commit(repo, path, text, msg, when):
    f = repo / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    _git(repo, "add", path)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", msg], cwd=repo, check=True,
                   env={"GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "PATH": "/usr/bin:/bin"})
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()


def test_earlier_registration_and_analysis_commits(tmp_path):
    _git(tmp_path, "init", "-q")
    v1 = '[[hypotheses]]\nname = "old_primary"\nprimary = true\n'
    _commit(tmp_path, "studies/s.toml", v1, "first registration", "2026-01-01T10:00:00+00:00")
    summary = {"hypotheses": [{"name": "old_primary", "primary": True, "verdict": "supported"}]}
    _commit(tmp_path, "results/s/final_summary.json", json.dumps(summary), "result", "2026-01-01T11:00:00+00:00")
    reg = _commit(tmp_path, "studies/s.toml", '[[hypotheses]]\nname = "new"\nprimary = true\n', "second",
                  "2026-01-01T12:00:00+00:00")
    _commit(tmp_path, "controller/study/a.py", "x = 1\n", "analysis change", "2026-01-01T14:00:00+00:00")
    _commit(tmp_path, "docs/x.md", "y\n", "docs only", "2026-01-01T15:00:00+00:00")
    d = deviations(str(tmp_path / "studies/s.toml"), reg, "s")
    assert [r["primaries"] for r in d["earlier_registrations"]] == [["old_primary"]]
    assert d["earlier_registrations"][0]["result"]["primaries"] == [{"name": "old_primary", "verdict": "supported"}]
    assert [c["subject"] for c in d["analysis_commits"]] == ["analysis change"]
    md = "\n".join(deviations_md({"deviations": d, "study": {"traces_started_utc": "2026-01-01T13:00:00+00:00"}}))
    assert "Deviations from registration" in md and "| yes |" in md and "old_primary" in md
    assert deviations(None, None) == {}
