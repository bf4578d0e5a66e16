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

import json
from dataclasses import dataclass

try:
    from ._wire import ERRORS
except ImportError:  # pragma: no cover - never loaded outside the package
    from _wire import ERRORS

__all__ = ["ERRORS", "OutputLimits", "RunResult", "decode_message", "decode_output"]


@dataclass(frozen=True)
class OutputLimits:
    """Caps on what a program may return; going over one is a ``bad_output`` result."""

    max_rows: int = 10_000
    max_cols: int = 1_000
    max_cell_chars: int = 100_000
    max_bytes: int = 4 << 20  # of compact UTF-8 JSON

    def as_dict(self) -> dict:
        return {"max_rows": self.max_rows, "max_cols": self.max_cols,
                "max_cell_chars": self.max_cell_chars, "max_bytes": self.max_bytes}


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


def decode_output(payload: bytes, limits: OutputLimits) -> tuple[list[list[str]] | None, str]:
    """Decode and check the child's JSON; returns ``(table, "")`` or ``(None, why)``."""
    if len(payload) > limits.max_bytes:  # before any decoding: the cost stays bounded
        return None, f"output is more than {limits.max_bytes} bytes of JSON"
    try:
        table = json.loads(payload.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"output is not valid JSON: {str(exc)[:120]}"
    if b"\\u" in payload and not _encodable(table):  # "\udc80" escapes decode to lone surrogates
        return None, "output contains a lone surrogate (not valid UTF-8)"
    if type(table) is not list:
        return None, f"output is {_JSON_NAMES[type(table)]}, expected a list of rows"
    if len(table) > limits.max_rows:
        return None, f"output has {len(table)} rows, more than the limit {limits.max_rows}"
    for i, row in enumerate(table):
        if type(row) is not list:
            return None, f"row {i} is {_JSON_NAMES[type(row)]}, expected a list of str"
        if len(row) > limits.max_cols:
            return None, f"row {i} has {len(row)} cells, more than the limit {limits.max_cols}"
        for j, cell in enumerate(row):
            if type(cell) is not str:
                return None, f"row {i}, cell {j} is {_JSON_NAMES[type(cell)]}, expected a string"
            if len(cell) > limits.max_cell_chars:
                return None, f"row {i}, cell {j} is longer than {limits.max_cell_chars} chars"
    return table, ""
