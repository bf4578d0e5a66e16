"""Task values: their type, their shape, and when two of them are the same answer.

* ``value_type_of``: "table" (a list of rows of strings), "grid" (a list of rows of ints, not
  bools), else "json". An empty list is a table (Foofah allows empty tables).
* ``task_value_type``: the type of a task's outputs: every example output (and the answer) of one
  type, else "json".
* ``shape``: (rows, cols) for a 2-D value (a list of lists; cols = the widest row), (len,) for a
  flat list, None for anything else (a string, a number, an object).
* ``values_equal``: exact equality of JSON values: a table only equals a table (its cells compared
  as strings, exactly: ``cases.tables.tables_equal``); otherwise types must match (a bool is not a
  number, a string is not a number), numbers compare by value (1 == 1.0), lists in order, objects
  by keys.
"""
from __future__ import annotations

import json
from typing import Any

from cases.tables import is_table, tables_equal


def is_grid(v: Any) -> bool:
    """A non-empty list of lists of ints (bools are not ints here)."""
    return (type(v) is list and bool(v) and all(type(r) is list for r in v)
            and all(type(c) is int for r in v for c in r))


def value_type_of(v: Any) -> str:
    if is_table(v):
        return "table"
    if is_grid(v):
        return "grid"
    return "json"


def task_value_type(outputs) -> str:
    """The one value type of every output given (None ones skipped); "json" when they differ. A value
    that is both (no cells: ``[]``, ``[[]]``) reads as a table alone and as a grid beside grids."""
    kinds = [value_type_of(v) for v in outputs if v is not None]
    if not kinds or all(k == "table" for k in kinds):
        return "table"
    if all(k == "grid" or not any(v for v in out) for k, out in zip(kinds, (o for o in outputs if o is not None))
           if k != "json"):
        return "grid" if "json" not in kinds else "json"
    return "json"


def shape(v: Any) -> tuple[int, ...] | None:
    """(rows, cols) for a list of lists, (len,) for a flat list, None otherwise."""
    if type(v) is not list:
        return None
    if v and all(type(r) is list for r in v):
        return len(v), max(len(r) for r in v)
    if any(type(r) is list for r in v):
        return None  # a mixed list has no shape
    return (len(v),)


def values_equal(a: Any, b: Any) -> bool:
    """Exact equality of two answers (module docstring); None equals nothing."""
    if a is None or b is None:
        return False
    if is_table(a) or is_table(b):
        return tables_equal(a, b)
    return _same(a, b)


def _same(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return a == b
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def render_value(v: Any) -> str:
    """Compact JSON of any value (one line)."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
