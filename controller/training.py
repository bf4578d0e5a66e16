"""Which states a learner trains on, labelled by the hindsight oracle.

Three regimes, from weakest to strongest:

* ``full_state_bc`` — every state along the always-tool path of every training trace
  (behaviour cloning on every prefix of the recorded chain of sample 0; with
  ``--program-samples`` K > 1 the tree states after a RESAMPLE are not in it: those are what
  the oracle's and the learner's own rollouts reach);
* ``oracle_bc`` — only the states the oracle itself visits;
* DAgger (``dagger.py``) — states the learner visits when it acts, aggregated over iterations.

The labels come from ``oracle.oracle_label``; the states from ``state.visible_state``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .oracle import _ORDER, action_values
from .policies import Oracle
from .simulate import simulate
from .state import State, visible_state


def full_state_pairs(records: Sequence[dict]) -> list[tuple[dict, State]]:
    """Every prefix of every trace's sample-0 chain: start, after round 1, ..., after its last round."""
    return [(r, visible_state(r, k)) for r in records for k in range(len(r["rounds"]) + 1)]


def oracle_pairs(records: Sequence[dict], lam: float = 0.0, cost: str = "generations") -> list[tuple[dict, State]]:
    pairs: list = []
    simulate(Oracle(records, lam, cost), records, states_out=pairs)
    return pairs


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


def labelled(pairs, lam: float = 0.0, cost: str = "generations") -> TrainingSet:
    """Drop unscored records (no label exists); attach oracle labels and regret weights."""
    out = TrainingSet()
    for rec, s in pairs:
        if rec["hidden"]["answer"] is None:
            continue
        values = action_values(rec, s.pos, lam, cost)
        label = min(values, key=lambda a: (-values[a][0], values[a][1], _ORDER[a]))
        others = [v[0] for a, v in values.items() if a != label]
        # the mean regret of a wrong choice; with two valid actions (every chain state) this is the
        # pilot's "best minus second best", but on the tree PROGRAM-now and RESAMPLE-then-PROGRAM can
        # reach the same value while DIRECT loses it: the state still decides correctness
        gap = values[label][0] - sum(others) / len(others) if others else 0.0
        out.states.append(s)
        out.labels.append(label)
        out.weights.append(max(gap, TIE_WEIGHT))
    return out
