"""``report.md`` from a ``final_summary.json``-shaped dict.

``render_report(summary)`` returns markdown; ``write_report(summary, path)`` writes it
atomically. Sections appear in a fixed order; an optional section whose data is missing from
the summary (learned rule, paired tests, DAgger, cross-validation, frontier, failures,
sandbox, timing) is left out, never an error. All numbers come from the summary, and the
limitation sentences are computed from it (split sizes, interval widths, the oracle ceiling)
so the text stays true when the data change.
"""
from __future__ import annotations

import json
import os
from typing import Mapping

from .failures import DIRECT_CATEGORIES, ROUND_CATEGORIES
from .figures import COST_UNITS, FIGURE_NAMES, ORACLE, ordered_policies
from .stats import min_discordant_for_significance

SPLIT_ORDER = ("train", "dev", "test")
# Policies a user can deploy: the oracle reads hidden answers, the shuffled run is a control.
NOT_DEPLOYABLE = (ORACLE, "lora_shuffled_seq")


# ----------------------------------------------------------------------------- formatting


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _ci(ci) -> str:
    return "n/a" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def _num(x, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}" if isinstance(x, float) or digits else f"{x:,}"


def _p(p) -> str:
    return "n/a" if p is None else (f"{p:.3f}" if p >= 0.001 else f"{p:.1e}")


