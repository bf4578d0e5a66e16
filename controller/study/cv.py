"""Family-level cross-validation: rotate the test families so every case is held out once.

Fold i tests on its families, uses fold i+1 as dev (model choice, the rule's price of tools) and
trains on the rest. Every fixed policy, the best fixed policy (chosen on the fold's train + dev),
every learner whose entry says ``in_folds`` (``controller.learn.registry``: the learned rule, its
price chosen on the fold's dev; with ``--train-lora`` the LoRA policy, at every split seed: F
trainings per split seed, tagged ``lora_cv{i}`` at the base seed, ``lora_s{seed}_cv{i}`` beyond
it; with --dagger-iters and K > 1 program samples the rule's DAgger) and the oracle are evaluated per fold, assembled as the run's own split is (``assemble``). The pooled result
concatenates every fold's test outcomes, which is how to get past a tiny test split. Folds depend
on the split seed and the family names only (never on answers or grades; ``--split-seeds N``
repeats the whole CV with N fold seeds, see ``split_seeds``); probe cases (split ``unassigned``)
are left out. Pooled results carry the family-level intervals and tests of ``stats`` like any split.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cases import make_cv_folds
from controller.env.registry import BEST_FIXED, ORACLE
from controller.env.traceenv import TraceEnv
from controller.learn.registry import Fitting
from controller.study.assemble import assemble
from controller.study.stats import paired_tests, summarize_outcomes


@dataclass
class CVResult:
    """One cross-validation: ``summary`` is the summary's ``cv`` key; ``pooled[policy]`` holds
    every scored case's outcome once, tagged with its ``fold`` (the per-case records statistics
    and ``predictions/cv/`` are computed from)."""

    summary: dict
    pooled: dict = field(default_factory=dict)


def run_cv(records, cfg, log=print, fold_seed: int | None = None, lora_worker=None) -> CVResult:
    """CV with the folds of ``fold_seed`` (default ``cfg.split_seed``); learners use ``cfg.seed``."""
    fold_seed = cfg.split_seed if fold_seed is None else fold_seed
    scored = [r for r in records if r["hidden"]["answer"] is not None and r.get("split") != "unassigned"]
    families = sorted({r["family"] for r in scored})
    folds = make_cv_folds(families, k=cfg.cv_folds, seed=fold_seed)
    fold_results, pooled, lora_meta = [], {}, {}
    for i, test_fams in enumerate(folds):
        dev_fams = set(folds[(i + 1) % len(folds)])
        test_fams = set(test_fams)

        def split_of(f):
            return "test" if f in test_fams else "dev" if f in dev_fams else "train"

        recs = [dict(r, split=split_of(r["family"])) for r in scored]
        env = TraceEnv(recs)  # this fold's records: every policy walks the same states
        test = env.split("test")
        ctx = Fitting(env, env.split("train"), env.split("dev"), cfg, fold=i, fold_seed=fold_seed, worker=lora_worker,
                      log=log, lora_meta=lora_meta)
        # the learners refit per fold (the learned rule, its price chosen on the fold's dev; with
        # --train-lora the LoRA policy, early stopping on the fold's dev); best_fixed on the fold's train + dev
        a = assemble(ctx, test, samples_in_best=True, which=lambda x: x.in_folds)
        policies = {**a.fixed, **a.samples, BEST_FIXED: a.best, **a.learned, **a.derived, ORACLE: a.oracle}
        res = {}
        for name, pol in policies.items():
            outs = [dict(o, fold=i, policy=name) for o in env.simulate(pol, test)]
            pooled.setdefault(name, []).extend(outs)
            res[name] = summarize_outcomes(outs, seed=cfg.seed)
        fold_results.append({"fold": i, "test_families": sorted(test_fams), "dev_families": sorted(dev_fams),
                             "n_test": len(test), **ctx.info, "best_fixed": a.best_info["chosen"],
                             "policy_results": res})
        log(f"cv (split seed {fold_seed}) fold {i}: n_test={len(test)} "
            + " ".join(f"{k}={res[k]['accuracy']}" for k in a.learned)
            + f" best fixed={a.best_info['chosen']} oracle={res[ORACLE]['accuracy']}")
    out = {"k": len(folds), "split_seed": fold_seed, "folds": fold_results,
           "pooled": {name: summarize_outcomes(outs, seed=cfg.seed) for name, outs in pooled.items()},
           "pooled_paired_tests": paired_tests(pooled, split="test", seed=cfg.seed)}
    if lora_meta:
        out["lora_training"] = lora_meta
    return CVResult(out, pooled)
