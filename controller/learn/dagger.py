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
aggregated dataset before this iteration) and ``dataset_size``. ``new_states`` splits into
``new_states_learner`` (the learner chose at least one action on the path to the state: a
beta < 1 step where the draw fell on the learner) and ``new_states_oracle`` (every action on the
path was the oracle's; all of iteration 0). ``states_visited_learner`` counts the same for all
visited states.

Iteration 0 *is* behaviour cloning on the oracle's trajectories: the experiment reports that
policy as ``learned_rule_bc_oracle`` (same data, same model), next to ``learned_rule`` (cloning the
recorded sample-0 chains, a different and larger state set) and ``learned_rule_bc_all`` (every
reachable state), so DAgger's gain is read against BC on the same data.

The learner is any ``fit(training_set, iteration) -> policy`` callable, so the scikit-learn
rule and the LoRA policy share this loop.
"""
from __future__ import annotations

from typing import Callable, Sequence

from controller.env.policies import Mixture, Oracle
from controller.env.simulate import simulate
from controller.learn.training import TIE_WEIGHT, full_state_pairs, labelled, oracle_pairs


def beta_schedule(iters: int, beta0: float = 0.5) -> list[float]:
    """beta for iterations 1..iters, linear from beta0 down to 0 at the last."""
    if iters <= 0:
        return []
    if iters == 1:
        return [0.0]
    return [round(beta0 * (1 - i / (iters - 1)), 4) for i in range(iters)]


def path_to(pos: tuple) -> list[tuple]:
    """The positions an episode passes through before reaching ``pos`` (a tree position has one
    path: sample 0's rounds, then sample 1's, ...)."""
    out = [()]
    for j, n in enumerate(pos):
        out += [pos[:j] + (m,) for m in range(1, n + 1)]
    return out[:-1]


def learner_reached(keys: set, learner_acted: set) -> set:
    """Of the state keys, those whose path holds a state where the learner acted."""
    return {(cid, pos) for cid, pos in keys if any((cid, p) in learner_acted for p in path_to(pos))}


def run_dagger(fit: Callable, train: Sequence[dict], *, iters: int, beta0: float = 0.5, seed: int = 0,
               evaluate: Callable | None = None, lam: float = 0.0, cost: str = "generations",
               commit_any: bool = True, tie_weight: float = TIE_WEIGHT):
    """Return (final policy, history). ``evaluate(policy) -> dict`` adds per-iteration results.
    ``lam``, ``cost``, ``tie_weight``: the labels' price of tools and weighting (``training.labelled``).

    ``commit_any=False``: the oracle (actions and labels) keeps to the majority-commit action space."""
    scored = [r for r in train if r["hidden"]["answer"] is not None]
    oracle = Oracle(scored, lam, cost, commit_any=commit_any)
    bc_keys = {s.key for _, s in full_state_pairs(scored)}
    visited0 = oracle_pairs(scored, lam, cost, commit_any)
    data = labelled(visited0, lam, cost, commit_any, tie_weight=tie_weight).dedupe()
    policy = fit(data, 0)

    def entry(i, beta, visited, before, data, policy, acted=frozenset()):
        keys = {s.key for _, s in visited}
        new, by_learner = keys - bc_keys, learner_reached(keys, acted)
        return {"iter": i, "beta": beta, "states_visited": len(keys), "new_states": len(new),
                "new_states_learner": len(new & by_learner), "new_states_oracle": len(new - by_learner),
                "states_visited_learner": len(by_learner),
                "added_states": len(keys - before), "dataset_size": len(data), "n_states": len(data),
                **(evaluate(policy) if evaluate else {})}

    history = [entry(0, 1.0, visited0, set(), data, policy)]
    for i, beta in enumerate(beta_schedule(iters, beta0), start=1):
        visited: list = []
        mix = Mixture(policy, oracle, beta, seed + i)
        simulate(mix, scored, states_out=visited)
        before = data.keys()
        data = (data + labelled(visited, lam, cost, commit_any, tie_weight=tie_weight)).dedupe()
        policy = fit(data, i)
        history.append(entry(i, beta, visited, before, data, policy, mix.learner_acted))
    return policy, history
