"""The opt-in runtime with scipy (``Runtime(modules=("numpy", "scipy"))``): scipy programs run confined
on the submodules the worker pre-imported; scipy is refused without the runtime and with a numpy-only
one (test_sandbox_runtime.py); its file, download and foreign-function corners are refused by the
check and, with the check off, contained by the kernel layers (no file to read, none to write, no
module left to load, no thread to start, native code confined)."""
from __future__ import annotations

import pytest

from sandbox import Runtime, RuntimeUnavailable, Sandbox

SC = Runtime(modules=("numpy", "scipy"), globals={"np": "numpy"}, array_input=True)
SP = Runtime(modules=("numpy", "scipy"), globals={"np": "numpy", "sp": "scipy"}, array_input=True)  # scipy too


@pytest.fixture(scope="module")
def boxes():
    with Sandbox(workers=1, runtime=SC) as on, Sandbox(workers=1, runtime=SP, ast_check=False) as off:
        yield on, off


@pytest.fixture(scope="module")
def box(boxes):
    return boxes[0]


def test_ndimage_label_on_a_grid(box):
    code = ("from scipy import ndimage\n"
            "def transform_grid(grid):\n"
            "    labels, n = ndimage.label(grid > 0)\n"
            "    return labels * (n == 3)\n")
    r = box.run(code, [[1, 1, 0, 2], [0, 0, 0, 2], [3, 0, 0, 0]], kind="grid", entry="transform_grid")
    assert (r.ok, r.error, r.message) == (True, None, "")
    assert r.output == [[1, 1, 0, 2], [0, 0, 0, 2], [3, 0, 0, 0]]


def test_preloaded_submodules_work_confined(box):
    code = ("import scipy\n"
            "import scipy.ndimage as ndi\n"
            "from scipy import interpolate, linalg, optimize, signal, special, stats\n"
            "from scipy.sparse.csgraph import connected_components\n"
            "from scipy.spatial.distance import cdist\n"
            "def transform(g):\n"
            "    return {'mode': stats.mode(g, axis=None).mode,\n"
            "            'objects': len(ndi.find_objects(scipy.ndimage.label(g)[0])),\n"
            "            'conv': signal.convolve2d(g, np.ones((2, 2)), mode='valid'),\n"
            "            'graph': connected_components(scipy.sparse.csr_matrix(g[:, :2]))[0],\n"
            "            'dist': cdist([[0, 0]], [[3, 4]])[0, 0],\n"
            "            'solve': linalg.solve(np.eye(2) * 2, [2, 4]),\n"
            "            'root': round(optimize.brentq(lambda t: t * t - 9, 0, 5), 6),\n"
            "            'interp': interpolate.interp1d([0, 2], [0, 4])(1),\n"
            "            'comb': special.comb(5, 2, exact=True),\n"
            "            'hull': len(scipy.spatial.ConvexHull([[0, 0], [2, 0], [0, 2], [1, 1]]).vertices)}\n")
    r = box.run(code, [[1, 0, 0], [0, 0, 1]], kind="json")
    assert r.ok, r.message
    assert r.output == {"mode": 0, "objects": 2, "conv": [[1.0, 1.0]], "graph": 2, "dist": 5.0,
                        "solve": [1.0, 2.0], "root": 3.0, "interp": 2.0, "comb": 10, "hull": 3}


def test_workers_start_no_threads(box):
    census = box.census()
    assert census["threads"] == census["processes"]


@pytest.mark.parametrize("line,message", [
    ("import scipy.io", "import of 'scipy.io' is not allowed (line 1)"),
    ("from scipy import io", "import of 'scipy.io' is not allowed (line 1)"),
    ("from scipy.io import loadmat", "import of 'scipy.io' is not allowed (line 1)"),
    ("import scipy.datasets", "import of 'scipy.datasets' is not allowed (line 1)"),
    ("from scipy import misc", "import of 'scipy.misc' is not allowed (line 1)"),
    ("from scipy._lib import _ccallback", "import of 'scipy._lib' is not allowed (line 1)"),
    ("from scipy import LowLevelCallable", "import of 'scipy.LowLevelCallable' is not allowed (line 1)"),
    ("import scipy as s\nx = s.io", "access to attribute 'io' is not allowed (line 2)"),
    ("import scipy\nx = scipy.datasets.face", "access to attribute 'datasets' is not allowed (line 2)"),
    ("import scipy\nx = scipy._lib", "access to attribute '_lib' is not allowed (line 2)"),
])
def test_file_and_ffi_corners_are_refused_by_the_check(box, line, message):
    r = box.run(line + "\ndef transform(x):\n    return 1\n", [1], kind="json")
    assert r.error == "forbidden" and r.message.startswith(message), r


def test_the_rest_of_scipy_and_the_standard_io_stay_allowed(box):
    for line in ("import scipy", "import scipy.ndimage as ndi", "from scipy.ndimage import label",
                 "from scipy import ndimage, stats", "from scipy.sparse.csgraph import connected_components",
                 "import io\nx = io.StringIO", "import numpy as np\nfrom numpy import linalg"):
        r = box.run(line + "\ndef transform(x):\n    return 1\n", [1], kind="json")
        assert r.ok, (line, r)


