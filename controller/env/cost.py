"""What a program round costs, in named units: the one registry of cost units (``UNITS``).

Three units (``--cost``, a study file's ``cost_unit``):

* ``generations``: one per program round (WRITE, FIX, RESAMPLE) whatever it took;
* ``tokens``: the round's completion tokens (in thousands as a per-case cost);
* ``work``: the compute the backend spent on the round: search nodes for the built-in
  synthesizer (a WRITE searches ~100 nodes, a FIX up to 40,000: "one generation" each), completion
  tokens for a model backend. A round dict carries ``search_nodes`` when the backend reported
  them; a synth round without it (traces written before synth counted nodes) falls back to its
  completion tokens, and the unit then says so.

Only rounds count: the direct answer is drawn by every policy, so it is not tool cost. (An
outcome's ``generated_tokens`` includes the direct answer's; ``CostUnit.case`` subtracts it
when it is given.)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


def round_work(record: Mapping, rnd: Mapping) -> int:
    """Work of one round dict of ``record``: search nodes (synth, when recorded), else tokens."""
    nodes = rnd.get("search_nodes")
    if record.get("backend") == "synth" and nodes is not None:
        return int(nodes)
    return int(rnd.get("completion_tokens", 0))


@dataclass(frozen=True)
class CostUnit:
    """One cost unit: how a round costs, which outcome field sums it, and its words."""

    name: str
    field: str     # the outcome / summary field that sums it over cases
    scale: float   # per-case costs are in units of ``scale`` (thousands for tokens and work)
    words: str     # the per-case unit in words ({work}: what work counts in this run)
    total: str     # the summary's ``cost_units`` entry: what the field counts

    def round(self, record: Mapping, rnd: Mapping) -> float:
        """Cost of one revealed round of ``record``, per-case scaled."""
        if self.name == "generations":
            return 1.0
        if self.name == "tokens":
            return rnd["completion_tokens"] / self.scale
        return round_work(record, rnd) / self.scale

    def case(self, outcome: Mapping, direct_tokens: int = 0) -> float:
        """One outcome's cost; ``direct_tokens`` (the case's direct answer) is not tool cost."""
        value = float(outcome.get(self.field, 0))
        return (value - direct_tokens if self.name == "tokens" else value) / self.scale

    def per_case(self, summary: Mapping, n: int, direct_total: float = 0.0) -> float:
        """Per-case cost of a policy summary over ``n`` cases."""
        value = float(summary.get(self.field) or 0)
        return (value - direct_total if self.name == "tokens" else value) / self.scale / max(n, 1)

    def describe(self, work: str = "search nodes") -> str:
        return self.words.format(work=work)


UNITS: dict[str, CostUnit] = {u.name: u for u in (
    CostUnit("generations", "program_generations", 1.0, "program generations", "program generations"),
    CostUnit("tokens", "generated_tokens", 1000.0, "thousand completion tokens", "completion tokens"),
    CostUnit("work", "work", 1000.0, "thousand {work}", "{work}"),
)}
COST_KINDS = tuple(UNITS)


def unit(name: str) -> CostUnit:
    try:
        return UNITS[name]
    except KeyError:
        raise ValueError(f"unknown cost unit {name!r} (use one of {', '.join(UNITS)})") from None


def round_cost(record: Mapping, rnd: Mapping, cost: str) -> float:
    """Cost of one revealed round under ``cost`` (tokens and work in thousands)."""
    return unit(cost).round(record, rnd)


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
    return UNITS[cost].describe(work) if cost in UNITS else cost


def cost_units(records: Iterable[Mapping]) -> dict[str, str]:
    """The summary's ``cost_units``: what each unit's field counts in this run."""
    work = work_unit(records)
    return {**{u.name: u.total.format(work=work) for u in UNITS.values()}, "sandbox_ms": "milliseconds"}
