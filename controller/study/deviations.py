"""Deviations from registration, read from git: what a reader must know beyond "pre-registered".

* ``earlier_registrations``: every earlier commit of the study file (the same case set's earlier
  registrations), with its primary hypotheses and, when git holds one, the verdicts of the
  committed result under it (the last ``results/<study>/final_summary.json`` committed before the
  next registration).
* ``analysis_commits``: every commit touching ``controller/study``, ``controller/learn`` or
  ``controller/env`` after the study file's commit, up to the analysed HEAD, with its time, so the
  report can mark those after the traces started. ``verdict_effect`` says what a re-analysis of
  the same traces with older code found about it, or that none was committed.
* ``rerun`` (``settle_rerun``, once the pipeline knows when the traces started): a re-analysis of
  these traces committed beside the study, ``results/*/at_registration/final_summary.json.gz``
  with the same registration commit and trace start, compared verdict by verdict with this
  analysis. The registration commit itself may be unable to analyse its study (a comparator it
  names may have landed just after it), so the re-run's commit is read from its summary.

Pure git and file reads (``git log`` / ``git show``); {} outside a repository.
"""
from __future__ import annotations

import gzip
import json
import tomllib
from pathlib import Path

from controller.study.provenance import git_output

ANALYSIS_PATHS = ("controller/study", "controller/learn", "controller/env")
NOT_RERUN = "not re-run at the registration commit (re-analysis of a committed study takes minutes per study)"
RERUN_GLOB = "results/*/at_registration/final_summary.json.gz"


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


def _top(study_path: str) -> Path | None:
    p = Path(study_path).resolve()
    top = (_git(p.parent, "rev-parse", "--show-toplevel") or "").strip()
    return Path(top) if top else None


def verdict_word(verdict: str | None) -> str:
    """A verdict's word without its reason: 'not supported (no significant saving)' -> 'not supported'."""
    return (verdict or "").split(" (", 1)[0].strip()


def find_rerun(top: Path, registration_commit: str, traces_started: str | None) -> tuple[str, dict] | None:
    """The committed re-analysis of these traces (same registration commit, same trace start), if any."""
    if not traces_started or not registration_commit:
        return None
    for path in sorted(top.glob(RERUN_GLOB)):
        try:
            with gzip.open(path, "rt") as f:
                s = json.load(f)
        except (OSError, ValueError):
            continue
        st = s.get("study") or {}
        commit = (st.get("study_file_git") or {}).get("commit") or ""
        if st.get("traces_started_utc") == traces_started and commit.startswith(registration_commit):
            return str(path.relative_to(top)), s
    return None


def settle_rerun(summary: dict) -> None:
    """Compare ``summary``'s verdicts with a committed re-analysis of the same traces, in place:
    ``deviations.rerun`` gets the table, each analysis commit's ``verdict_effect`` what it says."""
    d, st = summary.get("deviations"), summary.get("study") or {}
    top = _top(st["source"]) if d and st.get("source") else None
    found = find_rerun(top, d["registration_commit"], st.get("traces_started_utc")) if top else None
    if not found:
        return
    rel, then = found
    rerun_sha = ((then.get("versions") or {}).get("git_commit") or "")
    before = {h.get("name"): h for h in then.get("hypotheses", [])}
    rows = []
    for h in summary.get("hypotheses", []):
        old = before.get(h.get("name"))
        rows.append({"name": h.get("name"), "primary": bool(h.get("primary")),
                     "then": old.get("verdict") if old else None, "now": h.get("verdict"),
                     "same": old is not None and verdict_word(old.get("verdict")) == verdict_word(h.get("verdict"))})
    changed = [r for r in rows if not r["same"]]
    n_prim = sum(r["primary"] for r in changed)
    joint = (f"with every later commit together: {'no primary verdict changes' if not n_prim else f'{n_prim} primary verdict(s) change'}"
             f", {len(changed) - n_prim} secondary verdict(s) change (the re-run table)")
    d["rerun"] = {"path": rel, "commit": rerun_sha[:7], "rows": rows,
                  "changed_primaries": n_prim, "changed_secondaries": len(changed) - n_prim}
    for c in d.get("analysis_commits", []):
        inside = rerun_sha and _git(top, "merge-base", "--is-ancestor", c["commit"], rerun_sha) == ""
        c["verdict_effect"] = (f"inside the re-run's code (`{rerun_sha[:7]}`)" if inside else joint)


def deviations(study_path: str | None, study_commit: str | None, study_name: str | None = None) -> dict:
    """The ``deviations`` summary key for the study file at ``study_path`` registered at ``study_commit``."""
    if not study_path or not study_commit:
        return {}
    cwd = _top(study_path)
    if cwd is None:
        return {}
    p = Path(study_path).resolve()
    rel = str(p.relative_to(cwd))
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
