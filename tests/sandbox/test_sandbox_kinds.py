"""Output kinds: ``"table"`` (unchanged), ``"grid"`` (rows of int) and ``"json"`` (any JSON value),
and the entry function a program defines. The child checks an output against its kind, and the
parent checks again what it decodes, so a forged frame cannot hand the caller NaN, a bool in a
grid, a lone surrogate, a value nested past ``max_depth`` or more values than ``max_cells``."""
from __future__ import annotations

import json

import pytest

from sandbox import OutputLimits, Sandbox
from sandbox.result import decode_output, precheck

PRELUDE = '''
import random
os = random._os
sys = os.sys
def frame(kind, code, payload):
    return bytes([kind, code]) + len(payload).to_bytes(4, "little") + payload
'''


@pytest.fixture(scope="module")
def sb():
    with Sandbox(workers=2, ast_check=False) as box:
        yield box


def plain(value) -> bool:
    """Only JSON's own types, exactly (no subclass a program made)."""
    if type(value) is list:
        return all(plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and plain(v) for k, v in value.items())
    return type(value) in (str, int, float, bool, type(None))


def test_items_of_two_three_and_four_carry_kind_and_entry(sb):
    results = sb.run_many([
        ("def transform(t):\n    return t\n", [["a"]]),
        ("def transform(g):\n    return [[c * 2 for c in r] for r in g] + [[]]\n", [[1, 2], [3]], "grid"),
        ("def solve(v):\n    return {'n': v['n'] + 1, 'xs': [1.5, None, True, 'x', {}]}\n",
         {"n": 1}, "json", "solve"),
        ("def solve(v):\n    return None\n", [1], "json", "solve"),
    ])
    assert [r.ok for r in results] == [True] * 4, results
    assert results[0].output == [["a"]]
    assert results[1].output == [[2, 4], [6], []]
    assert results[2].output == {"n": 2, "xs": [1.5, None, True, "x", {}]}
    assert results[3].output is None and results[3].ok
    assert all(plain(r.output) for r in results)


def test_the_input_is_a_fresh_value_of_any_json_type(sb):
    code = "def f(v):\n    v.append('changed')\n    return v\n"
    x = [1, "two", {"three": 3.0}, None, False]
    r = sb.run(code, x, kind="json", entry="f")
    assert r.ok and r.output == x + ["changed"] and x == [1, "two", {"three": 3.0}, None, False]
    assert sb.run("def f(v):\n    return v\n", "just a string", kind="json", entry="f").output == \
        "just a string"


def test_a_missing_entry_is_no_transform_naming_it(sb):
    r = sb.run("def transform(v):\n    return v\n", 1, kind="json", entry="solve")
    assert r.error == "no_transform" and "solve" in r.message, r
    r = sb.run("solve = 3\n", 1, kind="json", entry="solve")
    assert r.error == "no_transform" and "solve is int" in r.message, r
    r = sb.run("x = 1\n", [["a"]])  # the table kind's message is as it always was
    assert r.error == "no_transform" and r.message == \
        "the program defines no function named transform(table)"


@pytest.mark.parametrize("item, error", [
    (("def f(v):\n    return v\n", 1, "tree"), ValueError),
    (("def f(v):\n    return v\n", 1, "json", "no such"), ValueError),
    (("def f(v):\n    return v\n", 1, "json", "__import__"), ValueError),
    (("def f(v):\n    return v\n", 1, "json", "class"), ValueError),
    (("def f(v):\n    return v\n", float("nan"), "json", "f"), TypeError),
    (("def f(v):\n    return v\n", {1, 2}, "json", "f"), TypeError),
    (("def f(v):\n    return v\n", [[1]], "table"), TypeError),
    (("def f(v):\n    return v\n",), TypeError),
], ids=["bad_kind", "bad_entry", "dunder_entry", "keyword_entry", "nan_input", "set_input",
        "table_input_not_str", "short_item"])
def test_bad_items_raise_at_once(sb, item, error):
    with pytest.raises(error):
        sb.run_many([item])


