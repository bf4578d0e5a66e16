"""``Runtime``: what a ``Sandbox`` adds to the standard library for its programs, on request.

    Sandbox(workers=2, runtime=Runtime(modules=("numpy",), globals={"np": "numpy"},
                                       array_input=True))
    Runtime(modules=("numpy", "scipy"), globals={"np": "numpy"}, array_input=True)  # scipy too

Off by default (``Runtime()`` adds nothing, and a ``Sandbox`` without one runs exactly as before).
With one, each worker pre-imports the optional packages (``policy.OPTIONAL_PRELOAD``) before it
confines itself, with every BLAS/OpenMP pool pinned to one thread (``THREAD_ENV``: a worker must
be single-threaded to enter its namespaces and fork), and the AST check lets programs import them
(less ``policy.OPTIONAL_REFUSED``). The optional packages are numpy and scipy; scipy needs numpy
in the same runtime (``policy.OPTIONAL_NEEDS``). ``globals`` hands a program modules under names
it does not import (``np``: harnesses that ``exec`` programs often give it); ``array_input``
hands the entry function a list input as a numpy array (a list whose array is numeric or
boolean; any other value as decoded from JSON). Whatever the runtime, numpy arrays and scalars a
program returns are converted in the child (``tolist()``, ``item()``) before the usual kind and
size checks.

The JSON form (``as_json``/``from_json``: ``{"modules": [...], "globals": {...}, "input":
"array" | "json"}``) is what the import file and the run's config hold.
"""
from __future__ import annotations

import importlib.util
import keyword
import os
import sys
from dataclasses import dataclass

from .policy import ALLOWED_MODULES, OPTIONAL_NEEDS, OPTIONAL_PRELOAD

# Set in the worker before the optional packages are imported, removed once they are: each
# library reads its variable when it loads and then starts no thread of its own.
THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "BLIS_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}
INPUTS = ("json", "array")  # how the entry function gets its input


class RuntimeUnavailable(RuntimeError):
    """An optional package the runtime asks for is not installed (one line: which, and where)."""


@dataclass(frozen=True)
class Runtime:
    """Optional packages (``modules``), module globals by name (``globals``: name -> module, as a
    dict or pairs), and whether a list input is handed over as a numpy array (``array_input``).
    Raises ``ValueError`` (one line) for anything else."""

    modules: tuple = ()
    globals: tuple = ()
    array_input: bool = False

    def __post_init__(self):
        modules = (self.modules,) if isinstance(self.modules, str) else tuple(self.modules)
        pairs = self.globals.items() if isinstance(self.globals, dict) else self.globals
        pairs = tuple(sorted((str(k), str(v)) for k, v in dict(pairs).items()))
        object.__setattr__(self, "modules", tuple(sorted(set(modules))))
        object.__setattr__(self, "globals", pairs)
        for m in self.modules:
            if m not in OPTIONAL_PRELOAD:
                raise ValueError(f"no optional module {m!r} (known: {', '.join(sorted(OPTIONAL_PRELOAD))})")
            for need in OPTIONAL_NEEDS.get(m, ()):
                if need not in self.modules:
                    raise ValueError(f"{m} needs {need} in modules too")
        for name, module in self.globals:
            if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__"):
                raise ValueError(f"global {name!r} is not a plain Python name")
            if module not in self.modules and module not in ALLOWED_MODULES:
                raise ValueError(f"global {name!r} names module {module!r}, which the runtime does not "
                                 "allow (give it in modules)")
        if type(self.array_input) is not bool:
            raise ValueError(f"array_input must be true or false, not {self.array_input!r}")
        if self.array_input and "numpy" not in self.modules:
            raise ValueError("array input needs numpy in modules")

    def __bool__(self) -> bool:
        return bool(self.modules or self.globals or self.array_input)

    def describe(self) -> str:
        """``numpy (np as a global, input as an array)``: for log lines."""
        extra = [f"{n} = {m} as a global" for n, m in self.globals]
        extra += ["input as an array"] if self.array_input else []
        return ", ".join(self.modules) + (f" ({', '.join(extra)})" if extra else "") if self else "none"

    def as_json(self) -> dict:
        return {"modules": list(self.modules), "globals": dict(self.globals),
                "input": "array" if self.array_input else "json"}

    @classmethod
    def from_json(cls, value) -> "Runtime":
        """From ``as_json``'s form; ``ValueError`` naming the key for a bad value."""
        if not isinstance(value, dict):
            raise ValueError(f"must be an object with modules, globals, input; got {type(value).__name__}")
        unknown = sorted(set(value) - {"modules", "globals", "input"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} (known: modules, globals, input)")
        modules, names = value.get("modules", []), value.get("globals", {})
        if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
            raise ValueError(f"modules must be a list of module names, got {modules!r}")
        if not isinstance(names, dict) or not all(isinstance(v, str) for v in names.values()):
            raise ValueError(f"globals must be an object of name: module, got {names!r}")
        given = value.get("input", "json")
        if given not in INPUTS:
            raise ValueError(f"input must be {' or '.join(map(repr, INPUTS))}, got {given!r}")
        return cls(tuple(modules), names, given == "array")

    def worker_options(self) -> dict:
        """What a worker needs: the packages, the folder each is found in (the worker starts
        without ``site``), the globals and the input form. Raises ``RuntimeUnavailable``."""
        paths = []
        for m in self.modules:
            spec = importlib.util.find_spec(m)
            if spec is None or not spec.submodule_search_locations:
                raise RuntimeUnavailable(f"the sandbox runtime needs {m}, which is not installed for "
                                         f"{sys.executable} (pip install {m})")
            folder = os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))
            if folder not in paths:
                paths.append(folder)
        return {"modules": list(self.modules), "paths": paths, "globals": dict(self.globals),
                "array_input": self.array_input, "thread_env": THREAD_ENV}


def check_available(runtime: Runtime) -> None:
    """Raise ``RuntimeUnavailable`` unless every package ``runtime`` asks for is installed."""
    runtime.worker_options()
