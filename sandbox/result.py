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
    # Checked by the child and again by the parent before decoding.
    max_cells: int = 100_000
    # No longer used (issue 27): a per-call budget made one run's result depend on its
    # neighbours' outputs. Kept so that code constructing ``OutputLimits(max_batch_bytes=...)``
    # still works; every output is now judged on its own, within the per-run limits above.
    max_batch_bytes: int = 16 << 20
    batch_free_bytes: int = 64 << 10

    def as_dict(self) -> dict:
        return {"max_rows": self.max_rows, "max_cols": self.max_cols,
                "max_cell_chars": self.max_cell_chars, "max_bytes": self.max_bytes,
                "max_cells": self.max_cells}


@dataclass(frozen=True)
class RunResult:
    """One run of one program on one table.

    ``error`` is ``None`` when ``ok``, else one of ``ERRORS``; ``message`` is a short line a
    model can act on; ``wall_ms`` is measured by the parent from dispatch to reply and
    ``cpu_ms`` is the child's user+system CPU time.
    """

    ok: bool
    output: list[list[str]] | None
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


def _structure(limits: "OutputLimits"):
    """A regular expression that matches exactly the compact JSON texts of at most
    ``max_rows`` lists of at most ``max_cols`` strings; possessive, so it never backtracks and
    needs constant memory, and it builds no object. Only used when the cheap count cannot
    bound the number of lists."""
    cell = rb'"(?:[^"\\]++|\\.)*+"'
    row = rb"\[(?:" + cell + rb"(?:," + cell + rb"){0,%d}+)?+\]" % (limits.max_cols - 1)
    return re.compile(rb"\[(?:" + row + rb"(?:," + row + rb"){0,%d}+)?+\]"
                      % (limits.max_rows - 1))


_STRUCTURES: dict = {}


_ESCAPE = re.compile(rb"\\.", re.DOTALL)


def precheck(payload: bytes, limits: OutputLimits) -> str:
    """Cheap structural check before any decoding: ``""`` or why the payload cannot be a valid
    output. Size, first and last byte, then the number of ``[`` (a memchr-speed count): a
    valid output has at most ``max_rows + 1`` lists, so ``json.loads`` then builds at most that
    many containers (a forged ``[[],[],...]`` frame would build 1.4 million). A payload with
    more ``[`` (they may sit inside strings) is matched against ``_structure`` instead."""
    if len(payload) > limits.max_bytes:
        return f"output is more than {limits.max_bytes} bytes of JSON"
    if payload[:1] != b"[" or payload[-1:] != b"]":
        return "output is not a JSON list of rows"
    # every cell is a string: two unescaped quotes (escapes are a backslash and one character)
    quotes = payload.count(b'"')
    if quotes > 2 * limits.max_cells and b"\\" in payload:
        quotes = _ESCAPE.sub(b"", payload).count(b'"')
    if quotes > 2 * limits.max_cells:
        return f"output has more than {limits.max_cells} cells, more than the limit"
    if payload.count(b"[") > limits.max_rows + 1:
        pattern = _STRUCTURES.get(limits)
        if pattern is None:
            pattern = _STRUCTURES[limits] = _structure(limits)
        if pattern.fullmatch(payload) is None:
            return (f"output is not a list of at most {limits.max_rows} rows of at most "
                    f"{limits.max_cols} strings")
    return ""


def decode_output(payload: bytes, limits: OutputLimits) -> tuple[list[list[str]] | None, str]:
    """Decode and check the child's JSON; returns ``(table, "")`` or ``(None, why)``.

    ``precheck`` runs first (before a byte is decoded, the cost stays bounded), and the
    garbage collector is paused while the lists are built: decoding allocates up to a million
    objects, and every collection it would trigger walks whatever the caller holds."""
    why = precheck(payload, limits)
    if why and len(payload) > 1 << 16:
        return None, why  # (a small payload is decoded anyway, for a precise message)
    enabled = gc.isenabled()
    gc.disable()
    try:
        table = json.loads(payload.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"output is not valid JSON: {str(exc)[:120]}"
    finally:
        if enabled:
            gc.enable()
    if b"\\u" in payload and not _encodable(table):  # "\udc80" escapes decode to lone surrogates
        return None, "output contains a lone surrogate (not valid UTF-8)"
    shape = _shape(table, limits)
    return (table, "") if not (shape or why) else (None, shape or why)


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
