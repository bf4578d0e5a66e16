"""Train and compare every controller on the traces of a run, and assemble the summary.

Reads top to bottom: group records by split -> fixed policies and the oracle -> learned rule
(full-state behaviour cloning, model choice on dev) -> LoRA policies -> DAgger -> budget frontier
-> cross-validation -> paired tests and failure analysis.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from tracegen.grading import program_right

from .dagger import run_dagger
from .failures import failure_breakdown
from .policies import FIXED_POLICIES, TREE_POLICIES, Oracle
from .resample import has_samples
from .rule import fit_rule, select_rule
from .simulate import simulate
from .stats import paired_tests, summarize_outcomes
from .training import full_state_pairs, labelled

SPLITS = ("train", "dev", "test")
POLICY_NAMES = (*FIXED_POLICIES, "oracle_seq", "learned_rule", "lora_seq_policy", "lora_shuffled_seq",
                "learned_rule_dagger", "lora_dagger", *TREE_POLICIES)


@dataclass
class ExperimentConfig:
    seed: int = field(default=0, metadata={"help": "seed for every learner and resampling"})
    train_lora: bool = field(default=False, metadata={"help": "train the LoRA sequence policy"})
    train_shuffled_lora: bool = field(default=False, metadata={"help": "train the shuffled-label LoRA control"})
    dagger_iters: int = field(default=0, metadata={"help": "DAgger iterations after iteration 0 (0: off)"})
    dagger_beta: float = field(default=0.5, metadata={"help": "initial oracle mixing rate, annealed to 0"})
    cv_folds: int = field(default=0, metadata={"help": "family-level cross-validation folds (0: off)"})
    cost: str = field(default="generations", metadata={"help": "cost model: generations or tokens"})
    frontier_lambdas: tuple = field(default=(0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0),
                                    metadata={"help": "trade-off weights swept for the rule's frontier"})
    lora_frontier_lambdas: tuple = field(default=(0.0, 0.5, 0.75),
                                         metadata={"help": "trade-off weights for the LoRA frontier (one training "
                                                           "each); empty: none"})
    policies: tuple | None = field(default=None, metadata={"help": "report only these policies (default: all)"})
    progress: bool = True
    bootstrap_resamples: int = 2000
    lora: object = None  # controller.lora.LoraPolicyConfig, built by the CLI
    adapters_dir: str = "reports/adapters"


def by_split(records):
    return {s: [r for r in records if r["split"] == s] for s in SPLITS}


def _scored(records):
    return [r for r in records if r["hidden"]["answer"] is not None]


def split_counts(records) -> dict:
    """Per split: n, families, direct_exact, program_exact, oracle_union, unscored."""
    out = {}
    for s, recs in by_split(records).items():
        sc = _scored(recs)
        prog = [program_right(x) for x in sc]
        direct = [bool(x["hidden"]["direct_exact"]) for x in sc]
        out[s] = {"n": len(sc), "families": sorted({x["family"] for x in recs}),
                  "direct_exact": sum(direct), "program_exact": sum(prog),
                  "oracle_union": sum(d or p for d, p in zip(direct, prog)),
                  "unscored": len(recs) - len(sc)}
    return out


def _evaluate_on(policy, splits: dict) -> dict:
    return {s: summarize_outcomes(simulate(policy, recs)) for s, recs in splits.items() if s in ("dev", "test")}


def _lora_fit(cfg: ExperimentConfig, name: str, shuffle: bool) -> Callable:
    from dataclasses import replace

    from .lora import PolicyExample, train_lora_policy

    def fit(data, iteration=None):
        examples = [PolicyExample(s.text, tuple(s.valid_actions), l, w)
                    for s, l, w in zip(data.states, data.labels, data.weights) if len(s.valid_actions) > 1]
        lcfg = replace(cfg.lora, seed=cfg.seed, shuffle_labels=shuffle)
        tag = name if iteration is None else f"{name}_{iteration}"
        pol = train_lora_policy(examples, lcfg, f"{cfg.adapters_dir}/{tag}", progress=cfg.progress)
        return _LoraAdapter(pol, name)

    return fit


class _LoraAdapter:
    def __init__(self, inner, name):
        self.inner, self.name = inner, name

    def act(self, states):
        return self.inner.choose([s.text for s in states], [s.valid_actions for s in states]) if states else []


def run_experiment(records: list[dict], cfg: ExperimentConfig, log=print) -> tuple[dict, dict]:
    """Return (summary parts, outcomes by policy)."""
    timing, t0 = {}, time.monotonic()
    splits = by_split(records)
    train = _scored(splits["train"])
    policies = {name: cls() for name, cls in FIXED_POLICIES.items()}
    policies["oracle_seq"] = Oracle(records)  # unscored cases get DIRECT: no action can be right there

    # --- learned rule: full-state behaviour cloning, model choice on dev --------------------
    data = labelled(full_state_pairs(train))
    rule, rule_table = select_rule(data, _scored(splits["dev"]), seed=cfg.seed)
    policies["learned_rule"] = rule
    learned_rule = {"model": rule.model_name, "candidates": rule_table, "n_train_states": len(data),
                    "training": "full_state_bc, regret-weighted oracle labels", "description": rule.describe()}
    timing["rule_s"] = round(time.monotonic() - t0, 2)

    # --- LoRA policies --------------------------------------------------------------------
    if cfg.train_lora:
        t = time.monotonic()
        policies["lora_seq_policy"] = _lora_fit(cfg, "lora_seq_policy", False)(data)
        timing["lora_s"] = round(time.monotonic() - t, 2)
    if cfg.train_shuffled_lora:
        t = time.monotonic()
        policies["lora_shuffled_seq"] = _lora_fit(cfg, "lora_shuffled_seq", True)(data)
        timing["lora_shuffled_s"] = round(time.monotonic() - t, 2)

    # --- simulate every policy on every split ---------------------------------------------
    if has_samples(_scored(records)):  # --program-samples K > 1: policies that RESAMPLE
        policies.update({name: cls() for name, cls in TREE_POLICIES.items()})
    outcomes = {name: simulate(p, records) for name, p in policies.items()}
    results = {name: {s: summarize_outcomes([o for o in outs if o["split"] == s]) for s in SPLITS}
               for name, outs in outcomes.items()}
    summary = {"splits": split_counts(records), "policy_results": results, "learned_rule": learned_rule}

    # --- DAgger ----------------------------------------------------------------------------
    if cfg.dagger_iters > 0:
        t = time.monotonic()
        summary["dagger"] = {}
        fit_rule_iter = lambda d, i: fit_rule(d, rule.model_name, cfg.seed, name="learned_rule_dagger")
        learners = {"learned_rule": fit_rule_iter}
        if cfg.train_lora:
            learners["lora_seq_policy"] = _lora_fit(cfg, "lora_dagger", False)
        for lname, fit in learners.items():
            final, hist = run_dagger(fit, train, iters=cfg.dagger_iters, beta0=cfg.dagger_beta, seed=cfg.seed,
                                     evaluate=lambda p: _evaluate_on(p, splits))
            summary["dagger"][lname] = hist
            dname = "learned_rule_dagger" if lname == "learned_rule" else "lora_dagger"
            final.name = dname
            outcomes[dname] = simulate(final, records)
            results[dname] = {s: summarize_outcomes([o for o in outcomes[dname] if o["split"] == s]) for s in SPLITS}
            log(f"dagger[{lname}]: " + ", ".join(f"it{h['iter']} test={h['test']['accuracy']}" for h in hist))
        timing["dagger_s"] = round(time.monotonic() - t, 2)

    # --- budget frontier -------------------------------------------------------------------
    t = time.monotonic()
    rule_fit = lambda d, lam: fit_rule(d, rule.model_name, cfg.seed, name=f"rule_lam{lam}")
    summary["frontier"] = {"learned_rule": _frontier(rule_fit, train, splits, cfg.frontier_lambdas, cfg)}
    if cfg.train_lora and cfg.lora_frontier_lambdas:
        lora_fit = _lora_fit(cfg, "lora_frontier", False)
        summary["frontier"]["lora_seq_policy"] = _frontier(lambda d, lam: lora_fit(d, f"lam{lam}"), train, splits,
                                                           cfg.lora_frontier_lambdas, cfg)
    timing["frontier_s"] = round(time.monotonic() - t, 2)

    # --- cross-validation ------------------------------------------------------------------
    if cfg.cv_folds:
        from .cv import run_cv

        t = time.monotonic()
        summary["cv"] = run_cv(records, cfg, log=log)
        timing["cv_s"] = round(time.monotonic() - t, 2)

    # --- statistics and failures -----------------------------------------------------------
    if cfg.policies:
        outcomes = {k: v for k, v in outcomes.items() if k in cfg.policies}
        summary["policy_results"] = {k: v for k, v in results.items() if k in cfg.policies}
    summary["paired_tests"] = {s: paired_tests(outcomes, split=s, seed=cfg.seed) for s in ("dev", "test")}
    summary["failures"] = failure_breakdown(records, outcomes)
    timing["controllers_total_s"] = round(time.monotonic() - t0, 2)
    summary["timing"] = timing
    return summary, outcomes


def _frontier(fit: Callable, train, splits, lambdas, cfg: ExperimentConfig) -> dict:
    """Sweep the trade-off weight: oracle labels that charge lam per unit cost -> one policy each."""
    points = []
    for lam in lambdas:
        pol = fit(labelled(full_state_pairs(train), lam, cfg.cost), lam)
        for split in ("dev", "test"):
            outs = [o for o in simulate(pol, _scored(splits[split]))]
            summ = summarize_outcomes(outs)
            n = max(len(outs), 1)
            cost = (summ["program_generations"] if cfg.cost == "generations" else summ["generated_tokens"] / 1000) / n
            points.append({"lambda": lam, "split": split, "cost": round(cost, 4), "accuracy": summ["accuracy"],
                           "program_generations": summ["program_generations"], "exact": summ["exact"], "n": summ["n"]})
    return {"cost": cfg.cost, "points": points}
