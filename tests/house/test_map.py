"""docs/development.md#the-map-of-the-house stays true: its table names exactly the rooms of the
import rule (tests/house/test_import_rule.py), in rank order, every file it names exists (the
registries it tells a contributor to extend: tests/house/test_extension_points.py)."""
from __future__ import annotations

import re

from test_import_rule import RANKS, ROOT

DOC = ROOT / "docs" / "development.md"


def _section() -> str:
    text = DOC.read_text()
    start = text.index("## The map of the house")
    return text[start:text.index("\n## ", start + 1)]


def test_the_map_names_the_rooms_of_the_import_rule_in_order():
    rows = re.findall(r"^\| (\d+) \| `([\w.]+)` \|", _section(), re.M)
    assert [room for _, room in rows] == sorted(RANKS, key=lambda r: (RANKS[r], r))
    assert {room: int(rank) for rank, room in rows} == RANKS


def test_every_file_the_map_names_exists():
    named = set(re.findall(r"`((?:cases|sandbox|tracegen|controller|tests|studies|benchmarks|scripts)/[\w/.]+)`",
                           _section()))
    assert named, "the map names no file"
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"docs/development.md names files that do not exist: {missing}"
