"""The report's ceiling section: how much of the gap a controller could learn from what it sees.

Reads the summary's ``ceiling`` key (``controller.study.ceiling``); placed right after the
headroom and before the answer, so a reader sees the bound before any learner's result.
"""
from __future__ import annotations

from typing import Mapping

from controller.report.fmt import cases_have, table


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def ceiling_md(s: Mapping) -> list[str]:
    c = s.get("ceiling")
    if not c or not c.get("points"):
        return []
    out = ["## What a controller could learn here (the ceiling)", ""]
    if c.get("sentence"):
        out += [f"**{c['sentence']}**", ""]
    out += [f"Over {c['n']} scored cases of {c['families']} families (pooled over train, dev and test), always-tool "
            f"spends {c['always_tool_generations']} program generations; stopping each case at its earliest safe point "
            f"(answer directly where that loses nothing against always-tool) spends {c['always_tool_generations'] - c['gap_generations']}: "
            f"a gap of {c['gap_generations']}. At the commit point, direct vs program changes accuracy only: "
            f"{cases_have(c['commit_direct_wins'])} the direct answer right and the committed program wrong"
            + (f"; with every one of the K = {c['k']} samples drawn (as the headroom counts), {c['sample_wins']} have "
               "another passing sample right while the commit is wrong" if c.get("k", 1) > 1 else "") + ".", ""]
    if c.get("nothing_to_learn"):  # every "learnable" share below would be a share of nothing
        return out
    aucs: dict = {}
    for r in c.get("separability", []):
        aucs.setdefault(r["point"], {})[r["model"]] = r["auc"]
    models = sorted({r["model"] for r in c.get("separability", [])})
    heads = ["Decision point", "cases", "safe to stop", "saved if every safe case stops here", "share of gap"] + \
        [f"AUC {m} (out of family)" for m in models]
    rows = [[p["name"], p["cases"], p["safe"], p["savings_if_all_safe_stop"], _pct(p.get("gap_share_if_all_safe_stop"))]
            + ["n/a" if aucs.get(p["point"], {}).get(m) is None else f"{aucs[p['point']][m]:.2f}" for m in models]
            for p in c["points"]]
    out += ["Per decision point (AUC of \"safe to stop\" with family-grouped "
            f"{c.get('folds', 0)}-fold cross-validation, every score out of fold):", ""] + table(heads, rows)
    out += ["In-sample, zero lost cases: CART trees fit per decision point, stopping only in leaves with no unsafe "
            "case (the most a bounded-capacity policy can fit on these very cases):", ""]
    out += table(["tree depth", "generations saved", "share of gap"],
                 [[r["depth"], r["saved_generations"], _pct(r["gap_share"])] for r in c.get("in_sample", [])])
    if c.get("out_of_sample"):
        out += ["Out of family: each model fit on the training families' decision points, stopping above the highest "
                "inner-fold score of an unsafe training case, applied to the held-out families:", ""]
        out += table(["model", "generations saved", "share of gap", "cases lost vs always-tool"],
                     [[r["model"], r["saved_generations"], _pct(r["gap_share"]), r["lost"]] for r in c["out_of_sample"]])
        out += [f"Out-of-sample ceiling (best share with no case lost): {_pct(c.get('ceiling_share'))}.", ""]
    if c.get("risk_controlled"):
        r0 = c["risk_controlled"][0]
        out += [f"Risk-controlled selection (the selection a no-loss claim calls for): Learn-Then-Test on the inner "
                f"folds, one threshold per outer fold, the loosest whose Clopper-Pearson upper bound (level "
                f"{r0['delta']:g}) on the share of cases lost stays within {r0['margin']:g}; held-out families:", ""]
        out += table(["model", "generations saved", "share of gap", "cases lost", "share lost"],
                     [[r["model"], r["saved_generations"], _pct(r["gap_share"]), r["lost"], f"{100 * r['lost_share']:.1f}%"]
                      for r in c["risk_controlled"]])
    return out
