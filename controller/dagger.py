"""DAgger over recorded traces.

Simplifications, stated once: the "environment" is the recorded trace (an action reveals what the
trace holds for it, nothing is regenerated), and the expert is the hindsight oracle, which can
label any state exactly. Iteration 0 trains on the oracle's own trajectories (beta = 1). Each
later iteration rolls out the mixture "oracle with probability beta, else the current learner" on
the training traces, labels every visited state with the oracle, aggregates (each (case, step)
once) and retrains. beta anneals linearly from ``beta0`` to 0 at the last iteration.

A state's identity is ``State.key`` = (case id, tree position): which program samples were drawn
and how many rounds of each are revealed, i.e. the set of revealed attempts. With
``--program-samples`` K > 1 a learner that acts unlike the oracle reaches positions neither the
oracle nor behaviour cloning (``training.full_state_pairs``: the recorded sample-0 chain) ever
visits. Each iteration reports ``states_visited`` (distinct states its rollouts visited),
``new_states`` (of those, not in the behaviour-cloning dataset), ``added_states`` (not in the
aggregated dataset before this iteration) and ``dataset_size``.

The learner is any ``fit(training_set, iteration) -> policy`` callable, so the scikit-learn
rule and the LoRA policy share this loop.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .policies import Mixture, Oracle
from .simulate import simulate
from .training import full_state_pairs, labelled, oracle_pairs


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
    bc_keys = {s.key for _, s in full_state_pairs(scored)}
    visited0 = oracle_pairs(scored, lam, cost)
    data = labelled(visited0, lam, cost).dedupe()
    policy = fit(data, 0)

    def entry(i, beta, visited, before, data, policy):
        keys = {s.key for _, s in visited}
        return {"iter": i, "beta": beta, "states_visited": len(keys), "new_states": len(keys - bc_keys),
                "added_states": len(keys - before), "dataset_size": len(data), "n_states": len(data),
                **(evaluate(policy) if evaluate else {})}

    history = [entry(0, 1.0, visited0, set(), data, policy)]
    for i, beta in enumerate(beta_schedule(iters, beta0), start=1):
        visited: list = []
        simulate(Mixture(policy, oracle, beta, seed + i), scored, states_out=visited)
        before = data.keys()
        data = (data + labelled(visited, lam, cost)).dedupe()
        policy = fit(data, i)
        history.append(entry(i, beta, visited, before, data, policy))
    return policy, history
