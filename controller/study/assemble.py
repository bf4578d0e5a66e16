"""The one policy-assembly step of a study, for the run's own split and for every CV fold alike.

A split's policies: the fixed policies (those needing K > 1 samples apart), the best fixed policy
(chosen on train + dev, never test), the hindsight oracle, and every learner of the learner table
(``controller.learn.registry``), fitted in its order: the base learners, then those built on
them (DAgger). ``experiment.py`` and ``cv.py`` lay these out in their summaries' order; neither
names a learner.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from controller.env.policies import Oracle
from controller.env.registry import fixed_policies
from controller.env.resample import has_samples
from controller.env.traceenv import max_repairs
from controller.learn.best_fixed import choose_best_fixed
from controller.learn.registry import LEARNERS, Fitting, Learner, fit_learners


@dataclass
class Assembly:
    fixed: dict        # the fixed policies that work at K = 1
    samples: dict      # the fixed policies that need K > 1 samples (none at K = 1)
    best: object       # best_fixed (``best_fixed.Renamed``)
    best_info: dict
    oracle: Oracle
    learned: dict      # the base learners' policies, in fit order
    derived: dict      # the policies of learners built on others (DAgger), in fit order


def learners(ctx: Fitting, which: Callable[[Learner], bool] = lambda x: True) -> tuple[dict, dict]:
    """(base learners' policies, derived ones) of ``which`` learners, fitted on ``ctx``."""
    pols = fit_learners(ctx, which)
    built_on = {p.name for x in LEARNERS.values() if x.built_on for p in x.policies}
    return ({k: v for k, v in pols.items() if k not in built_on}, {k: v for k, v in pols.items() if k in built_on})


def assemble(ctx: Fitting, oracle_records, *, samples_in_best: bool,
             which: Callable[[Learner], bool] = lambda x: True) -> Assembly:
    """Every policy of ``ctx``'s split. ``samples_in_best``: the K > 1 fixed policies are candidates
    for best_fixed (a CV fold's choice; the run's own split chooses among the K = 1 ones, as it
    always has); ``oracle_records``: the records the oracle labels (unscored cases get DIRECT)."""
    env, cfg = ctx.env, ctx.cfg
    fixed = fixed_policies(max_repairs=max_repairs(env.records))
    samples = fixed_policies(chain=False, samples=True) if has_samples(env.scored()) else {}
    best, best_info = choose_best_fixed(env, {**fixed, **samples} if samples_in_best else fixed,
                                        ctx.train + ctx.dev, cfg.cost, cfg.margin)
    oracle = Oracle(oracle_records, cost=cfg.cost)  # labels and oracle in the run's --cost
    learned, derived = learners(ctx, which)
    return Assembly(fixed, samples, best, best_info, oracle, learned, derived)
