"""The report's deviations section: earlier registrations of the same study file with their
results, every analysis-code commit after the registration, marked when it landed after the
traces started, and the committed re-analysis of the same traces with older code, verdict by verdict
(``controller.study.deviations``)."""
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
            where = f" (`{res['path']}` at `{res['commit']}`)" if res.get("commit") else ""
            rows.append([f"`{r['commit']}`", r["committed_utc"], ", ".join(f"`{p}`" for p in r["primaries"]) or "-",
                         verdicts + where])
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
    return out + _rerun_md(d.get("rerun")) + _coder_md(d.get("coder"))


def _coder_md(c: Mapping | None) -> list[str]:
    """The traced model against its recipe (``controller.study.coder``)."""
    if not c or not c.get("rows"):
        return []
    where = f" (its card: `{c['card']}`)" if c.get("card") else ""
    return ([f"The coder, `{c['model']}`{where}, against its recipe:", ""]
            + table(["what", "the recipe", "what ran"], [[r["what"], r["recipe"], r["ran"]] for r in c["rows"]]))


def _rerun_md(r: Mapping | None) -> list[str]:
    if not r:
        return ["No re-analysis of these traces with older code is committed: the commits above are not "
                "tested one by one for their effect on the verdicts.", ""]
    out = [f"The same traces re-analysed with the code at `{r['commit']}` (`{r['path']}`), verdict by verdict "
           f"against this analysis: {r['changed_primaries']} primary and {r['changed_secondaries']} secondary "
           "verdict(s) differ in their word (the reasons in brackets may differ without that).", ""]
    out += table(["hypothesis", "primary", f"at `{r['commit']}`", "now", "same verdict"],
                 [[f"`{x['name']}`", "yes" if x["primary"] else "no", x["then"] or "(not in the re-run)",
                   x["now"], "yes" if x["same"] else "**no**"] for x in r["rows"]])
    return out
