"""``report.md`` from a ``final_summary.json``-shaped dict.

``render_report(summary)`` returns markdown; ``write_report(summary, path)`` writes it
atomically. Sections appear in a fixed order; an optional section whose data is missing from
the summary (learned rule, paired tests, DAgger, cross-validation, frontier, failures,
sandbox, timing) is left out, never an error. All numbers come from the summary, and the
limitation sentences are computed from it (split sizes, interval widths, the oracle ceiling)
so the text stays true when the data change.
"""
from __future__ import annotations

import os
from typing import Mapping

from controller.study.failures import DIRECT_CATEGORIES, ROUND_CATEGORIES
from controller.report.nulls import commit_any_section
from controller.env.registry import BEST_FIXED, ORACLE, deployable, ordered as ordered_policies, role
from controller.report.fmt import which_test_decides, policy_row, ci_pct, exact, num, p_value, pct, policy_headers, pp, results, splits, table
from controller.report.learners import cross_check_md, cv_md, frontier_md, learner_sections, seed_claims, seeds_md
from controller.report.answer import answer_md, repair_rounds_md, savings_md
from controller.report.figures import FIGURE_NAMES
from controller.study.stats import min_attainable_p, min_discordant_for_significance, sign_flip_method
from controller.report.ceiling import ceiling_md
from controller.report.confidence import confidence_md
from controller.report.within_family import within_family_md
from controller.report.comparators import comparators_md
from controller.report.deviations import deviations_md
from controller.report.study import STUDY_SECTIONS  # headroom, hypotheses, power, routing: the report opens with them



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
    traces = summary.get("traces") if isinstance(summary.get("traces"), Mapping) else {}  # what made the records
    return {"backend": traces.get("backend") or (bdict.get("name") if bdict else backend),
            "model": traces.get("model") or cfg.get("model") or bdict.get("model"),
            "seed": cfg.get("seed", exp.get("seed")),
            "split_seed": cfg.get("split_seed"),
            "cases": cfg.get("cases")}


def logprobs_line(missing: Mapping) -> str:
    """The one line that says a run's generations have no log-probabilities (the report, the console)."""
    return (f"log-probabilities unavailable in {missing['generations']} of {missing['of']} generations "
            f"({'; '.join(missing['reasons'])}): no controller reads a confidence")


