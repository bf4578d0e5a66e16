"""Train and compare every controller on the traces of a run, and assemble the summary.

Reads top to bottom: group records by split -> fixed policies and the oracle -> learned
controllers for the base seed (rule with model choice on dev, LoRA policies, the shuffled control,
DAgger) -> the same learners retrained for every further seed (``--seeds``) -> budget frontier ->
cross-validation (repeated over fold assignments with ``--split-seeds``, ``split_seeds.py``) ->
paired tests and failure analysis.

Seeds: ``policy_results`` holds the base seed's learned controllers (the one whose adapters,
predictions and paired tests are reported); ``seeds.<policy>.<split>`` holds every seed's exact
count, so a claim about a learned controller can be checked across seeds; a learner that took the
same actions at every seed is marked ``deterministic`` (its seeds are one observation).
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from tracegen.grading import program_right

from tracegen.errors import check

from controller.env.confidence import records_for_learners
from controller.env.cost import cost_kinds, cost_units, unit
from controller.learn.lora import LoraPolicyConfig
from controller.learn.lora_policy import LoraAdapter
from controller.learn.registry import LEARNERS, Fitting
from controller.learn.task_prompt import use_records
from controller.study.assemble import assemble, learners
from controller.study.failures import failure_breakdown, repair_pass_rates
from controller.learn.nulls import commit_any_headroom
from controller.env.registry import BEST_FIXED, ORACLE, REGISTRY, names, spec
from controller.learn.cost_rule import LAMBDAS
from controller.env.traceenv import SPLITS, TraceEnv, scored as _scored
from controller.study.cv import run_cv
from controller.study.within_family import within_family
from controller.study.savings import savings_table
from controller.study.sections import study_sections
from controller.study.split_seeds import split_seed_outcomes, spread_summary
from controller.study.stats import paired_tests, summarize_outcomes
from controller.learn.training import labelled

POLICY_NAMES = names()


@dataclass
class ExperimentConfig:
    seed: int = field(default=0, metadata={"help": "seed for sampling and for every learner", "flag": "--seed"})
    train_lora: bool = field(default=False, metadata={"help": "train the LoRA sequence policy (lora_seq_policy)"})
    train_shuffled_lora: bool = field(default=False, metadata={
        "help": "train the shuffled-label control (lora_shuffled_seq)"})
    dagger_iters: int = field(default=0, metadata={"help": "DAgger iterations after the oracle-trajectory start"})
    dagger_beta: float = field(default=0.5, metadata={"help": "DAgger initial oracle mixing rate (annealed to 0)"})
    cv_folds: int = field(default=0, metadata={"help": "family-level cross-validation folds (0: off)"})
    cost: str = field(default="generations", metadata={
        "choices": cost_kinds,
        "help": "cost model for the oracle labels, the learners and the budget frontier: generations (program "
                "rounds), tokens (completion tokens) or work (search nodes for synth, completion tokens for models)"})
    seeds: int = field(default=1, metadata={"help": "retrain every learned controller and the shuffled control "
                                                    "with seeds SEED..SEED+N-1 and report mean [min, max]"})
    frontier_lambdas: tuple[float, ...] = field(default=(0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0),
                                                metadata={"help": "prices of tools swept for the rule's frontier"})
    rule_lambdas: tuple[float, ...] = field(default=LAMBDAS, metadata={
        "help": "prices of tools (value = right - price x cost per case) the learned rule chooses from on dev"})
    margin: float = field(default=0.02, metadata={
        "help": "accuracy margin (share of cases) of the learned rule's dev guard against always-tool"})
    nested_rule: bool = field(default=False, metadata={
        "help": "also fit nested_rule (exploratory): the learned rule with its model and price chosen by nested "
                "family cross-validation on train + dev (NESTED_FOLDS inner folds), refit in every CV fold"})
    nested_folds: int = field(default=4, metadata={
        "help": "with --nested-rule: family-grouped inner folds on train + dev that choose its model and price"})
    lora_frontier_lambdas: tuple[float, ...] = field(default=(), metadata={
        "help": "with --train-lora: prices of tools at which the LoRA policy is retrained for its accuracy-vs-cost "
                "frontier, e.g. 0.02,0.1 (one training each; default: none, the quickstart trains the policy once)",
        "flag": "--lora-frontier"})
    policies: tuple[str, ...] | None = field(default=None, metadata={
        "help": "comma-separated policies to report (default: all that were run)"})
    confidence: bool = field(default=True, metadata={
        "help": "turn the model's confidence off as a learner input: by default the learners (the rule, the LoRA "
                "policy, DAgger, the nulls) read its token log-probability features where the traces record them "
                "and the report says what they add (the rule refit without them, same folds); with this flag the "
                "whole analysis sees the traces as if no log-probability were recorded"})
    progress: bool = True
    bootstrap_resamples: int = 2000
    lora: LoraPolicyConfig = field(default_factory=LoraPolicyConfig)
    adapters_dir: str = "reports/adapters"
    study: str | None = field(default=None, metadata={
        "help": "study file (TOML or JSON, e.g. studies/foofah.toml): the primary hypotheses and cost unit; "
                "pre-registered only when committed before the traces started (default: a built-in study, not "
                "registered)", "metavar": "FILE"})
    model_card: str | None = field(default=None, metadata={
        "help": "JSON file saying how the traced model was made (base, training, the recipe it departs from, its "
                "training completions' lengths: controller/study/coder.py), for the report's deviations (default: "
                "the sft_config.json that `sft` wrote into the --model folder, if any)", "metavar": "FILE"})
    within_family: bool = field(default=True, metadata={
        "help": "leave out the secondary analysis of the task type's value: by default, with --cv-folds, the same "
                "learners and comparators are also cross-validated case by case within families (every family "
                "seen in training; the LoRA policies not refit), beside the family-disjoint primary"})
    split_seed: int = 0  # fold seed of cross-validation: a run sets it to its split_seed
    split_seeds: int = field(default=1, metadata={"help": "with --cv-folds: repeat cross-validation with N fold "
                                                          "assignments (fold seeds SPLIT_SEED..SPLIT_SEED+N-1) and "
                                                          "report every CV result's spread"})

    def __post_init__(self) -> None:
        for name in ("dagger_iters", "cv_folds"):
            check(getattr(self, name) >= 0, name, f"must be >= 0, got {getattr(self, name)}")
        check(self.cv_folds != 1, "cv_folds", "needs at least 2 folds (or 0 to turn cross-validation off)")
        check(0 <= self.dagger_beta <= 1, "dagger_beta", f"must be in [0, 1], got {self.dagger_beta}")
        check(self.cost in cost_kinds(), "cost", f"unknown cost model {self.cost!r}; use {', '.join(cost_kinds())}")
        for name in ("seeds", "split_seeds"):
            check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        check(self.model_card is None or os.path.isfile(self.model_card), "model_card",
              f"{self.model_card}: no such file")
        check(self.split_seeds == 1 or self.cv_folds, "split_seeds",
              "repeats cross-validation; set `cv_folds` (>= 2) too")
        unknown = sorted(p for p in self.policies or () if spec(p) is None)
        check(not unknown, "policies", f"unknown policy {unknown[0]!r}; choose from {', '.join(POLICY_NAMES)}"
              if unknown else "")
        bad = [w for w in (*self.frontier_lambdas, *self.lora_frontier_lambdas) if w < 0]
        check(not bad, "lora_frontier_lambdas" if set(bad) & set(self.lora_frontier_lambdas) else "frontier_lambdas",
              f"trade-off weights must be >= 0, got {bad[0] if bad else 0}")
        check(bool(self.rule_lambdas) and min(self.rule_lambdas) >= 0, "rule_lambdas",
              f"needs at least one price, each >= 0, got {self.rule_lambdas}")
        check(0 <= self.margin < 1, "margin", f"must be in [0, 1), got {self.margin}")
        check(self.nested_folds >= 2, "nested_folds", f"needs at least 2 inner folds, got {self.nested_folds}")


def by_split(records):
    return {s: [r for r in records if r["split"] == s] for s in SPLITS}


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


def _evaluate_on(policy, env: TraceEnv, seed: int = 0) -> dict:
    return {s: summarize_outcomes(env.simulate(policy, env.split(s)), seed=seed) for s in ("dev", "test")}


def _per_split(outs, seed: int) -> dict:
    return {s: summarize_outcomes([o for o in outs if o["split"] == s], seed=seed) for s in SPLITS}


def fitting(env: TraceEnv, cfg: ExperimentConfig, log=print, lora_worker=None) -> Fitting:
    """The run's own split as the learners' ``Fitting`` (scored train and dev records)."""
    return Fitting(env, env.split("train", only_scored=True), env.split("dev", only_scored=True), cfg,
                   worker=lora_worker, log=log, evaluate=lambda p: _evaluate_on(p, env, cfg.seed))


def _which(base_seed: bool):
    # the base seed trains every learner; a further seed only those retrained per seed (``seeds`` holds claims)
    return (lambda x: True) if base_seed else (lambda x: x.seeded)


def _learner_parts(ctx: Fitting) -> tuple[dict, dict]:
    """(info, timing) of a fitting, with the LoRA trainings' record (``lora_training``) last."""
    if ctx.lora_meta:
        ctx.info["lora_training"] = ctx.lora_meta
    return ctx.info, ctx.timing


