"""Direct answers of any value type (``tracegen.parse_values.parse_answer``): read against the
examples' type, every liberty named, nothing of the wrong kind taken."""
import pytest

from tracegen.parse_values import parse_answer
from tracegen.parsing import parse_table


@pytest.mark.parametrize("text, value, status", [
    ("```\n0 0 7\n7 7 0\n```", [[0, 0, 7], [7, 7, 0]], "ok"),
    ("The output is:\n```json\n[[0, 1], [2, 3]]\n```", [[0, 1], [2, 3]], "ok"),
    ("[[0, 1], [2, 3]]", [[0, 1], [2, 3]], "ok"),
    ("```\n0070\n```", [[0, 0, 7, 0]], "repaired"),  # ARC's compact rows, digit by digit
    ("New input:\n0 0 3\n\nAnswer:\n0 3 0\n", [[0, 3, 0]], "ok"),  # the last block of rows wins
    ("```python\n[[1, 2,], [3, 4]]\n```", [[1, 2], [3, 4]], "repaired"),  # a Python literal
])
def test_grids(text, value, status):
    p = parse_answer(text, "grid")
    assert (p.value, p.status) == (value, status)


def test_grid_answers_that_are_no_grid_fail_saying_why():
    p = parse_answer("I cannot tell.", "grid")
    assert p.value is None and p.status == "failed" and "no grid" in p.detail
    assert parse_answer('```json\n[["a"]]\n```', "grid").status == "failed"  # strings are not colours
    assert parse_answer("<think>0 1\n", "grid").status == "truncated_thinking"


def test_json_values_must_have_the_examples_kind():
    assert parse_answer('```json\n"ABC"\n```', "json", "x").value == "ABC"
    plain = parse_answer("ABC", "json", "x")  # a string answer written bare: the string itself
    assert plain.value == "ABC" and plain.status == "repaired" and "plain text" in plain.detail
    assert parse_answer('```json\n{"a": [1]}\n```', "json", {"b": 2}).value == {"a": [1]}
    wrong = parse_answer('```json\n{"a": 1}\n```', "json", [1])
    assert wrong.value is None and "expected a list" in wrong.detail
    assert parse_answer("```json\n3\n```", "json", 1).value == 3
    assert parse_answer("```json\ntrue\n```", "json", 1).value is None  # a boolean is not a number


def test_tables_parse_as_ever():
    text = 'Here:\n```json\n[["a", "1"]]\n```'
    assert parse_answer(text, "table") == parse_table(text)
