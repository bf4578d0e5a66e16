"""The sandbox's opt-in runtime inside a worker (``sandbox.Runtime``, docs/sandbox.md): loading the
optional packages before the worker confines itself, and what a run's child does with them.

``load`` (the worker, once, before its namespaces) imports the packages and their lazily loaded
submodules (``policy.OPTIONAL_PRELOAD``: numpy's, scipy's) from the folders the parent named, with
every BLAS/OpenMP pool pinned to one thread, and checks the worker still has one thread; it then
lets programs import them (``policy.allow_optional``, ``MODULES``), binds the ``GLOBALS`` every
program gets, and seeds numpy's legacy generator. ``self_tests`` names each loaded package's
self-test, which the worker runs under every protection before it serves. In a child,
``_child.execute`` hands the entry function ``as_array(input)`` when ``ARRAY_INPUT`` is set, and
passes its result through ``plain_output`` whenever numpy is loaded. A worker without a runtime
never calls ``load``: ``MODULES`` and ``GLOBALS`` stay empty, ``NUMPY`` None, and nothing here
runs.

Loaded both as ``sandbox._optional`` and as a top-level module inside the worker, so it imports
only the standard library (and, in ``load``, the packages it was asked for).
"""
from __future__ import annotations

import os
import sys

try:  # loaded as part of the package in tests, as top-level modules inside the worker
    from . import policy
except ImportError:
    import policy

MODULES: set = set()  # the optional packages a program may import (``load`` fills it)
GLOBALS: dict = {}  # name -> module, put in every program's namespace
NUMPY = None  # the numpy module when the runtime has it: its arrays and scalars are converted
ARRAY_INPUT = False  # a numeric list input is handed over as a numpy array

# What a worker runs for each optional package it loaded, once in a probe child with every
# protection that held (the package must work confined: a filter or limit that breaks it fails
# the start, it is never dropped) and once itself (its lazy set-up happens there, not in every
# child). Each touches the parts most likely to need a file, a thread or a syscall at call time:
# LAPACK, qhull (its messages go through a memory stream), the sparse graph code, pocketfft.
SELF_TESTS = {"numpy": """
import numpy
def transform(x):
    a = numpy.arange(1, 5).reshape(2, 2)
    b = numpy.rot90(numpy.pad(a, 1), 1)
    v, n = numpy.unique(b, return_counts=True)
    m = numpy.linalg.inv(numpy.eye(3) * 2) @ numpy.ones(3)
    return [[str(int(b.sum())), str(len(v)), str(float(m[0])), str(numpy.argwhere(b).shape)]]
""", "scipy": """
import numpy
from scipy import fft, interpolate, linalg, ndimage, optimize, signal, sparse, spatial, special, stats
from scipy.cluster import vq
def transform(x):
    g = numpy.array([[1, 1, 0, 0], [0, 0, 0, 2], [3, 0, 2, 2]])
    labels, n = ndimage.label(g > 0)
    box = ndimage.find_objects(labels)[0]
    mode = stats.mode(g, axis=None).mode
    conv = signal.convolve2d(g, numpy.ones((2, 2)), mode="valid")
    hull = spatial.ConvexHull([[0, 0], [2, 0], [0, 2], [2, 2], [1, 1]])
    tree = spatial.cKDTree(numpy.argwhere(g)).query([0, 0])[0]
    comps = sparse.csgraph.connected_components(sparse.csr_matrix(g[:, :3] > 0))[0]
    solved = linalg.solve(numpy.eye(2) * 2, [2, 4])
    root = optimize.brentq(lambda t: t * t - 4, 0, 5)
    line = interpolate.interp1d([0, 2], [0, 4])(1)
    codes = vq.vq(numpy.array([[0.0], [3.0]]), numpy.array([[0.0], [2.0]]))[0]
    return [[str(n), str(box), str(int(mode)), str(int(conv.sum())), str(len(hull.vertices)),
             str(float(tree)), str(comps), str(solved.tolist()), str(round(root, 6)),
             str(float(line)), str(codes.tolist()), str(int(special.comb(5, 2))),
             str(round(float(fft.rfft([1, 0, 0, 0])[1].real), 6))]]
"""}


def load(runtime: dict) -> None:
    """Import the runtime's packages (found in its ``paths``: the worker runs without ``site``)
    with their thread pools pinned to one thread, then let programs have them. The worker must
    stay single-threaded (namespaces, fork): a package that started a thread fails the start."""
    global NUMPY, ARRAY_INPUT
    os.environ.update(runtime["thread_env"])
    sys.path.extend(runtime["paths"])
    for name in runtime["modules"]:
        __import__(name)
        for sub in policy.OPTIONAL_PRELOAD[name]:
            __import__(sub)
    for name in runtime["thread_env"]:  # read once, at load: the programs see none of them
        os.environ.pop(name, None)
    with open("/proc/self/status", "rb") as fh:
        threads = int(fh.read().split(b"Threads:")[1].split()[0])
    if threads != 1:
        raise RuntimeError(f"loading {', '.join(runtime['modules'])} started {threads - 1} threads")
    policy.allow_optional(runtime["modules"])
    MODULES.update(runtime["modules"])
    GLOBALS.update({name: sys.modules[module] for name, module in runtime["globals"].items()})
    NUMPY = sys.modules.get("numpy") if "numpy" in runtime["modules"] else None
    ARRAY_INPUT = bool(runtime["array_input"]) and NUMPY is not None
    if NUMPY is not None:  # as ``random``: every run starts from the same legacy global state
        NUMPY.random.seed(0)


def self_tests() -> list:
    """(package, self-test program) for each package this worker loaded (none without a runtime)."""
    return [(name, SELF_TESTS[name]) for name in sorted(MODULES)]


def as_array(value):
    """A list as a numpy array when its array is numeric or boolean (a grid, a vector); any
    other value (a table of strings, ragged rows, an object) as decoded."""
    if type(value) is not list:
        return value
    try:
        array = NUMPY.array(value)
    except (ValueError, TypeError):  # ragged rows
        return value
    return array if array.dtype.kind in "biuf" else value


class _TooBig(Exception):
    pass


def plain_output(out, limits: dict) -> tuple:
    """``(out, "")`` with every numpy array (``tolist()``) and scalar (``item()``) in ``out``, at
    any depth of lists and dict values, made a plain value, the rest as it is (for the usual
    checks); ``(None, why)`` when its arrays hold more than ``max_cells`` values together (an
    array is never made a list past that)."""
    np, most, deepest = NUMPY, limits.get("max_cells", 100_000), limits.get("max_depth", 100)
    left = [most]

    def plain(v, depth):
        kind = type(v)
        if kind is np.ndarray:
            left[0] -= v.size
            if left[0] < 0:
                raise _TooBig
            return v.tolist()
        if issubclass(kind, np.generic):  # the type's own check: no program code runs
            return v.item()
        if depth >= deepest:
            return v  # the check says it is nested too deep
        if kind is list:
            new = [plain(x, depth + 1) for x in v]
            return v if all(a is b for a, b in zip(new, v)) else new
        if kind is dict:
            return {k: plain(x, depth + 1) for k, x in dict.items(v)}
        return v

    try:
        return plain(out, 0), ""
    except _TooBig:
        return None, f"output has more than {most} values, more than the limit"
