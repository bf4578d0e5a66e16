"""The direct guesser copies cells: right on copy-like cases, honestly wrong on rewritten cells."""
from __future__ import annotations

from tracegen.synth import guess_direct


def _is_table(t) -> bool:
    return isinstance(t, list) and all(isinstance(r, list) and all(isinstance(c, str) for c in r) for r in t)


def test_drop_header_extends_to_more_rows():
    ex_in = [["id", "name"], ["1", "Ann"], ["2", "Bob"]]
    ex_out = [["1", "Ann"], ["2", "Bob"]]
    test = [["id", "name"], ["7", "Cy"], ["8", "Di"], ["9", "Ed"]]
    assert guess_direct(ex_in, ex_out, test) == [["7", "Cy"], ["8", "Di"], ["9", "Ed"]]


def test_reordered_columns():
    ex_in = [["a", "b", "c"], ["d", "e", "f"]]
    ex_out = [["c", "a"], ["f", "d"]]
    assert guess_direct(ex_in, ex_out, [["x", "y", "z"], ["u", "v", "w"], ["p", "q", "r"]]) == [
        ["z", "x"], ["w", "u"], ["r", "p"]]


def test_fold_with_header_keeps_header_cells_fixed():
    ex_in = [["Name", "Math", "Art"], ["Ann", "1", "2"], ["Bob", "3", "4"]]
    ex_out = [["Ann", "Math", "1"], ["Ann", "Art", "2"], ["Bob", "Math", "3"], ["Bob", "Art", "4"]]
    test = [["Name", "Math", "Art"], ["Cy", "5", "6"], ["Di", "7", "8"], ["Ed", "9", "0"]]
    assert guess_direct(ex_in, ex_out, test) == [
        ["Cy", "Math", "5"], ["Cy", "Art", "6"], ["Di", "Math", "7"], ["Di", "Art", "8"],
        ["Ed", "Math", "9"], ["Ed", "Art", "0"]]


def test_transpose_of_same_shape():
    ex_in = [["k", "a", "b"], ["v", "1", "2"], ["w", "3", "4"]]
    ex_out = [["k", "v", "w"], ["a", "1", "3"], ["b", "2", "4"]]
    test = [["n", "x", "y"], ["m", "5", "6"], ["o", "7", "8"]]
    assert guess_direct(ex_in, ex_out, test) == [["n", "m", "o"], ["x", "5", "7"], ["y", "6", "8"]]


def test_rewritten_cells_are_honestly_wrong():
    ex_in = [["Lee, Ann"], ["Poe, Ed"]]
    ex_out = [["Lee", "Ann"], ["Poe", "Ed"]]
    test = [["Woolf, Vi"], ["Kafka, Fr"]]
    guess = guess_direct(ex_in, ex_out, test)
    assert _is_table(guess)
    assert guess != [["Woolf", "Vi"], ["Kafka", "Fr"]]


def test_cells_counted_from_the_end():
    ex_in = [["a"], ["b"], ["c"], ["Total: 3"]]
    ex_out = [["Total: 3"]]
    assert guess_direct(ex_in, ex_out, [["x"], ["y"], ["z"], ["w"], ["Total: 9"]]) == [["Total: 9"]]


def test_degenerate_inputs():
    assert guess_direct([["a"]], [], [["b"]]) == []
    assert guess_direct([], [["x"]], []) == [["x"]]
    assert _is_table(guess_direct([["a", "b"]], [["b", "a"]], []))
    ex_in, ex_out = [["1", "2"], ["3", "4"]], [["2"], ["4"]]
    assert guess_direct(ex_in, ex_out, [["5", "6"]]) == guess_direct(ex_in, ex_out, [["5", "6"]])
