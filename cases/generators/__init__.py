"""Seeded generators of the shipped case library (``cases/data/``).

``FAMILIES`` lists every family with its metadata (kind, steps, ambiguity); ``build_case``
turns family + case number into a Foofah-format object. ``python -m cases.generate`` writes
or checks the files.
"""
from cases.generators.cleanup import FAMILIES as _CLEANUP
from cases.generators.combos import FAMILIES as _COMBOS
from cases.generators.reshape import FAMILIES as _RESHAPE
from cases.generators.spec import KINDS, Draw, Family, GeneratorError, build_case, case_rng
from cases.generators.text import FAMILIES as _TEXT

FAMILIES: tuple[Family, ...] = _RESHAPE + _CLEANUP + _TEXT + _COMBOS
CASES_PER_FAMILY = 5


def get_family(name: str) -> Family:
    for fam in FAMILIES:
        if fam.name == name:
            return fam
    raise KeyError(f"no generated family named {name!r}")


__all__ = [
    "CASES_PER_FAMILY", "Draw", "FAMILIES", "Family", "GeneratorError", "KINDS", "build_case",
    "case_rng", "get_family",
]
