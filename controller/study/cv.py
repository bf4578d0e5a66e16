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


def scored_assigned(records) -> list:
    """The records cross-validation folds: scored, and not a probe case (split ``unassigned``)."""
    return [r for r in records if r["hidden"]["answer"] is not None and r.get("split") != "unassigned"]


def family_folds(scored, k: int, seed: int) -> dict[str, int]:
    """case id -> fold: whole families to folds (``cases.make_cv_folds``), the primary CV."""
    folds = make_cv_folds(sorted({r["family"] for r in scored}), k=k, seed=seed)
    fold_of_family = {f: i for i, fams in enumerate(folds) for f in fams}
    return {r["case_id"]: fold_of_family[r["family"]] for r in scored}


def run_cv(records, cfg, log=print, fold_seed: int | None = None, lora_worker=None,
           fold_of: dict[str, int] | None = None, which=lambda x: x.in_folds, tag: str = "cv") -> CVResult:
    """CV with the folds of ``fold_seed`` (default ``cfg.split_seed``); learners use ``cfg.seed``.

    ``fold_of`` (case id -> fold) replaces the family folds (``within_family`` deals each family's
    cases over the folds); ``which`` picks the learners refit per fold; ``tag`` names the CV in the log."""
    fold_seed = cfg.split_seed if fold_seed is None else fold_seed
    scored = scored_assigned(records)
    if fold_of is None:
        fold_of = family_folds(scored, cfg.cv_folds, fold_seed)
    scored = [r for r in scored if r["case_id"] in fold_of]
    n_folds = max(fold_of.values()) + 1 if fold_of else 0
    fold_results, pooled, lora_meta = [], {}, {}
    for i in range(n_folds):
        def split_of(r):
            f = fold_of[r["case_id"]]
            return "test" if f == i else "dev" if f == (i + 1) % n_folds else "train"

        recs = [dict(r, split=split_of(r)) for r in scored]
        test_fams = {r["family"] for r in recs if r["split"] == "test"}
        dev_fams = {r["family"] for r in recs if r["split"] == "dev"}
        env = TraceEnv(recs)  # this fold's records: every policy walks the same states
        test = env.split("test")
        ctx = Fitting(env, env.split("train"), env.split("dev"), cfg, fold=i, fold_seed=fold_seed, worker=lora_worker,
                      log=log, lora_meta=lora_meta)
        # the learners refit per fold (the learned rule, its price chosen on the fold's dev; with
        # --train-lora the LoRA policy, early stopping on the fold's dev); best_fixed on the fold's train + dev
        a = assemble(ctx, test, samples_in_best=True, which=which)
        policies = {**a.fixed, **a.samples, BEST_FIXED: a.best, **a.learned, **a.derived, ORACLE: a.oracle}
        res = {}
        for name, pol in policies.items():
            outs = [dict(o, fold=i, policy=name) for o in env.simulate(pol, test)]
            pooled.setdefault(name, []).extend(outs)
            res[name] = summarize_outcomes(outs, seed=cfg.seed)
        fold_results.append({"fold": i, "test_families": sorted(test_fams), "dev_families": sorted(dev_fams),
                             "n_test": len(test), **ctx.info, "best_fixed": a.best_info["chosen"],
                             "policy_results": res})
        log(f"{tag} (split seed {fold_seed}) fold {i}: n_test={len(test)} "
            + " ".join(f"{k}={res[k]['accuracy']}" for k in a.learned)
            + f" best fixed={a.best_info['chosen']} oracle={res[ORACLE]['accuracy']}")
    out = {"k": n_folds, "split_seed": fold_seed, "folds": fold_results,
           "pooled": {name: summarize_outcomes(outs, seed=cfg.seed) for name, outs in pooled.items()},
           "pooled_paired_tests": paired_tests(pooled, split="test", seed=cfg.seed)}
    if lora_meta:
        out["lora_training"] = lora_meta
    return CVResult(out, pooled)
