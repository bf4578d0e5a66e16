"""Reference table operations the family programs are built from.

Pure functions: each returns a new table and never mutates its input. They are the rules
of the library, not a solver: they may assume the input has the shape its family promises.
"""
from __future__ import annotations

from typing import Callable, Sequence

from cases.case import Table


def copy(t: Table) -> Table:
    return [list(r) for r in t]


def fold(
    t: Table, keep: int = 1, header: bool = False, names: Sequence[str] = (), skip_blank: bool = False
) -> Table:
    """Wide to long: each cell right of the first ``keep`` columns becomes its own row.

    With ``header``, the first row names the folded columns; the output starts with
    ``t[0][:keep] + names`` and each long row gets the column name before the value.
    """
    out: Table = []
    body = t[1:] if header else t
    if header:
        out.append(list(t[0][:keep]) + list(names))
    for row in body:
        for j in range(keep, len(row)):
            if skip_blank and not row[j].strip():
                continue
            out.append(list(row[:keep]) + ([t[0][j]] if header else []) + [row[j]])
    return out


def unfold(t: Table, header: bool = True) -> Table:
    """Long to wide on (key, attribute, value) rows; attributes in order of first appearance.

    With ``header`` the input's first row is a header: its first cell heads the key column.
    Missing (key, attribute) pairs become "".
    """
    body = t[1:] if header else t
    keys: list[str] = []
    attrs: list[str] = []
    cells: dict[tuple[str, str], str] = {}
    for key, attr, value in body:
        if key not in keys:
            keys.append(key)
        if attr not in attrs:
            attrs.append(attr)
        cells[(key, attr)] = value
    out: Table = [[t[0][0]] + attrs] if header else []
    for key in keys:
        out.append([key] + [cells.get((key, a), "") for a in attrs])
    return out


def fill_down(t: Table, cols: Sequence[int], start: int = 0) -> Table:
    """Blank cells in ``cols`` take the last non-blank value above them (from row ``start``)."""
    out = copy(t)
    last: dict[int, str] = {}
    for row in out[start:]:
        for c in cols:
            if row[c].strip():
                last[c] = row[c]
            elif c in last:
                row[c] = last[c]
    return out


def keep_rows(t: Table, pred: Callable[[list[str]], bool]) -> Table:
    return [list(r) for r in t if pred(r)]


def is_blank(row: Sequence[str]) -> bool:
    return all(not c.strip() for c in row)


def select(t: Table, cols: Sequence[int]) -> Table:
    return [[r[c] for c in cols] for r in t]


def transpose(t: Table) -> Table:
    width = max(len(r) for r in t)
    return [[r[j] if j < len(r) else "" for r in t] for j in range(width)]


def chunk(t: Table, k: int) -> list[Table]:
    return [t[i:i + k] for i in range(0, len(t), k)]


def group_consecutive(t: Table, col: int = 0) -> list[Table]:
    groups: list[Table] = []
    for row in t:
        if groups and groups[-1][0][col] == row[col]:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def pad(t: Table, fill: str = "") -> Table:
    width = max(len(r) for r in t)
    return [list(r) + [fill] * (width - len(r)) for r in t]


def dedupe(t: Table) -> Table:
    seen: set[tuple[str, ...]] = set()
    out: Table = []
    for row in t:
        key = tuple(row)
        if key not in seen:
            seen.add(key)
            out.append(list(row))
    return out


def map_col(t: Table, col: int, fn: Callable[[str], list[str]]) -> Table:
    """Replace column ``col`` of every row by the cells ``fn`` returns for it."""
    return [list(r[:col]) + fn(r[col]) + list(r[col + 1:]) for r in t]
