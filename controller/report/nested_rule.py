"""The report section of ``nested_rule`` (``controller.learn.nested_rule``): its choice on the
run's split and in every CV fold beside the learned rule's, the inner-fold table, and how it did
beside ``learned_rule``. Pure formatting of a ``final_summary.json``-shaped dict; empty when the
run did not fit it (``--nested-rule`` off)."""
from __future__ import annotations

from typing import Mapping

from controller.report.fmt import exact, num, pct, table


def _choice(model, lam) -> str:
    return "n/a" if model is None else f"`{model}` at {lam:g}"


def _cells(r: Mapping | None) -> list[str]:
    r = r or {}
    return [exact(r) if r else "n/a", num(r.get("program_generations"))]


def nested_rule_md(s: Mapping) -> list[str]:
    info = s.get("nested_rule")
    folds = [f for f in (s.get("cv") or {}).get("folds") or [] if f.get("nested_rule")]
    if not info and not folds:
        return []
    info = info or {}
    out = ["## Nested rule (exploratory)", "",
           "Exploratory, not a registered hypothesis: no study file names it, and it enters no registered "
           "verdict. `nested_rule` is the learned rule (the same candidates and prices of tools) with its model "
           "and price chosen by nested family cross-validation on the train + dev families together, never on "
           "the dev families alone: every candidate is fitted on all inner folds but one and run on the held-out "
           "one, its right answers and cost pooled over the inner folds; among the candidates within the margin "
           "of always-tool's pooled inner accuracy, the cheapest (none: the most accurate), then refitted on all "
           f"of train + dev. Ties: {info.get('tie_order', 'cheaper, more right, smaller price, simpler model')}.",
           ""]
    if info.get("skipped"):
        out += [f"Not fitted on the run's split: {info['skipped']}.", ""]
    elif info:
        out += [f"On the run's split: {_choice(info.get('model'), info.get('lambda'))}, chosen over "
                f"{info.get('n_inner_folds')} inner folds ({info.get('n_families')} families, "
                f"{info.get('n_cases')} cases; inner seed {info.get('inner_seed')}): pooled inner accuracy "
                f"{pct(info.get('inner_accuracy'))} at {num(info.get('inner_cost'), 3)} {info.get('unit')} per case, "
                f"always-tool {pct(info.get('guard_inner_accuracy'))}, margin {info.get('margin')} "
                f"({'met' if info.get('guard_met') else 'not met: the most accurate kept'}; "
                f"{info.get('n_eligible')} of {info.get('n_candidates')} candidates within it).", ""]
        rows, lams = {}, []
        for r in info.get("candidates") or []:
            lams += [r["lambda"]] if r["lambda"] not in lams else []
            ok = r["accuracy"] >= (info.get("guard_inner_accuracy") or 0) - (info.get("margin") or 0) - 1e-12
            mark = "**" if (r["model"], r["lambda"]) == (info.get("model"), info.get("lambda")) else ""
            rows.setdefault(r["model"], {})[r["lambda"]] = (f"{mark}{pct(r['accuracy'])} / {num(r['cost'], 2)}"
                                                            f"{'' if ok else ' (out)'}{mark}")
        if rows:
            out += [f"Pooled inner out-of-fold accuracy / {info.get('unit')} per case (bold: chosen; out: beyond "
                    "the margin):", ""]
            out += table(["Model", *[f"price {x:g}" for x in lams]],
                         [[f"`{m}`", *[cells.get(x, "n/a") for x in lams]] for m, cells in rows.items()])
    if folds:
        rows = [[f.get("fold", i), _choice(f.get("rule_model"), f.get("rule_lambda")),
                 _choice(f["nested_rule"].get("model"), f["nested_rule"].get("lambda")),
                 pct(f["nested_rule"].get("inner_accuracy")), pct(f["nested_rule"].get("guard_inner_accuracy")),
                 f["nested_rule"].get("n_inner_folds", "n/a")] for i, f in enumerate(folds)]
        out += [f"Choice per CV fold (split seed {(s.get('cv') or {}).get('split_seed', 'n/a')}):", ""]
        out += table(["Fold", "learned_rule (fold's dev)", "nested_rule (inner CV on train + dev)",
                      "Inner accuracy", "Always-tool inner", "Inner folds"], rows)
    pr, pooled = s.get("policy_results") or {}, ((s.get("cv") or {}).get("pooled") or {})
    both = [p for p in ("learned_rule", "nested_rule") if p in pr or p in pooled]
    if "nested_rule" in both:
        out += ["Beside the learned rule (exact, program generations):", ""]
        out += table(["Policy", "Test exact", "Test gens", "CV pooled exact", "CV pooled gens"],
                     [[f"`{p}`", *_cells((pr.get(p) or {}).get("test")), *_cells(pooled.get(p))] for p in both])
    return out