# ----------------------------------------------------------------------------- the child's check

@pytest.mark.parametrize("body, kind, needle", [
    ("return [[True, 1]]", "grid", "bool"),
    ("return [[1.0]]", "grid", "float"),
    ("return [['1']]", "grid", "str"),
    ("return [(1, 2)]", "grid", "tuple"),
    ("return (1, 2)", "grid", "tuple"),
    ("return [[0] * 1000] * 101", "grid", "cells"),
    ("return [[0] * 1001]", "grid", "cells"),
    ("return [[10 ** 5000]]", "grid", "digits"),
    ("return float('nan')", "json", "NaN"),
    ("return [float('-inf')]", "json", "NaN"),
    ("return {1: 'a'}", "json", "key"),
    ("return {True: 'a'}", "json", "key"),
    ("return (1, 2)", "json", "tuple"),
    ("return {1, 2}", "json", "set"),
    ("return b'x'", "json", "bytes"),
    ("class D(dict):\n        pass\n    return D(a=1)", "json", "D"),
    ("class I(int):\n        pass\n    return [I(1)]", "json", "I"),
    ("return ['\\udc80']", "json", "surrogate"),
    ("return {'\\ud800': 1}", "json", "surrogate"),
    ("a = []\n    for _ in range(100):\n        a = [a]\n    return a", "json", "nested"),
    ("return [0] * 100_000", "json", "values"),
    ("a = []\n    a.append(a)\n    return a", "json", "nested"),
    ("a = [0] * 1000\n    return [a] * 1000", "json", "values"),
    ("return 'x' * (5 << 20)", "json", "bytes"),
    ("return 10 ** 5000", "json", "digits"),
], ids=["grid_bool", "grid_float", "grid_str", "grid_tuple_row", "grid_tuple", "grid_cells",
        "grid_cols", "grid_huge_int", "nan", "neg_inf", "int_key", "bool_key", "tuple", "set",
        "bytes", "dict_subclass", "int_subclass", "lone_surrogate", "surrogate_key",
        "deep_nesting", "too_many_values", "cycle", "shared_lists", "oversize", "huge_int"])
def test_outputs_that_do_not_fit_their_kind_are_bad_output(sb, body, kind, needle):
    r = sb.run(f"def f(v):\n    {body}\n", [[1]], kind=kind, entry="f")
    assert r.error == "bad_output" and r.output is None, r
    assert needle in r.message, r


def test_limits_are_inclusive(sb):
    deep = "a = 0\n    for _ in range(99):\n        a = [a]\n    return a"  # 99 lists + the int
    r = sb.run(f"def f(v):\n    {deep}\n", None, kind="json", entry="f")
    assert r.ok, r
    r = sb.run("def f(v):\n    return [0] * 99_999\n", None, kind="json", entry="f")  # + the list
    assert r.ok and len(r.output) == 99_999, r
    r = sb.run("def f(v):\n    return [[7] * 1000] * 100\n", None, kind="grid", entry="f")
    assert r.ok and len(r.output) == 100, r


# ----------------------------------------------------------------------------- forged frames

