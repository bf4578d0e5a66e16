"""How far a table is from the example's target: the guide of the search.

A cheap stand-in for Foofah's table edit distance, in rough "steps still needed" units:
- content: target cells missing from the table (half price when the value is still inside a
  longer cell, so a split or extract can recover it) plus cells the target does not have;
- layout: target rows and target columns that do not yet appear whole in the table, whether
  the row and column counts differ, and the share of pairs of values sharing a target row that
  do not share a row here yet (a finer signal: a fill or fold moves values into the right rows).
``lost`` counts target values that appear nowhere in the table, not even inside a cell; a step
that raises it threw away data the answer needs, and the search prunes it.
A target value whose words all appear somewhere (a merge can rebuild it) is not lost.
Not covered: the order of rows or columns beyond whole-row / whole-column matches.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations


_WORD = re.compile(r"\w+")
# weights of the distance terms, in rough "steps" units
W = {"content": 2.0, "extra": 0.5, "surplus": 0.25, "rows": 0.5, "cols": 0.5, "shape": 0.5, "pairs": 1.0}

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
    pairs: frozenset  # pairs of distinct values sharing a row
    insertable: frozenset  # header names an ``insert_row`` step can write: never counted as lost

    @cached_property
    def joined(self) -> str:
        """All distinct target values in one string, for substring tests."""
        return "\x1f".join(sorted(self.values))

    @cached_property
    def separators(self) -> list[str]:
        """Punctuation runs inside target cells, most frequent first (for joining cells)."""
        from .library import separators
        return separators(sorted(self.values), limit=3)

    @cached_property
    def finder(self):
        """A regex finding any target value inside a text (longest first), or None."""
        if not self.values:
            return None
        return re.compile("|".join(re.escape(v) for v in sorted(self.values, key=lambda v: (-len(v), v))))

    @cached_property
    def tokens(self) -> dict:
        """The words of each target value (what a merge of several cells must supply)."""
        return {v: tuple(_WORD.findall(v)) or (v,) for v in self.values}

    @classmethod
    def of(cls, table: Table) -> "Target":
        rows = [tuple(r) for r in table]
        counts = Counter(c for r in rows for c in r if c)
        return cls(
            table=tuple(rows), counts=counts, values=frozenset(counts),
            rows=frozenset(rows), cols=frozenset(columns(table)),
            n_rows=len(rows), n_cols=max((len(r) for r in rows), default=0),
            n_cells=max(sum(counts.values()), 1),
            pairs=frozenset(p for r in rows for p in combinations(sorted({c for c in r if c}), 2)),
            insertable=frozenset(rows[0]) if rows and header_like(rows[0]) else frozenset(),
        )


def header_like(row) -> bool:
    """Column names: words without digits or '@' (data rarely looks so), no repeats."""
    return bool(row) and len(set(row)) == len(row) and all(
        any(ch.isalpha() for ch in v) and not any(ch.isdigit() or ch == "@" for ch in v) for v in row)


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
    surplus = 0
    for value, need in tgt.counts.items():
        have = counts.get(value, 0)
        if have >= need:
            matched += need
            surplus += have - need
            continue
        matched += have
        if have:
            missing += need - have  # more copies needed: a fill or fold away
            continue
        if joined is None:
            joined = "\x1f".join(counts)
        if value in joined:
            missing += 0.5 * need
        elif all(tok in joined for tok in tgt.tokens[value]):
            missing += 0.75 * need  # its words are all here, in pieces: a merge can rebuild it
        else:
            missing += need
            lost += value not in tgt.insertable
    # surplus copies of target values (a fill before an unfold) cost less than foreign cells
    extra = sum(counts.values()) - matched - surplus
    content = (missing + W["extra"] * extra + W["surplus"] * surplus) / tgt.n_cells
    n_rows = len(table)
    n_cols = max((len(r) for r in table), default=0)
    have_rows = {tuple(r) for r in table}
    row_miss = sum(1 for r in tgt.rows if r not in have_rows) / max(len(tgt.rows), 1)
    have_cols = set(columns(table))
    col_miss = sum(1 for c in tgt.cols if c not in have_cols) / max(len(tgt.cols), 1)
    shape = W["shape"] * ((n_rows != tgt.n_rows) + (n_cols != tgt.n_cols))
    h = W["content"] * content + W["rows"] * row_miss + W["cols"] * col_miss + shape \
        + W["pairs"] * (1.0 - _pair_recall(table, tgt))
    if h == 0 and tuple(map(tuple, table)) != tgt.table:
        h = 0.25  # same cells, rows and columns, yet not equal (order): keep it above a solution
    return h, lost


def _pair_recall(table: Table, tgt: Target) -> float:
    """Share of the target's same-row value pairs that already share a row here."""
    if not tgt.pairs:
        return 1.0
    values = tgt.values
    have = set()
    for r in table:
        kept = sorted({c for c in r if c in values})
        if len(kept) > 1:
            have.update(combinations(kept, 2))
    return len(have & tgt.pairs) / len(tgt.pairs)
