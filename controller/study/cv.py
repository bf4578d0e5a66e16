"""Family-level cross-validation: rotate the test families so every case is held out once.

Fold i tests on its families, uses fold i+1 as dev (model choice) and trains on the rest. The
scikit-learn rule, the fixed policies and the oracle are evaluated per fold; the pooled result
concatenates every fold's test outcomes, which is how to get past a tiny test split. Folds depend
on the split seed and the family names only (never on answers or grades; ``--split-seeds N``
repeats the whole CV with N fold seeds, see ``split_seeds``); probe cases (split
``unassigned``) are left out. Pooled results carry the family-level intervals and tests of
``stats`` like any split. (The LoRA policy is not refit per fold: that is F extra trainings; run
it with a real base when needed.)
"""
from __future__ import annotations

from cases import make_cv_folds
from controller.env.policies import Oracle
from controller.env.registry import ORACLE, fixed_policies
from controller.env.traceenv import TraceEnv
from controller.learn.rule import select_rule
from controller.study.stats import paired_tests, summarize_outcomes
from controller.learn.training import full_state_pairs, labelled


def run_cv(records, cfg, log=print, fold_seed: int | None = None) -> dict:
    """CV with the folds of ``fold_seed`` (default ``cfg.split_seed``); learners use ``cfg.seed``.

    ``pooled_outcomes[policy]`` holds every scored case once, tagged with its ``fold``."""
    fold_seed = cfg.split_seed if fold_seed is None else fold_seed
    scored = [r for r in records if r["hidden"]["answer"] is not None and r.get("split") != "unassigned"]
    families = sorted({r["family"] for r in scored})
    folds = make_cv_folds(families, k=cfg.cv_folds, seed=fold_seed)
    fold_results, pooled = [], {}
    for i, test_fams in enumerate(folds):
        dev_fams = set(folds[(i + 1) % len(folds)])
        test_fams = set(test_fams)

        def split_of(f):
            return "test" if f in test_fams else "dev" if f in dev_fams else "train"

        recs = [dict(r, split=split_of(r["family"])) for r in scored]
        train = [r for r in recs if r["split"] == "train"]
        dev = [r for r in recs if r["split"] == "dev"]
        test = [r for r in recs if r["split"] == "test"]

        env = TraceEnv(recs)  # this fold's records: every policy walks the same states
        rule, _ = select_rule(labelled(full_state_pairs(train, env), cost=cfg.cost), dev, env.score, seed=cfg.seed)
        policies = fixed_policies()
        policies["learned_rule"] = rule
        policies[ORACLE] = Oracle(test, cost=cfg.cost)  # labels and oracle in the run's --cost
        res = {}
        for name, pol in policies.items():
            outs = [dict(o, fold=i) for o in env.simulate(pol, test)]
            pooled.setdefault(name, []).extend(outs)
            res[name] = summarize_outcomes(outs, seed=cfg.seed)
        fold_results.append({"fold": i, "test_families": sorted(test_fams), "dev_families": sorted(dev_fams),
                             "n_test": len(test), "rule_model": rule.model_name, "policy_results": res})
        log(f"cv (split seed {fold_seed}) fold {i}: n_test={len(test)} rule={res['learned_rule']['accuracy']} "
            f"oracle={res[ORACLE]['accuracy']}")
    return {"k": len(folds), "split_seed": fold_seed, "folds": fold_results,
            "pooled": {name: summarize_outcomes(outs, seed=cfg.seed) for name, outs in pooled.items()},
            "pooled_paired_tests": paired_tests(pooled, split="test", seed=cfg.seed),
            "pooled_outcomes": pooled}
