"""What a run returns, and the parent's strict check of the output it decodes.

``RunResult.output`` is always built here, in the parent, by ``json.loads`` of the bytes the
child sent: a fresh ``list`` of ``list`` of ``str`` that no program code ever touched. The check
refuses anything else (numbers, ``null``, objects, ``NaN``/``Infinity``, invalid UTF-8, lone
surrogates written as ``\\udXXX`` escapes, rows that are not lists) and enforces ``OutputLimits``,
checking the size before decoding anything. So every string in a result, output or message, is
valid UTF-8 and can be written to a trace file. Not covered: whether the output is *right*; grading
is the caller's business.
"""
from __future__ import annotations

import gc
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

try:
    from ._wire import ERRORS
except ImportError:  # pragma: no cover - never loaded outside the package
    from _wire import ERRORS

__all__ = ["ERRORS", "OutputLimits", "RunResult", "clean_message", "decode_message",
           "decode_output", "precheck"]


@dataclass(frozen=True)
class OutputLimits:
    """Caps on what a program may return; going over one is a ``bad_output`` result."""

    max_rows: int = 10_000
    max_cols: int = 1_000
    max_cell_chars: int = 100_000
    max_bytes: int = 4 << 20  # of compact UTF-8 JSON
    # What an output costs the parent once decoded is about 70 bytes a cell (a ``str`` each):
    # 838k two-character cells fit in ``max_bytes`` and decode to ~59 MB. 100,000 cells (~7 MB)
    # is far above any real table task (the largest shipped input has a few tens of thousands).
    # Checked by the child and again by the parent before decoding. For kind "json" it caps the
    # values (every container, scalar and dict key), and ``max_depth`` their nesting.
    max_cells: int = 100_000
    max_depth: int = 100
    # No longer used (issue 27): a per-call budget made one run's result depend on its
    # neighbours' outputs. Kept so that code constructing ``OutputLimits(max_batch_bytes=...)``
    # still works; every output is now judged on its own, within the per-run limits above.
    max_batch_bytes: int = 16 << 20
    batch_free_bytes: int = 64 << 10

    def as_dict(self) -> dict:
        return {"max_rows": self.max_rows, "max_cols": self.max_cols,
                "max_cell_chars": self.max_cell_chars, "max_bytes": self.max_bytes,
                "max_cells": self.max_cells, "max_depth": self.max_depth}


@dataclass(frozen=True)
class RunResult:
    """One run of one program on one table.

    ``error`` is ``None`` when ``ok``, else one of ``ERRORS``; ``message`` is a short line a
    model can act on; ``wall_ms`` is measured by the parent from dispatch to reply and
    ``cpu_ms`` is the child's user+system CPU time.
    """

    ok: bool
    output: Any  # a list of lists of str for kind "table"; None unless ok
    error: str | None
    message: str
    wall_ms: float
    cpu_ms: float = 0.0


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "a number",
               float: "a number", bool: "a boolean", type(None): "null"}


def _no_constants(name: str):
    raise ValueError(f"{name} is not a string")


def _encodable(table) -> bool:
    try:
        json.dumps(table, ensure_ascii=False).encode("utf-8")
        return True
    except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
        return False


def decode_message(payload: bytes) -> str | None:
    """An error message as text, or ``None`` when the bytes are not valid UTF-8."""
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return None


# Characters that can act on a terminal or reorder text when a message is shown: C0/C1
# controls (ESC, BEL, NUL ...), DEL, and the invisible format characters (bidi overrides such
# as U+202E, zero-width joiners, BOM). Whitespace controls are spaces once ``cut`` has run.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
                      "\u2060-\u206f\ufeff\ufff9-\ufffb]")


def _escape(m) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean_message(text: str) -> str:
    """``text`` with every control or format character escaped (``\\x1b``, ``\\u202e``), so a
    message shown in a terminal or a report can neither send escape sequences nor reorder
    what is around it; other categories ``C*`` (unassigned, private use) are escaped too."""
    text = _CONTROL.sub(_escape, text)
    if not text.isascii():
        text = "".join(c if unicodedata.category(c)[0] != "C" else f"\\u{ord(c):04x}"
                       if ord(c) < 0x10000 else f"\\U{ord(c):08x}" for c in text)
    return text


