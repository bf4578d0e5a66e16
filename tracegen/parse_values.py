"""Pull a direct answer of any value type out of what a model wrote (``parse_answer``).

Tables go through ``parsing.parse_table`` unchanged. A grid is read from the last code fence that
holds one, else from the text: as JSON (``[[0, 7], [7, 0]]``, Python literals allowed and named as
a repair) or as rows of numbers one per line (``0 7`` / ``0,7``; a row of digits without separators,
``07``, reads digit by digit and is named as a repair). Any other value is read as JSON from the
last fence, else from the whole answer; when the examples' outputs are strings, a fence or a one-line
answer that is not JSON is taken as the string itself (named as a repair). The value read must have
the examples' output type (a grid for grids; for JSON values the same JSON kind: list, object,
string, number, boolean), else the parse fails and says what it found.
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

from cases.values import is_grid

from .parsing import TRUNCATED_THINKING, Parsed, _fences, parse_table, strip_thinking

_ROW = re.compile(r"^\s*\[?\s*(-?\d+(?:\s*[, ]\s*-?\d+)*)\s*\]?\s*,?\s*$")


def parse_answer(text: str, value_type: str = "table", like: Any = None) -> Parsed:
    """The direct answer of a task whose outputs have ``value_type``; ``like``: an example output
    (its JSON kind is the one a "json" answer must have)."""
    if value_type == "table":
        return parse_table(text)
    body, note = strip_thinking(text or "")
    if body is None:
        return Parsed(None, TRUNCATED_THINKING, note)
    fences = [(f[1], f[2]) for f in _fences(body)]
    read = _read_grid if value_type == "grid" else (lambda s: _read_json(s, like))
    tried = []
    for where, candidates in (("code_fence", [b for b, _ in fences][::-1]), ("none", [body])):
        for cand in candidates:
            value, detail = read(cand)
            if value is not None:
                detail = "; ".join(x for x in (note, detail) if x)
                return Parsed(value, "repaired" if detail and detail != note else "ok", detail, where)
            tried.append(detail)
    want = "grid" if value_type == "grid" else _kind(like)
    why = tried[0] if tried else ""  # the last fence's reason, else the whole answer's
    return Parsed(None, "failed", f"no {want} found" + (f" ({why})" if why else ""))


def _read_grid(text: str) -> tuple[Any, str]:
    """(grid, repair note) or (None, why)."""
    s = text.strip()
    start = s.find("[")
    if start >= 0:
        value, note = _literal(s[start:s.rfind("]") + 1])
        if is_grid(value):
            return value, note
    rows, notes = [], set()
    block: list[list[int]] = []
    for line in s.splitlines():
        m = _ROW.match(line)
        if not m:
            if block:  # the last block of number rows wins (a restated example usually comes first)
                rows = block
            block = []
            continue
        cells = re.split(r"[\s,]+", m.group(1).strip())
        if len(cells) == 1 and len(cells[0]) > 1 and cells[0].isdigit():
            cells = list(cells[0])
            notes.add("rows of digits read digit by digit")
        block.append([int(c) for c in cells])
    rows = block or rows
    if rows:
        return rows, "; ".join(sorted(notes))
    return None, "no rows of numbers"


def _literal(s: str) -> tuple[Any, str]:
    try:
        return json.loads(s), ""
    except ValueError:
        pass
    try:
        return ast.literal_eval(s), "read as a Python literal"
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None, "not JSON"


def _read_json(text: str, like: Any) -> tuple[Any, str]:
    s = text.strip()
    value, note = _literal(s)
    if value is None:
        if isinstance(like, str) and s and "\n" not in s:
            return s, "plain text read as the string"
        return None, note
    if like is not None and _kind(value) != _kind(like):
        if isinstance(like, str) and "\n" not in s:
            return s, "plain text read as the string"
        return None, f"a {_kind(value)}, expected a {_kind(like)}"
    return value, note


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "JSON object", type(None): "null"}.get(type(v), "value")
