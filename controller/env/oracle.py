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

With K > 1 the search also covers ``PROGRAM:j`` (commit passing sample j, ``state.py``): its value
is sample j's hidden grade; ties go to ``PROGRAM`` first, then to the lower-ranked alternatives.
``commit_any=False`` searches the majority-commit action space only (the K > 1 environment before
PROGRAM:j existed; what the LoRA policy acts over); with K = 1 the two are the same search.
"""
from __future__ import annotations

from functools import lru_cache

from controller.env.state import (COMMIT_SAMPLE, as_pos, base_actions, chains, commit_choice, committed_sample_of, shared_view,
                    valid_actions)

_BASE_ORDER = {"DIRECT": 0, "PROGRAM": 1, "WRITE": 2, "FIX": 3, "RESAMPLE": 4}


def action_order(action: str, rank: int = 0) -> tuple:
    """The tie-break order: DIRECT, PROGRAM, PROGRAM:j (by its rank among the alternatives), WRITE,
    FIX, RESAMPLE."""
    if action.startswith(COMMIT_SAMPLE):
        return (1, 1 + rank)
    return (_BASE_ORDER[action], 0)


def _order_keys(actions) -> dict[str, tuple]:
    alts = [a for a in actions if a.startswith(COMMIT_SAMPLE)]
    return {a: action_order(a, alts.index(a) if a in alts else 0) for a in actions}


def attempt_cost(record: dict, rnd: dict, cost: str = "generations") -> float:
    """The cost of revealing one program round (a round dict of any sample; units: ``controller.cost``)."""
    from controller.env.cost import round_cost as _cost

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


def committed_correct(record: dict, pos: tuple, view: dict | None = None, sample: int | None = None):
    """Hidden correctness of what PROGRAM commits at ``pos`` (``hidden_exact``: True/False/None);
    with ``sample`` j, of what PROGRAM:j commits (sample j's latest revealed round)."""
    if sample is None:
        view = view if view is not None else shared_view(record, pos)
        sample = commit_choice(view)
    return chains(record)[sample][1][pos[sample] - 1]["hidden_exact"]


def action_values(record: dict, revealed, lam: float = 0.0, cost: str = "generations",
                  commit_any: bool = True) -> dict[str, tuple]:
    """For each valid action at a position: (value, path cost) of its best continuation.

    Actions whose next round the trace does not hold are left out (a trace always holds the rounds
    its own rollout could reach, so this only happens for upgraded or truncated files).
    ``commit_any=False``: PROGRAM:j is neither offered here nor used in any continuation."""
    return tree_search(record, lam, cost, commit_any)(revealed)


def tree_search(record: dict, lam: float = 0.0, cost: str = "generations", commit_any: bool = True):
    """``action_values`` of one record as a function of the position, memoised over the whole tree
    (for callers that label many positions of one record; the record must not change meanwhile)."""
    direct = float(bool(record["hidden"]["direct_exact"]))

    @lru_cache(maxsize=None)
    def values(pos: tuple) -> tuple:
        view = shared_view(record, pos)
        out = []
        valid = valid_actions(view)
        for a in valid if commit_any else base_actions(valid):
            if a == "DIRECT":
                out.append((a, direct, 0.0))
            elif a == "PROGRAM":
                out.append((a, float(bool(committed_correct(record, pos, view))), 0.0))
            elif a.startswith(COMMIT_SAMPLE):
                out.append((a, float(bool(committed_correct(record, pos, sample=committed_sample_of(a)))), 0.0))
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
        vals = values(pos)
        order = _order_keys([t[0] for t in vals])
        return min(vals, key=lambda t: (-t[1], t[2], order[t[0]]))

    def at(revealed) -> dict[str, tuple]:
        return {a: (v, c) for a, v, c in values(as_pos(revealed))}

    return at


def best_action(vals: dict[str, tuple]) -> str:
    """The best action of ``action_values``: highest value, then cheapest, then the tie order."""
    order = _order_keys(list(vals))
    return min(vals, key=lambda a: (-vals[a][0], vals[a][1], order[a]))


def oracle_label(record: dict, revealed, lam: float = 0.0, cost: str = "generations", commit_any: bool = True) -> str:
    return best_action(action_values(record, revealed, lam, cost, commit_any))