def _summary(s: Mapping) -> list[str]:
    info = run_info(s)
    na = "n/a"
    made = ("Model outputs recorded elsewhere were imported (`live-tool-dagger import`: each run again in the "
            "sandbox and graded)" if info["backend"] == "imported" else "Fresh tool-environment traces were generated")
    out = ["## Summary", "",
           f"{made} and a controller that sees only "
           "visible tool state chooses among DIRECT, WRITE, FIX and PROGRAM; every policy is "
           "evaluated by simulating its actions on the same traces.", "",
           f"- backend: `{info['backend'] or na}`, model: `{info['model'] or na}`",
           f"- trace records: {s.get('n_records', na)}, controller seed: "
           f"{na if info['seed'] is None else info['seed']}"
           + ("" if info["split_seed"] is None else f", split seed: {info['split_seed']}")]
    if info["cases"]:
        out.append(f"- cases: `{info['cases']}`")
    tasks = s.get("tasks")
    if tasks:  # any task that is not one example of tables, or declined attempts
        kinds = ", ".join(f"{n} {t}" for t, n in tasks["value_types"].items())
        ex = ", ".join(f"{n} with {k}" for k, n in tasks["examples"].items())
        d = tasks["declined"]
        out.append(f"- tasks: {kinds} (public examples: {ex}); declined by the backend: {d['direct']} of "
                   f"{d['of_direct']} direct answers, {d['rounds']} of {d['of_rounds']} program rounds")
    if s.get("logprobs_unavailable"):
        out.append(f"- {logprobs_line(s['logprobs_unavailable'])}")
    versions = {k: v for k, v in (s.get("versions") or {}).items() if v is not None}
    if versions:
        out.append("- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    test = dict(results(s, "test"))
    if test:
        out.append("")
        parts = [f"`{p}` {exact(test[p])}" for p in ("direct_only", "always_tool_visible")
                 if p in test]
        if ORACLE in test:
            parts.append(f"hindsight oracle `{ORACLE}` {exact(test[ORACLE])}")
        out.append("Held-out test: " + "; ".join(parts) + ".")
        if _untied_best_deployable(s):  # a tie broken on dev is no finding: no line for it
            out += ["", best_deployable_sentence(s)]
    return out + [""]


def _untied_best_deployable(summary: Mapping) -> bool:
    """One best deployable policy on dev, no other deployable policy at its dev accuracy."""
    best = best_deployable(summary)
    if len(best) != 1:
        return False
    dev = dict(results(summary, "dev"))
    acc = dev[best[0]].get("accuracy")
    return sum(1 for p, r in _candidates(summary).items() if r.get("accuracy") == acc) == 1


def _candidates(summary: Mapping) -> dict:
    """The deployable policies with dev results a dev pick chooses among; ``best_fixed`` stands for
    every fixed policy when the run chose one."""
    dev = dict(results(summary, "dev"))
    one_fixed = BEST_FIXED in dev
    return {p: r for p, r in dev.items() if deployable(p) and r.get("n") and not (one_fixed and role(p) == "fixed")}


def best_deployable(summary: Mapping) -> list[str]:
    """Deployable policies with the best dev result (accuracy, then fewer program generations).

    Picked on dev, never on test; more than one name means dev could not tell them apart. When
    the run chose a best fixed policy (``best_fixed``, on train + dev), it stands for every fixed
    policy here, so a report names one picked fixed policy, not two.
    """
    cands = _candidates(summary)
    if not cands:
        return []
    key = {p: (-(r.get("accuracy") or 0.0), r.get("program_generations") or 0) for p, r in cands.items()}
    top = min(key.values())
    return [p for p in ordered_policies(cands) if key[p] == top]


def best_deployable_sentence(summary: Mapping) -> str:
    best, test = best_deployable(summary), dict(results(summary, "test"))
    if not best:
        return "No dev split: no deployable policy can be picked."
    dev = dict(results(summary, "dev"))
    d = dev[best[0]]
    on_test = ", ".join(f"`{p}` {exact(test[p])}" for p in best if p in test)
    if len(best) == 1:
        same_acc = [p for p, r in _candidates(summary).items() if r.get("accuracy") == d.get("accuracy")]
        note = ("" if len(same_acc) < 2 else
                f" Dev cannot separate {len(same_acc)} deployable policies on accuracy (all {exact(d)}); "
                "among them the pick is by program generations alone.")
        return (f"Best deployable policy, picked on dev (accuracy, then fewer program generations): "
                f"`{best[0]}` (dev {exact(d)}, {num(d.get('program_generations'))} program generations); "
                f"on test {on_test}.{note}")
    return (f"Dev cannot pick a best deployable policy: {len(best)} policies tie on dev at {exact(d)} with "
            f"{num(d.get('program_generations'))} program generations ({', '.join(f'`{p}`' for p in best)}); "
            f"on test: {on_test}.")


def _split_section(s: Mapping) -> list[str]:
    counts = s.get("splits") or {}
    if not counts:
        return []
    rows = [[sp, v.get("n", 0), v.get("unscored", 0), v.get("direct_exact", "n/a"),
             v.get("program_exact", "n/a"), v.get("oracle_union", "n/a"),
             ", ".join(v.get("families", []))] for sp, v in
            ((sp, counts[sp]) for sp in splits(counts))]
    return ["## Splits and trace counts", "",
            "Splits are family-disjoint. *Program exact*: cases where some program round is "
            "right on the new input; *oracle union*: direct or program right.", ""] + table(
        ["Split", "Cases", "Unscored", "Direct exact", "Program exact", "Oracle union",
         "Families"], rows)


def _heldout(s: Mapping) -> list[str]:
    rows = results(s, "test")
    if not rows:
        return []
    return ["## Held-out test result", "",
            "Recoveries: program committed and right where the direct answer was wrong; "
            "losses: program committed and wrong where the direct answer was right. "
            "Budgets include unscored cases. Two intervals: Wilson treats cases as independent; "
            "the family bootstrap resamples whole families (the unit the split is drawn in) "
            "and is the honest one.", ""] + table(
        policy_headers(s), [policy_row(p, r) for p, r in rows])


def _dev_vs_test(s: Mapping) -> list[str]:
    dev, test = dict(results(s, "dev")), dict(results(s, "test"))
    policies = [p for p in ordered_policies(s.get("policy_results") or {})
                if p in dev and p in test]
    if not policies:
        return []
    rows = []
    for p in policies:
        d, t = dev[p].get("accuracy"), test[p].get("accuracy")
        gap = "n/a" if d is None or t is None else f"{100 * (t - d):+.1f} pp"
        rows.append([f"`{p}`", f"{exact(dev[p])} ({pct(d)})", f"{exact(test[p])} ({pct(t)})",
                     gap])
    return ["## Dev vs test", ""] + table(["Policy", "Dev", "Test", "Test - dev"], rows)


def _paired(s: Mapping) -> list[str]:
    tests = s.get("paired_tests") or {}
    out = []
    for split in splits(tests):
        rows = []
        for policy in ordered_policies(tests[split]):
            for base, t in (tests[split][policy] or {}).items():
                diff = pp(t.get("diff"))
                rows.append([f"`{policy}`", f"`{base}`", t.get("n", "n/a"), t.get("n_families", "n/a"),
                             f"{t.get('b10', 0)} / {t.get('b01', 0)}", p_value(t.get("mcnemar_p")),
                             f"{diff} {ci_pct(t.get('diff_ci95_family'))}", p_value(t.get("p_family")),
                             p_value(t.get("p_holm")), t.get("verdict", "n/a")])
        if rows:
            out += [f"### {split}", ""] + table(
                ["Policy", "Baseline", "Paired cases", "Families", "Wins / losses", "McNemar p (cases)",
                 "Accuracy diff [95% CI, family bootstrap]", "p (family)", "p (Holm)", "Verdict"], rows)
    if not out:
        return []
    from controller.study.stats import FAMILY_TEST

    return ["## Paired tests", "",
            "Each policy against `always_tool_visible` and `direct_only` on the same cases. "
            "Wins: the policy is right and the baseline wrong. The verdict is decided at the "
            f"family level: {FAMILY_TEST}, Holm-adjusted over the distinct comparisons of the split "
            "(identical per-family difference vectors count once; the oracle and ties are left out); "
            "`better`/`worse` when the adjusted p < 0.05, else `within noise`. The case-level "
            "exact McNemar p is shown beside it but treats the cases of a family as independent, "
            "which they are not.", ""] + out


def _failures(s: Mapping) -> list[str]:
    f = s.get("failures") or {}
    if not f.get("total"):
        return []
    cols = splits(f.get("splits") or {})
    data = [f["splits"][c] for c in cols] + [f["total"]]
    heads = ["Category"] + cols + ["total"]
    rule = f.get("close_miss_rule") or {}
    rows = [["scored cases"] + [d.get("n", 0) for d in data]]
    # categories beyond the fixed ones (declined attempts) only where a run has any
    extra = lambda key, fixed: [c for d in data for c in d.get(key, {}) if c not in fixed]  # noqa: E731
    rows += [[f"direct: {c.replace('_', ' ')}"] + [d.get("direct", {}).get(c, 0) for d in data]
             for c in dict.fromkeys([*DIRECT_CATEGORIES, *extra("direct", DIRECT_CATEGORIES)])]
    rows += [["program rounds"] + [d.get("n_rounds", 0) for d in data]]
    rows += [[f"round: {c}"] + [d.get("round_categories", {}).get(c, 0) for d in data]
             for c in dict.fromkeys([*ROUND_CATEGORIES, *extra("round_categories", ROUND_CATEGORIES)])]
    for key, label in (("overfit_rounds", "passed example, wrong on new input (rounds)"),
                       ("overfit_cases", "passed example, wrong on new input (cases)"),
                       ("hidden_only_rounds", "right on new input, failed example (rounds)"),
                       ("fix_rounds", "repair rounds"),
                       ("repeated_repairs", "repairs repeating earlier code"),
                       ("unsolvable_cases", "no visible path solves (cases)")):
        rows.append([label] + [d.get(key, 0) for d in data])
    out = ["## Failure analysis", "",
           f"Scored cases only. A close miss has the right shape and at most "
           f"{rule.get('max_cells', 2)} cells or {pct(rule.get('max_fraction', 0.1))} of cells "
           "wrong. Round categories describe the visible run on the public example.", ""]
    out += table(heads, rows)
    tot = f["total"]
    if tot.get("overfit_families"):
        out += ["Families where a program passed the public example but was wrong on the new "
                "input (ambiguous example): " + ", ".join(tot["overfit_families"]) + ".", ""]
    if tot.get("policies"):
        pol = tot["policies"]
        out += ["Wrong answers per policy (all splits):", ""] + table(
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
        out += table(["Phase", "Value"], [[k, num(v, 2) if isinstance(v, float) else v]
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


def pilot_answer(s: Mapping) -> list[str]:
    """Accuracy and cost of the policy picked on dev against always-tool, on test, in words."""
    best, test = best_deployable(s), dict(results(s, "test"))
    base = test.get("always_tool_visible")
    tests = (s.get("paired_tests") or {}).get("test") or {}
    work = (s.get("cost_units") or {}).get("work", "work units")
    out = []
    for p in best:
        if p == "always_tool_visible" or p not in test or base is None:
            continue
        t = (tests.get(p) or {}).get("always_tool_visible") or {}
        r = test[p]
        out.append(f"- `{p}` (picked on dev) against `always_tool_visible` on test: accuracy "
                   f"{exact(r)} vs {exact(base)}, {pp(t.get('diff'))} "
                   f"{ci_pct(t.get('diff_ci95_family'))} (family bootstrap), verdict *{t.get('verdict', 'n/a')}*"
                   f"{which_test_decides(t.get('diff_ci95_family'), t.get('verdict'), t.get('p_family'), t.get('p_holm'), t.get('n_families'))}; "
                   f"cost {num(r.get('program_generations'))} vs {num(base.get('program_generations'))} "
                   f"program generations, {num(r.get('work'))} vs {num(base.get('work'))} {work}.")
    if best == ["always_tool_visible"]:
        out.append("- Dev picks `always_tool_visible` itself: on this run no controller improved on "
                   "always using the tool on dev.")
    return out


def _limitations(s: Mapping) -> list[str]:
    out = ["## What the numbers show and do not show", ""]
    shows = pilot_answer(s) + seed_claims(s)
    if shows:
        out += ["Shown (test split; claims about learned controllers hold only if they hold at every seed):",
                ""] + shows + ["", "Not shown, and why:", ""]
    if run_info(s)["backend"] == "synth":
        out.append("- The `synth` backend is a deterministic synthesizer plus a direct guesser, "
                   "not a language model: these numbers exercise the pipeline and the "
                   "controllers, not a model's skill.")
    method = (s.get("split_method") or {}).get("method")
    if method:
        probes = len((s.get("split_method") or {}).get("probe_case_ids") or [])
        out.append(f"- Split method `{method}`" + (
            f": headroom was read from {probes} probe cases, which no score counts."
            if probes else ": families were placed by the seed and their names only."))
    test = dict(results(s, "test"))
    n = max((r.get("n", 0) for r in test.values()), default=0)
    fams = max((r.get("n_families", 0) or 0 for r in test.values()), default=0)
    if n:
        m = min_discordant_for_significance()
        bound = (f"even at the case level a paired difference smaller than {100 * m / n:.1f} pp cannot reach "
                 "significance" if n >= m else "no paired difference on this split can reach significance")
        out.append(f"- The test split has n={n} cases. Even if every disagreeing case favoured one "
                   f"policy, an exact (case-level) McNemar test needs {m} such cases for p < 0.05, so "
                   f"{bound}; verdicts are decided at the family level, which needs more.")
    if fams:
        p_min = min_attainable_p(fams)
        out.append(f"- Cases of one family share near-identical states, so the unit of evidence is the "
                   f"family: the test split has {fams}. Only families where the two policies differ count; "
                   f"with all {fams} differing the family-level sign-flip test ({sign_flip_method(fams)}) "
                   f"cannot go below p = {p_min:.2g}, even if every family moved the same way.")
        widths = [r["accuracy_ci95_family"][1] - r["accuracy_ci95_family"][0] for r in test.values()
                  if r.get("accuracy_ci95_family")]
        if widths:
            out.append(f"- 95% family-bootstrap intervals on test accuracy are {pct(min(widths))} to "
                       f"{pct(max(widths))} wide.")
    best = best_deployable(s)
    if best and ORACLE in test and best[0] in test:
        gap = (test[ORACLE].get("accuracy") or 0) - (test[best[0]].get("accuracy") or 0)
        out.append(f"- The hindsight oracle reaches {exact(test[ORACLE])} on test, "
                   f"{100 * gap:.1f} pp above the policy picked on dev (`{best[0]}`); a "
                   "small gap means the ceiling is the tool's skill, not the choice.")
    unsolv = ((s.get("failures") or {}).get("splits") or {}).get("test", {})
    if unsolv.get("n"):
        out.append(f"- {unsolv.get('unsolvable_cases', 0)} of {unsolv['n']} test cases have no "
                   "visible path to a right answer; no controller can recover them.")
    if not s.get("seeds"):
        out.append("- One seed: a learned controller's result may not survive retraining (run `--seeds N`).")
    out += ["- Budgets are counted, not matched: a program generation can cost 100 or 40,000 search "
            "nodes, so policies with equal generations need not have spent equal work (see the Work "
            "column).",
            "- Policies are simulated on precomputed traces: WRITE and FIX reveal the rounds "
            "recorded for that case, so a policy cannot draw a different program.",
            "- Hidden answers are used only for oracle labels and evaluation, never in a "
            "policy's state.", ""]
    return out


SECTIONS = (STUDY_SECTIONS[0], ceiling_md, answer_md, within_family_md, confidence_md, comparators_md, deviations_md, *STUDY_SECTIONS[1:], savings_md, repair_rounds_md, _summary, _split_section, _heldout, _dev_vs_test, _paired, seeds_md, learner_sections,
            cross_check_md, commit_any_section, cv_md, frontier_md, _failures, _run_details,
            _figures, _limitations)


# ----------------------------------------------------------------------------- entry points


def render_report(summary: Mapping) -> str:
    """Markdown report; sections whose data are missing are skipped."""
    lines = ["# Live tool DAgger report", ""]
    for section in SECTIONS:
        lines += section(summary)
    return "\n".join(lines).rstrip() + "\n"


def write_report(summary: Mapping, path: str | os.PathLike) -> str:
    """Render and write atomically (temp file in the same folder, then ``os.replace``)."""
    from controller.report.outputs import atomic_write_text

    atomic_write_text(path, render_report(summary))
    return str(path)