def train_learners(env: TraceEnv, cfg: ExperimentConfig, log=print, base_seed: bool = True,
                   lora_worker=None) -> tuple[dict, dict, dict]:
    """Every learner of the learner table for ``cfg.seed`` (``base_seed``: the ones trained at the
    base seed only too): (policies in fit order, info, timing).

    ``lora_worker``: train the LoRA policies there; their ``info`` and ``timing`` entries are then
    complete once the policies have been used (or the worker closed).
    """
    use_records(env.records)  # what the LoRA policy's task prompt (--lora-prompt task) reads
    ctx = fitting(env, cfg, log, lora_worker)
    learned, derived = learners(ctx, _which(base_seed))
    return {**learned, **derived}, *_learner_parts(ctx)


def seed_table(per_seed: dict[int, dict[str, dict]], actions: dict[int, dict[str, tuple]] | None = None) -> dict:
    """``{seed: {policy: per-split summaries}}`` -> ``seeds.<policy>.<split>`` (contract).

    ``actions`` (``{seed: {policy: per-case action sequences}}``) marks a policy
    ``deterministic`` when every seed took the same actions on every case: its seeds are then one
    observation repeated, and the report shows one number, not N."""
    seeds = sorted(per_seed)
    out: dict = {}
    for policy in sorted({p for res in per_seed.values() for p in res}):
        have = [s for s in seeds if policy in per_seed[s]]
        out[policy] = {}
        acts = [actions[s][policy] for s in have if actions and policy in actions.get(s, {})]
        det = len(acts) == len(have) > 1 and all(a == acts[0] for a in acts)
        for split in ("dev", "test"):
            rows = [per_seed[s][policy][split] for s in have]
            exact = [r["exact"] for r in rows]
            out[policy][split] = {"seeds": have, "exact": exact, "n": rows[0]["n"] if rows else 0,
                                  "program_generations": [r["program_generations"] for r in rows],
                                  "mean": sum(exact) / len(exact) if exact else None,
                                  "min": min(exact, default=None), "max": max(exact, default=None),
                                  "deterministic": det}
    return out


