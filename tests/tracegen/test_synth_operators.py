"""Each synthesizer operator on small hand-built tables with known answers, and its promises:
pure (input untouched), total (no exception on odd shapes), and proposed only with usable params."""
from __future__ import annotations

import copy

import pytest

from tracegen.synth import operators as ops
from tracegen.synth.heuristic import Target
from tracegen.synth.library import OPERATORS, apply_step, propose

GRADES = [["Name", "Math", "Art"], ["Ann", "1", "2"], ["Bob", "3", "4"]]


def test_drop_move_copy():
    t = [["a", "b", "c"], ["d", "e", "f"]]
    assert ops.drop_column(t, 1) == [["a", "c"], ["d", "f"]]
    assert ops.move_column(t, 2, 0) == [["c", "a", "b"], ["f", "d", "e"]]
    assert ops.move_column(t, 0, 2) == [["b", "c", "a"], ["e", "f", "d"]]
    assert ops.copy_column(t, 0) == [["a", "a", "b", "c"], ["d", "d", "e", "f"]]


def test_merge_skips_blank_parts():
    t = [["Bob", "Smith", "1"], ["Ann", "", "2"]]
    assert ops.merge_columns(t, 0, 1, " ") == [["Bob Smith", "1"], ["Ann", "2"]]
    assert ops.merge_columns(t, 1, 0, ", ") == [["Smith, Bob", "1"], ["Ann", "2"]]


def test_split_pads_to_longest():
    t = [["a-b-c", "x"], ["d", "y"]]
    assert ops.split_column(t, 0, "-") == [["a", "b", "c", "x"], ["d", "", "", "y"]]
    assert ops.split_once(t, 0, "-", False) == [["a", "b-c", "x"], ["d", "", "y"]]
    assert ops.split_once(t, 0, "-", True) == [["a-b", "c", "x"], ["d", "", "y"]]


def test_extract_inserts_match_after_column():
    t = [["Order 12 (late)"], ["none"]]
    assert ops.extract(t, 0, r"\d+") == [["Order 12 (late)", "12"], ["none", ""]]
    assert ops.extract(t, 0, r"\(([^)]*)\)") == [["Order 12 (late)", "late"], ["none", ""]]


def test_divide_by_predicate():
    t = [["x", "12"], ["y", "n/a"], ["z", ""]]
    assert ops.divide(t, 1, "numeric", "") == [["x", "12", ""], ["y", "", "n/a"], ["z", "", ""]]
    m = [["a@b.org"], ["555-1234"]]
    assert ops.divide(m, 0, "contains", "@") == [["a@b.org", ""], ["", "555-1234"]]


def test_row_deletions():
    t = [["Title", ""], ["a", "1"], ["", ""], ["Total", "1"], ["b", " "]]
    assert ops.delete_empty_rows(t) == [["Title", ""], ["a", "1"], ["Total", "1"], ["b", " "]]
    assert ops.delete_rows(t, 1, "empty", "") == [["a", "1"], ["Total", "1"]]
    assert ops.delete_rows(t, -1, "equals", "Total") == [["Title", ""], ["a", "1"], ["", ""], ["b", " "]]
    assert ops.delete_rows(t, 0, "contains", "itl") == [r for r in t if r[0] != "Title"]
    assert ops.delete_first_rows(t, 2) == t[2:]
    assert ops.delete_last_rows(t, 2) == t[:3]
    assert ops.delete_last_rows(t, 9) == []
    assert ops.delete_duplicate_rows([["a"], ["b"], ["a"]]) == [["a"], ["b"]]


def test_fill_down_and_group_titles():
    t = [["EU", "Paris"], ["", "Rome"], ["AS", "Tokyo"], [" ", "Seoul"]]
    assert ops.fill_down(t, 0) == [["EU", "Paris"], ["EU", "Rome"], ["AS", "Tokyo"], ["AS", "Seoul"]]
    g = [["Sales", "", ""], ["Ann", "Lead", "x1"], ["Ops", "", ""], ["Bob", "Tech", "x2"]]
    assert ops.lift_group_headers(g) == [["Sales", "Ann", "Lead", "x1"], ["Ops", "Bob", "Tech", "x2"]]


def test_fold_variants():
    assert ops.fold([["k", "a", "b"]], 1, 1) == [["k", "a"], ["k", "b"]]
    assert ops.fold([["k", "a", "1", "b", "2"]], 1, 2) == [["k", "a", "1"], ["k", "b", "2"]]
    assert ops.fold_with_header(GRADES, 1) == [
        ["Ann", "Math", "1"], ["Ann", "Art", "2"], ["Bob", "Math", "3"], ["Bob", "Art", "4"]]


