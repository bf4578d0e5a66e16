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

from controller.study.failures import DIRECT_CATEGORIES, ROUND_CATEGORIES
from controller.report.nulls import commit_any_section, nulls_section
from controller.env.registry import ORACLE, deployable, ordered as ordered_policies
from controller.report.answer import answer_md, repair_rounds_md, savings_md
from controller.report.figures import COST_UNITS, FIGURE_NAMES
from controller.study.stats import min_attainable_p, min_discordant_for_significance, sign_flip_method
from controller.report.split_seeds import render_split_seeds, split_seed_note
from controller.report.study import STUDY_SECTIONS  # headroom, hypotheses, power, routing: the report opens with them

SPLIT_ORDER = ("train", "dev", "test")
# Policies a user can deploy: the oracle reads hidden answers, the shuffled run is a control.


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


def _pp(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.1f} pp"


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
    return [f"`{name}`", _exact(r), r.get("n_families", "n/a"),
            f"{_pct(r.get('accuracy'))} {_ci(r.get('accuracy_ci95'))}", _ci(r.get("accuracy_ci95_family")),
            _num(r.get("program_generations")), _num(r.get("repair_actions")),
            _num(r.get("program_commits")), _num(r.get("direct_miss_recoveries")),
            _num(r.get("direct_correct_losses")), _pct(r.get("program_precision")),
            _num(r.get("generated_tokens")), _num(r.get("work")), _num(r.get("sandbox_ms"), 1)]


def policy_headers(summary: Mapping) -> list[str]:
    """Column names; every budget column names its unit (work's comes from the summary)."""
    work = (summary.get("cost_units") or {}).get("work", "search nodes / tokens")
    return ["Policy", "Exact", "Families", "Accuracy [Wilson 95%, cases]", "[95% CI, family bootstrap]",
            "Program generations", "Repairs (FIX rounds)", "Program commits", "Recoveries", "Losses",
            "Program precision", "Completion tokens", f"Work ({work})", "Sandbox (ms)"]


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
        parts = [f"`{p}` {_exact(test[p])}" for p in ("direct_only", "always_tool_visible")
                 if p in test]
        if ORACLE in test:
            parts.append(f"hindsight oracle `{ORACLE}` {_exact(test[ORACLE])}")
        out.append("Held-out test: " + "; ".join(parts) + ".")
        out += ["", best_deployable_sentence(s)]
    return out + [""]


def best_deployable(summary: Mapping) -> list[str]:
    """Deployable policies with the best dev result (accuracy, then fewer program generations).

    Picked on dev, never on test; more than one name means dev could not tell them apart.
    """
    dev = dict(_results(summary, "dev"))
    cands = {p: r for p, r in dev.items() if deployable(p) and r.get("n")}
    if not cands:
        return []
    key = {p: (-(r.get("accuracy") or 0.0), r.get("program_generations") or 0) for p, r in cands.items()}
    top = min(key.values())
    return [p for p in ordered_policies(cands) if key[p] == top]


