"""DAgger over recorded traces.

Simplifications, stated once: the "environment" is the recorded trace (an action reveals what the
trace holds for it, nothing is regenerated), and the expert is the hindsight oracle, which can
label any state exactly. Iteration 0 trains on the oracle's own trajectories (beta = 1). Each
later iteration rolls out the mixture "oracle with probability beta, else the current learner" on
the training traces, labels every visited state with the oracle, aggregates (each (case, step)
once) and retrains. beta anneals linearly from ``beta0`` to 0 at the last iteration.

The learner is any ``fit(training_set, iteration) -> policy`` callable, so the scikit-learn
rule and the LoRA policy share this loop.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .policies import Mixture, Oracle
from .simulate import simulate
from .training import labelled, oracle_pairs


def beta_schedule(iters: int, beta0: float = 0.5) -> list[float]:
    """beta for iterations 1..iters, linear from beta0 down to 0 at the last."""
    if iters <= 0:
        return []
    if iters == 1:
        return [0.0]
    return [round(beta0 * (1 - i / (iters - 1)), 4) for i in range(iters)]


def run_dagger(fit: Callable, train: Sequence[dict], *, iters: int, beta0: float = 0.5, seed: int = 0,
               evaluate: Callable | None = None, lam: float = 0.0, cost: str = "generations"):
    """Return (final policy, history). ``evaluate(policy) -> dict`` adds per-iteration results."""
    scored = [r for r in train if r["hidden"]["answer"] is not None]
    oracle = Oracle(scored, lam, cost)
    data = labelled(oracle_pairs(scored, lam, cost), lam, cost)
    policy = fit(data, 0)
    history = [{"iter": 0, "beta": 1.0, "n_states": len(data), **(evaluate(policy) if evaluate else {})}]
    for i, beta in enumerate(beta_schedule(iters, beta0), start=1):
        visited: list = []
        simulate(Mixture(policy, oracle, beta, seed + i), scored, states_out=visited)
        data = (data + labelled(visited, lam, cost)).dedupe()
        policy = fit(data, i)
        history.append({"iter": i, "beta": beta, "n_states": len(data), **(evaluate(policy) if evaluate else {})})
    return policy, history