def test_unfold_variants():
    long = [["Ann", "Math", "1"], ["Ann", "Art", "2"], ["Bob", "Math", "3"]]
    assert ops.unfold(long, 1, 2, "none") == [["Ann", "1", "2"], ["Bob", "3", ""]]
    assert ops.unfold(long, 1, 2, "blank") == [["", "Math", "Art"], ["Ann", "1", "2"], ["Bob", "3", ""]]
    with_header = [["name", "subject", "score"]] + long
    assert ops.unfold(with_header, 1, 2, "first")[0] == ["name", "Math", "Art"]


def test_unfold_inverts_fold_with_header():
    folded = ops.fold_with_header(GRADES, 1)
    assert ops.unfold(folded, 1, 2, "blank")[1:] == GRADES[1:]


def test_transpose_and_wraps():
    assert ops.transpose([["a", "b"], ["c"]]) == [["a", "c"], ["b", ""]]
    t = [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert ops.wrap_rows(t, 2) == [["a", "b"], ["c", "d"], ["e", ""]]
    assert ops.wrap_all(t) == [["a", "b", "c", "d", "e"]]
    rec = [["Ann", "1"], ["", "2"], ["Bob", "3"]]
    assert ops.wrap_records(rec, 0, "nonempty", "") == [["Ann", "1", "", "2"], ["Bob", "3", "", ""]]


def test_key_grouping_and_explode():
    t = [["1", "a"], ["1", "b"], ["2", "c"]]
    assert ops.group_by_key(t, 0) == [["1", "a", "b"], ["2", "c", ""]]
    assert ops.collapse_rows(t, 0, ", ") == [["1", "a, b"], ["2", "c"]]
    assert ops.explode([["k", "a;b"], ["j", "c"]], 1, ";") == [["k", "a"], ["k", "b"], ["j", "c"]]


def test_two_header_rows_become_one():
    t = [["", "Profit", "", "Cost", ""], ["Div", "2022", "2023", "2022", "2023"], ["S", "1", "2", "3", "4"]]
    filled = ops.fill_right(t, 0)
    assert filled[0] == ["", "Profit", "Profit", "Cost", "Cost"]
    assert ops.merge_rows(filled, 0, " ") == [
        ["Div", "Profit 2022", "Profit 2023", "Cost 2022", "Cost 2023"], ["S", "1", "2", "3", "4"]]
    assert ops.merge_rows(t, 5, " ") == t and ops.fill_right(t, 9) == t


def test_columns_by_name_and_header():
    assert ops.select_columns(GRADES, ["Art", "Name"]) == [["Art", "Name"], ["2", "Ann"], ["4", "Bob"]]
    assert ops.insert_row([["a"]], ["H"]) == [["H"], ["a"]]
    assert ops.delete_empty_columns([["a", "", "b"], ["c", " ", ""]]) == [["a", "b"], ["c", ""]]
    assert ops.strip_cells([[" a ", "b"]]) == [["a", "b"]]


ODD_TABLES = [[], [[]], [[""]], [["x"]], [["a", "b", "c"], ["d"], []], [["1", "", "x y"], ["", "2,3", ""]]]
SOURCES = [
    (GRADES, [["Ann", "Math", "1"]]),
    ([["EU", "a-b", "1"], ["", "c-d", "x"], ["AS", "", ""]], [["EU", "a", "b", "1"], ["b c", "AS"]]),
    ([["Ann", "1"], ["", "2"], ["Ann", "1"], ["T", "", ""]], [["Name", "Val"], ["Ann", "1 2"]]),
]


@pytest.mark.parametrize("src,out", SOURCES)
def test_proposed_steps_are_total_and_pure(src, out):
    """Every proposed step runs on every odd table without raising and leaves it untouched."""
    steps = list(propose(src, Target.of(out)))
    assert len({name for name, _ in steps}) >= 8
    for step in steps:
        assert step[0] in OPERATORS
        for table in ODD_TABLES + [src]:
            before = copy.deepcopy(table)
            result = apply_step(table, step)
            assert table == before
            assert isinstance(result, list) and all(
                isinstance(r, list) and all(isinstance(c, str) for c in r) for r in result), step


def test_results_share_no_rows_with_input():
    t = [["a", "b"], ["c", "d"]]
    for step in propose(t, Target.of([["a"], ["b"]])):
        out = apply_step(t, step)
        for row in out:
            row.append("mutated")
        assert t == [["a", "b"], ["c", "d"]], step
