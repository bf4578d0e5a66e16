"""Small pure helpers on tables (lists of rows, rows are lists of strings).

Covered: exact comparison, shape, type check, a cell-level distance and a compact text
rendering for prompts and reports. Not covered: any normalisation (whitespace, case, number
formats): a table is correct only when it is exactly equal, so nothing here forgives.
"""
from __future__ import annotations

import json
from typing import Any

from cases.case import Table


def is_table(x: Any) -> bool:
    """True when ``x`` is a list of lists of str (ragged rows and empty tables allowed)."""
    if not isinstance(x, list):
        return False
    for row in x:
        if not isinstance(row, list):
            return False
        for cell in row:
            if not isinstance(cell, str):
                return False
    return True


def tables_equal(a: Any, b: Any) -> bool:
    """Exact equality of two tables; anything that is not a table equals nothing."""
    return is_table(a) and is_table(b) and a == b


def table_shape(t: Table) -> tuple[int, int]:
    """(number of rows, widest row). A ragged table reports its widest row."""
    return len(t), max((len(row) for row in t), default=0)


def cell_diff(a: Table, b: Table) -> int:
    """Number of cells that differ, counting a cell present in only one table as different.

    Rows are aligned by index and cells by column, so an extra row of 3 cells adds 3 and a
    missing trailing cell adds 1. ``cell_diff(a, b) == 0`` exactly when ``a == b``.
    """
    diff = 0
    for i in range(max(len(a), len(b))):
        ra = a[i] if i < len(a) else []
        rb = b[i] if i < len(b) else []
        for j in range(max(len(ra), len(rb))):
            if j >= len(ra) or j >= len(rb) or ra[j] != rb[j]:
                diff += 1
    return diff


def render_table(t: Table, max_rows: int | None = 30, max_cell_chars: int | None = None) -> str:
    """One row per line as a JSON array, so empty cells, commas and pipes stay unambiguous.

    Rows beyond ``max_rows`` are replaced by one line saying how many were left out; cells
    longer than ``max_cell_chars`` are cut and end with "...". Both limits are off with None.
    """
    rows = t if max_rows is None else t[:max_rows]
    lines = []
    for row in rows:
        if max_cell_chars is not None:
            row = [c if len(c) <= max_cell_chars else c[:max_cell_chars] + "..." for c in row]
        lines.append(json.dumps(row, ensure_ascii=False))
    if len(rows) < len(t):
        lines.append(f"... ({len(t) - len(rows)} more rows)")
    if not t:
        lines.append("(empty table)")
    return "\n".join(lines)
