"""Which states a learner trains on, labelled by the hindsight oracle.

Three regimes, from weakest to strongest:

* ``full_state_bc`` — every state along the always-tool path of every training trace
  (behaviour cloning on all recorded states);
* ``oracle_bc`` — only the states the oracle itself visits;
* DAgger (``dagger.py``) — states the learner visits when it acts, aggregated over iterations.

The labels come from ``oracle.oracle_label``; the states from ``state.visible_state``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .oracle import action_values, oracle_label
from .policies import Oracle
from .simulate import simulate
from .state import State, visible_state


def full_state_pairs(records: Sequence[dict]) -> list[tuple[dict, State]]:
    """Every prefix of every trace: start, after round 1, ..., after the last recorded round."""
    return [(r, visible_state(r, k)) for r in records for k in range(len(r["rounds"]) + 1)]


def oracle_pairs(records: Sequence[dict], lam: float = 0.0, cost: str = "generations") -> list[tuple[dict, State]]:
    pairs: list = []
    simulate(Oracle(records, lam, cost), records, states_out=pairs)
    return pairs


# A tie (every valid action reaches the same value) still carries the cost tie-break, but barely.
TIE_WEIGHT = 0.05


@dataclass
class TrainingSet:
    """Labelled states. ``weights`` are the regret of the wrong choice: states where the choice
    decides whether the answer is right weigh 1, states where it only changes the cost weigh less."""

    states: list[State] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.states)

    def __add__(self, other: "TrainingSet") -> "TrainingSet":
        return TrainingSet(self.states + other.states, self.labels + other.labels, self.weights + other.weights)

    def dedupe(self) -> "TrainingSet":
        """Aggregate without double-counting a (case, step) visited in several iterations."""
        seen, out = set(), TrainingSet()
        for s, l, w in zip(self.states, self.labels, self.weights):
            if (s.case_id, s.revealed) not in seen:
                seen.add((s.case_id, s.revealed))
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
        values = action_values(rec, s.revealed, lam, cost)
        label = oracle_label(rec, s.revealed, lam, cost)
        others = [v[0] for a, v in values.items() if a != label]
        gap = values[label][0] - max(others) if others else 0.0
        out.states.append(s)
        out.labels.append(label)
        out.weights.append(max(gap, TIE_WEIGHT))
    return out
