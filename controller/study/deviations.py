"""Deviations from registration, read from git: what a reader must know beyond "pre-registered".

* ``earlier_registrations``: every earlier commit of the study file (the same case set's earlier
  registrations), with its primary hypotheses and, when git holds one, the verdicts of the
  committed result under it (the last ``results/<study>/final_summary.json`` committed before the
  next registration).
* ``analysis_commits``: every commit touching ``controller/study``, ``controller/learn`` or
  ``controller/env`` after the study file's commit, up to the analysed HEAD, with its time, so the
  report can mark those after the traces started. ``verdict_effect`` says whether re-running the
  analysis at the registration commit was done (it is not done here: it says so).

Pure git reads (``git log`` / ``git show``); {} outside a repository.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

from controller.study.provenance import git_output

ANALYSIS_PATHS = ("controller/study", "controller/learn", "controller/env")
NOT_RERUN = "not re-run at the registration commit (re-analysis of a committed study takes minutes per study)"


def _git(cwd: Path, *args: str) -> str | None:
    return git_output(cwd, *args, strip=False)


def _log(cwd: Path, *args: str) -> list[tuple[str, str, str]]:
    out = _git(cwd, "log", "--format=%H%x09%cI%x09%s", *args) or ""
    return [tuple(line.split("\t", 2)) for line in out.splitlines() if line.count("\t") >= 2]


def _primaries(cwd: Path, sha: str, rel: str) -> list[str]:
    text = _git(cwd, "show", f"{sha}:{rel}")
    try:
        data = tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        return []
    return [h.get("name") for h in data.get("hypotheses", []) if h.get("primary")]


def _result_under(cwd: Path, before: str, study_name: str) -> dict | None:
    """Verdicts of the last committed results/<study>/final_summary.json before commit ``before``."""
    rel = f"results/{study_name}/final_summary.json"
    found = _log(cwd, "-1", f"{before}^", "--", rel)
    if not found:
        return None
    sha = found[0][0]
    try:
        summary = json.loads(_git(cwd, "show", f"{sha}:{rel}") or "")
    except json.JSONDecodeError:
        return None
    hyps = [{"name": h.get("name"), "verdict": h.get("verdict")} for h in summary.get("hypotheses", [])
            if h.get("primary")]
    return {"commit": sha[:7], "path": rel, "primaries": hyps}


def deviations(study_path: str | None, study_commit: str | None, study_name: str | None = None) -> dict:
    """The ``deviations`` summary key for the study file at ``study_path`` registered at ``study_commit``."""
    if not study_path or not study_commit:
        return {}
    p = Path(study_path).resolve()
    top = (_git(p.parent, "rev-parse", "--show-toplevel") or "").strip()
    if not top:
        return {}
    cwd, rel = Path(top), str(p.relative_to(top))
    regs = _log(cwd, "--follow", "--", rel)
    earlier = []
    later_sha = study_commit
    for sha, when, subject in regs:  # newest first: each earlier one is followed by ``later_sha``
        if sha == study_commit or not _git(cwd, "merge-base", "--is-ancestor", sha, study_commit) == "":
            if sha == study_commit:
                later_sha = sha
            continue
        earlier.append({"commit": sha[:7], "committed_utc": when, "subject": subject[:200],
                        "primaries": _primaries(cwd, sha, rel),
                        "result": _result_under(cwd, later_sha, study_name or p.stem)})
        later_sha = sha
    head = (_git(cwd, "rev-parse", "HEAD") or "").strip()
    commits = [{"commit": sha[:7], "committed_utc": when, "subject": subject[:200], "verdict_effect": NOT_RERUN}
               for sha, when, subject in _log(cwd, f"{study_commit}..{head}", "--", *ANALYSIS_PATHS)]
    return {"study_file": rel, "registration_commit": study_commit[:7], "analysis_head": head[:7],
            "earlier_registrations": earlier, "analysis_commits": commits[::-1]}
