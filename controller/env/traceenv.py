"""``TraceEnv``: a run's recorded traces as an environment.

It owns the records and the one memo of visible states that every simulation of them shares
(many policies, learners and folds visit the same (record, position)): learners, CV, the budget
frontier and the seeds take a ``TraceEnv`` instead of records with a memo beside them. A
policy acts on ``State``s only; the env reads ``hidden`` only to grade a committed answer.
"""
from __future__ import annotations

from typing import Sequence

from controller.env.cost import unit
from controller.env.simulate import memo_state, simulate
from controller.env.state import State, as_pos

SPLITS = ("train", "dev", "test")


def max_repairs(records: Sequence[dict]) -> int:
    """The traces' repair budget (their rollout's ``--max-repairs``)."""
    return max((int(r.get("max_repairs", 0)) for r in records), default=0)


def scored(records: Sequence[dict]) -> list[dict]:
    """The records with a hidden answer (the others are traced and reported, never scored)."""
    return [r for r in records if r["hidden"]["answer"] is not None]


class TraceEnv:
    def __init__(self, records: Sequence[dict]):
        self.records = list(records)
        self._states: dict = {}  # (id(record), position) -> State; the records live as long as self

    # --- views of the records -------------------------------------------------------------
    def split(self, name: str, *, only_scored: bool = False) -> list[dict]:
        recs = [r for r in self.records if r["split"] == name]
        return scored(recs) if only_scored else recs

    def by_split(self) -> dict[str, list[dict]]:
        return {s: self.split(s) for s in SPLITS}

    def scored(self) -> list[dict]:
        return scored(self.records)

    # --- states and episodes ---------------------------------------------------------------
    def state(self, record: dict, pos: tuple) -> State:
        return memo_state(record, pos, self._states)

    def chain_pairs(self, records: Sequence[dict]) -> list[tuple[dict, State]]:
        """Every prefix of every trace's sample-0 chain: start, after round 1, ..., after its last
        round (the states of ``full_state_bc``)."""
        return [(r, self.state(r, as_pos(k))) for r in records for k in range(len(r["rounds"]) + 1)]

    def simulate(self, policy, records: Sequence[dict] | None = None, *, states_out: list | None = None) -> list[dict]:
        """``simulate.simulate`` over ``records`` (default: all), with this env's state memo."""
        return simulate(policy, self.records if records is None else records, states_out=states_out,
                        memo=self._states)

    def right_and_cost(self, policy, records: Sequence[dict], cost: str = "generations") -> tuple[int, int, float]:
        """(cases right, scored cases, cost per scored case in ``cost``'s unit) over ``records``."""
        outs = [o for o in self.simulate(policy, records) if o["correct"] is not None]
        cu = unit(cost)
        return (sum(1 for o in outs if o["correct"]), len(outs),
                sum(cu.case(o) for o in outs) / len(outs) if outs else 0.0)

    def score(self, policy, records: Sequence[dict]) -> tuple[float, int]:
        """(accuracy over scored cases, program generations): how the rule's candidates are chosen."""
        outs = self.simulate(policy, records)
        graded = [o for o in outs if o["correct"] is not None]
        acc = sum(1 for o in graded if o["correct"]) / len(graded) if graded else 0.0
        return acc, sum(int(o["program_generations"]) for o in outs)
