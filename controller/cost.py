"""What a program round costs, in named units.

Three cost models (``--cost``):

* ``generations``: one per program round (WRITE, FIX, RESAMPLE) whatever it took;
* ``tokens``: the round's completion tokens (in thousands when used as a per-case cost);
* ``work``: the compute the backend spent on the round: search nodes for the built-in
  synthesizer (a WRITE searches ~100 nodes, a FIX up to 40,000: "one generation" each), completion
  tokens for a model backend. A round dict carries ``search_nodes`` when the backend reported
  them; a synth round without it (traces written before synth counted nodes) falls back to its
  completion tokens, and the unit then says so.

Only rounds count: the direct answer is drawn by every policy, so it is not tool cost.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

COST_KINDS = ("generations", "tokens", "work")


def round_work(record: Mapping, rnd: Mapping) -> int:
    """Work of one round dict of ``record``: search nodes (synth, when recorded), else tokens."""
    nodes = rnd.get("search_nodes")
    if record.get("backend") == "synth" and nodes is not None:
        return int(nodes)
    return int(rnd.get("completion_tokens", 0))


def round_cost(record: Mapping, rnd: Mapping, cost: str) -> float:
    """Cost of one revealed round under ``cost`` (tokens and work in thousands)."""
    if cost == "generations":
        return 1.0
    if cost == "tokens":
        return rnd["completion_tokens"] / 1000.0
    if cost == "work":
        return round_work(record, rnd) / 1000.0
    raise ValueError(f"unknown cost kind {cost!r} (use one of {', '.join(COST_KINDS)})")


def work_unit(records: Iterable[Mapping]) -> str:
    """The unit ``work`` counts in over these records: search nodes, tokens, or a mix (named)."""
    kinds = set()
    for r in records:
        for rnd in r.get("rounds") or []:
            synth_nodes = r.get("backend") == "synth" and rnd.get("search_nodes") is not None
            kinds.add("search nodes" if synth_nodes else "completion tokens")
    if not kinds:
        return "completion tokens"
    return " / ".join(sorted(kinds, reverse=True)) if len(kinds) > 1 else kinds.pop()


def cost_unit(cost: str, work: str = "search nodes") -> str:
    """Per-case unit of a cost kind as the frontier and report print it."""
    return {"generations": "program generations", "tokens": "thousand completion tokens",
            "work": f"thousand {work}"}.get(cost, cost)
