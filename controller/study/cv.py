"""Family-level cross-validation: rotate the test families so every case is held out once.

Fold i tests on its families, uses fold i+1 as dev (model choice, the rule's price of tools) and
trains on the rest. Every fixed policy, the best fixed policy (chosen on the fold's train + dev),
the learned rule (its price chosen on the fold's dev) and the oracle are evaluated per fold; with
``--train-lora`` the LoRA policy is refit per fold too, at every split seed (F trainings per split
seed; tagged ``lora_cv{i}`` at the base seed, ``lora_s{seed}_cv{i}`` beyond it). The pooled result
concatenates every fold's test outcomes, which is how to get past a tiny test split. Folds depend
on the split seed and the family names only (never on answers or grades; ``--split-seeds N``
repeats the whole CV with N fold seeds, see ``split_seeds``); probe cases (split ``unassigned``)
are left out. Pooled results carry the family-level intervals and tests of ``stats`` like any split.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from cases import make_cv_folds
from controller.env.policies import Oracle
from controller.env.registry import BEST_FIXED, ORACLE, fixed_policies
from controller.env.resample import has_samples
from controller.env.traceenv import TraceEnv, max_repairs
from controller.learn.best_fixed import choose_best_fixed
from controller.learn.cost_rule import fit_learned_rule
from controller.learn.lora_policy import lora_fit
from controller.learn.training import labelled
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
    with_lora = bool(cfg.train_lora and cfg.lora is not None)  # refit at every split seed
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
        train, dev, test = env.split("train"), env.split("dev"), env.split("test")

        policies = fixed_policies(max_repairs=max_repairs(recs), samples=has_samples(recs))
        best, best_info = choose_best_fixed(env, policies, train + dev, cfg.cost, cfg.margin)
        policies[BEST_FIXED] = best
        rule, _, rule_info = fit_learned_rule(env, train, dev, cfg)
        policies["learned_rule"] = rule
        if with_lora:  # the rule's objective and price, early stopping on the fold's dev
            label = lambda rs: labelled(env.chain_pairs(rs), rule_info["lambda"], cfg.cost, commit_any=False,
                                        tie_weight=0.0)
            tag = f"lora_cv{i}" if fold_seed == cfg.split_seed else f"lora_s{fold_seed}_cv{i}"
            fit = lora_fit(cfg, tag, False, label(dev), lora_meta, lora_worker)
            policies["lora_seq_policy"] = fit(label(train))
        policies[ORACLE] = Oracle(test, cost=cfg.cost)  # labels and oracle in the run's --cost
        res = {}
        for name, pol in policies.items():
            outs = [dict(o, fold=i, policy=name) for o in env.simulate(pol, test)]
            pooled.setdefault(name, []).extend(outs)
            res[name] = summarize_outcomes(outs, seed=cfg.seed)
        fold_results.append({"fold": i, "test_families": sorted(test_fams), "dev_families": sorted(dev_fams),
                             "n_test": len(test), "rule_model": rule.model_name, "rule_lambda": rule_info["lambda"],
                             "best_fixed": best_info["chosen"], "policy_results": res})
        log(f"cv (split seed {fold_seed}) fold {i}: n_test={len(test)} rule={res['learned_rule']['accuracy']} "
            f"best fixed={best_info['chosen']} oracle={res[ORACLE]['accuracy']}")
    out = {"k": len(folds), "split_seed": fold_seed, "folds": fold_results,
           "pooled": {name: summarize_outcomes(outs, seed=cfg.seed) for name, outs in pooled.items()},
           "pooled_paired_tests": paired_tests(pooled, split="test", seed=cfg.seed)}
    if lora_meta:
        out["lora_training"] = lora_meta
    return CVResult(out, pooled)