# a \u escape of a surrogate (or a false alarm: an escaped backslash before "ud8..."); only then
# is the decoded value encoded again to look for a lone one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _no_json_constants(name: str):
    raise ValueError(f"{name} is not allowed in JSON")


def _bare(payload: bytes) -> bytes:
    """``payload`` without its escaped backslashes and escaped quotes (C-speed replaces; in
    valid JSON a backslash only ever starts an escape, so what is left has a ``"`` exactly
    where a string starts or ends)."""
    if b"\\" not in payload:
        return payload
    return payload.replace(b"\\\\", b"").replace(b'\\"', b"")


def _structure(bare: bytes) -> tuple[int, int, int, int]:
    """The number of ``,``, ``:``, ``[`` and ``{`` in ``bare`` (overcounts what sits in strings)."""
    return bare.count(b","), bare.count(b":"), bare.count(b"["), bare.count(b"{")


def _outside_strings(bare: bytes) -> bytes:
    """What is left of ``bare`` once every string is cut out (its quotes too)."""
    return b"".join(bare.split(b'"')[0::2])


def precheck(payload: bytes, limits: OutputLimits, kind: str = "table") -> str:
    """Cheap structural check before any decoding: ``""`` or why the payload cannot be a valid
    output of ``kind``. It bounds what ``json.loads`` would build, for any bytes a program can
    write: size; strings (unescaped quotes, counted after the escapes are taken out); then the
    values outside strings (one per ``,``, ``:`` and opening bracket, plus one), counted on the
    whole payload and, only when that is over the limit, again without the strings (split at
    the quotes, at most ``2 * max_cells`` of them by then). Every step is a C-level pass over at
    most ``max_bytes``; for a payload that is not JSON the counts hold up to its first error,
    where ``json.loads`` stops."""
    if len(payload) > limits.max_bytes:
        return f"output is more than {limits.max_bytes} bytes of JSON"
    if kind != "json" and (payload[:1] != b"[" or payload[-1:] != b"]"):
        return "output is not a JSON list of rows"
    bare = _bare(payload)
    strings = bare.count(b'"') // 2
    if kind == "grid" and strings:
        return "output holds strings, expected a grid (a list of rows of int)"
    if strings > limits.max_cells:
        what = "cells" if kind == "table" else "values"
        return f"output has more than {limits.max_cells} {what}, more than the limit"
    if kind == "json":  # each empty container counts one more: at most twice the values
        if sum(_structure(bare)) >= 2 * limits.max_cells and \
                sum(_structure(_outside_strings(bare))) >= 2 * limits.max_cells:
            return f"output has more than {limits.max_cells} values, more than the limit"
        return ""
    commas, colons, lists, objects = _structure(bare)
    if colons or objects or lists > limits.max_rows + 1 or commas > limits.max_cells + limits.max_rows:
        commas, colons, lists, objects = _structure(_outside_strings(bare))
    if colons or objects or lists > limits.max_rows + 1:
        what = "strings" if kind == "table" else "int"
        return (f"output is not a list of at most {limits.max_rows} rows of at most "
                f"{limits.max_cols} {what}")
    if commas > limits.max_cells + limits.max_rows:
        return f"output has more than {limits.max_cells} cells, more than the limit"
    return ""


