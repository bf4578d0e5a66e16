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


def test_committed_rerun_compared_verdict_by_verdict(tmp_path):
    """A re-analysis of the same traces at an older commit settles each analysis commit's effect."""
    import gzip

    from controller.study.deviations import settle_rerun

    _git(tmp_path, "init", "-q")
    reg = _commit(tmp_path, "studies/s.toml", '[[hypotheses]]\nname = "p"\nprimary = true\n', "registration",
                  "2026-01-01T10:00:00+00:00")
    _commit(tmp_path, "controller/study/a.py", "a = 1\n", "inside the re-run", "2026-01-01T11:00:00+00:00")
    rerun = _commit(tmp_path, "controller/learn/b.py", "b = 1\n", "the re-run's commit", "2026-01-01T12:00:00+00:00")
    _commit(tmp_path, "controller/env/c.py", "c = 1\n", "after the re-run", "2026-01-01T13:00:00+00:00")
    started = "2026-01-01T10:30:00+00:00"
    study = {"source": str(tmp_path / "studies/s.toml"), "traces_started_utc": started}
    then = {"versions": {"git_commit": rerun},
            "study": {"traces_started_utc": started, "study_file_git": {"commit": reg}},
            "hypotheses": [{"name": "p", "primary": True, "verdict": "supported (at 5 of 5)"},
                           {"name": "s", "primary": False, "verdict": "better"}]}
    (tmp_path / "results/s/at_registration").mkdir(parents=True)
    with gzip.open(tmp_path / "results/s/at_registration/final_summary.json.gz", "wt") as f:
        json.dump(then, f)
    summary = {"study": study, "deviations": deviations(study["source"], reg, "s"),
               "hypotheses": [{"name": "p", "primary": True, "verdict": "supported (at 4 of 5)"},
                              {"name": "s", "primary": False, "verdict": "within noise"},
                              {"name": "new", "primary": False, "verdict": "better"}]}
    settle_rerun(summary)
    r = summary["deviations"]["rerun"]
    assert r["path"] == "results/s/at_registration/final_summary.json.gz" and r["commit"] == rerun[:7]
    assert [(x["name"], x["same"]) for x in r["rows"]] == [("p", True), ("s", False), ("new", False)]
    assert (r["changed_primaries"], r["changed_secondaries"]) == (0, 2)
    effects = {c["subject"]: c["verdict_effect"] for c in summary["deviations"]["analysis_commits"]}
    assert effects["inside the re-run"].startswith("inside the re-run's code") and \
        effects["the re-run's commit"].startswith("inside")
    assert "no primary verdict changes, 2 secondary" in effects["after the re-run"]
    md = "\n".join(deviations_md(summary))
    assert f"at `{rerun[:7]}`" in md and "| `s` | no | better | within noise | **no** |" in md
    # other traces (a different start) are not this study's re-run: the commits stay untested
    other = {"study": {**study, "traces_started_utc": "2026-01-02T00:00:00+00:00"},
             "deviations": deviations(study["source"], reg, "s"), "hypotheses": []}
    settle_rerun(other)
    assert "rerun" not in other["deviations"] and "No re-analysis" in "\n".join(deviations_md(other))
