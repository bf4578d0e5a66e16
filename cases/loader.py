"""Load and validate a directory of case files: Foofah-format tables and ARC-format tasks.

Covered: every ``*.json`` / ``*.txt`` file under a root (recursively, suffix case ignored), a file
whose top-level object has ``train`` and ``test`` read as an ARC task (``cases.arc``: a case per
test pair, the family its folder's name, or its file stem when it lies at the root), else as
Foofah:
UTF-8 (a BOM is accepted), the four tables being lists of lists of strings, a non-empty public
example, size limits, the ``[["NOT AVAILABLE, SORRY"]]`` marker, family names, and duplicate
case ids. Every file is checked before anything is returned, so a caller writes nothing until
the whole set is known to be good.

Not covered: whether the example is consistent with the hidden answer (that is what the
toolkit measures), ragged rows (allowed, Foofah has them), or empty rows inside a table.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from cases.arc import arc_cases, is_arc_task
from cases.case import NOT_AVAILABLE, Case, Table

CASE_SUFFIXES = (".json", ".txt")
REQUIRED_KEYS = ("InputTable", "OutputTable", "TestingTable", "TestAnswer")

# Limits keep one bad file from exhausting memory in every later stage (prompts, sandbox
# payloads, traces). They are far above the shipped library and the Foofah benchmark.
MAX_ROWS = 20_000
MAX_CELLS = 1_000_000
MAX_CELL_CHARS = 10_000
MAX_FILE_BYTES = 256 * 1024 * 1024

_TRAILING_INDEX = re.compile(r"_\d+$")


class CaseError(ValueError):
    """A case file or case directory is unusable; the message is ``"<path>: <problem>"``."""

    def __init__(self, path: str | Path, problem: str):
        # One line, whatever the problem text holds (JSON errors can quote file content).
        line = f"{path}: {problem}".replace("\r", " ").replace("\n", " ")
        super().__init__(line)
        self.path = str(path)
        self.problem = problem


def family_from_filename(stem: str) -> str:
    """``exp0_fill_down_3`` -> ``fill_down``: drop a trailing ``_<digits>``, then ``exp0_``.

    A stem that would become empty is kept whole.
    """
    family = _TRAILING_INDEX.sub("", stem)
    if family.startswith("exp0_"):
        family = family[len("exp0_"):]
    return family or stem


def load_cases(root: str | Path) -> list[Case]:
    """Every case under ``root``, sorted by ``case_id``. Raises CaseError on the first problem."""
    root = Path(root)
    if not root.exists():
        raise CaseError(root, "no such directory")
    if not root.is_dir():
        raise CaseError(root, "not a directory")
    files = sorted(
        p for p in root.rglob("*") if p.suffix.lower() in CASE_SUFFIXES and p.is_file()
    )
    if not files:
        raise CaseError(root, "holds no case files (*.json or *.txt)")

    seen: dict[str, Path] = {}
    cases = []
    for path in files:
        case_id = path.relative_to(root).with_suffix("").as_posix()
        family = path.parent.name if path.parent != root else None  # ARC: the folder names the family
        for case in _load_file(path, case_id, path.relative_to(root).as_posix(), family):
            if case.case_id in seen:
                raise CaseError(path, f"gives the same case id {case.case_id!r} as {seen[case.case_id]}")
            seen[case.case_id] = path
            cases.append(case)
    cases.sort(key=lambda c: c.case_id)
    return cases


def _load_file(path: Path, case_id: str, rel: str, folder: str | None) -> list[Case]:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise CaseError(path, f"file is {size} bytes, over the limit of {MAX_FILE_BYTES}")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CaseError(path, f"cannot read ({e.strerror or type(e).__name__})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CaseError(path, f"not UTF-8 text (bad byte at offset {e.start})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseError(path, f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(obj, dict):
        raise CaseError(path, f"top level is a JSON {_json_kind(obj)}, expected an object")
    if is_arc_task(obj):
        return arc_cases(obj, case_id, folder or path.stem, lambda problem: CaseError(path, problem), {"file": rel})
    missing = [k for k in REQUIRED_KEYS if k not in obj]
    if missing:
        raise CaseError(path, f"missing key(s) {', '.join(missing)}")

    tables = {k: _check_table(path, k, obj[k]) for k in REQUIRED_KEYS}
    for k in ("InputTable", "OutputTable"):
        if not tables[k]:
            raise CaseError(path, f"{k} has no rows: the public example must not be empty")
    answer: Table | None = tables["TestAnswer"]
    if answer == NOT_AVAILABLE:
        answer = None

    return [Case.from_tables(
        case_id=case_id,
        family=_family(path, obj.get("TestName")),
        input_table=tables["InputTable"],
        output_table=tables["OutputTable"],
        test_table=tables["TestingTable"],
        test_answer=answer,
        num_samples=_num_samples(path, obj.get("NumSamples")),
        meta={"file": rel},
    )]


def _check_table(path: Path, name: str, t: Any) -> Table:
    """Validate one table. Fast path first: a 10,000 x 50 table is checked row by row."""
    if not isinstance(t, list):
        raise CaseError(path, f"{name} is a JSON {_json_kind(t)}, expected a list of rows")
    if len(t) > MAX_ROWS:
        raise CaseError(path, f"{name} has {len(t)} rows, over the limit of {MAX_ROWS}")
    cells = 0
    for i, row in enumerate(t):
        if not isinstance(row, list):
            raise CaseError(path, f"{name} row {i} is a JSON {_json_kind(row)}, expected a list of cells")
        cells += len(row)
        if cells > MAX_CELLS:
            raise CaseError(path, f"{name} has more than {MAX_CELLS} cells")
        if not all(type(c) is str for c in row):
            j = next(j for j, c in enumerate(row) if type(c) is not str)
            raise CaseError(
                path, f"{name} row {i} column {j} is a JSON {_json_kind(row[j])}, expected a string"
            )
        if row and max(map(len, row)) > MAX_CELL_CHARS:
            j = next(j for j, c in enumerate(row) if len(c) > MAX_CELL_CHARS)
            raise CaseError(
                path, f"{name} row {i} column {j} has {len(row[j])} characters, over the limit of {MAX_CELL_CHARS}"
            )
    return t


def _family(path: Path, test_name: Any) -> str:
    if test_name is None:
        return family_from_filename(path.stem)
    if not isinstance(test_name, str):
        raise CaseError(path, f"TestName is a JSON {_json_kind(test_name)}, expected a string")
    return test_name.strip() or family_from_filename(path.stem)


def _num_samples(path: Path, value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise CaseError(path, f"NumSamples is {json.dumps(value)[:40]}, expected a non-negative integer")
    return value


def _json_kind(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "boolean"
    if isinstance(x, (int, float)):
        return "number"
    if isinstance(x, str):
        return "string"
    if isinstance(x, list):
        return "array"
    return "object"