def _actions(outs) -> tuple:
    return tuple((o["case_id"], tuple(o["actions"])) for o in outs)


def single_thread_blas():
    """numpy's and scipy's OpenBLAS on one thread for the block (``threadpoolctl``, a scikit-learn
    dependency). The rule's models are tiny (hundreds of rows, ~40 features): a second BLAS thread
    only waits, and on a busy machine it made every logistic fit 2-7x slower. The results are the
    same bit for bit (checked on the coefficients and probabilities). torch's own MKL is untouched.
    scikit-learn is imported first so that scipy's copy of OpenBLAS is loaded and limited too."""
    try:
        import sklearn.linear_model  # noqa: F401  (loads scipy.optimize and its OpenBLAS)
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def needs_lora_worker(cfg: ExperimentConfig) -> bool:
    return bool(cfg.train_lora or cfg.train_shuffled_lora)


@dataclass
class ExperimentResult:
    """What a study of one run's traces gives: ``summary`` (the study keys of
    ``final_summary.json``), ``outcomes`` (per policy, one outcome per case of the run's splits),
    ``cv_pooled`` (per policy, the pooled cross-validation outcomes of the base split seed) and
    ``split_seed_records`` (``split_seeds.split_seed_outcomes``: every split seed's pooled per-case
    records, None without ``--split-seeds`` > 1). Unpacks as ``summary, outcomes``."""

    summary: dict
    outcomes: dict
    cv_pooled: dict = field(default_factory=dict)
    split_seed_records: list | None = None

    def __iter__(self):
        return iter((self.summary, self.outcomes))


