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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass


def round_work(record: Mapping, rnd: Mapping) -> int:
    """Work of one round dict of ``record``: search nodes (synth, when recorded), else tokens."""
    nodes = rnd.get("search_nodes")
    if record.get("backend") == "synth" and nodes is not None:
        return int(nodes)
    return int(rnd.get("completion_tokens", 0))


def _one(record: Mapping, rnd: Mapping) -> int:
    return 1


def _tokens(record: Mapping, rnd: Mapping) -> int:
    return int(rnd["completion_tokens"])


@dataclass(frozen=True)
class CostUnit:
    """One cost unit, its behaviour and its words: the one place a unit is written down.

    Behaviour: ``round_cost`` (the unscaled cost of one revealed round), ``field`` (the outcome and
    summary field that sums it over cases), ``with_direct`` (the field also counts the direct
    answer's ``completion_tokens``, which is not tool cost and is taken off per case), ``scale``
    (per-case costs are in units of ``scale``: thousands for tokens and work) and ``seed_field``
    (the outcome field the split-seed spread sums; ``work`` keeps ``search_nodes`` there, the key
    the committed studies carry).
    Words: ``words`` (the per-case unit, ``{work}`` = what work counts in this run), ``total``
    (the summary's ``cost_units`` entry), ``axis`` (the accuracy-vs-compute x axis), ``panel`` (a
    cost panel's x axis), ``text`` (the report's units sentence), ``column`` and ``digits`` (the split-seed
    table's header and decimals).
    """

    name: str
    field: str
    scale: float
    words: str
    total: str
    axis: str
    panel: str
    text: str
    column: str
    round_cost: Callable[[Mapping, Mapping], float] = _one
    with_direct: bool = False
    seed_field: str = ""
    digits: int = 0  # decimals of the split-seed table's totals

    @property
    def spread_field(self) -> str:
        return self.seed_field or self.field

    def round(self, record: Mapping, rnd: Mapping) -> float:
        """Cost of one revealed round of ``record``, per-case scaled."""
        return self.round_cost(record, rnd) / self.scale

    def outcome(self, record: Mapping, rounds: Iterable[Mapping]) -> int:
        """The outcome's ``field`` over a case's revealed ``rounds`` (unscaled)."""
        total = sum(self.round_cost(record, r) for r in rounds)
        return total + (record["direct"]["completion_tokens"] if self.with_direct else 0)

    def case(self, outcome: Mapping, direct_tokens: int = 0) -> float:
        """One outcome's cost; ``direct_tokens`` (the case's direct answer) is not tool cost."""
        value = float(outcome.get(self.field, 0))
        return (value - direct_tokens if self.with_direct else value) / self.scale

    def per_case(self, summary: Mapping, n: int, direct_total: float = 0.0) -> float:
        """Per-case cost of a policy summary over ``n`` cases."""
        value = float(summary.get(self.field) or 0)
        return (value - direct_total if self.with_direct else value) / self.scale / max(n, 1)

    def per_traced_case(self, res: Mapping) -> float:
        """The summary's field per traced case (unscored included), as the compute figure draws it."""
        cases = (res.get("n") or 0) + (res.get("unscored") or 0)
        return (res.get(self.field) or 0) / self.scale / cases if cases else 0.0

    def describe(self, work: str = "search nodes") -> str:
        return self.words.format(work=work)


UNITS: dict[str, CostUnit] = {}


def register(u: CostUnit) -> CostUnit:
    """Add a cost unit to ``UNITS`` (``--cost``, study files, figures, reports and split seeds read it)."""
    UNITS[u.name] = u
    return u


register(CostUnit("generations", "program_generations", 1.0, "program generations", "program generations",
                  axis="program generations", panel="program generations per scored case",
                  text="program generations", column="Program generations", digits=1))
register(CostUnit("tokens", "generated_tokens", 1000.0, "thousand completion tokens", "completion tokens",
                  axis="thousand generated tokens", panel="thousand program-round tokens per scored case",
                  text="thousand completion tokens (program rounds)", column="Completion tokens",
                  round_cost=_tokens, with_direct=True))
register(CostUnit("work", "work", 1000.0, "thousand {work}", "{work}",
                  axis="thousand work units (search nodes for synth, tokens for models)",
                  panel="thousand work units per scored case",
                  text="thousand work units (search nodes for synth, completion tokens for models)",
                  column="Search nodes", round_cost=round_work, seed_field="search_nodes"))


def cost_kinds() -> tuple[str, ...]:
    """The registered unit names (``--cost`` choices)."""
    return tuple(UNITS)


COST_KINDS = cost_kinds()  # the built-in units; read ``cost_kinds()`` to see units registered later


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