# Each hostile program runs with the AST check off and reaches a scipy corner: the file modules
# (never pre-imported, and a run has no file system to load them from), the file functions outside
# them (sparse's npz files), the internals' process, temporary-file and raw-pointer helpers, and the
# thread pools behind ``workers=``. Each fails inside the child: (program, error class, message part).
HOSTILE = {
    "io_import": ("import scipy.io\n    return 1", "exception", "No module named 'scipy.io'"),
    "io_getattr": ("import scipy\n    return str(getattr(scipy, 'i' + 'o').loadmat('/etc/passwd'))",
                   "exception", "No module named 'scipy.io'"),
    "datasets": ("import scipy\n    return scipy.datasets.face().tolist()",
                 "exception", "No module named 'scipy.datasets'"),
    "misc": ("import scipy\n    return str(scipy.misc)", "exception", "no attribute 'misc'"),
    "load_npz": ("from scipy import sparse\n    return str(sparse.load_npz('/etc/passwd'))",
                 "exception", "PermissionError"),
    "save_npz": ("from scipy import sparse\n    sparse.save_npz('/tmp/x.npz', sparse.eye(2))\n    return 1",
                 "exception", "PermissionError"),
    "subprocess": ("import scipy._lib._testutils as t\n"
                   "    return t.subprocess.run(['/bin/sh', '-c', 'id'], capture_output=True).stdout.decode()",
                   "exception", "Operation not permitted"),
    "tempfile": ("import scipy._lib.messagestream as m\n    return m.tempfile.mkstemp()[1]",
                 "exception", "No usable temporary directory"),
    "fft_workers": ("import scipy.fft\n    return scipy.fft.fft2(np.ones((256, 256)), workers=4)[0, 0].real",
                    "exception", "RuntimeError: Operation not permitted"),
    "kdtree_workers": ("from scipy import spatial\n"
                       "    return spatial.cKDTree(np.ones((50, 2))).query(np.zeros((5000, 2)), workers=2)[0]",
                       "exception", "can't start new thread"),
    "process_pool": ("from scipy import optimize\n"
                     "    return optimize.differential_evolution(lambda v: v[0] ** 2, [(-1, 1)], workers=2).x",
                     "exception", "No module named 'multiprocessing'"),
    "raw_pointer": ("import scipy, scipy.integrate\n    from scipy._lib._ccallback_c import get_raw_capsule\n"
                    "    f = scipy.LowLevelCallable(get_raw_capsule(16, 'double (double)', 0))\n"
                    "    return scipy.integrate.quad(f, 0, 1)[0]", "crash", "SIGSEGV"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_scipy_corners_are_contained(boxes, name):
    on, off = boxes
    program, error, part = HOSTILE[name]
    code = "def transform(x):\n    " + program + "\n"
    r = off.run(code, [[1]], kind="json")
    assert (r.error, part in r.message) == (error, True), (name, r)
    assert "root:" not in r.message and "/lib/" not in r.message
    assert not on.run(code, [[1]], kind="json").ok
    assert off.run("def transform(x):\n    return 1\n", [1], kind="json").output == 1  # the next run is fine


def test_scipy_as_a_global_and_its_objects_as_outputs(boxes):
    off = boxes[1]
    r = off.run("def transform(x):\n    return sp.ndimage.label(sp.sparse.eye(2).toarray())[1]\n", [1], kind="json")
    assert (r.ok, r.output) == (True, 2)
    r = off.run("def transform(x):\n    return sp.sparse.csr_matrix(x)\n", [[1]], kind="json")
    assert (r.error, r.message) == ("bad_output", "output holds csr_matrix, expected only dict, list, str, "
                                                  "int, float, bool or None")


def test_json_form_and_order():
    assert Runtime.from_json({"modules": ["scipy", "numpy"], "globals": {"np": "numpy"}, "input": "array"}) == SC
    assert SC.as_json()["modules"] == ["numpy", "scipy"]
    assert SC.describe() == "numpy, scipy (np = numpy as a global, input as an array)"


def test_missing_scipy_is_a_clear_error(monkeypatch, tmp_path):
    import importlib.util
    import tempfile

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else found(name, *a))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RuntimeUnavailable) as err:
        Sandbox(workers=1, runtime=SC)
    assert str(err.value).startswith("the sandbox runtime needs scipy, which is not installed for ")
    assert str(err.value).endswith("(pip install scipy)") and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_no_host_path_in_a_scipy_worker():
    """The scrub covers scipy's thousands of module paths too (test_sandbox_host_paths_and_batch_cost)."""
    import os

    import numpy
    from test_sandbox_host_paths_and_batch_cost import SCAN, _host_needles, _needle_variants, _regions, _serving_pid

    with Sandbox(workers=1, ast_check=False, runtime=SC) as off:
        needles = _host_needles(off)
        needles["site_packages"] = os.path.dirname(os.path.dirname(os.path.abspath(numpy.__file__)))
        needles.update({"control_argv": "sandbox worker: zygote.py", "control_heap": "transform_program"})
        labels, variants = _needle_variants(needles)
        regions = _regions(_serving_pid(off))
        table = [labels, variants] + [regions[i:i + 500] for i in range(0, len(regions), 500)]
        r = off.run(SCAN, table, timeout_s=120, memory_mb=2048)
    assert r.ok, r
    found = {name.split(":")[0] for name, _ in r.output[:-1]}
    assert {"control_argv", "control_heap"} <= found, found
    assert not found - {"control_argv", "control_heap"}, found
