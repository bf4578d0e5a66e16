"""What ``pip install`` puts on the import path: the project's four rooms and nothing as generic
as ``common`` or ``utils`` (an installed top-level name is taken for every other project in the
same environment)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_installed_top_level_packages_are_the_rooms():
    text = (ROOT / "pyproject.toml").read_text()
    packages = re.findall(r'"([\w.]+)"', re.search(r"^packages = \[(.*?)\]", text, re.S | re.M).group(1))
    assert {p.split(".")[0] for p in packages} == {"cases", "sandbox", "tracegen", "controller"}
    assert not (ROOT / "common").exists()