def best_deployable_sentence(summary: Mapping) -> str:
    best, test = best_deployable(summary), dict(_results(summary, "test"))
    if not best:
        return "No dev split: no deployable policy can be picked."
    dev = dict(_results(summary, "dev"))
    d = dev[best[0]]
    on_test = ", ".join(f"`{p}` {_exact(test[p])}" for p in best if p in test)
    if len(best) == 1:
        same_acc = [p for p, r in dev.items() if deployable(p) and r.get("n")
                    and r.get("accuracy") == d.get("accuracy")]
        note = ("" if len(same_acc) < 2 else
                f" Dev cannot separate {len(same_acc)} deployable policies on accuracy (all {_exact(d)}); "
                "among them the pick is by program generations alone.")
        return (f"Best deployable policy, picked on dev (accuracy, then fewer program generations): "
                f"`{best[0]}` (dev {_exact(d)}, {_num(d.get('program_generations'))} program generations); "
                f"on test {on_test}.{note}")
    return (f"Dev cannot pick a best deployable policy: {len(best)} policies tie on dev at {_exact(d)} with "
            f"{_num(d.get('program_generations'))} program generations ({', '.join(f'`{p}`' for p in best)}); "
            f"on test: {on_test}.")


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
            "Budgets include unscored cases. Two intervals: Wilson treats cases as independent; "
            "the family bootstrap resamples whole families (the unit the split is drawn in) "
            "and is the honest one.", ""] + _table(
        policy_headers(s), [_policy_row(p, r) for p, r in rows])


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
                diff = _pp(t.get("diff"))
                rows.append([f"`{policy}`", f"`{base}`", t.get("n", "n/a"), t.get("n_families", "n/a"),
                             f"{t.get('b10', 0)} / {t.get('b01', 0)}", _p(t.get("mcnemar_p")),
                             f"{diff} {_ci(t.get('diff_ci95_family'))}", _p(t.get("p_family")),
                             _p(t.get("p_holm")), t.get("verdict", "n/a")])
        if rows:
            out += [f"### {split}", ""] + _table(
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


def _seeds(s: Mapping) -> list[str]:
    seeds = s.get("seeds") or {}
    if not seeds:
        return []
    pr = s.get("policy_results") or {}
    rows = []
    for p in ordered_policies(seeds):
        cells = []
        det = (seeds[p].get("test") or {}).get("deterministic")
        for split in ("dev", "test"):
            e = seeds[p].get(split) or {}
            cells.append("n/a" if e.get("mean") is None else f"{e['min']} / {e.get('n', 0)}" if det else
                         f"{e['mean']:.1f} [{e['min']}, {e['max']}] / {e.get('n', 0)}")
        per = ", ".join(str(x) for x in (seeds[p].get("test") or {}).get("exact", []))
        rows.append([f"`{p}`", *cells, "deterministic: the same actions at every seed (one observation)"
                     if det else per])
    fixed = [f"`{p}` dev {_exact(pr[p]['dev'])}, test {_exact(pr[p]['test'])}"
             for p in ("direct_only", "always_tool_visible") if p in pr and "dev" in pr[p]]
    n_seeds = max(len((v.get("test") or {}).get("seeds", [])) for v in seeds.values())
    models = s.get("seed_rule_models") or {}
    out = ["## Seeds", "",
           f"Every learned controller and the shuffled control retrained with {n_seeds} seeds "
           "(same traces, same split). Exact: mean [min, max] over seeds, out of n. Seed-free "
           "baselines: " + "; ".join(fixed) + ".", ""]
    out += _table(["Policy", "Dev exact", "Test exact", "Test exact per seed"], rows)
    if models:
        out += ["Rule model chosen on dev per seed: " + ", ".join(f"{k}: `{v}`" for k, v in models.items()) + ".", ""]
    return out


def seed_claims(s: Mapping) -> list[str]:
    """Sentences about learned controllers that the seed results support, derived from them.

    A family-level verdict against a baseline is stated as holding only when every seed's test
    exact lies on the verdict's side of the baseline's; the LoRA policy is said to beat its
    shuffled control only when it does at every seed.
    """
    pr, tests = s.get("policy_results") or {}, (s.get("paired_tests") or {}).get("test") or {}
    seeds = s.get("seeds") or {}
    out = []
    for p in ("learned_rule", "learned_rule_dagger", "lora_seq_policy", "lora_dagger", "lora_shuffled_seq"):
        if p not in pr or "test" not in pr[p]:
            continue
        per = (seeds.get(p) or {}).get("test") or {}
        exact = per.get("exact") or [pr[p]["test"]["exact"]]
        if per.get("deterministic"):  # N seeds, the same actions: one observation, not N
            exact = exact[:1]
        n_seeds = len(exact)
        for base in ("always_tool_visible", "direct_only"):
            t = (tests.get(p) or {}).get(base)
            if not t or base not in pr:
                continue
            b = pr[base]["test"]["exact"]
            rng = f"{min(exact)}-{max(exact)}" if min(exact) != max(exact) else f"{exact[0]}"
            v = t.get("verdict", "within noise")
            side = all(e > b for e in exact) if v == "better" else all(e < b for e in exact) if v == "worse" else None
            gens = per.get("program_generations") or [pr[p]["test"].get("program_generations")]
            cost = (f"; program generations {min(gens)}" + (f"-{max(gens)}" if min(gens) != max(gens) else "")
                    + f" vs {pr[base]['test'].get('program_generations')}") if None not in gens else ""
            if v != "within noise" and per.get("deterministic"):
                out.append(f"- `{p}` vs `{base}`: {v} at the family level (p Holm {_p(t.get('p_holm'))}); the "
                           f"learner is deterministic ({rng} vs {b} exact at every seed): seeds add nothing, the "
                           "split seeds (`--split-seeds N`) are the spread to check.")
            elif v != "within noise" and n_seeds < 2:
                out.append(f"- `{p}` vs `{base}`: {v} at the family level (p Holm {_p(t.get('p_holm'))}) with "
                           f"one seed only ({rng} vs {b} exact): not checked across seeds (`--seeds N`), no claim.")
            elif v != "within noise" and side:
                out.append(f"- `{p}` is {v} than `{base}` on test at the family level (p Holm "
                           f"{_p(t.get('p_holm'))}), and at every one of {n_seeds} seed(s) ({rng} vs {b} exact).")
            elif v != "within noise":
                out.append(f"- `{p}` vs `{base}`: {v} at the base seed (p Holm {_p(t.get('p_holm'))}) but not at "
                           f"every seed ({rng} vs {b} exact): no claim.")
            else:
                over = ("deterministic learner, the same at every seed" if per.get("deterministic")
                        else f"over {n_seeds} seed(s)")
                out.append(f"- `{p}` vs `{base}`: within noise at the family level (p Holm "
                           f"{_p(t.get('p_holm'))}); test exact {rng} ({over}) vs {b}{cost}.")
    lora, ctrl = (seeds.get("lora_seq_policy") or {}).get("test"), (seeds.get("lora_shuffled_seq") or {}).get("test")
    if not lora and "lora_seq_policy" in pr and "lora_shuffled_seq" in pr:
        lora = {"exact": [pr["lora_seq_policy"]["test"]["exact"]]}
        ctrl = {"exact": [pr["lora_shuffled_seq"]["test"]["exact"]]}
    if lora and ctrl:
        pairs = list(zip(lora["exact"], ctrl["exact"]))
        if len(pairs) < 2:
            out.append(f"- LoRA policy vs its shuffled-label control: test exact {pairs[0][0]} vs {pairs[0][1]} at "
                       "one seed only: no claim about what the LoRA policy learned (`--seeds N`).")
        elif all(a > c for a, c in pairs):
            out.append(f"- The LoRA policy beat its shuffled-label control at every one of {len(pairs)} seed(s) "
                       f"(test exact {', '.join(f'{a} vs {c}' for a, c in pairs)}); a case count, not a "
                       "family-level test.")
        else:
            out.append(f"- The shuffled-label control matched or beat the LoRA policy at some seed (test exact "
                       f"{', '.join(f'{a} vs {c}' for a, c in pairs)}): no claim that the LoRA policy learned "
                       "more than the label base rates.")
    return out


def _learned_rule(s: Mapping) -> list[str]:
    rule = s.get("learned_rule")
    if not rule:
        return []
    rule = dict(rule)
    out = ["## Learned rule", ""]
    chosen = rule.pop("chosen", None) or rule.pop("model", None) or rule.pop("name", None)
    tie = rule.pop("dev_tie", False)
    if chosen and tie:
        out += [f"Every candidate ties on dev (same accuracy and program generations): dev did not "
                f"choose; `{chosen}` is used because it is first in list order.", ""]
    elif chosen:
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
                 it.get("new_states", "n/a"), it.get("new_states_learner", "n/a"), it.get("new_states_oracle", "n/a"),
                 it.get("added_states", "n/a"),
                 it.get("dataset_size", it.get("n_states", "n/a")),
                 _pct((it.get("dev") or {}).get("accuracy")),
                 _pct((it.get("test") or {}).get("accuracy")),
                 _num((it.get("test") or {}).get("program_generations")),
                 _num((it.get("test") or {}).get("repair_actions"))] for it in iters or []]
        if rows:
            out += [f"### `{learner}`", ""] + _table(
                ["Iter", "Beta", "Visited", "New vs BC", "of which learner", "of which oracle", "Added", "Dataset",
                 "Dev acc", "Test acc",
                 "Test gens", "Test repairs"], rows)
    if not out:
        return []
    return ["## DAgger iterations", "",
            "Visited: distinct states (case + revealed attempts) the iteration's rollouts reached; "
            "New vs BC: of those, not in the behaviour-cloning dataset (the recorded sample-0 "
            "chains), split into states whose path holds a step where the learner acted (beta < 1 "
            "draws that fell on the learner) and states the oracle alone led to; Added: not in the "
            "aggregated dataset before the iteration. Iteration 0 is behaviour cloning on the oracle's "
            "trajectories (`learned_rule_bc_oracle`, same data).", ""] + out


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
        out += [f"Pooled over folds (split seed {cv.get('split_seed', 'n/a')}):", ""] + _table(
            policy_headers(s), [_policy_row(p, pooled[p]) for p in ordered_policies(pooled)])
    ptests = cv.get("pooled_paired_tests") or {}
    prow = [[f"`{p}`", f"`{b}`", t.get("n_families", "n/a"), f"{t.get('b10', 0)} / {t.get('b01', 0)}",
             f"{_pp(t.get('diff'))} {_ci(t.get('diff_ci95_family'))}", _p(t.get("p_holm")), t.get("verdict", "n/a"),
             split_seed_note(s, p, b)]
            for p in ordered_policies(ptests) for b, t in (ptests[p] or {}).items()]
    if prow:
        out += ["Pooled paired tests (family level, Holm over the distinct comparisons):", ""] + _table(
            ["Policy", "Baseline", "Families", "Wins / losses", "Diff [95% CI, family bootstrap]",
             "p (Holm)", "Verdict", "Over split seeds"], prow)
    out += render_split_seeds(s)
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
            if front.get("cost") == "work":
                unit = f"thousand {(s.get('cost_units') or {}).get('work', 'work units')}"
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