def run_experiment(records: list[dict], cfg: ExperimentConfig, log=print, lora_worker=None) -> ExperimentResult:
    """Train, simulate and compare every controller on ``records`` (see ``ExperimentResult``).

    The LoRA policies train in a side process (``lora_worker.LoraWorker``), so its imports and
    trainings overlap the rule, the null baselines, the frontier, cross-validation and the other
    simulations. ``lora_worker``: one the caller started earlier (and closes); else one is
    started here when a LoRA policy is trained."""
    t0 = time.monotonic()
    records = records_for_learners(records, cfg.confidence)  # --no-confidence: as if none were recorded
    worker = lora_worker
    if worker is None and needs_lora_worker(cfg):
        from controller.learn.lora_worker import LoraWorker

        worker = LoraWorker()
    try:
        with single_thread_blas():
            return _run_experiment(records, cfg, log, t0, worker)
    finally:
        if worker is not None and lora_worker is None:
            worker.close()


def _simulate_all(policies: dict, env: TraceEnv) -> dict:
    """Every policy's outcomes, in ``policies`` order. The LoRA policies are simulated last: with a
    worker, the others run while it still trains (each simulation is independent of the others)."""
    lora = [k for k, p in policies.items() if isinstance(p, LoraAdapter)]
    outs = {k: env.simulate(p) for k, p in policies.items() if k not in lora}
    outs.update({k: env.simulate(policies[k]) for k in lora})
    return {k: outs[k] for k in policies}


def _run_experiment(records: list[dict], cfg: ExperimentConfig, log, t0: float, worker) -> ExperimentResult:
    from dataclasses import replace

    env = TraceEnv(records)  # one memo of states, shared by every simulation of these records
    use_records(env.records)  # what the LoRA policy's task prompt (--lora-prompt task) reads
    ctx = fitting(env, cfg, log, worker)
    # the best fixed policy is chosen on train + dev (never test); every learner is compared with it
    a = assemble(ctx, records, samples_in_best=False)  # unscored cases get DIRECT from the oracle
    info, timing = _learner_parts(ctx)
    info["best_fixed"] = a.best_info
    learned = {**a.learned, **a.derived}
    policies = {**a.fixed, BEST_FIXED: a.best, ORACLE: a.oracle, **a.learned}

    # --- first what no LoRA policy enters (with a worker, it runs while the worker trains): the
    # frontiers of the learners that train here and cross-validation; they take their places below
    t = time.monotonic()
    sweeps = {x.name: x.frontier(ctx) for x in LEARNERS.values() if x.frontier and x.name in learned}
    sweeps = {k: v for k, v in sweeps.items() if v}  # (prices, fit, known): a learner's frontier this run asks for
    frontier = {k: _frontier(*sweeps[k], env, cfg) for k in sweeps if not isinstance(learned[k], LoraAdapter)}
    early_frontier_s = time.monotonic() - t
    cv_parts, cv_timing, cv_pooled, seed_records = (_cross_validation(records, cfg, log, worker) if cfg.cv_folds
                                                     else ({}, {}, {}, None))

    # --- simulate every policy on every split (the K > 1 fixed policies, then the derived learners)
    policies.update(a.samples)  # --program-samples K > 1: policies that RESAMPLE
    outcomes = _simulate_all(policies, env)
    for dname, pol in a.derived.items():
        outcomes[dname] = env.simulate(pol)
    results = {name: _per_split(outs, cfg.seed) for name, outs in outcomes.items()}
    info["commit_any_sample"] = commit_any_headroom(records, outcomes[ORACLE], cost=cfg.cost)
    info["savings"] = savings_table(outcomes)
    summary = {"splits": split_counts(records), "policy_results": results, **info,
               "cost_units": cost_units(env.scored())}

    # --- every further seed: retrain every learner, keep its per-split results ------------
    if cfg.seeds > 1:
        t = time.monotonic()
        seeded = [k for k in learned if REGISTRY[k].seeded]
        per_seed = {cfg.seed: {k: results[k] for k in seeded}}
        actions = {cfg.seed: {k: _actions(outcomes[k]) for k in seeded}}
        rule_models = {cfg.seed: info["learned_rule"]["model"]}
        for i in range(1, cfg.seeds):
            s = cfg.seed + i
            scfg = replace(cfg, seed=s, adapters_dir=f"{cfg.adapters_dir}/seed{s}")
            pols, sinfo, _ = train_learners(env, scfg, log=log, base_seed=False, lora_worker=worker)
            outs = _simulate_all(pols, env)
            per_seed[s] = {k: _per_split(o, s) for k, o in outs.items()}
            actions[s] = {k: _actions(o) for k, o in outs.items()}
            rule_models[s] = sinfo["learned_rule"]["model"]
            log(f"seed {s}: " + ", ".join(f"{k} test {v['test']['exact']}/{v['test']['n']}"
                                          for k, v in per_seed[s].items()))
        summary["seeds"] = seed_table(per_seed, actions)
        summary["seed_rule_models"] = {str(k): v for k, v in rule_models.items()}
        timing["seeds_s"] = round(time.monotonic() - t, 2)

    # --- budget frontier (the rule's was computed first) -------------------------------------
    t = time.monotonic()
    summary["frontier"] = {k: frontier[k] if k in frontier else _frontier(*sweeps[k], env, cfg) for k in sweeps}
    timing["frontier_s"] = round(early_frontier_s + time.monotonic() - t, 2)

    # --- cross-validation (computed first) ---------------------------------------------------
    summary.update(cv_parts)
    timing.update(cv_timing)
    if cv_parts.get("cv"):
        summary["savings"] = savings_table(outcomes, pooled=cv_pooled)

    # --- statistics and failures -----------------------------------------------------------
    if cfg.policies:
        outcomes = {k: v for k, v in outcomes.items() if k in cfg.policies}
        summary["policy_results"] = {k: v for k, v in results.items() if k in cfg.policies}
    summary["paired_tests"] = {s: paired_tests(outcomes, split=s, seed=cfg.seed) for s in ("dev", "test")}
    summary["failures"] = failure_breakdown(records, outcomes)
    summary["repair_rounds"] = repair_pass_rates(records)
    t = time.monotonic()
    summary.update(study_sections(records, outcomes, summary, cv_pooled=cv_pooled, split_seed_records=seed_records,
                                  study=cfg.study, cost=cfg.cost, seed=cfg.seed))
    timing["study_s"] = round(time.monotonic() - t, 2)
    timing["controllers_total_s"] = round(time.monotonic() - t0, 2)
    summary["timing"] = timing
    return ExperimentResult(summary, outcomes, cv_pooled, seed_records)


