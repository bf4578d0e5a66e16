"""The learners: one entry each, carrying how it is trained and how the report shows it.

A ``Learner`` names the policies it trains (each with its role; ``register`` adds them to the
policy table, ``controller.env.registry``), its ``fit`` (a ``Fitting`` in, ``{policy: policy}``
out), its report ``section`` and when it is trained: at every learner seed (``seeded``), in every
cross-validation fold (``in_folds``), and whether it is built on other learners' fits
(``built_on``: DAgger). The study's one assembly step (``controller.study.assemble``) fits every
entry in table order, the base learners first and those built on others last, for the run's own
split and for each fold alike; the report renders each entry's section. A new learner is one
``register(Learner(...))`` (docs/development.md#adding-a-learner).

The section is a function of the summary returning markdown lines, or ``"module:function"``
naming one in ``controller.report``: this room sits below the report and never imports it, and
the report resolves the name (``controller.report.learners.learner_sections``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from controller.env.registry import REGISTRY, PolicySpec, register as register_policy
from controller.learn.cost_rule import fit_learned_rule
from controller.learn.dagger import run_dagger
from controller.learn.lora_policy import lora_fit
from controller.learn import nested_rule
from controller.learn.nulls import train_nulls
from controller.learn.rule import dev_tie, fit_rule
from controller.learn.training import labelled


@dataclass
class Fitting:
    """One training split's inputs and what its learners write: the run's own split or a CV fold's.

    ``policies`` fills in fit order, so a learner reads the ones it builds on; ``memo`` holds what
    learners share (the learned rule's fit, LoRA's labelled states); ``info`` the summary parts."""

    env: Any                      # controller.env.traceenv.TraceEnv of the split's records
    train: list                   # scored training records
    dev: list                     # scored dev records: model choice, the price of tools, early stopping
    cfg: Any                      # the study's ExperimentConfig (seed, cost, lora, dagger_iters, ...)
    fold: int | None = None       # the CV fold (None: the run's own split)
    fold_seed: int | None = None  # the fold assignment's seed (CV only)
    worker: Any = None            # the LoRA side-process worker (lora_worker.LoraWorker), if any
    log: Callable = print
    evaluate: Callable | None = None  # policy -> per-split summaries (DAgger's history)
    policies: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    lora_meta: dict = field(default_factory=dict)
    memo: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Learner:
    name: str
    policies: tuple[PolicySpec, ...]       # what it trains, each with its role (learned, null, control)
    fit: Callable[[Fitting], dict]         # {policy name: policy}; empty when this run does not ask for it
    section: str | Callable[[Mapping], list] | None = None  # its report section (module docstring)
    seeded: bool = False                   # retrained at every learner seed (else at the base seed only)
    in_folds: bool = False                 # refit in every cross-validation fold
    built_on: tuple[str, ...] = ()         # learners it extends: fitted after the others, listed last
    beside: Mapping[str, str] = field(default_factory=dict)  # policy -> the policy it is listed after
    frontier: Callable[[Fitting], tuple | None] | None = None  # (prices, fit(data, price), known) to sweep


LEARNERS: dict[str, Learner] = {}


def register(learner: Learner) -> Learner:
    """Add a learner and its policies (policy table, report order by role)."""
    for p in learner.policies:
        register_policy(replace(p, seeded=learner.seeded), after=learner.beside.get(p.name))
    LEARNERS[learner.name] = learner
    return learner


def unregister(name: str) -> None:
    """Remove a learner and its policies (a test's fake learner)."""
    for p in LEARNERS.pop(name).policies:
        REGISTRY.pop(p.name, None)


def fit_order() -> list[Learner]:
    """Table order, the learners built on others last."""
    return sorted(LEARNERS.values(), key=lambda x: bool(x.built_on))


def fit_learners(ctx: Fitting, which: Callable[[Learner], bool] = lambda x: True) -> dict:
    """Fit every learner ``which`` accepts, in ``fit_order``; ``ctx.policies`` holds the result."""
    for learner in fit_order():
        if which(learner):
            ctx.policies.update(learner.fit(ctx))
    return ctx.policies


# ----------------------------------------------------------------------------- the built-in learners


def _rule(ctx: Fitting) -> dict:
    """The cost-sensitive rule, its price of tools chosen on dev under the accuracy guard."""
    t0 = time.monotonic()
    rule, data, rule_info = fit_learned_rule(ctx.env, ctx.train, ctx.dev, ctx.cfg)
    ctx.memo["rule"] = (rule, data, rule_info)
    if ctx.fold is not None:  # a fold's record says what dev chose there
        ctx.info.update(rule_model=rule.model_name, rule_lambda=rule_info["lambda"])
    else:
        chosen = next(r for r in rule_info["lambdas"] if r["lambda"] == rule_info["lambda"])
        ctx.info["learned_rule"] = {
            "model": rule.model_name, "candidates": chosen["candidates"], "dev_tie": dev_tie(chosen["candidates"]),
            "n_train_states": len(data), "training": rule_info["training"],
            "price": {k: v for k, v in rule_info.items() if k != "training"}, "description": rule.describe()}
        ctx.timing["rule_s"] = round(time.monotonic() - t0, 2)
    return {"learned_rule": rule}


NO_CONFIDENCE = "learned_rule_no_confidence"


def _rule_without_confidence(ctx: Fitting) -> dict:
    """What confidence adds: the learned rule fit again, price and model chosen on the same dev, on
    the same records with their log-probabilities taken out (``env.confidence``). Only where the
    training records recorded some and ``--no-confidence`` is off; in every CV fold, so the two are
    compared on the same folds."""
    from controller.env.confidence import records_have_confidence, without_confidence
    from controller.env.traceenv import TraceEnv

    if not ctx.cfg.confidence or not records_have_confidence(ctx.train):
        return {}
    t0 = time.monotonic()
    plain = {id(r): without_confidence(r) for r in ctx.env.records}
    env = TraceEnv(list(plain.values()))
    rule, _, info = fit_learned_rule(env, [plain[id(r)] for r in ctx.train], [plain[id(r)] for r in ctx.dev], ctx.cfg,
                                     name=NO_CONFIDENCE)
    if ctx.fold is None:
        ctx.info[NO_CONFIDENCE] = {"model": rule.model_name, "lambda": info["lambda"], "description": rule.describe()}
        ctx.timing["rule_no_confidence_s"] = round(time.monotonic() - t0, 2)
    return {NO_CONFIDENCE: rule}


def _rule_frontier(ctx: Fitting):
    rule, _, info = ctx.memo["rule"]
    fit = lambda d, lam: fit_rule(d, rule.model_name, ctx.cfg.seed, name=f"rule_lam{lam}")
    # at the rule's own price the labels are the learned rule's (same model, data and seed): reuse it
    return ctx.cfg.frontier_lambdas, fit, {info["lambda"]: rule}


def _nulls(ctx: Fitting) -> dict:
    """Reference points (majority action, shuffled labels, imitation baselines) on the rule's data."""
    t0 = time.monotonic()
    rule, data, info = ctx.memo["rule"]
    pols, ctx.info["nulls"] = train_nulls(ctx.train, data, rule.model_name, seed=ctx.cfg.seed, cost=ctx.cfg.cost,
                                          lam=info["lambda"])
    ctx.timing["nulls_s"] = round(time.monotonic() - t0, 2)
    return pols


def _lora_labels(ctx: Fitting, records) -> Any:
    """LoRA's training set: the rule's objective and price over the majority-commit action space."""
    lam = ctx.memo["rule"][2]["lambda"]
    return labelled(ctx.env.chain_pairs(records), lam, ctx.cfg.cost, commit_any=False, tie_weight=0.0)


def _lora_data(ctx: Fitting) -> tuple:
    """(dev, train) labelled once and shared by the LoRA learners of this split."""
    if "lora_data" not in ctx.memo:
        ctx.memo["lora_data"] = (_lora_labels(ctx, ctx.dev), _lora_labels(ctx, ctx.train))
    return ctx.memo["lora_data"]


def _lora(name: str, shuffle: bool, flag: str, timing_key: str) -> Callable[[Fitting], dict]:
    def fit(ctx: Fitting) -> dict:
        cfg = ctx.cfg
        if not getattr(cfg, flag) or (ctx.fold is not None and cfg.lora is None):
            return {}
        dev, train = _lora_data(ctx)
        if ctx.fold is None:
            return {name: lora_fit(cfg, name, shuffle, dev, ctx.lora_meta, ctx.worker, ctx.timing, timing_key)(train)}
        base = ctx.fold_seed == cfg.split_seed  # tags: lora_cv{i} at the base split seed, lora_s{seed}_cv{i} beyond
        tag = f"lora_cv{ctx.fold}" if base else f"lora_s{ctx.fold_seed}_cv{ctx.fold}"
        return {name: lora_fit(cfg, tag, shuffle, dev, ctx.lora_meta, ctx.worker)(train)}

    return fit


def _lora_frontier(ctx: Fitting):
    cfg = ctx.cfg
    if not (cfg.train_lora and cfg.lora_frontier_lambdas):
        return None
    fit = lora_fit(cfg, "lora_frontier", False, worker=ctx.worker)  # no early stopping: one training per price
    return cfg.lora_frontier_lambdas, lambda d, lam: fit(d, f"lam{lam}"), {}


def _dagger(ctx: Fitting) -> dict:
    """DAgger on the learned rule and, with --train-lora, on the LoRA policy.

    In a cross-validation fold only where it can add a state (the traces hold K > 1 program
    samples: at K = 1 every reachable state is on the recorded chain), and on the rule alone (a
    LoRA DAgger per fold and split seed would cost more than the whole rest of the analysis)."""
    cfg = ctx.cfg
    if cfg.dagger_iters <= 0:
        return {}
    if ctx.fold is not None and not any(r.get("samples") for r in ctx.train):
        return {}
    t = time.monotonic()
    rule, _, rule_info = ctx.memo["rule"]
    bases = {"learned_rule": (lambda d, i: fit_rule(d, rule.model_name, cfg.seed, name="learned_rule_dagger"),
                              "learned_rule_dagger")}
    if cfg.train_lora and ctx.fold is None:
        bases["lora_seq_policy"] = (lora_fit(cfg, "lora_dagger", False, _lora_data(ctx)[0], ctx.lora_meta, ctx.worker),
                                    "lora_dagger")
    out = {}
    if ctx.fold is None:
        ctx.info["dagger"] = {}
    for base, (fit, dname) in bases.items():
        final, hist = run_dagger(fit, ctx.train, iters=cfg.dagger_iters, beta0=cfg.dagger_beta, seed=cfg.seed,
                                 evaluate=ctx.evaluate, cost=cfg.cost, lam=rule_info["lambda"], tie_weight=0.0,
                                 commit_any=base == "learned_rule")  # LoRA: no PROGRAM:j (lora_policy.lora_examples)
        final.name = dname
        out[dname] = final
        if ctx.fold is not None:  # a fold's iterations are not evaluated; its test is the pooled CV
            continue
        ctx.info["dagger"][base] = hist
        ctx.log(f"dagger[{base}] seed {cfg.seed}: " + ", ".join(f"it{h['iter']} test={h['test']['accuracy']}"
                                                                for h in hist))
    ctx.timing["dagger_s"] = round(time.monotonic() - t, 2)
    return out


_SECTIONS = "controller.report.learners"
register(Learner("learned_rule", (PolicySpec("learned_rule", "learned", about="BC on the recorded sample-0 chains"),), _rule,
                 section=f"{_SECTIONS}:learned_rule_md", seeded=True, in_folds=True, frontier=_rule_frontier))
register(Learner(NO_CONFIDENCE, (PolicySpec(NO_CONFIDENCE, "control",
                                             about="the learned rule without the confidence features (what they add)"),),
                 _rule_without_confidence, in_folds=True, beside={NO_CONFIDENCE: "learned_rule"}))
register(Learner("nulls", (
    PolicySpec("majority_action", "null", about="base-rate null: weighted-majority training label per decision point"),
    PolicySpec("learned_rule_shuffled", "control", about="rule on (label, weight) pairs permuted together"),
    PolicySpec("learned_rule_bc_oracle", "null", about="BC on the oracle's trajectories (= DAgger iteration 0's data)"),
    PolicySpec("learned_rule_bc_all", "null", about="BC on every reachable state of the recorded tree")),
                 _nulls, section="controller.report.nulls:nulls_section"))
register(Learner("lora_seq_policy", (PolicySpec("lora_seq_policy", "learned"),),
                 _lora("lora_seq_policy", False, "train_lora", "lora_s"), seeded=True, in_folds=True,
                 frontier=_lora_frontier, section="controller.report.lora:lora_md"))
register(Learner("lora_shuffled_seq", (PolicySpec("lora_shuffled_seq", "control",
                                                    about="LoRA on (label, weight) pairs permuted together"),),
                 _lora("lora_shuffled_seq", True, "train_shuffled_lora", "lora_shuffled_s"), seeded=True))
register(Learner("dagger", (PolicySpec("learned_rule_dagger", "learned", about="DAgger (aggregated learner + oracle states)"),
                            PolicySpec("lora_dagger", "learned")),
                 _dagger, section=f"{_SECTIONS}:dagger_md", seeded=True, in_folds=True,
                 built_on=("learned_rule", "lora_seq_policy"),
                 beside={"learned_rule_dagger": "learned_rule", "lora_dagger": "lora_seq_policy"}))
register(Learner("nested_rule", (PolicySpec("nested_rule", "learned"),), nested_rule.fit,
                 section="controller.report.nested_rule:nested_rule_md", seeded=True, in_folds=True,
                 beside={"nested_rule": "learned_rule"}))
