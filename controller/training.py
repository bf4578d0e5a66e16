"""Which states a learner trains on, labelled by the hindsight oracle.

Three regimes, from weakest to strongest:

* ``full_state_bc`` — every state along the always-tool path of every training trace
  (behaviour cloning on all recorded states);
* ``oracle_bc`` — only the states the oracle itself visits;
* DAgger (``dagger.py``) — states the learner visits when it acts, aggregated over iterations.

The labels come from ``oracle.oracle_label``; the states from ``state.visible_state``.
"""
from __future__ import annotations

from typing import Sequence

from .oracle import oracle_label
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


def labelled(pairs, lam: float = 0.0, cost: str = "generations") -> tuple[list[State], list[str]]:
    """Drop unscored records (no label exists) and attach oracle labels."""
    states, labels = [], []
    for rec, s in pairs:
        if rec["hidden"]["answer"] is None:
            continue
        states.append(s)
        labels.append(oracle_label(rec, s.revealed, lam, cost))
    return states, labels


def dedupe(states: Sequence[State], labels: Sequence[str]) -> tuple[list[State], list[str]]:
    """Aggregate without double-counting a (case, step) visited in several iterations."""
    seen, out_s, out_l = set(), [], []
    for s, l in zip(states, labels):
        key = (s.case_id, s.revealed)
        if key not in seen:
            seen.add(key)
            out_s.append(s)
            out_l.append(l)
    return out_s, out_l
