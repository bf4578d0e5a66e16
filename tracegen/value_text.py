"""Values as prompts show them, and how a produced value differs from the expected one.

Tables are shown as ``prompts.render_table`` shows them (JSON, one row per line). Grids are shown
compactly, one row per line with the numbers separated by spaces (``0 0 7 7 0``), as ARC prompts
usually are; any other value is compact JSON (a string in quotes, so its exact characters show).
Feedback diffs are capped (``MAX_FEEDBACK_CHARS`` of ``prompts``) by the caller.
"""
from __future__ import annotations

import json
from typing import Any

from cases import is_table, shape
from cases.values import is_grid

TYPE_WORDS = {  # what a value is, in the system prompt and the program's signature
    "table": ("a table: a JSON list of rows, each row a list of strings", "table"),
    "grid": ("a grid: a list of rows of integers (colours 0-9 in ARC), shown one row per line with the "
             "numbers separated by spaces", "grid"),
    "json": ("a JSON value (in Python: lists, dicts, str, int, float, bool, None)", "x"),
}


def render_table(table) -> str:
    """How prompts show a table: compact JSON, one row per line (``[\\n["a","b"],\\n["c","d"]\\n]``)."""
    if not table:
        return "[]"
    rows = [json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in table]
    return "[\n" + ",\n".join(rows) + "\n]"


def render_value(v: Any, value_type: str) -> str:
    """How a prompt shows ``v``: grids one row per line, tables as JSON rows, else compact JSON."""
    if value_type == "grid" and is_grid(v):
        return "\n".join(" ".join(str(c) for c in row) for row in v)
    if value_type in ("table", "grid") and is_table(v) and v:
        return render_table(v)
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _shape_words(v: Any) -> str:
    s = shape(v)
    if s is None:
        return f"a {_kind(v)}"
    if len(s) == 1:
        return f"a list of {s[0]}"
    rows = f"{s[0]} row{'s' * (s[0] != 1)}"
    widths = sorted({len(r) for r in v})
    cols = str(widths[0]) if len(widths) == 1 else f"{widths[0]}-{widths[-1]}"
    return f"{rows} x {cols} cols"


def _kind(v: Any) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", dict: "JSON object",
            type(None): "null"}.get(type(v), "value")


def value_diff(expected: Any, produced: Any, value_type: str, max_rows: int, row_chars: int) -> str:
    """How ``produced`` differs from ``expected`` (grids and other 2-D values: shape, then the first
    differing rows; anything else: both values)."""
    def cap(text: str) -> str:
        return text if len(text) <= row_chars else text[: row_chars - 3] + "..."

    want, got = _shape_words(expected), _shape_words(produced)
    if want != got:
        lines = [f"Expected {want}, got {got}."]
    else:  # the same shape (or kind): what differs is below
        lines = [f"The shape is right ({want}); these rows differ:"] if shape(expected) is not None else []
    two_d = shape(expected) is not None and len(shape(expected)) == 2 and shape(produced) is not None \
        and len(shape(produced)) == 2
    if not two_d:
        lines.append(f"expected {cap(render_value(expected, 'json'))}")
        lines.append(f"got      {cap(render_value(produced, 'json'))}")
        return "\n".join(lines)

    def row(r):
        return cap(" ".join(map(str, r)) if is_grid([r]) else render_value(r, "json"))
    lines += row_diff_lines(expected, produced, max_rows, row)
    return "\n".join(lines)


def row_diff_lines(expected: list, produced: list, max_rows: int, row) -> list[str]:
    """One line per differing row (at most ``max_rows``), each row rendered by ``row``: the part of
    a repair's feedback that tables and grids share."""
    lines, shown = [], 0
    for i in range(max(len(expected), len(produced))):
        exp = expected[i] if i < len(expected) else None
        got = produced[i] if i < len(produced) else None
        if exp == got:
            continue
        if shown == max_rows:
            lines.append("(more differing rows not shown)")
            break
        if got is None:
            lines.append(f"row {i}: expected {row(exp)}, missing")
        elif exp is None:
            lines.append(f"row {i}: unexpected extra row {row(got)}")
        else:
            lines.append(f"row {i}: expected {row(exp)}, got {row(got)}")
        shown += 1
    return lines
