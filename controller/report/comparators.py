"""The report's comparators section: how the best fixed policy is chosen, whether another fixed
policy dominates it pooled at any split seed, and what each no-loss claim tolerates at its n,
with the case-level exact bound beside a family-level one, each named for what it assumes."""
from __future__ import annotations

from typing import Mapping

from controller.report.fmt import fixed, table


def comparators_md(s: Mapping) -> list[str]:
    c = s.get("comparators")
    if not c:
        return []
    out = ["## Comparators", ""]
    if c.get("best_fixed_rule"):
        out += [f"Best fixed policy: {c['best_fixed_rule']}.", ""]
    d = c.get("dominance") or {}
    if d.get("per_seed"):
        out += [f"Another fixed policy dominates the chosen best fixed policy pooled (as many cases right or more, "
                f"no more {d['cost_field'].replace('_', ' ')}, one strictly) at {d['dominated_seeds']} of "
                f"{d['n_seeds']} split seeds:", ""]
        out += table(["split seed", "best fixed right", "best fixed cost", "dominated by"],
                     [[r["split_seed"], r["best_fixed_exact"], fixed(r["best_fixed_cost"]),
                       ", ".join(f"`{p}` ({v['exact']}, {fixed(v['cost'])})" for p, v in r["dominators"].items())
                       or "none"] for r in d["per_seed"]])
    rows = []
    for h in s.get("hypotheses") or []:
        ni = h.get("noninferiority")
        if not ni:
            continue
        fam = ni.get("family_level") or {}
        tol = ni.get("max_losses_tolerated")
        rows.append([f"`{h['name']}`", ni["n"], f"-{fixed(ni['margin'])}",
                     "none (0 lost fails)" if tol is None else tol, f"{ni['wins']} / {ni['losses']}",
                     fixed(ni.get("lower_bound")), fixed(fam.get("lower_bound"))])
    if rows:
        out += ["Each no-loss claim, with the most lost cases (no win) it tolerates at its n. The case-level bound "
                "is exact (Clopper-Pearson) but assumes cases independent; the family-level bound (cluster-robust t, "
                "clustered by family, one-sided at alpha/2) assumes only families independent, so clustered losses "
                "widen it:", ""]
        out += table(["Hypothesis", "n", "margin", "max lost tolerated", "won / lost", "case-level bound (independent cases)",
                      "family-level bound (independent families)"], rows)
    return out
