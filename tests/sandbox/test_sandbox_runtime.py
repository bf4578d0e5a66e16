"""The opt-in runtime (``sandbox.Runtime``): numpy importable, given as a global and taking the
input as an array, its arrays and scalars converted in the child; the default sandbox unchanged;
numpy's own file and foreign-function corners contained by the kernel layers with the AST check
off (and refused by the check when it is on)."""
from __future__ import annotations

import json
import re

import pytest

from sandbox import ALLOWED_MODULES, Runtime, RuntimeUnavailable, Sandbox, allowed_modules, policy

NP = Runtime(modules=("numpy",), globals={"np": "numpy"}, array_input=True)


@pytest.fixture(scope="module")
def boxes():
    with Sandbox(workers=1, runtime=NP) as on, Sandbox(workers=1, runtime=NP, ast_check=False) as off:
        yield on, off


@pytest.fixture(scope="module")
def box(boxes):
    return boxes[0]


def test_np_global_and_array_input_and_ndarray_output(box):
    code = "def transform_grid(g):\n    assert isinstance(g, np.ndarray), type(g)\n    return np.rot90(g)\n"
    r = box.run(code, [[1, 2], [3, 4]], kind="grid", entry="transform_grid")
    assert r.ok, r.message
    assert r.output == [[2, 4], [1, 3]]
    assert all(type(c) is int for row in r.output for c in row)


def test_numpy_scalars_and_nested_arrays_become_plain_values(box):
    r = box.run("def transform(x):\n    return np.int64(x.sum())\n", [[1, 2], [3, 4]], kind="json")
    assert (r.ok, r.output, type(r.output)) == (True, 10, int)
    code = ("import numpy as n\ndef transform(x):\n"
            "    return {'a': [n.float32(1.5), n.arange(3)], 'b': n.bool_(True), 'c': [list(r) for r in x]}\n")
    r = box.run(code, [[1, 2]], kind="json")
    assert r.ok, r.message
    assert r.output == {"a": [1.5, [0, 1, 2]], "b": True, "c": [[1, 2]]}
    # a grid of numpy ints row by row (``list(row)``) passes the grid check
    r = box.run("def transform(g):\n    return [list(row) for row in g * 2]\n", [[1, 2]], kind="grid")
    assert (r.ok, r.output) == (True, [[2, 4]])


def test_inputs_that_are_not_numeric_lists_stay_as_decoded(box):
    code = "def transform(x):\n    return str(type(x))\n"
    seen = {json.dumps(x): box.run(code, x, kind="json").output
            for x in ([["a", "b"]], [[1, 2], [3]], {"k": [1]}, 5, [[True, False]], [1.5, 2])}
    assert seen == {'[["a", "b"]]': "<class 'list'>", '[[1, 2], [3]]': "<class 'list'>",
                    '{"k": [1]}': "<class 'dict'>", "5": "<class 'int'>",
                    '[[true, false]]': "<class 'numpy.ndarray'>", "[1.5, 2]": "<class 'numpy.ndarray'>"}


def test_output_limits_hold_before_an_array_is_made_a_list(box):
    r = box.run("def transform(x):\n    return np.zeros((1000, 1000), dtype=int)\n", [1], kind="json")
    assert (r.error, r.message) == ("bad_output", "output has more than 100000 values, more than the limit")
    r = box.run("def transform(x):\n    return np.array([1.5])\n", [[1]], kind="grid")
    assert r.error == "bad_output" and "float" in r.message  # converted, then the usual check
    r = box.run("def transform(x):\n    return np.float64('nan')\n", [1], kind="json")
    assert r.error == "bad_output" and "NaN" in r.message


def test_json_input_runtime_hands_lists(boxes):
    rt = Runtime(modules=("numpy",), globals={"np": "numpy"})
    with Sandbox(workers=1, runtime=rt) as sb:
        r = sb.run("def transform(x):\n    return [type(x).__name__, list(np.array(x).shape)]\n", [[1, 2]], kind="json")
        assert (r.ok, r.output) == (True, ["list", [1, 2]])


def test_other_modules_stay_refused_with_the_runtime(boxes):
    box, off = boxes
    for line in ("import subprocess", "import socket", "import scipy", "from scipy import ndimage",
                 "import numpy.ctypeslib", "from numpy import ctypeslib", "from numpy import f2py as f",
                 "import numpy.testing"):
        r = box.run(line + "\ndef transform(x):\n    return 1\n", [1], kind="json")
        assert r.error == "forbidden", (line, r)
    # scipy belongs to a runtime that asks for it: a numpy-only worker neither allows nor loads it
    r = off.run("from scipy import ndimage\ndef transform(x):\n    return 1\n", [1], kind="json")
    assert (r.error, r.message) == ("exception", "ImportError: import of 'scipy' is not allowed (line 1)")
    r = box.run("def transform(x):\n    return str(np.ctypeslib)\n", [1], kind="json")
    assert (r.error, r.message) == ("forbidden", "access to attribute 'ctypeslib' is not allowed (line 2)")
    for line in ("import numpy", "import numpy as np", "from numpy import array", "import numpy.linalg",
                 "from numpy.lib.stride_tricks import sliding_window_view", "import os"):
        r = box.run(line + "\ndef transform(x):\n    return 1\n", [1], kind="json")
        assert r.ok, (line, r)