def pilot_answer(s: Mapping) -> list[str]:
    """Accuracy and cost of the policy picked on dev against always-tool, on test, in words."""
    best, test = best_deployable(s), dict(_results(s, "test"))
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
                   f"{_exact(r)} vs {_exact(base)}, {_pp(t.get('diff'))} "
                   f"{_ci(t.get('diff_ci95_family'))} (family bootstrap), verdict *{t.get('verdict', 'n/a')}*; "
                   f"cost {_num(r.get('program_generations'))} vs {_num(base.get('program_generations'))} "
                   f"program generations, {_num(r.get('work'))} vs {_num(base.get('work'))} {work}.")
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
    test = dict(_results(s, "test"))
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
            out.append(f"- 95% family-bootstrap intervals on test accuracy are {_pct(min(widths))} to "
                       f"{_pct(max(widths))} wide.")
    best = best_deployable(s)
    if best and ORACLE in test and best[0] in test:
        gap = (test[ORACLE].get("accuracy") or 0) - (test[best[0]].get("accuracy") or 0)
        out.append(f"- The hindsight oracle reaches {_exact(test[ORACLE])} on test, "
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


SECTIONS = (answer_md, *STUDY_SECTIONS, savings_md, repair_rounds_md, _summary, _split_section, _heldout, _dev_vs_test, _paired, _seeds, _learned_rule,
            nulls_section, _dagger, _cross_check, commit_any_section, _cv, _frontier, _failures, _run_details,
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