def _table(headers: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _splits(mapping: Mapping) -> list[str]:
    return [s for s in SPLIT_ORDER if s in mapping] + sorted(s for s in mapping
                                                             if s not in SPLIT_ORDER)


def _results(summary: Mapping, split: str) -> list[tuple[str, Mapping]]:
    pr = summary.get("policy_results") or {}
    return [(p, pr[p][split]) for p in ordered_policies(pr) if split in (pr[p] or {})]


def _exact(r: Mapping) -> str:
    return f"{r.get('exact', 0)}/{r.get('n', 0)}"


def _policy_row(name: str, r: Mapping) -> list:
    return [f"`{name}`", _exact(r), f"{_pct(r.get('accuracy'))} {_ci(r.get('accuracy_ci95'))}",
            _num(r.get("program_generations")), _num(r.get("repair_actions")),
            _num(r.get("program_commits")), _num(r.get("direct_miss_recoveries")),
            _num(r.get("direct_correct_losses")), _pct(r.get("program_precision")),
            _num(r.get("generated_tokens")), _num(r.get("sandbox_ms"), 1)]


POLICY_HEADERS = ["Policy", "Exact", "Accuracy [95% CI]", "Program gens", "Repairs",
                  "Program commits", "Recoveries", "Losses", "Program precision", "Tokens",
                  "Sandbox ms"]


# ----------------------------------------------------------------------------- sections


def run_info(summary: Mapping) -> dict:
    """Backend, model, seeds and case folder from ``config``, flat or nested as the CLI writes it.

    The CLI stores ``config.backend`` as the backend config dict (``name``, ``model``, ``seed``)
    and the controller seed under ``config.experiment.seed``; a flat ``backend``/``model``/
    ``seed`` also works.
    """
    cfg = summary.get("config") or {}
    backend = cfg.get("backend")
    bdict = backend if isinstance(backend, Mapping) else {}
    exp = cfg.get("experiment") if isinstance(cfg.get("experiment"), Mapping) else {}
    return {"backend": bdict.get("name") if bdict else backend,
            "model": cfg.get("model") or bdict.get("model"),
            "seed": cfg.get("seed", exp.get("seed")),
            "split_seed": cfg.get("split_seed"),
            "cases": cfg.get("cases")}


def _summary(s: Mapping) -> list[str]:
    info = run_info(s)
    na = "n/a"
    out = ["## Summary", "",
           "Fresh tool-environment traces were generated and a controller that sees only "
           "visible tool state chooses among DIRECT, WRITE, FIX and PROGRAM; every policy is "
           "evaluated by simulating its actions on the same traces.", "",
           f"- backend: `{info['backend'] or na}`, model: `{info['model'] or na}`",
           f"- trace records: {s.get('n_records', na)}, controller seed: "
           f"{na if info['seed'] is None else info['seed']}"
           + ("" if info["split_seed"] is None else f", split seed: {info['split_seed']}")]
    if info["cases"]:
        out.append(f"- cases: `{info['cases']}`")
    versions = {k: v for k, v in (s.get("versions") or {}).items() if v is not None}
    if versions:
        out.append("- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    test = dict(_results(s, "test"))
    if test:
        out.append("")
        best = _best_deployable(test)
        parts = [f"`{p}` {_exact(test[p])}" for p in ("direct_only", "always_tool_visible")
                 if p in test]
        if best:
            parts.append(f"best deployable `{best}` {_exact(test[best])}")
        if ORACLE in test:
            parts.append(f"hindsight oracle `{ORACLE}` {_exact(test[ORACLE])}")
        out.append("Held-out test: " + "; ".join(parts) + ".")
    return out + [""]


def _best_deployable(results: Mapping) -> str | None:
    """Most accurate deployable policy; ties go to the one with fewer program generations."""
    cands = [(p, r) for p, r in results.items() if p not in NOT_DEPLOYABLE]
    if not cands:
        return None
    return min(cands, key=lambda pr: (-(pr[1].get("accuracy") or 0.0),
                                      pr[1].get("program_generations") or 0))[0]


def _split_section(s: Mapping) -> list[str]:
    splits = s.get("splits") or {}
    if not splits:
        return []
    rows = [[sp, v.get("n", 0), v.get("unscored", 0), v.get("direct_exact", "n/a"),
             v.get("program_exact", "n/a"), v.get("oracle_union", "n/a"),
             ", ".join(v.get("families", []))] for sp, v in
            ((sp, splits[sp]) for sp in _splits(splits))]
    return ["## Splits and trace counts", "",
            "Splits are family-disjoint. *Program exact*: cases where some program round is "
            "right on the new input; *oracle union*: direct or program right.", ""] + _table(
        ["Split", "Cases", "Unscored", "Direct exact", "Program exact", "Oracle union",
         "Families"], rows)


def _heldout(s: Mapping) -> list[str]:
    rows = _results(s, "test")
    if not rows:
        return []
    return ["## Held-out test result", "",
            "Recoveries: program committed and right where the direct answer was wrong; "
            "losses: program committed and wrong where the direct answer was right. "
            "Budgets include unscored cases.", ""] + _table(
        POLICY_HEADERS, [_policy_row(p, r) for p, r in rows])


def _dev_vs_test(s: Mapping) -> list[str]:
    dev, test = dict(_results(s, "dev")), dict(_results(s, "test"))
    policies = [p for p in ordered_policies(s.get("policy_results") or {})
                if p in dev and p in test]
    if not policies:
        return []
    rows = []
    for p in policies:
        d, t = dev[p].get("accuracy"), test[p].get("accuracy")
        gap = "n/a" if d is None or t is None else f"{100 * (t - d):+.1f} pp"
        rows.append([f"`{p}`", f"{_exact(dev[p])} ({_pct(d)})", f"{_exact(test[p])} ({_pct(t)})",
                     gap])
    return ["## Dev vs test", ""] + _table(["Policy", "Dev", "Test", "Test - dev"], rows)


def _paired(s: Mapping) -> list[str]:
    tests = s.get("paired_tests") or {}
    out = []
    for split in _splits(tests):
        rows = []
        for policy in ordered_policies(tests[split]):
            for base, t in (tests[split][policy] or {}).items():
                verdict = "within noise" if t.get("within_noise", True) else (
                    "better" if (t.get("diff") or 0) > 0 else "worse")
                diff = "n/a" if t.get("diff") is None else f"{100 * t['diff']:+.1f} pp"
                rows.append([f"`{policy}`", f"`{base}`", t.get("n", "n/a"),
                             f"{t.get('b10', 0)} / {t.get('b01', 0)}", _p(t.get("mcnemar_p")),
                             f"{diff} {_ci(t.get('diff_ci95'))}", verdict])
        if rows:
            out += [f"### {split}", ""] + _table(
                ["Policy", "Baseline", "Paired n", "Wins / losses", "McNemar p (exact)",
                 "Accuracy diff [95% bootstrap CI]", "Verdict"], rows)
    if not out:
        return []
    return ["## Paired tests", "",
            "Each policy against `always_tool_visible` and `direct_only` on the same cases. "
            "Wins: the policy is right and the baseline wrong. A difference whose paired "
            "bootstrap interval covers 0 is reported as within noise.", ""] + out


def _learned_rule(s: Mapping) -> list[str]:
    rule = s.get("learned_rule")
    if not rule:
        return []
    rule = dict(rule)
    out = ["## Learned rule", ""]
    chosen = rule.pop("chosen", None) or rule.pop("model", None) or rule.pop("name", None)
    if chosen:
        out += [f"Chosen on dev: `{chosen}`.", ""]
    cands = rule.pop("candidates", None)
    if isinstance(cands, Mapping) and cands:
        rows = []
        for k, v in cands.items():
            v = v if isinstance(v, Mapping) else {"dev_accuracy": v}
            acc = v.get("dev_accuracy", v.get("accuracy"))
            gens = v.get("dev_program_generations", v.get("program_generations"))
            rows.append([f"`{k}`", _pct(acc), _num(gens)])
        out += _table(["Candidate", "Dev accuracy", "Dev program gens"], rows)
    text = rule.pop("description", None) or rule.pop("text", None) or rule.pop("tree", None)
    if text:
        out += ["```", str(text).rstrip(), "```", ""]
    scalars = {k: v for k, v in rule.items() if not isinstance(v, (Mapping, list))}
    out += [f"- {k}: {v}" for k, v in scalars.items()] + ([""] if scalars else [])
    rest = {k: v for k, v in rule.items() if k not in scalars}
    if rest:  # anything else the trainer recorded, verbatim
        out += ["```json", json.dumps(rest, indent=2, sort_keys=True, default=str), "```", ""]
    return out


def _dagger(s: Mapping) -> list[str]:
    dagger = s.get("dagger") or {}
    out = []
    for learner, iters in dagger.items():
        rows = [[it.get("iter"), it.get("beta", "n/a"), it.get("states_visited", "n/a"),
                 it.get("new_states", "n/a"), it.get("added_states", "n/a"),
                 it.get("dataset_size", it.get("n_states", "n/a")),
                 _pct((it.get("dev") or {}).get("accuracy")),
                 _pct((it.get("test") or {}).get("accuracy")),
                 _num((it.get("test") or {}).get("program_generations")),
                 _num((it.get("test") or {}).get("repair_actions"))] for it in iters or []]
        if rows:
            out += [f"### `{learner}`", ""] + _table(
                ["Iter", "Beta", "Visited", "New vs BC", "Added", "Dataset", "Dev acc", "Test acc",
                 "Test gens", "Test repairs"], rows)
    if not out:
        return []
    return ["## DAgger iterations", "",
            "Visited: distinct states (case + revealed attempts) the iteration's rollouts reached; "
            "New vs BC: of those, not in the behaviour-cloning dataset (the recorded sample-0 "
            "chains); Added: not in the aggregated dataset before the iteration.", ""] + out


def _cross_check(s: Mapping) -> list[str]:
    """With --program-samples K > 1: does a cross-check raise the precision of committed programs,
    and at what cost (generations, resamples, search nodes)?"""
    res = s.get("policy_results") or {}
    names = [p for p in ("always_tool_visible", "cross_check", "resample_visible", "learned_rule",
                         "learned_rule_dagger", "oracle_seq") if p in res]
    if "cross_check" not in res:
        return []
    rows = []
    for split in ("dev", "test"):
        for p in names:
            r = (res[p] or {}).get(split) or {}
            if not r:
                continue
            rows.append([split, f"`{p}`", f"{r.get('exact')}/{r.get('n')}", _pct(r.get("accuracy")),
                         f"{r.get('program_correct')}/{r.get('program_commits')}", _pct(r.get("program_precision")),
                         _num(r.get("program_generations")), _num(r.get("resample_actions")),
                         _num(r.get("search_nodes"))])
    return ["## Cross-checks (RESAMPLE)", "",
            "`cross_check`: after the first passing program, draw one more independent program and "
            "commit only when their outputs on the new input agree (disagreement: the direct answer; "
            "a failing check: the first program). Precision = right committed programs / commits.", ""] + _table(
        ["Split", "Policy", "Exact", "Accuracy", "Programs right/committed", "Precision", "Gens",
         "Resamples", "Search nodes"], rows)


def _cv(s: Mapping) -> list[str]:
    cv = s.get("cv") or {}
    if not cv.get("pooled") and not cv.get("folds"):
        return []
    out = ["## Cross-validation", "",
           f"{cv.get('k', len(cv.get('folds') or []))} folds over families; each fold's "
           "test families are held out from training.", ""]
    pooled = cv.get("pooled") or {}
    if pooled:
        out += ["Pooled over folds:", ""] + _table(
            POLICY_HEADERS, [_policy_row(p, pooled[p]) for p in ordered_policies(pooled)])
    rows = []
    for i, fold in enumerate(cv.get("folds") or []):
        pr = fold.get("policy_results") or {}
        n = fold.get("n_test", max((r.get("n", 0) for r in pr.values()), default=0))
        accs = ", ".join(f"{p} {_exact(pr[p])}" for p in ordered_policies(pr))
        rows.append([fold.get("fold", i), n, ", ".join(fold.get("test_families", [])), accs])
    if rows:
        out += _table(["Fold", "Test n", "Test families", "Exact per policy"], rows)
    return out


def _frontier(s: Mapping) -> list[str]:
    out = []
    for learner, front in (s.get("frontier") or {}).items():
        points = front.get("points") or []
        splits = _splits({p.get("split", "test"): None for p in points})
        by_lam: dict = {}
        for p in points:
            by_lam.setdefault(p.get("lambda"), {})[p.get("split", "test")] = p
        rows = [[lam] + [c for sp in splits for c in
                         ((_num(cell[sp].get("cost"), 3), _pct(cell[sp].get("accuracy")))
                          if sp in cell else ("n/a", "n/a"))]
                for lam, cell in by_lam.items()]
        if rows:
            unit = COST_UNITS.get(front.get("cost", "generations"), front.get("cost"))
            out += [f"### `{learner}` (cost: {unit} per case)", ""] + _table(
                ["Lambda"] + [h for sp in splits for h in (f"{sp} cost", f"{sp} accuracy")],
                rows)
    if not out:
        return []
    return ["## Budget frontier", "",
            "Each lambda trades accuracy against tool cost in the controller's objective.",
            ""] + out


def _failures(s: Mapping) -> list[str]:
    f = s.get("failures") or {}
    if not f.get("total"):
        return []
    cols = _splits(f.get("splits") or {})
    data = [f["splits"][c] for c in cols] + [f["total"]]
    heads = ["Category"] + cols + ["total"]
    rule = f.get("close_miss_rule") or {}
    rows = [["scored cases"] + [d.get("n", 0) for d in data]]
    rows += [[f"direct: {c.replace('_', ' ')}"] + [d.get("direct", {}).get(c, 0) for d in data]
             for c in DIRECT_CATEGORIES]
    rows += [["program rounds"] + [d.get("n_rounds", 0) for d in data]]
    rows += [[f"round: {c}"] + [d.get("round_categories", {}).get(c, 0) for d in data]
             for c in ROUND_CATEGORIES]
    for key, label in (("overfit_rounds", "passed example, wrong on new input (rounds)"),
                       ("overfit_cases", "passed example, wrong on new input (cases)"),
                       ("hidden_only_rounds", "right on new input, failed example (rounds)"),
                       ("fix_rounds", "repair rounds"),
                       ("repeated_repairs", "repairs repeating earlier code"),
                       ("unsolvable_cases", "no visible path solves (cases)")):
        rows.append([label] + [d.get(key, 0) for d in data])
    out = ["## Failure analysis", "",
           f"Scored cases only. A close miss has the right shape and at most "
           f"{rule.get('max_cells', 2)} cells or {_pct(rule.get('max_fraction', 0.1))} of cells "
           "wrong. Round categories describe the visible run on the public example.", ""]
    out += _table(heads, rows)
    tot = f["total"]
    if tot.get("overfit_families"):
        out += ["Families where a program passed the public example but was wrong on the new "
                "input (ambiguous example): " + ", ".join(tot["overfit_families"]) + ".", ""]
    if tot.get("policies"):
        pol = tot["policies"]
        out += ["Wrong answers per policy (all splits):", ""] + _table(
            ["Policy", "Scored", "Wrong", "Wrong direct commit", "Wrong program commit",
             "Wrong but visibly solvable"],
            [[f"`{p}`", c["n"], c["wrong"], c["wrong_direct_commit"], c["wrong_program_commit"],
              c["wrong_but_solvable"]] for p, c in ((p, pol[p]) for p in ordered_policies(pol))])
    return out


def _run_details(s: Mapping) -> list[str]:
    out = []
    if s.get("sandbox"):
        out += ["Sandbox protections:", ""] + [f"- {k}: {v}" for k, v in s["sandbox"].items()]
        out.append("")
    timing = _flatten(s.get("timing") or {})
    if timing:
        out += _table(["Phase", "Value"], [[k, _num(v, 2) if isinstance(v, float) else v]
                                           for k, v in timing.items()])
    return ["## Sandbox and timing", ""] + out if out else []


def _flatten(d: Mapping, prefix: str = "") -> dict:
    # Nested timing entries (e.g. per-phase trace statistics) become "phase.key" rows.
    out = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _figures(_s: Mapping) -> list[str]:
    out = ["## Figures", ""]
    for name in FIGURE_NAMES:
        stem = name.removesuffix(".png")
        out += [f"![{stem.replace('_', ' ')}](figures/{name})", ""]
    return out


def _limitations(s: Mapping) -> list[str]:
    out = ["## Limitations", ""]
    if run_info(s)["backend"] == "synth":
        out.append("- The `synth` backend is a deterministic synthesizer plus a direct guesser, "
                   "not a language model: these numbers exercise the pipeline and the "
                   "controllers, not a model's skill.")
    test = dict(_results(s, "test"))
    n = max((r.get("n", 0) for r in test.values()), default=0)
    if n:
        m = min_discordant_for_significance()
        bound = (f"a paired difference smaller than {100 * m / n:.1f} pp cannot be told from noise"
                 if n >= m else "no paired difference on this split can reach significance")
        out.append(f"- The test split has n={n}. Even if every disagreeing case favoured one "
                   f"policy, an exact McNemar test needs {m} such cases for p < 0.05, so "
                   f"{bound}.")
        widths = [r["accuracy_ci95"][1] - r["accuracy_ci95"][0] for r in test.values()
                  if r.get("accuracy_ci95")]
        if widths:
            out.append(f"- 95% Wilson intervals on test accuracy are {_pct(min(widths))} to "
                       f"{_pct(max(widths))} wide.")
        best = _best_deployable(test)
        if best and ORACLE in test:
            gap = (test[ORACLE].get("accuracy") or 0) - (test[best].get("accuracy") or 0)
            out.append(f"- The hindsight oracle reaches {_exact(test[ORACLE])} on test, "
                       f"{100 * gap:.1f} pp above the best deployable policy (`{best}`); a "
                       "small gap means the ceiling is the tool's skill, not the choice.")
    unsolv = ((s.get("failures") or {}).get("splits") or {}).get("test", {})
    if unsolv.get("n"):
        out.append(f"- {unsolv.get('unsolvable_cases', 0)} of {unsolv['n']} test cases have no "
                   "visible path to a right answer; no controller can recover them.")
    out += ["- Policies are simulated on precomputed traces: WRITE and FIX reveal the rounds "
            "recorded for that case, so a policy cannot draw a different program.",
            "- Hidden answers are used only for oracle labels and evaluation, never in a "
            "policy's state.", ""]
    return out


SECTIONS = (_summary, _split_section, _heldout, _dev_vs_test, _paired, _learned_rule, _dagger, _cross_check,
            _cv, _frontier, _failures, _run_details, _figures, _limitations)


# ----------------------------------------------------------------------------- entry points


def render_report(summary: Mapping) -> str:
    """Markdown report; sections whose data are missing are skipped."""
    lines = ["# Live tool DAgger report", ""]
    for section in SECTIONS:
        lines += section(summary)
    return "\n".join(lines).rstrip() + "\n"


def write_report(summary: Mapping, path: str | os.PathLike) -> str:
    """Render and write atomically (temp file in the same folder, then ``os.replace``)."""
    from .outputs import atomic_write_text

    atomic_write_text(path, render_report(summary))
    return str(path)
