"""Emitted code runs exactly like the in-process operators, is self-contained and names its program."""
from __future__ import annotations

import random

import pytest

from tracegen.synth import emit_code, parse_key, program_key, read_history, run_program
from tracegen.synth.heuristic import Target
from tracegen.synth.library import apply_step, propose

TABLES = [
    [["Name", "Math", "Art"], ["Ann", "1", "2"], ["Bob", "3", "4"]],
    [["Reported crime in Ohio", ""], ["", ""], ["2004", "1.5"], ["2005", "2"], ["Total", "3.5"]],
    [["EU", "Paris, FR", "x@y.org"], ["", "Rome, IT", "555-1234"], ["AS", "Tokyo, JP", ""], ["", "", ""]],
    [["1", "a;b"], ["1", "c"], ["2", "d (e)"], ["2", " f "]],
    [["Ann Lee", "2003-05-12", "7"], ["Bo Wu", "1999-11-01", "12"]],
]
TARGETS = [[["Ann", "Math", "1"], ["Name", "Score"]], [["Ohio", "2004", "1.5"]],
           [["EU", "Paris", "FR", "x@y.org"]], [["1", "a, c"], ["d", "e"]],
           [["Lee, A.", "05/12/2003", "7 kg"], ["Wu, B.", "11/01/1999", "12 kg"]]]
OTHER_INPUTS = [[], [[]], [["z"]], [["q", "r", "s", "t"], ["u"], ["", "", "", "v w"]]]


def _random_programs(n: int, seed: int = 7):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = i % len(TABLES)
        table, tgt = TABLES[k], Target.of(TARGETS[k])
        program = []
        for _ in range(rng.randint(1, 4)):
            steps = list(propose(table, tgt))
            if not steps:
                break
            step = rng.choice(steps)
            program.append(step)
            table = apply_step(table, step)
        out.append((k, tuple(program)))
    return out


def _exec(code: str):
    namespace: dict = {}
    exec(code, namespace)  # the test runs code this toolkit wrote, in-process on purpose
    return namespace["transform"]


def test_emitted_code_matches_operators_on_many_programs():
    programs = _random_programs(150)
    names = set()
    for k, program in programs:
        names.update(name for name, _ in program)
        transform = _exec(emit_code(program))
        for table in [TABLES[k]] + TABLES + OTHER_INPUTS:
            assert transform([list(r) for r in table]) == run_program(table, program), program
    assert len(names) >= 20  # the sample covers most of the library


def test_code_is_self_contained_and_lists_only_used_helpers():
    program = (("fill_down", {"col": 0}), ("delete_rows", {"col": 1, "pred": "empty", "value": ""}))
    code = emit_code(program)
    assert code.startswith("# program: ")
    assert "def fill_down(" in code and "def delete_rows(" in code and "def _test(" in code
    assert "def fold(" not in code and "def unfold(" not in code
    assert code.count("def transform(") == 1
    assert "import re" in code  # _test uses it
    assert "import" not in emit_code((("drop_column", {"col": 0}),))


def test_empty_program_is_identity():
    code = emit_code(())
    assert _exec(code)([["a", "b"]]) == [["a", "b"]]


def test_program_key_round_trip_and_history():
    program = (("split_column", {"col": 0, "sep": ", "}), ("extract", {"col": 1, "pattern": r"\((\d+)\)"}))
    key = program_key(program)
    assert parse_key(key) == program
    older = program_key((("transpose", {}),))
    code = emit_code(program, tried=[older])
    found, keys = read_history(code)
    assert found == program
    assert sorted(keys) == sorted([older, key])
    assert read_history("def transform(t):\n    return t\n") == (None, [])
    assert read_history(None) == (None, [])
    assert parse_key("not json") is None and parse_key('[["no_such_op", {}]]') is None


def test_patterns_with_backslashes_stay_readable():
    code = emit_code((("extract", {"col": 0, "pattern": r"\d+"}),))
    assert 'pattern=r"\\d+"' in code


def test_emitted_code_passes_the_sandbox_quick_check():
    policy = pytest.importorskip("sandbox.policy")
    for _, program in _random_programs(60, seed=3):
        code = emit_code(program)
        if code.isascii():
            assert policy.quick_pass(code), code
        assert policy.check(policy.parse(code)) is None


SAMPLE_STEPS = [
    ("drop_column", {"col": 1}), ("move_column", {"src": 0, "dst": 2}), ("copy_column", {"col": 0}),
    ("merge_columns", {"left": 0, "right": 1, "sep": " "}), ("split_column", {"col": 0, "sep": ","}),
    ("split_once", {"col": 0, "sep": ",", "from_right": True}), ("extract", {"col": 0, "pattern": r"\d+"}),
    ("divide", {"col": 1, "pred": "numeric", "value": ""}), ("delete_empty_columns", {}), ("strip_cells", {}),
    ("delete_empty_rows", {}), ("delete_rows", {"col": -1, "pred": "contains", "value": "Total"}),
    ("delete_first_rows", {"count": 1}), ("delete_last_rows", {"count": 2}), ("delete_duplicate_rows", {}),
    ("fill_down", {"col": 0}), ("explode", {"col": 1, "sep": ";"}), ("transpose", {}),
    ("fold", {"start": 1, "width": 1}), ("fold_with_header", {"start": 1}),
    ("unfold", {"hcol": 1, "vcol": 2, "header": "first"}), ("wrap_rows", {"count": 2}), ("wrap_all", {}),
    ("wrap_records", {"col": 0, "pred": "nonempty", "value": ""}), ("group_by_key", {"col": 0}),
    ("collapse_rows", {"col": 0, "sep": ", "}), ("lift_group_headers", {}), ("insert_row", {"values": ["A", "B"]}),
    ("select_columns", {"names": ["Name"]}), ("fill_right", {"row": 0}), ("merge_rows", {"row": 0, "sep": " "}),
    ("rewrite_cells", {"col": 1, "pattern": r"(\d+)-(\d+)", "template": r"\g<2>\\\g<1>"}),
]


def test_every_operator_is_described_and_emitted():
    from tracegen.synth import describe_step
    from tracegen.synth.library import OPERATORS

    assert {name for name, _ in SAMPLE_STEPS} == set(OPERATORS)
    for step in SAMPLE_STEPS:
        assert describe_step(*step)
        transform = _exec(emit_code((step,)))
        for table in TABLES + OTHER_INPUTS:
            assert transform(table) == run_program(table, (step,)), step
