"""Registration provenance of a study file: was it committed before the traces it is tested on?

A study file is a pre-registration only if it was fixed before the data existed. Two facts decide
that, and the summary's ``study`` section records both:

* the study file's git state (``study_file_git``): the last commit that touched it
  (``git log -1 --format=%H %cI -- FILE``) and whether the working copy equals it; an untracked or
  modified file is ``uncommitted`` (its content is not the committed one);
* when the traces were started (``traces_started_utc`` in ``run_config.json``, written by the
  pipeline when it starts a new trace file and kept on ``--resume``; older run_config files lack
  it: ``unknown``).

``registration`` turns them into ``pre_registered`` (true only when the file was committed, clean,
at or before the time the traces started) and ``registration`` (``pre-registered``, ``registered
after the traces existed``, or ``unknown``) with the reason in words. Reports may say
"pre-registered" only when ``pre_registered`` is true.
"""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

PRE = "pre-registered"
AFTER = "registered after the traces existed"
UNKNOWN = "unknown"


def git_output(cwd: Path, *args: str, strip: bool = True, timeout: float = 30) -> str | None:
    """What ``git ARGS`` prints in ``cwd`` (stripped unless ``strip`` is False), or None when git is
    missing, fails or takes longer than ``timeout`` seconds."""
    try:
        r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return r.stdout.strip() if strip else r.stdout


def _git(cwd: Path, *args: str) -> str | None:
    return git_output(cwd, *args)


def study_file_git(path: str) -> dict:
    """``{"path", "commit", "committed_utc", "state"}``: state ``committed`` (the working copy is
    the last commit's), ``uncommitted`` (untracked, modified or staged: ``commit`` is the last one
    that touched it, if any) or ``no git`` (not in a repository, or git missing)."""
    p = Path(path).resolve()
    out: dict = {"path": str(path), "commit": None, "committed_utc": None}
    top = _git(p.parent, "rev-parse", "--show-toplevel") if p.parent.is_dir() else None
    if not top:
        return {**out, "state": "no git"}
    log = _git(p.parent, "log", "-1", "--format=%H %cI", "--", p.name)
    if log:
        sha, when = log.split(" ", 1)
        out["commit"] = sha
        out["committed_utc"] = datetime.fromisoformat(when).astimezone(timezone.utc).isoformat(timespec="seconds")
    status = _git(p.parent, "status", "--porcelain", "--", p.name)
    clean = bool(log) and status == ""
    return {**out, "state": "committed" if clean else "uncommitted"}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _parse(ts: str) -> datetime | None:
    try:
        d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (TypeError, ValueError, AttributeError):
        return None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def registration(git: Mapping | None, traces_started_utc: str | None) -> dict:
    """``{"pre_registered", "registration", "registration_reason"}`` from the file's git state and
    the time the traces started (None or "unknown": not recorded)."""
    if git is None:
        return {"pre_registered": False, "registration": "not registered",
                "registration_reason": "no --study file: the built-in default study"}
    started = _parse(traces_started_utc) if traces_started_utc and traces_started_utc != UNKNOWN else None
    committed = _parse(git.get("committed_utc")) if git.get("committed_utc") else None
    if git.get("state") != "committed":
        why = ("the study file is not in a git repository" if git.get("state") == "no git"
               else "the study file is untracked or differs from its last commit")
        if started is not None and committed is not None and committed > started:
            return {"pre_registered": False, "registration": AFTER,
                    "registration_reason": f"{why}; its last commit ({git['committed_utc']}) is after the traces "
                                           f"started ({traces_started_utc})"}
        return {"pre_registered": False, "registration": UNKNOWN,
                "registration_reason": f"{why}: the registered content cannot be dated"}
    if started is None:
        return {"pre_registered": False, "registration": UNKNOWN,
                "registration_reason": f"committed {git['committed_utc']}, but when the traces started is not "
                                       "recorded (run_config.json has no traces_started_utc)"}
    if committed <= started:
        return {"pre_registered": True, "registration": PRE,
                "registration_reason": f"committed {git['committed_utc']} ({git['commit'][:12]}), before the "
                                       f"traces started ({traces_started_utc})"}
    return {"pre_registered": False, "registration": AFTER,
            "registration_reason": f"committed {git['committed_utc']}, after the traces started "
                                   f"({traces_started_utc})"}


def study_provenance(source: str | None, traces_started_utc: str | None = None) -> dict:
    """The summary's ``study`` provenance keys: ``study_file_git`` (None without a file),
    ``traces_started_utc`` ("unknown" when not recorded) and ``registration``'s keys."""
    git = study_file_git(source) if source else None
    return {"study_file_git": git, "traces_started_utc": traces_started_utc or UNKNOWN,
            **registration(git, traces_started_utc)}


def primaries_heading(study: Mapping) -> str:
    """The words over a report's list of primary hypotheses: "Registered" only over a study file
    that was registered before its traces (a default study or a later file says what it is)."""
    if study.get("pre_registered"):
        return "Registered primary hypotheses"
    reg = study.get("registration")
    if reg == AFTER:
        return f"Primary hypotheses (study file `{study.get('source')}`, {AFTER})"
    if reg == UNKNOWN:
        return f"Primary hypotheses (study file `{study.get('source')}`, registration unknown)"
    return "Primary hypotheses (the built-in default study, not registered)"


def registration_words(study: Mapping) -> str:
    """How a report names the study's status: "pre-registered in `FILE` (...)" only when it was."""
    src = study.get("source")
    reg = study.get("registration")
    reason = study.get("registration_reason", "")
    if study.get("pre_registered"):
        return f"pre-registered in `{src}` ({reason})"
    if reg == AFTER:
        return f"study file `{src}`, {AFTER} ({reason})"
    if reg == UNKNOWN:
        return f"study file `{src}`, registration unknown ({reason})"
    return "the built-in default study (no `--study` file: not registered for this run)"
