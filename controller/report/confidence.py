"""The report's confidence section: how well each recorded log-probability feature separates right
from wrong per decision point (the numbers: ``controller.study.confidence``)."""
from __future__ import annotations

from typing import Mapping

from controller.report.fmt import table


def confidence_md(s: Mapping) -> list[str]:
    """The report's section (after the ceiling); nothing when no trace recorded log-probabilities."""
    c = s.get("confidence")
    if not c or not c.get("rows"):
        return []
    def ci(r):
        lo, hi = r["auc_ci95"]
        return "n/a" if lo is None else f"{lo:.2f}-{hi:.2f}"

    heads = ["Decision point", "feature", "label", "n", "right / safe", "missing", "families", "AUC", "95% (families)"]
    rows = [[r["name"], r["feature"], r["label"], r["n"], r["positives"], r["missing"], r["families"],
             "n/a" if r["auc"] is None else f"{r['auc']:.2f}", ci(r)] for r in c["rows"]]
    return ["## The model's confidence: does it separate right from wrong?", "",
            f"Token log-probabilities were recorded for {c['recorded']} of {c['n']} scored cases. Per decision point of "
            "the always-tool chain, each confidence feature's raw value scores two labels: the direct answer is right "
            "(`direct_right`) and stopping here loses nothing against always-tool (`safe`). AUC 0.5 is chance, below "
            f"it the confidence points the wrong way; the interval resamples families ({c['boot']} draws). Nothing is "
            "fit, so no cross-validation is needed (controller/study/confidence.py).", ""] + table(heads, rows) + [""]
