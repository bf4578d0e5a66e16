"""The hindsight oracle: the best action at any state, read off the hidden grades.

Used for labels (training) and for the ``oracle_seq`` ceiling (evaluation); never by a deployed
policy. The value of a tree position is the best over its valid actions of
``correct - lam * cost``, where committing (DIRECT, PROGRAM) costs nothing more and WRITE, FIX and
RESAMPLE cost the program round they reveal (a generation, its generated tokens in thousands, or
its search nodes in thousands). PROGRAM's correctness is that of the program the commit rule
(``state.commit_choice``) picks, the same rule every policy lives with. The search covers every
position reachable in the recorded tree. Ties go to the cheaper path, then to the order DIRECT,
PROGRAM, WRITE, FIX, RESAMPLE: with ``lam = 0`` this is "reach a correct answer with the fewest
program rounds, else answer directly".
"""
from __future__ import annotations

from functools import lru_cache

from .state import as_pos, chains, commit_choice, valid_actions, visible_view

_ORDER = {"DIRECT": 0, "PROGRAM": 1, "WRITE": 2, "FIX": 3, "RESAMPLE": 4}


def attempt_cost(record: dict, rnd: dict, cost: str = "generations") -> float:
    """The cost of revealing one program round (a round dict of any sample; units: ``controller.cost``)."""
    from .cost import round_cost as _cost

    return _cost(record, rnd, cost)


def round_cost(record: dict, k: int, cost: str = "generations") -> float:
    """The cost of revealing round ``k`` of sample 0 (the pilot's chain)."""
    return attempt_cost(record, record["rounds"][k], cost)


def next_pos(pos: tuple, action: str) -> tuple:
    """The tree position an exploring action leads to."""
    if action == "WRITE":
        return (1,)
    if action == "FIX":
        return pos[:-1] + (pos[-1] + 1,)
    if action == "RESAMPLE":
        return pos + (1,)
    raise ValueError(f"{action} does not move in the tree")


def revealed_round(record: dict, pos: tuple) -> dict | None:
    """The round dict the move to ``pos`` reveals (None when the trace holds none)."""
    chs = chains(record)
    j, n = len(pos) - 1, pos[-1]
    if j >= len(chs) or n > len(chs[j][0]):
        return None
    return chs[j][0][n - 1]


def committed_correct(record: dict, pos: tuple, view: dict | None = None):
    """Hidden correctness of what PROGRAM commits at ``pos`` (``hidden_exact``: True/False/None)."""
    view = view if view is not None else visible_view(record, pos)
    j = commit_choice(view)
    return chains(record)[j][1][pos[j] - 1]["hidden_exact"]


def action_values(record: dict, revealed, lam: float = 0.0, cost: str = "generations") -> dict[str, tuple]:
    """For each valid action at a position: (value, path cost) of its best continuation.

    Actions whose next round the trace does not hold are left out (a trace always holds the rounds
    its own rollout could reach, so this only happens for upgraded or truncated files)."""
    direct = float(bool(record["hidden"]["direct_exact"]))

    @lru_cache(maxsize=None)
    def values(pos: tuple) -> tuple:
        view = visible_view(record, pos)
        out = []
        for a in valid_actions(view):
            if a == "DIRECT":
                out.append((a, direct, 0.0))
            elif a == "PROGRAM":
                out.append((a, float(bool(committed_correct(record, pos, view))), 0.0))
            else:
                nxt = next_pos(pos, a)
                rnd = revealed_round(record, nxt)
                if rnd is None:
                    continue
                rc = attempt_cost(record, rnd, cost)
                _, nv, nc = best(nxt)
                out.append((a, nv - lam * rc, nc + rc))
        return tuple(out)

    @lru_cache(maxsize=None)
    def best(pos: tuple) -> tuple:
        return min(values(pos), key=lambda t: (-t[1], t[2], _ORDER[t[0]]))

    return {a: (v, c) for a, v, c in values(as_pos(revealed))}


def oracle_label(record: dict, revealed, lam: float = 0.0, cost: str = "generations") -> str:
    vals = action_values(record, revealed, lam, cost)
    return min(vals, key=lambda a: (-vals[a][0], vals[a][1], _ORDER[a]))
