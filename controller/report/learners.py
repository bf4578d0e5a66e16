"""The report's sections on the learners: seeds, each learner's own section (the learned rule,
DAgger, ...: ``learner_sections``), cross-checks, cross-validation and the budget frontier."""
from __future__ import annotations

import importlib
import json
from typing import Callable, Mapping

from controller.env.policies import AlwaysTool
from controller.env.registry import REGISTRY, ordered as ordered_policies
from controller.learn.registry import LEARNERS, Learner
from controller.report.figures import COST_UNITS
from controller.report.fmt import policy_row, ci_pct, exact, num, p_value, pct, policy_headers, pp, splits, table
from controller.report.split_seeds import render_split_seeds, split_seed_note

# the learners retrained for every seed, read off the registry (no hand list)
SEEDED = tuple(n for n, sp in REGISTRY.items() if sp.seeded)


def section_of(learner: Learner) -> Callable[[Mapping], list[str]] | None:
    """A learner's report section: its function, or the one its ``"module:function"`` names in
    ``controller.report`` (the learner table sits below the report and names it only)."""
    sec = learner.section
    if sec is None or callable(sec):
        return sec
    module, _, name = sec.partition(":")
    if not module.startswith("controller.report.") or not name:
        raise ValueError(f"learner {learner.name!r}: section {sec!r} is not 'controller.report.<module>:<function>'")
    return getattr(importlib.import_module(module), name)


def learner_sections(s: Mapping) -> list[str]:
    """Every registered learner's own section, in the learner table's order (empty ones left out)."""
    out: list[str] = []
    for learner in LEARNERS.values():
        render = section_of(learner)
        out += render(s) if render else []
    return out


def seeds_md(s: Mapping) -> list[str]:
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
    fixed = [f"`{p}` dev {exact(pr[p]['dev'])}, test {exact(pr[p]['test'])}"
             for p in ("direct_only", "always_tool_visible") if p in pr and "dev" in pr[p]]
    n_seeds = max(len((v.get("test") or {}).get("seeds", [])) for v in seeds.values())
    models = s.get("seed_rule_models") or {}
    out = ["## Seeds", "",
           f"Every learned controller and the shuffled control retrained with {n_seeds} seeds "
           "(same traces, same split). Exact: mean [min, max] over seeds, out of n. Seed-free "
           "baselines: " + "; ".join(fixed) + ".", ""]
    out += table(["Policy", "Dev exact", "Test exact", "Test exact per seed"], rows)
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
    for p in SEEDED:  # the registry's learners retrained per seed
        if p not in pr or "test" not in pr[p]:
            continue
        per = (seeds.get(p) or {}).get("test") or {}
        counts = per.get("exact") or [pr[p]["test"]["exact"]]
        if per.get("deterministic"):  # N seeds, the same actions: one observation, not N
            counts = counts[:1]
        n_seeds = len(counts)
        for base in ("always_tool_visible", "direct_only"):
            t = (tests.get(p) or {}).get(base)
            if not t or base not in pr:
                continue
            b = pr[base]["test"]["exact"]
            rng = f"{min(counts)}-{max(counts)}" if min(counts) != max(counts) else f"{counts[0]}"
            v = t.get("verdict", "within noise")
            side = all(e > b for e in counts) if v == "better" else all(e < b for e in counts) if v == "worse" else None
            gens = per.get("program_generations") or [pr[p]["test"].get("program_generations")]
            cost = (f"; program generations {min(gens)}" + (f"-{max(gens)}" if min(gens) != max(gens) else "")
                    + f" vs {pr[base]['test'].get('program_generations')}") if None not in gens else ""
            if v != "within noise" and per.get("deterministic"):
                out.append(f"- `{p}` vs `{base}`: {v} at the family level (p Holm {p_value(t.get('p_holm'))}); the "
                           f"learner is deterministic ({rng} vs {b} exact at every seed): seeds add nothing, the "
                           "split seeds (`--split-seeds N`) are the spread to check.")
            elif v != "within noise" and n_seeds < 2:
                out.append(f"- `{p}` vs `{base}`: {v} at the family level (p Holm {p_value(t.get('p_holm'))}) with "
                           f"one seed only ({rng} vs {b} exact): not checked across seeds (`--seeds N`), no claim.")
            elif v != "within noise" and side:
                out.append(f"- `{p}` is {v} than `{base}` on test at the family level (p Holm "
                           f"{p_value(t.get('p_holm'))}), and at every one of {n_seeds} seed(s) ({rng} vs {b} exact).")
            elif v != "within noise":
                out.append(f"- `{p}` vs `{base}`: {v} at the base seed (p Holm {p_value(t.get('p_holm'))}) but not at "
                           f"every seed ({rng} vs {b} exact): no claim.")
            else:
                over = ("deterministic learner, the same at every seed" if per.get("deterministic")
                        else f"over {n_seeds} seed(s)")
                out.append(f"- `{p}` vs `{base}`: within noise at the family level (p Holm "
                           f"{p_value(t.get('p_holm'))}); test exact {rng} ({over}) vs {b}{cost}.")
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


