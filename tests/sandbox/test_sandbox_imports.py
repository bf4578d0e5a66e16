"""Import spellings a model writes: each accepted or refused the same way by the policy check,
the quick pass and the guarded import at run time (with the AST check on and off).

``from __future__ import ...`` is a compiler directive, allowed everywhere; ``from PKG import
NAME`` is accepted when ``PKG.NAME`` is an allowed submodule (``from urllib import parse``).
"""
from __future__ import annotations

import pytest

from sandbox import Sandbox, policy

BODY = "\ndef transform(t):\n    return t\n"

# (import lines, accepted)
SPELLINGS = [
    ("from __future__ import annotations", True),
    ("from __future__ import annotations, division", True),
    ("import json", True),
    ("import json as j", True),
    ("import json.decoder", True),
    ("import json.decoder as d", True),
    ("import os.path", True),
    ("import os.path as p", True),
    ("from os import path", True),
    ("from os import path as p", True),
    ("from collections import abc", True),
    ("from collections import abc as a, Counter", True),
    ("from collections.abc import Mapping", True),
    ("import urllib.parse", True),
    ("import urllib.parse as up", True),
    ("from urllib.parse import quote", True),
    ("from urllib.parse import quote as q, unquote", True),
    ("from urllib import parse", True),
    ("from urllib import parse as up", True),
    ("from json import decoder, encoder", True),
    ("import urllib", False),
    ("from urllib import request", False),
    ("from urllib import parse, request", False),
    ("import urllib.request", False),
    ("from urllib import *", False),
    ("import subprocess", False),
    ("import json, socket", False),
    ("from . import x", False),
    ("from .json import x", False),
    ("from .. import x", False),
]


def _code(line: str) -> str:
    return line + "\n" + BODY


@pytest.fixture(scope="module")
def boxes():
    with Sandbox(workers=1) as on, Sandbox(workers=1, ast_check=False) as off:
        yield on, off


@pytest.mark.parametrize("line,accepted", SPELLINGS, ids=[s for s, _ in SPELLINGS])
def test_import_spelling_policy(line, accepted):
    problem = policy.check(policy.parse(_code(line)))
    assert (problem is None) == accepted, problem
    if not accepted:  # one line naming the import, as before
        assert "\n" not in problem and ("not allowed" in problem)
    if policy.quick_pass(_code(line)):
        assert accepted  # the quick pass never lets through what the check refuses


@pytest.mark.parametrize("line,accepted", SPELLINGS, ids=[s for s, _ in SPELLINGS])
def test_import_spelling_runs(boxes, line, accepted):
    on, off = boxes
    r = on.run(_code(line), [["a"]])
    assert r.ok == accepted, r
    if accepted:
        assert r.output == [["a"]]
        # the guarded import at run time accepts it too, with the AST check off
        r2 = off.run(_code(line), [["a"]])
        assert r2.ok and r2.output == [["a"]], r2
    else:
        assert r.error == "forbidden" and "not allowed" in r.message


def test_future_annotations_in_typed_program(boxes):
    code = ("from __future__ import annotations\nimport json\n\n"
            "def transform(table: list[list[str]]) -> list[list[str]]:\n"
            "    x: dict[str, int] = {}\n    return [[c.upper() for c in r] for r in table]\n")
    for box in boxes:
        r = box.run(code, [["a", "b"]])
        assert r.ok and r.output == [["A", "B"]], r


def test_urllib_parse_from_package_works(boxes):
    code = "from urllib import parse\ndef transform(t):\n    return [[parse.quote(c) for c in r] for r in t]\n"
    for box in boxes:
        r = box.run(code, [["a b"]])
        assert r.ok and r.output == [["a%20b"]], r
