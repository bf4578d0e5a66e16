"""Loader and table helpers: every malformed kind raises CaseError naming the file."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import cases
from cases import CaseError, family_from_filename, load_cases
from cases import loader

GOOD = {
    "InputTable": [["a", "b"], ["c", "d"]],
    "OutputTable": [["a"], ["c"]],
    "TestingTable": [["e", "f"]],
    "TestAnswer": [["e"]],
}


def write(root: Path, rel: str, obj=None, *, raw: bytes | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw if raw is not None else json.dumps(obj).encode())
    return path


def expect_error(root: Path, bad: Path, *needles: str) -> str:
    with pytest.raises(CaseError) as info:
        load_cases(root)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{bad}: "), msg
    for needle in needles:
        assert needle in msg, msg
    return msg


def test_loads_valid_case_with_fields(tmp_path):
    write(tmp_path, "fill/fill_down_2.json", {**GOOD, "NumSamples": 1})
    [case] = load_cases(tmp_path)
    assert case.case_id == "fill/fill_down_2"
    assert case.family == "fill_down"
    assert case.input_table == GOOD["InputTable"]
    assert case.output_table == GOOD["OutputTable"]
    assert case.test_table == GOOD["TestingTable"]
    assert case.test_answer == [["e"]] and case.scored
    assert case.num_samples == 1
    assert case.meta["file"] == "fill/fill_down_2.json"


def test_recursive_txt_and_sorted(tmp_path):
    write(tmp_path, "z/deep/exp0_split_1.txt", GOOD)
    write(tmp_path, "a_3.json", GOOD)
    write(tmp_path, "notes.md", raw=b"not a case")  # other suffixes are ignored
    got = load_cases(str(tmp_path))
    assert [c.case_id for c in got] == ["a_3", "z/deep/exp0_split_1"]
    assert [c.family for c in got] == ["a", "split"]


def test_not_available_answer_is_none(tmp_path):
    write(tmp_path, "x_1.json", {**GOOD, "TestAnswer": [["NOT AVAILABLE, SORRY"]]})
    [case] = load_cases(tmp_path)
    assert case.test_answer is None and not case.scored


def test_testname_wins_and_blank_testname_falls_back(tmp_path):
    write(tmp_path, "exp0_a_1.json", {**GOOD, "TestName": "wrap"})
    write(tmp_path, "exp0_b_2.json", {**GOOD, "TestName": "  "})
    assert [c.family for c in load_cases(tmp_path)] == ["wrap", "b"]


@pytest.mark.parametrize("stem,family", [
    ("fill_down_3", "fill_down"),
    ("exp0_craigslist_data_wrangler_4", "craigslist_data_wrangler"),
    ("exp0_1_1", "1"),
    ("plain", "plain"),
    ("v2_case", "v2_case"),
    ("_7", "_7"),  # would become empty: kept whole
])
def test_family_from_filename(stem, family):
    assert family_from_filename(stem) == family


def test_bom_is_accepted(tmp_path):
    write(tmp_path, "a_1.json", raw=b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert load_cases(tmp_path)[0].family == "a"


def test_root_problems(tmp_path):
    with pytest.raises(CaseError, match="no such directory"):
        load_cases(tmp_path / "missing")
    f = write(tmp_path, "file.json", GOOD)
    with pytest.raises(CaseError, match="not a directory"):
        load_cases(f)
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    with pytest.raises(CaseError, match="holds no case files") as info:
        load_cases(empty)
    assert str(info.value).startswith(str(empty))


@pytest.mark.parametrize("raw,needle", [
    (b'{"InputTable": [["\xff"]]}', "not UTF-8"),
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "top level is a JSON array"),
    (b"", "not valid JSON"),
])
def test_bad_files(tmp_path, raw, needle):
    write(tmp_path, "good_1.json", GOOD)
    bad = write(tmp_path, "bad_1.json", raw=raw)
    expect_error(tmp_path, bad, needle)


@pytest.mark.parametrize("change,needles", [
    ({"TestAnswer": None}, ["TestAnswer is a JSON null"]),
    ({"InputTable": "a,b"}, ["InputTable is a JSON string"]),
    ({"TestingTable": [["a"], "b"]}, ["TestingTable row 1", "string"]),
    ({"OutputTable": [["a", 3]]}, ["OutputTable row 0 column 1", "number"]),
    ({"TestAnswer": [["a"], ["b", None]]}, ["TestAnswer row 1 column 1", "null"]),
    ({"InputTable": []}, ["InputTable has no rows"]),
    ({"OutputTable": []}, ["OutputTable has no rows"]),
    ({"NumSamples": "2"}, ["NumSamples"]),
    ({"TestName": 5}, ["TestName"]),
])
def test_bad_content(tmp_path, change, needles):
    bad = write(tmp_path, "sub/bad_1.json", {**GOOD, **change})
    expect_error(tmp_path, bad, *needles)


def test_missing_keys_named(tmp_path):
    obj = {k: v for k, v in GOOD.items() if k not in ("TestingTable", "TestAnswer")}
    bad = write(tmp_path, "m_1.json", obj)
    expect_error(tmp_path, bad, "TestingTable", "TestAnswer", "missing")


def test_same_case_id_from_two_files(tmp_path):
    write(tmp_path, "a.json", GOOD)
    write(tmp_path, "a.txt", GOOD)
    with pytest.raises(CaseError, match="same case id 'a'") as info:
        load_cases(tmp_path)
    assert "a.json" in str(info.value) and "a.txt" in str(info.value)


def test_size_limits(tmp_path, monkeypatch):
    write(tmp_path, "rows_1.json", {**GOOD, "TestingTable": [["x"]] * (loader.MAX_ROWS + 1)})
    expect_error(tmp_path, tmp_path / "rows_1.json", "rows, over the limit")
    (tmp_path / "rows_1.json").unlink()

    write(tmp_path, "chars_1.json", {**GOOD, "TestingTable": [["ok", "y" * (loader.MAX_CELL_CHARS + 1)]]})
    expect_error(tmp_path, tmp_path / "chars_1.json", "row 0 column 1", "characters")
    (tmp_path / "chars_1.json").unlink()

    monkeypatch.setattr(loader, "MAX_CELLS", 10)
    write(tmp_path, "cells_1.json", {**GOOD, "TestAnswer": [["a"] * 4] * 3})
    expect_error(tmp_path, tmp_path / "cells_1.json", "more than 10 cells")


def test_nothing_returned_when_any_file_is_bad(tmp_path):
    for i in range(3):
        write(tmp_path, f"ok_{i}.json", GOOD)
    write(tmp_path, "zz_1.json", {**GOOD, "InputTable": [[1]]})
    with pytest.raises(CaseError):
        load_cases(tmp_path)


def test_large_table_loads_fast(tmp_path):
    big = [[f"r{i}c{j}" for j in range(50)] for i in range(10_000)]
    write(tmp_path, "big_1.json", {**GOOD, "TestingTable": big, "TestAnswer": big})
    start = time.perf_counter()
    [case] = load_cases(tmp_path)
    elapsed = time.perf_counter() - start
    assert len(case.test_table) == 10_000 and len(case.test_table[0]) == 50
    assert elapsed < 10  # generous: a safety net against quadratic checks, not a benchmark


# -- table helpers ---------------------------------------------------------------------------

def test_table_helpers():
    a = [["a", "b"], ["c", "d"]]
    assert cases.is_table(a) and cases.is_table([]) and cases.is_table([[]])
    assert not cases.is_table([("a",)]) and not cases.is_table([["a", 1]]) and not cases.is_table("ab")
    assert cases.tables_equal(a, [["a", "b"], ["c", "d"]])
    assert not cases.tables_equal(a, [["a", "b"]]) and not cases.tables_equal(None, None)
    assert cases.table_shape([["a"], ["b", "c", "d"]]) == (2, 3) and cases.table_shape([]) == (0, 0)
    assert cases.cell_diff(a, a) == 0
    assert cases.cell_diff(a, [["a", "x"], ["c", "d"]]) == 1
    assert cases.cell_diff(a, [["a", "b"]]) == 2  # missing row of 2 cells
    assert cases.cell_diff(a, [["a", "b", "e"], ["c", "d"]]) == 1  # one extra cell
    assert cases.cell_diff([], a) == 4


def test_render_table():
    t = [["a", ""], ["x|y", "z"]] + [[str(i), "v"] for i in range(5)]
    text = cases.render_table(t, max_rows=3)
    lines = text.splitlines()
    assert lines[:2] == ['["a", ""]', '["x|y", "z"]'] and lines[-1] == "... (4 more rows)"
    assert len(lines) == 4
    assert cases.render_table([["abcdefgh"]], max_cell_chars=3) == '["abc..."]'
    assert "empty" in cases.render_table([])
    assert len(cases.render_table(t, max_rows=None).splitlines()) == len(t)
