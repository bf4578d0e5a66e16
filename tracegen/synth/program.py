"""Programs as data: a program is a sequence of ``(operator name, params)`` steps.

``program_key`` is the canonical text of a program (compact JSON with sorted keys): it names the
program in ``exclude`` sets and in the ``# program:`` line of emitted code, and ``parse_key``
reads it back. ``run_program`` is the in-process reference semantics of a program.
"""
from __future__ import annotations

import json

from .library import OPERATORS, apply_step

Table = list[list[str]]
Step = tuple[str, dict]
Program = tuple[Step, ...]


def program_key(program) -> str:
    return json.dumps([[name, params] for name, params in program], sort_keys=True, separators=(",", ":"))


def parse_key(text: str) -> Program | None:
    """The program named by ``text``, or None when it is not a valid program key."""
    try:
        raw = json.loads(text)
    except (ValueError, TypeError):
        return None
    if not isinstance(raw, list):
        return None
    steps = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and item[0] in OPERATORS
                and isinstance(item[1], dict)):
            return None
        steps.append((item[0], item[1]))
    return tuple(steps)


def run_program(table: Table, program) -> Table:
    for step in program:
        table = apply_step(table, step)
    return table
