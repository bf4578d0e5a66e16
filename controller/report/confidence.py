"""The report's confidence section: how well each recorded log-probability feature separates right
from wrong per decision point (the numbers: ``controller.study.confidence``)."""
from __future__ import annotations

from typing import Mapping

from controller.report.fmt import p_value, table


def adds_md(s: Mapping) -> list[str]:
    """What confidence adds to the learned rule (``controller.study.confidence_adds``): nothing when
    the rule was not refit without it."""
    a = s.get("confidence_adds")
    if not a:
        return []
    where = a["split"].replace("_", " ")

    def test(t, unit):
        lo, hi = t.get("ci95_family") or (None, None)
        ci = "" if lo is None else f" [{lo:+.3f}, {hi:+.3f}]"
        diff = "n/a" if t.get("diff") is None else f"{t['diff']:+.3f}"
        return f"{diff} {unit} per case{ci}, p (family) {p_value(t.get('p_family'))}"

    rows = [[r["point"], r["cases"], r["wins"], r["losses"], f"{r['generations_saved']:+d}"] for r in a["points"]]
    return ["## What confidence adds to the learned rule", "",
            f"`learned_rule` reads the confidence features; `learned_rule_no_confidence` is the same rule (same "
            f"candidates, price chosen on the same dev) fit without them, in the same folds ({where}, {a['n']} cases of "
            f"{a['n_families']} families). With confidence {a['with']['exact']}/{a['n']} right at "
            f"{a['with']['program_generations']} program generations, without {a['without']['exact']}/{a['n']} at "
            f"{a['without']['program_generations']}: {a['wins']} cases won, {a['losses']} lost; accuracy "
            f"{test(a['accuracy'], 'share')}; generations {test(a['generations'], 'generations')} (family sign-flip "
            "test, family-bootstrap interval). Per decision point, where the two first act differently (the state "
            "before the first differing action, named by its valid actions; `same`: identical actions):", ""] + table(
        ["decision point", "cases", "won with confidence", "lost with confidence", "generations saved"], rows) + [""]


def confidence_md(s: Mapping) -> list[str]:
    """The report's section (after the ceiling); nothing when no trace recorded log-probabilities."""
    c = s.get("confidence")
    if not c or not c.get("rows"):
        return adds_md(s)
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
            "fit, so no cross-validation is needed (controller/study/confidence.py).", ""] + table(heads, rows) + [""] \
        + adds_md(s)