@pytest.mark.parametrize("kind, payload", [
    ("json", "b'NaN'"), ("json", "b'[Infinity]'"), ("json", "b'{\"a\": -Infinity}'"),
    ("json", "b'[' * 200000 + b']' * 200000"),
    ("json", "b'[' * 100 + b']' * 100"),
    ("json", "b'[' + b'0,' * 150000 + b'0]'"),
    ("json", "b'[' + b'[],' * 1000000 + b'[]]'"),
    ("json", "b'{' + b','.join(b'\"%d\":0' % i for i in range(60000)) + b'}'"),
    ("json", "b'\"\\\\udc80\"'"), ("json", "b'{\"\\\\ud800\": 1}'"),
    ("json", "b'\"' + bytes([255]) + b'\"'"), ("json", "b'[1,'"), ("json", "b''"),
    ("json", "b'1' * 5000"),
    ("json", "b'\"' + b'x' * (4 << 20) + b'\"'"),
    ("grid", "b'[[true]]'"), ("grid", "b'[[1, false]]'"), ("grid", "b'[[1.5]]'"),
    ("grid", "b'[[1e400]]'"), ("grid", "b'[[null]]'"), ("grid", "b'[[\"1\"]]'"),
    ("grid", "b'[1, 2]'"), ("grid", "b'{\"a\": [[1]]}'"), ("grid", "b'[[NaN]]'"),
    ("grid", "b'[' + b'[0],' * 20000 + b'[0]]'"), ("grid", "b'[[' + b'0,' * 200000 + b'0]]'"),
    ("grid", "b'[[\"' + b'\\\\\"' * 1000000 + b'\"]]'"),
], ids=["nan", "infinity", "neg_infinity", "deep_200k", "deep_100", "too_many_values",
        "million_lists", "too_many_keys", "lone_surrogate", "surrogate_key", "bad_utf8",
        "truncated", "empty", "huge_int", "oversize", "grid_true", "grid_false", "grid_float",
        "grid_huge_float", "grid_null", "grid_str", "grid_flat", "grid_object", "grid_nan",
        "grid_rows", "grid_cells", "grid_escaped_quotes"])
def test_forged_frames_are_checked_against_the_kind_by_the_parent(sb, kind, payload):
    code = PRELUDE + f"def f(v):\n    os.write(3, frame(0, 0, {payload}))\n    os._exit(0)\n"
    r = sb.run(code, [[1]], kind=kind, entry="f")
    assert r.error == "bad_output" and r.output is None, r


def test_a_forged_valid_frame_still_yields_plain_values(sb):
    code = PRELUDE + "def f(v):\n    os.write(3, frame(0, 0, b'{\"a\": [1, 2.5, true, null]}'))\n" \
                     "    os._exit(0)\n"
    r = sb.run(code, None, kind="json", entry="f")
    assert r.ok and r.output == {"a": [1, 2.5, True, None]} and plain(r.output)


# ----------------------------------------------------------------------------- the parent alone

def test_decode_checks_the_kind_and_counts_before_decoding():
    limits = OutputLimits()
    assert decode_output(b'[["a"]]', limits) == ([["a"]], "")
    assert decode_output(b"[[1],[2,3],[]]", limits, "grid") == ([[1], [2, 3], []], "")
    assert decode_output(b'{"a":{"b":[null]}}', limits, "json") == ({"a": {"b": [None]}}, "")
    assert decode_output(b"3", limits, "json") == (3, "")
    # more values than the limit: refused before a byte is decoded (the count, not a parse)
    many = b"[" + b"1000," * 800_000 + b"1]"
    assert "values" in precheck(many, limits, "json")
    assert "cells" in precheck(b"[[" + b"1000," * 800_000 + b"1]]", limits, "grid")
    # commas, colons and brackets inside strings are not structure
    text = json.dumps({"k": ["a,b:[{" * 30_000] * 3}).encode()
    assert precheck(text, limits, "json") == ""
    assert decode_output(text, limits, "json")[0] == {"k": ["a,b:[{" * 30_000] * 3}
    table = json.dumps([["[x],{y:z}" * 5000, 'q"\\'] * 3] * 3).encode()
    assert precheck(table, limits) == ""
    assert decode_output(table, limits)[0] == [["[x],{y:z}" * 5000, 'q"\\'] * 3] * 3


def test_surrogate_escapes_are_judged_on_the_decoded_value():
    limits = OutputLimits()
    assert decode_output(b'[["\\ud83d\\ude00"]]', limits) == ([["\U0001F600"]], "")  # a pair
    assert decode_output(b'[["\\\\udc80"]]', limits) == ([["\\udc80"]], "")  # an escaped backslash
    assert decode_output(b'[["\\udc80"]]', limits)[0] is None
    assert decode_output(b'["\\uDFFF"]', limits, "json")[0] is None
