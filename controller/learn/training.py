"""Which states a learner trains on, labelled by the hindsight oracle.

Three regimes, from weakest to strongest:

* ``full_state_bc`` — every state along the always-tool path of every training trace
  (behaviour cloning on every prefix of the recorded chain of sample 0; with
  ``--program-samples`` K > 1 the tree states after a RESAMPLE are not in it: those are what
  the oracle's and the learner's own rollouts reach);
* ``oracle_bc`` — only the states the oracle itself visits (DAgger's iteration 0 trains on these);
* DAgger (``dagger.py``) — states the learner visits when it acts, aggregated over iterations;
* ``all_state_bc`` — every position reachable in the recorded tree (every sample drawn in order,
  every repair the trace holds): what imitation can learn at best from these traces, since no
  rollout can reach a state outside it. With K = 1 it is ``full_state_bc``.

The labels come from ``oracle.oracle_label``; the states from ``state.visible_state``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from controller.env.oracle import best_action, next_pos, revealed_round, tree_search
from controller.env.policies import Oracle
from controller.env.simulate import simulate
from controller.env.traceenv import TraceEnv
from controller.env.state import State, shared_view, valid_actions, visible_state


def full_state_pairs(records: Sequence[dict], env=None) -> list[tuple[dict, State]]:
    """Every prefix of every trace's sample-0 chain: start, after round 1, ..., after its last round.

    ``env``: a ``TraceEnv`` holding the records, whose states are then shared with every other
    learner and policy (built once)."""
    return (env or TraceEnv(records)).chain_pairs(records)


def oracle_pairs(records: Sequence[dict], lam: float = 0.0, cost: str = "generations",
                 commit_any: bool = True) -> list[tuple[dict, State]]:
    pairs: list = []
    simulate(Oracle(records, lam, cost, commit_any=commit_any), records, states_out=pairs)
    return pairs


def reachable_positions(record: dict) -> list[tuple]:
    """Every tree position an episode can reach in this trace (depth first, start first)."""
    out, stack = [], [()]
    while stack:
        pos = stack.pop()
        out.append(pos)
        for a in reversed(valid_actions(shared_view(record, pos))):
            if a in ("WRITE", "FIX", "RESAMPLE"):
                nxt = next_pos(pos, a)
                if revealed_round(record, nxt) is not None:
                    stack.append(nxt)
    return out


def all_state_pairs(records: Sequence[dict]) -> list[tuple[dict, State]]:
    """Every reachable state of every trace's recorded tree (``all_state_bc``)."""
    return [(r, visible_state(r, p)) for r in records for p in reachable_positions(r)]


# A tie (every valid action reaches the same value) still carries the cost tie-break, but barely.
TIE_WEIGHT = 0.05


@dataclass
class TrainingSet:
    """Labelled states. ``weights`` are the mean regret of a wrong choice: states where the choice
    decides whether the answer is right weigh 1, states where it only changes the cost weigh less."""

    states: list[State] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.states)

    def keys(self) -> set:
        return {s.key for s in self.states}

    def __add__(self, other: "TrainingSet") -> "TrainingSet":
        return TrainingSet(self.states + other.states, self.labels + other.labels, self.weights + other.weights)

    def dedupe(self) -> "TrainingSet":
        """Aggregate without double-counting a state (``State.key``: case id + tree position, i.e.
        the set of revealed attempts) visited in several iterations."""
        seen, out = set(), TrainingSet()
        for s, l, w in zip(self.states, self.labels, self.weights):
            if s.key not in seen:
                seen.add(s.key)
                out.states.append(s)
                out.labels.append(l)
                out.weights.append(w)
        return out

    def shuffled(self, seed: int) -> "TrainingSet":
        """The shuffled-label control: each state takes the (label, weight) *pair* of a permuted
        partner, so the weighted label distribution is kept and only its link to the state is
        broken (keeping each state's own weight would make the control's base rate the label mix
        of the heavy states: always-tool). A partner label invalid here becomes this state's
        tool action of the same kind where it can (a commit -> PROGRAM, an exploring action -> one
        of this state's), else a seeded choice among the valid actions."""
        import random

        rng = random.Random(seed)
        perm = list(range(len(self)))
        rng.shuffle(perm)
        out = TrainingSet()
        for s, j in zip(self.states, perm):
            out.states.append(s)
            out.labels.append(remap_label(self.labels[j], s.valid_actions, rng))
            out.weights.append(self.weights[j])
        return out


def remap_label(label: str, valid: Sequence[str], rng) -> str:
    """A shuffled partner's label made valid at this state (see ``TrainingSet.shuffled``)."""
    if label in valid:
        return label
    if label.startswith("PROGRAM") and "PROGRAM" in valid:
        return "PROGRAM"
    tools = [a for a in valid if a != "DIRECT"]
    return rng.choice(tools if (label != "DIRECT" and tools) else list(valid))


def labelled(pairs, lam: float = 0.0, cost: str = "generations", commit_any: bool = True,
             tie_weight: float = TIE_WEIGHT) -> TrainingSet:
    """Drop unscored records (no label exists); attach oracle labels and regret weights.

    The label is the best action by value (right minus ``lam`` x cost in ``cost``'s unit) and the
    weight the mean regret of a wrong choice in the same value. ``tie_weight`` is the least
    weight a state keeps: with ``lam`` = 0 a state whose actions differ only in cost has regret 0.
    The cost-sensitive learners pass ``lam`` > 0 and ``tie_weight`` = 0 (a state weighs what a
    wrong choice there costs, and a state where nothing is at stake is left out).
    ``commit_any=False``: labels over the majority-commit action space (PROGRAM:j never chosen),
    for a learner that cannot choose a sample (the LoRA policy)."""
    out, searches = TrainingSet(), {}
    for rec, s in pairs:
        if rec["hidden"]["answer"] is None:
            continue
        if id(rec) not in searches:  # one memoised search per record (keyed by identity: records are dicts)
            searches[id(rec)] = (rec, tree_search(rec, lam, cost, commit_any))
        values = searches[id(rec)][1](s.pos)
        label = best_action(values)
        others = [v[0] for a, v in values.items() if a != label]
        # the mean regret of a wrong choice; with two valid actions (every chain state) this is the
        # pilot's "best minus second best", but on the tree PROGRAM-now and RESAMPLE-then-PROGRAM can
        # reach the same value while DIRECT loses it: the state still decides correctness
        gap = values[label][0] - sum(others) / len(others) if others else 0.0
        weight = max(gap, tie_weight)
        if weight <= 0.0:
            continue
        out.states.append(s)
        out.labels.append(label)
        out.weights.append(weight)
    return out
