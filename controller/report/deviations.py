"""The report's deviations section: earlier registrations of the same study file with their
results, and every analysis-code commit after the registration, marked when it landed after the
traces started (``controller.study.deviations``)."""
from __future__ import annotations

from datetime import datetime
from typing import Mapping

from controller.report.fmt import table


def _after(when: str | None, start: str | None) -> str:
    try:
        return "yes" if datetime.fromisoformat(when) > datetime.fromisoformat(start) else "no"
    except (TypeError, ValueError):
        return "unknown"


def deviations_md(s: Mapping) -> list[str]:
    d = s.get("deviations")
    if not d:
        return []
    start = (s.get("study") or {}).get("traces_started_utc")
    out = ["## Deviations from registration", "",
           f"Generated from git: the study file `{d['study_file']}` was registered at `{d['registration_commit']}`; "
           f"the traces started {start}; this analysis ran at `{d['analysis_head']}`.", ""]
    regs = d.get("earlier_registrations") or []
    if regs:
        rows = []
        for r in regs:
            res = r.get("result") or {}
            verdicts = ", ".join(f"`{h['name']}` {h['verdict']}" for h in res.get("primaries", [])) or "no committed result"
            rows.append([f"`{r['commit']}`", r["committed_utc"], ", ".join(f"`{p}`" for p in r["primaries"]) or "-",
                         verdicts + (f" (`{res['commit']}`)" if res.get("commit") else "")])
        out += ["Earlier registrations of the same study file (other primaries; their results on earlier traces):", ""]
        out += table(["commit", "committed (UTC)", "primaries", "result then"], rows)
    else:
        out += ["No earlier registration of this study file.", ""]
    commits = d.get("analysis_commits") or []
    if commits:
        out += [f"Commits touching the analysis code (controller/study, controller/learn, controller/env) after the "
                f"registration, up to this analysis ({len(commits)}):", ""]
        out += table(["commit", "committed (UTC)", "after the traces started", "subject", "changes a registered verdict?"],
                     [[f"`{c['commit']}`", c["committed_utc"], _after(c["committed_utc"], start),
                       c["subject"][:90], c["verdict_effect"]] for c in commits])
    return out
