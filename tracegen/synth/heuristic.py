"""How far a table is from the example's target: the guide of the search.

A cheap stand-in for Foofah's table edit distance, in rough "steps still needed" units:
- content: target cells missing from the table (half price when the value is still inside a
  longer cell, so a split or extract can recover it) plus cells the target does not have;
- layout: target rows and target columns that do not yet appear whole in the table, and whether
  the row and column counts differ.
``lost`` counts target values that appear nowhere in the table, not even inside a cell; a step
that raises it threw away data the answer needs, and the search prunes it.
Not covered: values that only a merge of several cells can rebuild count as lost from the start.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

Table = list[list[str]]


@dataclass(frozen=True)
class Target:
    """What the distance needs to know about one target table, computed once."""

    table: tuple
    counts: Counter
    values: frozenset  # distinct non-empty cells
    rows: frozenset
    cols: frozenset
    n_rows: int
    n_cols: int
    n_cells: int

    @classmethod
    def of(cls, table: Table) -> "Target":
        rows = [tuple(r) for r in table]
        counts = Counter(c for r in rows for c in r if c)
        return cls(
            table=tuple(rows), counts=counts, values=frozenset(counts),
            rows=frozenset(rows), cols=frozenset(columns(table)),
            n_rows=len(rows), n_cols=max((len(r) for r in rows), default=0),
            n_cells=max(sum(counts.values()), 1),
        )


def columns(table: Table) -> list[tuple]:
    width = max((len(r) for r in table), default=0)
    if all(len(r) == width for r in table):
        return list(zip(*table))
    return list(zip(*[list(r) + [""] * (width - len(r)) for r in table]))


def distance(table: Table, tgt: Target) -> tuple[float, int]:
    """(estimated remaining work, number of lost target values); (0, 0) iff equal."""
    counts = Counter(c for r in table for c in r if c)
    joined = None
    missing = 0.0
    lost = 0
    matched = 0
    for value, need in tgt.counts.items():
        have = counts.get(value, 0)
        if have >= need:
            matched += need
            continue
        matched += have
        if have:
            missing += need - have  # more copies needed: a fill or fold away
            continue
        if joined is None:
            joined = "\x1f".join(counts)
        if value in joined:
            missing += 0.5 * need
        else:
            missing += need
            lost += 1
    extra = sum(counts.values()) - matched
    content = (missing + 0.5 * extra) / tgt.n_cells
    n_rows = len(table)
    n_cols = max((len(r) for r in table), default=0)
    have_rows = {tuple(r) for r in table}
    row_miss = sum(1 for r in tgt.rows if r not in have_rows) / max(len(tgt.rows), 1)
    have_cols = set(columns(table))
    col_miss = sum(1 for c in tgt.cols if c not in have_cols) / max(len(tgt.cols), 1)
    shape = 0.5 * (n_rows != tgt.n_rows) + 0.5 * (n_cols != tgt.n_cols)
    h = 2.0 * content + row_miss + col_miss + shape
    if h == 0 and tuple(map(tuple, table)) != tgt.table:
        h = 0.25  # same cells, rows and columns, yet not equal (order): keep it above a solution
    return h, lost
