"""The hindsight oracle: the best action at any state, read off the hidden grades.

Used for labels (training) and for the ``oracle_seq`` ceiling (evaluation); never by a deployed
policy. The value of a state is the best over its valid actions of
``correct - lam * cost`` where committing (DIRECT, PROGRAM) costs nothing more and WRITE/FIX cost
one program round (a generation, or its generated tokens in thousands). Ties go to the cheaper
path, then to the order DIRECT, PROGRAM, WRITE, FIX: with ``lam = 0`` this is "reach a correct
answer with the fewest program rounds, else answer directly".
"""
from __future__ import annotations

from functools import lru_cache

from .state import valid_actions, visible_view

_ORDER = {"DIRECT": 0, "PROGRAM": 1, "WRITE": 2, "FIX": 3}


def round_cost(record: dict, k: int, cost: str = "generations") -> float:
    """The cost of revealing program round ``k`` (units: ``controller.cost``)."""
    from .cost import round_cost as _cost

    return _cost(record, record["rounds"][k], cost)


def action_values(record: dict, revealed: int, lam: float = 0.0, cost: str = "generations") -> dict[str, tuple]:
    """For each valid action: (value, path cost) of its best continuation."""
    hidden = record["hidden"]

    @lru_cache(maxsize=None)
    def best(k: int) -> tuple[float, float, str]:
        vals = []
        for a in valid_actions(visible_view(record, k)):
            if a == "DIRECT":
                v, c = float(bool(hidden["direct_exact"])), 0.0
            elif a == "PROGRAM":
                v, c = float(bool(hidden["rounds"][k - 1]["hidden_exact"])), 0.0
            else:
                if k >= len(record["rounds"]):  # the trace holds no further round
                    continue
                rc = round_cost(record, k, cost)
                nv, nc, _ = best(k + 1)
                v, c = nv - lam * rc, nc + rc
            vals.append((v, c, a))
        vals.sort(key=lambda t: (-t[0], t[1], _ORDER[t[2]]))
        return vals[0]

    out = {}
    for a in valid_actions(visible_view(record, revealed)):
        if a == "DIRECT":
            out[a] = (float(bool(hidden["direct_exact"])), 0.0)
        elif a == "PROGRAM":
            out[a] = (float(bool(hidden["rounds"][revealed - 1]["hidden_exact"])), 0.0)
        elif revealed < len(record["rounds"]):
            rc = round_cost(record, revealed, cost)
            nv, nc, _ = best(revealed + 1)
            out[a] = (nv - lam * rc, nc + rc)
    return out


def oracle_label(record: dict, revealed: int, lam: float = 0.0, cost: str = "generations") -> str:
    vals = action_values(record, revealed, lam, cost)
    return min(vals, key=lambda a: (-vals[a][0], vals[a][1], _ORDER[a]))
