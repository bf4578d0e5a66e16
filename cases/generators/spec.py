"""What a family generator is, and how one case file is built from it.

A family is metadata (kind, steps, why its example is ambiguous, if it is) plus ``make``, a
function of a seeded ``random.Random`` and the case number ``k`` that returns a ``Draw``: the
example input, the new input, and the reference program that turns any input of the family
into its output. Both outputs are computed by that one program, so the public example and
the hidden answer can never disagree about the rule.

For an ambiguous family the draw also carries ``alternative``: a simple program a careful
user could infer from the example alone. It must reproduce the example output and get the
new input wrong; ``build_case`` refuses to write a case where that is not so.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from cases.case import Table
from cases.tables import is_table

Program = Callable[[Table], Table]
KINDS = ("reshape", "cleanup", "text", "combo")


class GeneratorError(RuntimeError):
    """A family generator produced a case that breaks the library's own rules."""


@dataclass(frozen=True)
class Draw:
    example: Table  # public example input
    test: Table  # new input
    program: Program  # the rule of the family, with this case's parameters
    alternative: Program | None = None  # ambiguous families only: fits example, not test


@dataclass(frozen=True)
class Family:
    name: str
    summary: str  # what it does, one sentence
    kind: str  # one of KINDS
    steps: tuple[str, ...]  # the transformation steps, in order
    make: Callable[[random.Random, int], Draw]
    ambiguous_why: str = ""  # empty when the example pins the rule down

    @property
    def ambiguous(self) -> bool:
        return bool(self.ambiguous_why)

    @property
    def multi_step(self) -> bool:
        return len(self.steps) >= 2


def case_rng(family: str, k: int) -> random.Random:
    # A str seed is hashed with SHA-512 by random.seed, so it is stable across runs and
    # Python versions (unlike hash()).
    return random.Random(f"{family}/{k}")


def build_case(family: Family, k: int) -> dict:
    """The Foofah-format object for case ``k`` of ``family`` (checked, ready to dump)."""
    # the data come from case k's own seed; the variant (delimiter, block size, ...) cycles through
    # the shipped five, so cases past 5 are new draws of the same variants
    draw = family.make(case_rng(family.name, k), (k - 1) % 5 + 1)
    out = draw.program(draw.example)
    answer = draw.program(draw.test)
    where = f"{family.name} case {k}"
    for name, t in (("example", draw.example), ("output", out), ("test", draw.test), ("answer", answer)):
        if not is_table(t) or not t:
            raise GeneratorError(f"{where}: {name} is not a non-empty table of strings")
    if out == draw.example or answer == draw.test:
        raise GeneratorError(f"{where}: the transformation leaves its input unchanged")
    if family.ambiguous:
        if draw.alternative is None:
            raise GeneratorError(f"{where}: ambiguous family without an alternative program")
        if draw.alternative(draw.example) != out:
            raise GeneratorError(f"{where}: the alternative program does not fit the example")
        if draw.alternative(draw.test) == answer:
            raise GeneratorError(f"{where}: the alternative program also solves the new input")
    return {
        "InputTable": draw.example,
        "OutputTable": out,
        "TestingTable": draw.test,
        "TestAnswer": answer,
        "NumSamples": 1,
        "TestName": family.name,
    }