def test_preloaded_submodules_work_confined(box):
    code = ("def transform(x):\n"
            "    a = np.linalg.inv(np.eye(2) * 2) @ np.ones(2)\n"
            "    f = np.fft.fft(np.ones(4)).real\n"
            "    m = np.ma.masked_equal(x, 0).sum()\n"
            "    r = np.random.randint(0, 100, 3)\n"
            "    return [a, f, m, r, np.unique(x).size]\n")
    first = box.run(code, [[0, 1], [2, 2]], kind="json")
    assert first.ok, first.message
    assert first.output[:3] == [[0.5, 0.5], [4.0, 0.0, 0.0, 0.0], 5]
    assert box.run(code, [[0, 1], [2, 2]], kind="json").output == first.output  # seeded alike each run


def test_workers_start_no_threads(box):
    census = box.census()
    assert census["threads"] == census["processes"]  # BLAS and OpenMP pinned: one thread each


# Each hostile program runs with the AST check off and reaches numpy's file and FFI corners;
# each fails inside the child (no files to read, none may be made, no module left to load).
HOSTILE = {
    "ctypeslib": "return str(np.ctypeslib)",
    "f2py": "import numpy.f2py\n    return 1",
    "load": "return str(np.load('/etc/passwd', allow_pickle=True))",
    "loadtxt": "return str(np.loadtxt('/etc/hostname', dtype=str))",
    "genfromtxt": "return np.genfromtxt('/etc/passwd', dtype=str).tolist()",
    "fromfile": "return np.fromfile('/proc/self/maps', dtype=np.uint8).tolist()",
    "save": "np.save('x.npy', np.arange(3))\n    return 1",
    "save_tmp": "np.save('/tmp/x.npy', np.arange(3))\n    return 1",
    "tofile": "np.arange(3).tofile('/x')\n    return 1",
    "memmap": "np.memmap('/dev/shm/x', mode='w+', shape=(10,))\n    return 1",
    "open_memmap": "np.lib.format.open_memmap('x.npy', mode='w+', shape=(3,))\n    return 1",
    "datasource": "return np.lib.npyio.DataSource(None).open('http://127.0.0.1/').read()",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_numpy_file_access_is_contained(boxes, name):
    on, off = boxes
    code = "def transform(x):\n    " + HOSTILE[name] + "\n"
    r = off.run(code, [[1]], kind="json")
    assert r.error == "exception", (name, r)
    assert "root:" not in r.message and "/lib/" not in r.message
    assert not on.run(code, [[1]], kind="json").ok


def test_default_sandbox_is_unchanged(sb):
    assert "numpy" not in ALLOWED_MODULES and "numpy" not in allowed_modules()
    r = sb.run("import numpy\ndef transform(t):\n    return t\n", [["a"]])
    assert (r.error, r.message) == ("forbidden", "import of 'numpy' is not allowed (line 1); use only the "
                                                 "standard modules listed in the task")
    r = sb.run("def transform(t):\n    return np.array(t)\n", [["a"]])
    assert (r.error, r.message) == ("exception", "NameError: name 'np' is not defined (line 2)")
    assert sb.runtime == Runtime() and not sb.runtime


def test_default_sandbox_without_check_cannot_import_numpy():
    with Sandbox(workers=1, ast_check=False) as off:
        for name in ("numpy", "scipy"):
            r = off.run(f"import {name}\ndef transform(t):\n    return t\n", [["a"]])
            assert (r.error, r.message) == ("exception", f"ImportError: import of '{name}' is not allowed (line 1)")


def test_policy_in_this_process_allows_no_optional_module():
    assert not policy._OPTIONAL
    for line in ("import numpy\n", "import scipy\n", "from scipy import ndimage\n"):
        assert policy.check(policy.parse(line)) is not None
        assert not policy.quick_pass(line)


@pytest.mark.parametrize("value,problem", [
    ({"modules": ["torch"]}, "no optional module 'torch' (known: numpy, scipy)"),
    ({"modules": ["scipy"]}, "scipy needs numpy in modules too"),
    ({"modules": "numpy"}, "modules must be a list"),
    ({"modules": ["numpy"], "input": "tensor"}, "input must be 'json' or 'array'"),
    ({"input": "array"}, "array input needs numpy in modules"),
    ({"globals": {"np": "numpy"}}, "global 'np' names module 'numpy', which the runtime does not allow"),
    ({"modules": ["numpy"], "globals": {"__x": "numpy"}}, "global '__x' is not a plain Python name"),
    ({"modules": ["numpy"], "extra": 1}, "unknown key 'extra'"),
    ([], "must be an object"),
])
def test_bad_runtimes_are_one_line_errors(value, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        Runtime.from_json(value)


def test_json_form_round_trips():
    assert Runtime.from_json(NP.as_json()) == NP
    assert NP.as_json() == {"modules": ["numpy"], "globals": {"np": "numpy"}, "input": "array"}


def test_missing_package_is_a_clear_error(monkeypatch, tmp_path):
    import importlib.util
    import tempfile

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeUnavailable, match=r"^the sandbox runtime needs numpy, which is not installed"):
        Sandbox(workers=1, runtime=NP)
    assert list(tmp_path.iterdir()) == []  # refused before any folder or worker was made