def _cross_validation(records, cfg: ExperimentConfig, log, worker=None) -> tuple[dict, dict, dict, list | None]:
    """(summary parts, timing, pooled outcomes, split-seed records): ``cv`` and, with
    ``split_seeds`` > 1, ``split_seeds`` (every learner, the LoRA policy included, refit at every split seed)."""
    parts, timing = {}, {}
    t = time.monotonic()
    cv = run_cv(records, cfg, log=log, lora_worker=worker)
    parts["cv"] = cv.summary
    timing["cv_s"] = round(time.monotonic() - t, 2)
    per_seed = None
    if cfg.split_seeds > 1:  # the same CV under further fold assignments (split_seeds.py)
        t = time.monotonic()
        per_seed = split_seed_outcomes(records, cfg, log=log, first_cv=cv)
        parts["split_seeds"] = spread_summary(per_seed)
        timing["split_seeds_s"] = round(time.monotonic() - t, 2)
    if cfg.within_family:  # the secondary: every family seen in training (within_family.py)
        t = time.monotonic()
        parts["within_family"] = within_family(records, cfg, log=log)
        timing["within_family_s"] = round(time.monotonic() - t, 2)
    return parts, timing, cv.pooled, per_seed


def _frontier(lambdas, fit: Callable, known: dict | None, env: TraceEnv, cfg: ExperimentConfig) -> dict:
    """Sweep the trade-off weight: oracle labels that charge lam per unit cost -> one policy each.

    ``known`` maps a weight to a policy already trained on exactly those labels (not refit).
    ``cost`` per case is in the unit ``controller.cost.cost_unit`` names (thousands for tokens
    and work)."""
    points, pairs = [], env.chain_pairs(env.split("train", only_scored=True))  # the same at every weight
    for lam in lambdas:
        pol = (known or {}).get(lam) or fit(labelled(pairs, lam, cfg.cost, tie_weight=0.0), lam)
        for split in ("dev", "test"):
            outs = env.simulate(pol, env.split(split, only_scored=True))
            summ = summarize_outcomes(outs, seed=cfg.seed)
            n = max(len(outs), 1)
            points.append({"lambda": lam, "split": split, "cost": round(unit(cfg.cost).per_case(summ, n), 4),
                           "accuracy": summ["accuracy"],
                           "program_generations": summ["program_generations"], "work": summ["work"],
                           "generated_tokens": summ["generated_tokens"], "exact": summ["exact"], "n": summ["n"]})
    return {"cost": cfg.cost, "points": points}