def learned_rule_md(s: Mapping) -> list[str]:
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
            rows.append([f"`{k}`", pct(acc), num(gens)])
        out += table(["Candidate", "Dev accuracy", "Dev program gens"], rows)
    text = rule.pop("description", None) or rule.pop("text", None) or rule.pop("tree", None)
    if text:
        out += ["```", str(text).rstrip(), "```", ""]
    scalars = {k: v for k, v in rule.items() if not isinstance(v, (Mapping, list))}
    out += [f"- {k}: {v}" for k, v in scalars.items()] + ([""] if scalars else [])
    rest = {k: v for k, v in rule.items() if k not in scalars}
    if rest:  # anything else the trainer recorded, verbatim
        out += ["```json", json.dumps(rest, indent=2, sort_keys=True, default=str), "```", ""]
    return out


def dagger_md(s: Mapping) -> list[str]:
    dagger = s.get("dagger") or {}
    k = ((s.get("config") or {}).get("rollout") or {}).get("program_samples")
    if k is None:  # a summary made from Python records without a run config: the rows say whether DAgger added states
        k = 3 if any((it.get("new_states") or 0) > 0 for iters in dagger.values() for it in iters) else 1
    if dagger and k <= 1:  # every reachable state is on the recorded chain: nothing for DAgger to add
        return ["## DAgger", "", "Not reported: with one program sample (K = 1) every state a policy can reach lies on "
                "the recorded chain, which behaviour cloning already holds, so DAgger cannot add a state; its rows equal "
                "behaviour cloning's and are no evidence. It is reported where the reachable states exceed the recorded "
                "chain (K >= 3), and cross-validated there.", ""]
    out = []
    for learner, iters in dagger.items():
        rows = [[it.get("iter"), it.get("beta", "n/a"), it.get("states_visited", "n/a"),
                 it.get("new_states", "n/a"), it.get("new_states_learner", "n/a"), it.get("new_states_oracle", "n/a"),
                 it.get("added_states", "n/a"),
                 it.get("dataset_size", it.get("n_states", "n/a")),
                 pct((it.get("dev") or {}).get("accuracy")),
                 pct((it.get("test") or {}).get("accuracy")),
                 num((it.get("test") or {}).get("program_generations")),
                 num((it.get("test") or {}).get("repair_actions"))] for it in iters or []]
        if rows:
            out += [f"### `{learner}`", ""] + table(
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


def cross_check_md(s: Mapping) -> list[str]:
    """With --program-samples K > 1: does a cross-check raise the precision of committed programs,
    and at what cost (generations, resamples, search nodes)?"""
    res = s.get("policy_results") or {}
    # the K = 1 tool policy as the reference, the fixed policies that need samples, the learners, the oracle
    names = [p for p, spec in REGISTRY.items() if p in res and (
        p == AlwaysTool.name or (spec.role == "fixed" and spec.needs_samples) or spec.role in ("learned", "oracle"))]
    if "cross_check" not in res:
        return []
    rows = []
    for split in ("dev", "test"):
        for p in names:
            r = (res[p] or {}).get(split) or {}
            if not r:
                continue
            rows.append([split, f"`{p}`", f"{r.get('exact')}/{r.get('n')}", pct(r.get("accuracy")),
                         f"{r.get('program_correct')}/{r.get('program_commits')}", pct(r.get("program_precision")),
                         num(r.get("program_generations")), num(r.get("resample_actions")),
                         num(r.get("search_nodes"))])
    return ["## Cross-checks (RESAMPLE)", "",
            "`cross_check`: after the first passing program, draw one more independent program and "
            "commit only when their outputs on the new input agree (disagreement: the direct answer; "
            "a failing check: the first program). Precision = right committed programs / commits.", ""] + table(
        ["Split", "Policy", "Exact", "Accuracy", "Programs right/committed", "Precision", "Gens",
         "Resamples", "Search nodes"], rows)


def cv_md(s: Mapping) -> list[str]:
    cv = s.get("cv") or {}
    if not cv.get("pooled") and not cv.get("folds"):
        return []
    out = ["## Cross-validation", "",
           f"{cv.get('k', len(cv.get('folds') or []))} folds over families; each fold's "
           "test families are held out from training.", ""]
    pooled = cv.get("pooled") or {}
    if pooled:
        out += [f"Pooled over folds (split seed {cv.get('split_seed', 'n/a')}):", ""] + table(
            policy_headers(s), [policy_row(p, pooled[p]) for p in ordered_policies(pooled)])
    ptests = cv.get("pooled_paired_tests") or {}
    prow = [[f"`{p}`", f"`{b}`", t.get("n_families", "n/a"), f"{t.get('b10', 0)} / {t.get('b01', 0)}",
             f"{pp(t.get('diff'))} {ci_pct(t.get('diff_ci95_family'))}", p_value(t.get("p_holm")), t.get("verdict", "n/a"),
             split_seed_note(s, p, b)]
            for p in ordered_policies(ptests) for b, t in (ptests[p] or {}).items()]
    if prow:
        out += ["Pooled paired tests (family level, Holm over the distinct comparisons):", ""] + table(
            ["Policy", "Baseline", "Families", "Wins / losses", "Diff [95% CI, family bootstrap]",
             "p (Holm)", "Verdict", "Over split seeds"], prow)
    out += render_split_seeds(s)
    rows = []
    for i, fold in enumerate(cv.get("folds") or []):
        pr = fold.get("policy_results") or {}
        n = fold.get("n_test", max((r.get("n", 0) for r in pr.values()), default=0))
        accs = ", ".join(f"{p} {exact(pr[p])}" for p in ordered_policies(pr))
        rows.append([fold.get("fold", i), n, ", ".join(fold.get("test_families", [])), accs])
    if rows:
        out += table(["Fold", "Test n", "Test families", "Exact per policy"], rows)
    return out


def frontier_md(s: Mapping) -> list[str]:
    out = []
    for learner, front in (s.get("frontier") or {}).items():
        points = front.get("points") or []
        cols = splits({p.get("split", "test"): None for p in points})
        by_lam: dict = {}
        for p in points:
            by_lam.setdefault(p.get("lambda"), {})[p.get("split", "test")] = p
        rows = [[lam] + [c for sp in cols for c in
                         ((num(cell[sp].get("cost"), 3), pct(cell[sp].get("accuracy")))
                          if sp in cell else ("n/a", "n/a"))]
                for lam, cell in by_lam.items()]
        if rows:
            unit = COST_UNITS.get(front.get("cost", "generations"), front.get("cost"))
            if front.get("cost") == "work":
                unit = f"thousand {(s.get('cost_units') or {}).get('work', 'work units')}"
            out += [f"### `{learner}` (cost: {unit} per case)", ""] + table(
                ["Lambda"] + [h for sp in cols for h in (f"{sp} cost", f"{sp} accuracy")],
                rows)
    if not out:
        return []
    return ["## Budget frontier", "",
            "Each lambda trades accuracy against tool cost in the controller's objective.",
            ""] + out
