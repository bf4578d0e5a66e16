"""Hostile programs, classes "grader-fooling" and "persistence": programs that try to hand the grader
something other than a plain table, or to change what a later run sees.

The parent only ever trusts JSON it decodes itself: these programs return look-alike objects,
forge result frames on the child's pipe, and subvert the child-side checks and encoder, and the
result must still be ``bad_output`` (or a genuine ``list`` of ``list`` of ``str``). Persistence
programs change builtins, module state, the environment and the sandbox's own modules in one
run; the next run must see the clean state. The AST check is off throughout.
"""
from __future__ import annotations

import copy

import pytest

from sandbox import Sandbox

PRELUDE = '''
import random
os = random._os
sys = os.sys
def frame(kind, code, payload):
    return bytes([kind, code]) + len(payload).to_bytes(4, "little") + payload
'''
TABLE = [["a", "b"], ["c", "d"]]


@pytest.fixture(scope="module")
def sb():
    with Sandbox(workers=2, ast_check=False) as box:
        yield box


def run(sb, body, table=TABLE, timeout_s=1.0):
    return sb.run(PRELUDE + body, table, timeout_s=timeout_s, memory_mb=128)


def is_plain_table(value) -> bool:
    return type(value) is list and all(
        type(row) is list and all(type(c) is str for c in row) for row in value)


# ----------------------------------------------------------------------------- look-alikes

@pytest.mark.parametrize("body", [
    "class L(list):\n    def __eq__(self, other):\n        return True\n"
    "def transform(t):\n    return L([['a', 'b'], ['c', 'd']])\n",
    "class L(list):\n    def __eq__(self, other):\n        return True\n"
    "def transform(t):\n    return [L(['a', 'b'])]\n",
    "class S(str):\n    def __eq__(self, other):\n        return True\n"
    "    __hash__ = str.__hash__\n"
    "def transform(t):\n    return [[S('a'), S('b')]]\n",
    "def transform(t):\n    return ([c for c in r] for r in t)\n",
    "def transform(t):\n    return [[float('nan')]]\n",
    "def transform(t):\n    return {'rows': t}\n",
    "def transform(t):\n    return [tuple(r) for r in t]\n",
    "def transform(t):\n    return None\n",
    "class Fake:\n    def __iter__(self):\n        return iter([['a']])\n"
    "    def __len__(self):\n        return 1\n"
    "    def __eq__(self, other):\n        return True\ndef transform(t):\n    return Fake()\n",
    "def transform(t):\n    return [['\\ud800']]\n",
    "def transform(t):\n    return [['x'] * 2000]\n",
    "def transform(t):\n    return [['x']] * 20000\n",
], ids=["list_subclass", "row_subclass", "str_subclass", "generator", "nan", "dict", "tuples",
        "none", "duck_typed", "lone_surrogate", "too_many_cols", "too_many_rows"])
def test_look_alike_outputs_are_bad_output(sb, body):
    r = run(sb, body)
    assert r.error == "bad_output" and r.output is None, r


def test_patched_encoder_in_the_child_cannot_smuggle_non_strings(sb):
    r = run(sb, '''
encoder = sys.modules["json.encoder"]
encoder.c_make_encoder = None
encoder._make_iterencode = lambda *a, **k: (lambda o, level: iter(["[[1, NaN, {}]]"]))
def transform(t):
    return t
''')
    assert r.error == "bad_output", r


def test_patched_child_checker_cannot_smuggle_non_strings(sb):
    r = run(sb, '''
child = sys.modules.get("_child") or sys.modules["sandbox._child"]
child.check_output = lambda out, limits: (b'[["a", 2]]', "")
def transform(t):
    return [["a", 2]]
''')
    assert r.error == "bad_output" and "cell 1" in r.message, r


@pytest.mark.parametrize("payload", [
    "b'[[\"a\", NaN]]'", "b'[[\"a\", Infinity]]'", "b'[[\"a\", {\"x\": 1}]]'",
    "b'[[\"a\"], \"b\"]'", "b'{\"rows\": []}'", "b'[[\"' + bytes([255, 254]) + b'\"]]'",
    "b'[[\"a\"]'", "b'[' * 200000 + b']' * 200000", "b'[[\"a\", 1e400]]'", "b'[[null]]'",
    "b'[[true]]'",
], ids=["nan", "infinity", "object", "bare_string_row", "dict", "bad_utf8", "truncated",
        "deep_nesting", "huge_float", "null", "bool"])
def test_forged_result_frames_are_checked_by_the_parent(sb, payload):
    r = run(sb, f"def transform(t):\n    os.write(3, frame(0, 0, {payload}))\n    os._exit(0)\n")
    assert r.error == "bad_output" and r.output is None, r