def decode_output(payload: bytes, limits: OutputLimits, kind: str = "table") -> tuple[Any, str]:
    """Decode and check the child's JSON against ``kind``; returns ``(value, "")`` or
    ``(None, why)``.

    ``precheck`` runs first (before a byte is decoded, the cost stays bounded), and the
    garbage collector is paused while the values are built: every collection a big decode
    would trigger walks whatever the caller holds."""
    why = precheck(payload, limits, kind)
    if why and len(payload) > 1 << 16:
        return None, why  # (a small payload is decoded anyway, for a precise message)
    enabled = gc.isenabled()
    gc.disable()
    try:
        value = json.loads(payload.decode("utf-8"), parse_constant=_no_constants
                           if kind == "table" else _no_json_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"output is not valid JSON: {str(exc)[:120]}"
    finally:
        if enabled:
            gc.enable()
    # "\udc80" escapes decode to lone surrogates (raw bytes cannot: the strict decode above)
    if _SURROGATE_ESCAPE.search(payload) and not _encodable(value):
        return None, "output contains a lone surrogate (not valid UTF-8)"
    shape = _SHAPES[kind](value, limits)
    return (value, "") if not (shape or why) else (None, shape or why)


_STR_ONLY = {str}


def _shape(table, limits: OutputLimits) -> str:
    """``""`` when ``table`` is a list of at most ``max_rows`` lists of at most ``max_cols``
    strings of at most ``max_cell_chars`` characters, else why not. C-level passes per row
    (``map``); the cell-by-cell loop runs only to name the first bad cell."""
    if type(table) is not list:
        return f"output is {_JSON_NAMES[type(table)]}, expected a list of rows"
    if len(table) > limits.max_rows:
        return f"output has {len(table)} rows, more than the limit {limits.max_rows}"
    for i, row in enumerate(table):
        if type(row) is not list:
            return f"row {i} is {_JSON_NAMES[type(row)]}, expected a list of str"
        if len(row) > limits.max_cols:
            return f"row {i} has {len(row)} cells, more than the limit {limits.max_cols}"
        if not row or (set(map(type, row)) <= _STR_ONLY
                       and max(map(len, row)) <= limits.max_cell_chars):
            continue
        for j, cell in enumerate(row):
            if type(cell) is not str:
                return f"row {i}, cell {j} is {_JSON_NAMES[type(cell)]}, expected a string"
            if len(cell) > limits.max_cell_chars:
                return f"row {i}, cell {j} is longer than {limits.max_cell_chars} chars"
    return ""


_INT_ONLY = {int}


def _grid_shape(grid, limits: OutputLimits) -> str:
    """``""`` when ``grid`` is a list of at most ``max_rows`` lists of ``int`` (not ``bool``;
    rows of any length up to ``max_cols``), at most ``max_cells`` in all, else why not."""
    if type(grid) is not list:
        return f"output is {_JSON_NAMES[type(grid)]}, expected a grid (a list of rows of int)"
    if len(grid) > limits.max_rows:
        return f"output has {len(grid)} rows, more than the limit {limits.max_rows}"
    cells = 0
    for i, row in enumerate(grid):
        if type(row) is not list:
            return f"row {i} is {_JSON_NAMES[type(row)]}, expected a list of int"
        if len(row) > limits.max_cols:
            return f"row {i} has {len(row)} cells, more than the limit {limits.max_cols}"
        cells += len(row)
        if not row or set(map(type, row)) <= _INT_ONLY:
            continue
        for j, cell in enumerate(row):
            if type(cell) is not int:
                return f"row {i}, cell {j} is {_JSON_NAMES[type(cell)]}, expected int"
    if cells > limits.max_cells:
        return f"output has more than {limits.max_cells} cells, more than the limit"
    return ""


def _json_shape(value, limits: OutputLimits) -> str:
    """``""`` when the decoded ``value`` has at most ``max_cells`` values (dict keys count)
    nested at most ``max_depth`` deep, else why not (``json.loads`` builds only JSON types)."""
    nodes, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        kind = type(item)
        if kind is list or kind is dict:
            if depth >= limits.max_depth:
                return f"output is nested more than {limits.max_depth} deep"
            if kind is dict:
                nodes += len(item)
                item = item.values()
            stack.extend((v, depth + 1) for v in item)
        if nodes > limits.max_cells:
            return f"output has more than {limits.max_cells} values, more than the limit"
    return ""


_SHAPES = {"table": _shape, "grid": _grid_shape, "json": _json_shape}
