"""The shipped library: files equal the generators' output, load, and keep their promises."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from cases import load_cases, table_shape
from cases.generate import check, main, render_library, write
from cases.generators import CASES_PER_FAMILY, FAMILIES, KINDS, case_rng, get_family

DATA = Path(__file__).resolve().parents[2] / "cases" / "data"
README = Path(__file__).resolve().parents[2] / "cases" / "README.md"


@pytest.fixture(scope="module")
def library():
    return load_cases(DATA)


def test_committed_files_equal_generators(tmp_path):
    n, stale, others = write(tmp_path)
    assert n == len(FAMILIES) * CASES_PER_FAMILY and not stale and not others
    fresh = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    shipped = {p.relative_to(DATA).as_posix(): p.read_bytes()
               for p in DATA.rglob("*") if p.is_file() and p.suffix.lower() in (".json", ".txt")}
    assert fresh.keys() == shipped.keys()
    differing = [rel for rel in fresh if fresh[rel] != shipped[rel]]
    assert not differing, f"regenerate with python -m cases.generate: {differing[:5]}"


def test_check_mode_detects_changes(tmp_path, capsys):
    write(tmp_path)
    assert main(["--out", str(tmp_path), "--check"]) == 0
    victim = tmp_path / "fill_down" / "fill_down_2.json"
    victim.write_bytes(victim.read_bytes().replace(b'"', b"'", 1))
    (tmp_path / "extra.txt").write_text("{}")
    problems = check(tmp_path)
    assert "differs fill_down/fill_down_2.json" in problems and "not generated extra.txt" in problems
    assert main(["--out", str(tmp_path), "--check"]) == 1
    # Writing restores the file and removes stale library files, but leaves other files alone.
    (tmp_path / "fill_down" / "fill_down_9.json").write_text("{}")
    assert main(["--out", str(tmp_path)]) == 0
    assert not (tmp_path / "fill_down" / "fill_down_9.json").exists()
    assert (tmp_path / "extra.txt").exists()
    assert check(tmp_path) == ["not generated extra.txt"]


def test_generation_is_deterministic():
    assert render_library() == render_library()


def test_counts_and_layout(library):
    assert len(FAMILIES) >= 32
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    counts = Counter(c.family for c in library)
    assert set(counts) == {f.name for f in FAMILIES}
    assert all(n == CASES_PER_FAMILY for n in counts.values())
    for c in library:
        assert re.fullmatch(rf"{c.family}/{c.family}_[1-5]", c.case_id)
        assert c.scored and c.num_samples == 1


def test_metadata_promises():
    assert all(f.kind in KINDS for f in FAMILIES)
    assert sum(f.multi_step for f in FAMILIES) >= 8
    assert sum(f.ambiguous for f in FAMILIES) >= 5
    assert {f.kind for f in FAMILIES} == set(KINDS)


def test_readme_lists_every_family():
    rows = {}
    for line in README.read_text().splitlines():
        m = re.match(r"\| `(\w+)` \|.*\| (yes|no) \|", line)
        if m:
            rows[m[1]] = m[2] == "yes"
    assert rows == {f.name: f.ambiguous for f in FAMILIES}


def test_sizes_are_small_and_vary(library):
    by_family: dict[str, list] = {}
    for c in library:
        assert 3 <= len(c.input_table) <= 10, c.case_id
        assert 3 <= len(c.test_table) <= 13, c.case_id
        assert table_shape(c.input_table)[1] <= 8 and table_shape(c.test_table)[1] <= 8
        assert c.input_table != c.test_table and c.output_table != c.input_table
        by_family.setdefault(c.family, []).append(c)
    differ = sum(table_shape(c.input_table) != table_shape(c.test_table) for c in library)
    assert differ >= 0.8 * len(library)
    for fam, group in by_family.items():  # the five cases of a family are not copies
        assert len({str(c.input_table) for c in group}) == CASES_PER_FAMILY, fam


@pytest.mark.parametrize("family", [f.name for f in FAMILIES if f.ambiguous])
def test_ambiguous_families_are_ambiguous(library, family):
    fam = get_family(family)
    for c in (c for c in library if c.family == family):
        k = int(c.case_id.rsplit("_", 1)[1])
        draw = fam.make(case_rng(family, k), k)
        assert draw.alternative is not None
        assert draw.alternative(c.input_table) == c.output_table, c.case_id
        assert draw.alternative(c.test_table) != c.test_answer, c.case_id
        assert draw.program(c.test_table) == c.test_answer


def test_reference_program_reproduces_every_file(library):
    for c in library:
        fam = get_family(c.family)
        k = int(c.case_id.rsplit("_", 1)[1])
        draw = fam.make(case_rng(c.family, k), k)
        assert draw.program(c.input_table) == c.output_table, c.case_id
        assert draw.program(c.test_table) == c.test_answer, c.case_id


def test_nothing_else_under_data():
    for p in DATA.rglob("*"):
        if p.is_file():
            assert p.suffix == ".json" and p.parent.parent == DATA, p
