"""Named case sets: ``foofah`` (the default) and ``library``; any other value is a directory.

``foofah`` is the Foofah benchmark shipped unchanged under ``cases/foofah/`` (250 files, 50
families, MIT license and attribution beside them). ``library`` is the project's generated
library under ``cases/data/`` (``python -m cases.generate``).
"""
from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent
CASE_SETS = {"foofah": _HERE / "foofah", "library": _HERE / "data"}
DEFAULT_CASE_SET = "foofah"


def resolve_case_set(value: str | None) -> tuple[str, str]:
    """(case-set name, directory) for ``--cases``: a set name, or a directory named ``dir:<path>``.

    Raises ``CaseError`` (one line listing the set names) when ``value`` is neither."""
    value = value or DEFAULT_CASE_SET
    if value in CASE_SETS:
        return value, str(CASE_SETS[value])
    if not Path(value).is_dir():
        from .loader import CaseError

        path_like = os.sep in value or "/" in value or Path(value).exists()
        what = ("not a directory" if Path(value).exists() else "no such directory") if path_like else "unknown case set"
        raise CaseError(value, f"{what}; choose a case set ({', '.join(CASE_SETS)}) or a directory of case files")
    return f"dir:{value}", value