def test_forged_valid_frame_still_yields_plain_types(sb):
    r = run(sb, "def transform(t):\n    os.write(3, frame(0, 0, b'[[\"x\", \"y\"]]'))\n"
                "    os._exit(0)\n")
    assert r.ok and r.output == [["x", "y"]] and is_plain_table(r.output)


@pytest.mark.parametrize("body, error", [
    # a frame the program wrote itself is its own bad output, never an infrastructure crash
    ("def transform(t):\n    os.write(3, frame(1, 200, b'boom'))\n    os._exit(0)\n", "bad_output"),
    ("def transform(t):\n    os.write(3, frame(7, 0, b'[]'))\n    os._exit(0)\n", "bad_output"),
    ("def transform(t):\n    os.write(3, bytes([0, 0]) + (2 ** 31).to_bytes(4, 'little'))\n"
     "    os._exit(0)\n", "bad_output"),
    ("def transform(t):\n    os.write(3, bytes([0, 0]) + (100).to_bytes(4, 'little') + b'[[')\n"
     "    while True:\n        pass\n", "timeout"),
    ("def transform(t):\n    os.write(3, b'\\x00')\n    os._exit(0)\n", "crash"),
], ids=["bad_error_code", "bad_kind", "huge_length", "partial_then_hang", "short_header"])
def test_malformed_frames_are_classified(sb, body, error):
    r = run(sb, body, timeout_s=0.5)
    assert r.error == error, r


def test_mutating_the_input_changes_nothing_outside(sb):
    table = [["a", "b"], ["c", "d"]]
    original = copy.deepcopy(table)
    body = "def transform(t):\n    t[0][0] = 'X'\n    t.append(['e'])\n    return t\n"
    results = sb.run_many([(PRELUDE + body, table), (PRELUDE + body, table)])
    assert table == original
    assert [r.output for r in results] == [[["X", "b"], ["c", "d"], ["e"]]] * 2


# ----------------------------------------------------------------------------- persistence

PERSIST = [
    ("sys.modules['builtins'].len = lambda x: 0\nsys.modules['builtins'].str = None\n",
     "def transform(t):\n    return [[str(len(t))]]\n", [["2"]]),
    ("import re, math, json\nre.sub = None\nmath.pi = 3\njson.dumps = None\n",
     "import re, math, json\ndef transform(t):\n"
     "    return [[re.sub('a', 'x', 'abc'), str(math.pi)[:4], json.dumps(1)]]\n",
     [["xbc", "3.14", "1"]]),
    ("import re\nre._cache.clear()\nre._cache[(str, 'a', 0)] = re.compile('b')\n",
     "import re\ndef transform(t):\n    return [[re.sub('a', 'x', 'abc')]]\n", [["xbc"]]),
    ("sys.setrecursionlimit(50)\n",
     "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
     "def transform(t):\n    return [[str(f(300))]]\n", [["300"]]),
    ("import collections\ncollections._leak = 1\nos.environ['LEAK'] = '1'\n"
     "sys.modules['gc'].disable()\nsys.modules['sys'].settrace(lambda *a: None)\n",
     "import collections\ndef transform(t):\n"
     "    return [[str(hasattr(collections, '_leak')), os.environ.get('LEAK', '-'), "
     "str(sys.modules['gc'].isenabled()), str(sys.gettrace())]]\n",
     [["False", "-", "True", "None"]]),
    ("del sys.modules['re']\ndel sys.modules['datetime']\n",
     "import re, datetime\ndef transform(t):\n"
     "    return [[re.escape('.'), str(datetime.date(2024, 1, 2))]]\n",
     [["\\.", "2024-01-02"]]),
    ("child = sys.modules.get('_child') or sys.modules['sandbox._child']\n"
     "child.check_output = lambda out, limits: (b'[[\"forged\"]]', '')\n",
     "def transform(t):\n    return [[1]]\n", None),
]


@pytest.mark.parametrize("poison, probe, expected", PERSIST,
                         ids=["builtins", "module_attrs", "regex_cache", "recursion_limit",
                              "env_umask_gc", "sys_modules", "sandbox_module"])
def test_a_run_cannot_change_what_the_next_run_sees(sb, poison, probe, expected):
    poisoned = PRELUDE + poison + "def transform(t):\n    return t\n"
    # the same worker twice in a row, and both workers, whatever order they are picked in
    results = sb.run_many([(poisoned, TABLE), (poisoned, TABLE)] + [(PRELUDE + probe, TABLE)] * 4)
    for r in results[2:]:  # (the poisoned runs may well have broken themselves)
        if expected is None:
            assert r.error == "bad_output", r
        else:
            assert r.ok and r.output == expected, r
