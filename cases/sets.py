"""Named case sets: ``foofah`` (the default) and ``library``; any other value is a directory.

``foofah`` is the Foofah benchmark shipped unchanged under ``cases/foofah/`` (250 files, 50
families, MIT license and attribution beside them). ``library`` is the project's generated
library under ``cases/data/`` (``python -m cases.generate``).
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
CASE_SETS = {"foofah": _HERE / "foofah", "library": _HERE / "data"}
DEFAULT_CASE_SET = "foofah"


def resolve_case_set(value: str | None) -> tuple[str, str]:
    """(case-set name, directory) for ``--cases``: a set name, or a directory named ``dir:<path>``."""
    value = value or DEFAULT_CASE_SET
    if value in CASE_SETS:
        return value, str(CASE_SETS[value])
    return f"dir:{value}", value
