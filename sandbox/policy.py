"""Which modules a program may import, and the early AST check that turns away obvious misuse.

The check is a courtesy: it answers ``forbidden`` with a message a model can act on ("import of
'os' is not allowed ...") before anything runs. It is not the wall. A program that slips past it
(through ``getattr`` tricks, ``().__class__`` walks, ctypes found by reflection) still runs inside
the child's kernel-level limits (see ``_child.py``), and the hostile-program tests run hostile code with
the check switched off to show that.

Accepted import spellings: ``import M``, ``import M.sub``, ``import M as x``, ``import M.sub as
x``, ``from M import name``, ``from M.sub import name as x`` for an allowed ``M`` (or submodule
such as ``urllib.parse``), ``from PKG import sub`` when ``PKG.sub`` is allowed (``from urllib
import parse``), and ``from __future__ import ...`` anywhere. In a worker whose sandbox asked for an
optional package (``sandbox.Runtime``; ``allow_optional``), that package too, less its refused
parts (``OPTIONAL_REFUSED``: as an import, ``from numpy import ctypeslib``, or ``np.ctypeslib``).
Covered: imports outside ``ALLOWED_MODULES`` (including relative ones), calls to the builtins
that reach the file system, the interpreter or the caller's scope (``open``, ``exec``, ``eval``,
``__import__`` ...), and the dunder and frame attributes used to climb out of Python-level
restrictions. Not covered: anything dynamic; the check never executes the program.

Loaded both as ``sandbox.policy`` and as a top-level module inside the worker process, so it
imports only the standard library.
"""
from __future__ import annotations

import _ast
import re

# The standard-library modules a program may import: everything useful for turning one table
# into another that the kernel layers make harmless, pre-imported in the worker (a run has no file
# system to import from). ``tracegen.prompts`` states this list to the model. ``os`` and ``sys``
# are here because models use ``os.path`` and print debug lines to ``sys.stderr``; what they could
# reach beyond that (files, processes, signals) the kernel refuses. Left out: modules that give a
# program nothing but trouble here (``subprocess``, ``socket``, ``ctypes``, ``threading``,
# ``multiprocessing``, ``asyncio``, ``signal``, ``shutil``, ``tempfile``, ``pathlib``, ``glob``,
# ``importlib``, ``pickle``, ``gc``, ``inspect``, ``zoneinfo`` and the like: each fails or
# breaks something at run time) and heavy ones no table transformation needs.
ALLOWED_MODULES = frozenset({
    "abc", "array", "base64", "binascii", "bisect", "calendar", "cmath", "codecs",
    "collections", "colorsys", "contextlib", "copy", "csv", "dataclasses", "datetime",
    "decimal", "difflib", "enum", "fnmatch", "fractions", "functools", "graphlib", "heapq",
    "html", "io", "ipaddress", "itertools", "json", "keyword", "math", "numbers", "operator",
    "os", "pprint", "random", "re", "shlex", "statistics", "string", "struct", "sys",
    "textwrap", "time", "types", "typing", "unicodedata", "urllib.parse", "zlib",
})
# What is imported in the worker: the allowed modules, the submodules a program names
# (``urllib.parse``, ``os.path``, ``collections.abc``) and what allowed modules import lazily at
# call time (``datetime.strptime`` needs ``_strptime``; codecs by name).
# ``__future__`` is a compiler directive (``from __future__ import annotations`` tops much typed
# Python): allowed everywhere, though not a module a program uses, so not in the prompt's list.
DIRECTIVES = frozenset({"__future__"})
PRELOAD = tuple(sorted(ALLOWED_MODULES)) + (
    "__future__", "_strptime", "collections.abc", "json.decoder", "json.encoder", "os.path",
    "html.entities", "html.parser", "encodings.idna", "encodings.latin_1", "encodings.cp1252",
    "encodings.utf_16", "encodings.utf_32", "encodings.ascii", "encodings.unicode_escape",
    "encodings.raw_unicode_escape", "encodings.base64_codec", "encodings.hex_codec")


# Packages a sandbox adds only when asked (``sandbox.Runtime``), never by default: a table per fact.
# What each pre-imports in the worker besides itself: the submodules a typical program touches
# that the package imports lazily (``np.linalg`` is loaded on first use, and a run has no file
# system to load it from).
OPTIONAL_PRELOAD = {
    "numpy": ("numpy.linalg", "numpy.fft", "numpy.random", "numpy.ma", "numpy.polynomial",
              "numpy.lib.stride_tricks", "numpy.exceptions", "numpy.dtypes", "numpy.strings",
              "numpy.char", "numpy.rec"),
    # scipy loads every subpackage lazily (``scipy.ndimage`` on first use): the ones a program
    # that transforms a grid or a table plausibly uses, and the modules they pull in that a
    # program names (``scipy.sparse.csgraph``, ``scipy.spatial.distance`` ...). Together a
    # worker starts about 2.6 s later than with numpy alone and each run's fork costs about twice
    # the CPU (~900 memory mappings instead of ~190; docs/sandbox.md). ``scipy.stats`` and
    # ``scipy.signal`` each pull in most of it and are what programs use most: none is left out.
    "scipy": ("scipy.ndimage", "scipy.stats", "scipy.signal", "scipy.spatial", "scipy.special",
              "scipy.linalg", "scipy.optimize", "scipy.interpolate", "scipy.sparse",
              "scipy.cluster", "scipy.fft", "scipy.integrate", "scipy.constants",
              "scipy.sparse.csgraph", "scipy.sparse.linalg", "scipy.spatial.distance",
              "scipy.spatial.transform", "scipy.cluster.hierarchy", "scipy.cluster.vq",
              "scipy.signal.windows", "scipy.stats.qmc", "scipy.stats.contingency",
              "scipy.linalg.blas", "scipy.linalg.lapack"),
}
# What the check refuses inside an optional package (as an import or as an attribute of any
# name): the foreign-function layer, files, downloads, and the build and test tools. Never
# pre-imported either (but ``scipy._lib``, which scipy runs on), so even a program that slips past
# the check cannot load them (no files to load from); docs/sandbox.md says why each.
OPTIONAL_REFUSED = {
    "numpy": ("numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "numpy.testing"),
    # ``io``: files (``loadmat``, ``savemat``, ``wavfile``, ``mmread``, ``netcdf_file``);
    # ``datasets``: downloads into a cache folder; ``misc``: deprecated, once image files;
    # ``_lib``: internals (raw capsules from addresses, test runners, process pools);
    # ``LowLevelCallable``: scipy's foreign-function layer (calls a C function pointer).
    "scipy": ("scipy.io", "scipy.datasets", "scipy.misc", "scipy._lib", "scipy.LowLevelCallable"),
}
# An optional package that needs another in the same runtime (scipy is built on numpy).
OPTIONAL_NEEDS = {"scipy": ("numpy",)}
# The optional packages this process allows (``allow_optional``, called once in a worker whose
# sandbox asked for them, before any run); empty everywhere else.
_OPTIONAL: frozenset = frozenset()
_REFUSED_ATTRS: frozenset = frozenset()
_REFUSED_WORDS = None  # a pattern of the refused attribute names, for ``quick_pass``


def allow_optional(names) -> None:
    """Let programs of this process import the optional packages ``names`` (keys of
    ``OPTIONAL_PRELOAD``) too, less their ``OPTIONAL_REFUSED`` parts. For the worker only."""
    global _OPTIONAL, _REFUSED_ATTRS, _REFUSED_WORDS
    unknown = set(names) - set(OPTIONAL_PRELOAD)
    if unknown:
        raise ValueError(f"no optional module {sorted(unknown)[0]!r}")
    _OPTIONAL = frozenset(names)
    _REFUSED_ATTRS = frozenset(r.rpartition(".")[2] for n in names for r in OPTIONAL_REFUSED[n])
    _REFUSED_WORDS = re.compile(r"\b(?:%s)\b" % "|".join(sorted(_REFUSED_ATTRS))) \
        if _REFUSED_ATTRS else None


def allowed_modules() -> list[str]:
    """The importable modules, sorted: what the write prompt states (one list, two uses)."""
    return sorted(ALLOWED_MODULES)


FORBIDDEN_NAMES = frozenset({
    "open", "exec", "eval", "compile", "__import__", "input", "breakpoint", "globals",
    "locals", "vars", "help", "exit", "quit", "__builtins__", "__loader__", "__spec__",
})
FORBIDDEN_ATTRS = frozenset({
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__bases__",
    "__base__", "__mro__", "__class__", "__dict__", "__getattribute__", "__reduce__",
    "__reduce_ex__", "__loader__", "__spec__", "__self__", "__func__", "__traceback__",
    "__import__", "__init_subclass__", "__set_name__", "__class_getitem__",
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "gi_frame", "gi_code",
    "cr_frame", "ag_frame", "tb_frame", "tb_next", "co_code", "mro",
})

_HINT = "transform gets the table as its argument and must return the new table"


_IMPORT_WORD = re.compile(r"\bimport\b")
# Possessive (``++``, ``*+``): each run of characters is taken once and never given back, so
# matching is linear in the line's length (a 60,000-character ``from a.a.a...`` line made the
# lazy form of this pattern quadratic, and a syntax error came back as ``timeout``).
_IMPORT_LINE = re.compile(r"^[ \t]*+(?:import[ \t]++([\w., \t]*+)|from[ \t]++(\w++)[\w.]*+"
                          r"[ \t]++import[ \t]++[\w, \t*]++)(?:#.*+)?$", re.MULTILINE)
_SUSPECT = re.compile(r"\b(?:%s)\b" % "|".join(sorted(FORBIDDEN_NAMES | FORBIDDEN_ATTRS)))


def quick_pass(source: str) -> bool:
    """True when ``check`` would certainly pass, found from the text alone (no AST is built).

    Conservative: any non-ASCII text (identifiers are NFKC-normalised), any forbidden word
    anywhere (even in a string or comment) or any ``import`` it cannot read sends the program
    to the full check. Parsing to an AST costs more than the rest of a typical run, so most
    programs should take this path.
    """
    if not source.isascii() or _SUSPECT.search(source) or (
            _REFUSED_WORDS is not None and _REFUSED_WORDS.search(source)):
        return False
    imports = _IMPORT_LINE.findall(source)
    if len(imports) != len(_IMPORT_WORD.findall(source)):
        return False
    for names, module in imports:
        roots = [module] if module else [n.split()[0].split(".")[0] for n in names.split(",")
                                         if n.strip()]
        if not roots or not all(root in ALLOWED_MODULES or root in DIRECTIVES
                                or root in _OPTIONAL for root in roots):
            return False
    return True


def parse(source: str, filename: str = "<transform>"):
    """The program's syntax tree (raises ``SyntaxError``); ``_ast`` keeps ``ast.py`` unloaded."""
    return compile(source, filename, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)


def _walk(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, _ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in reversed(value) if isinstance(v, _ast.AST))


def check(tree) -> str | None:
    """The first rule the program breaks, as a one-line message, or ``None`` if it passes."""
    for node in _walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, _ast.Import):
            for alias in node.names:
                if not _allowed(alias.name):
                    return _import_message(alias.name, line)
        elif isinstance(node, _ast.ImportFrom):
            if node.level or not node.module:
                return f"relative imports are not allowed (line {line})"
            if not _allowed(node.module) and not all(
                    alias.name != "*" and _allowed(f"{node.module}.{alias.name}")
                    for alias in node.names):  # ``from urllib import parse``
                return _import_message(node.module, line)
            for alias in node.names:  # ``from numpy import ctypeslib``
                if _refused(f"{node.module}.{alias.name}"):
                    return _import_message(f"{node.module}.{alias.name}", line)
        elif isinstance(node, _ast.Name) and node.id in FORBIDDEN_NAMES:
            return f"use of '{node.id}' is not allowed (line {line}); {_HINT}"
        elif isinstance(node, _ast.Attribute) and (node.attr in FORBIDDEN_ATTRS
                                                   or node.attr in _REFUSED_ATTRS):
            return f"access to attribute '{node.attr}' is not allowed (line {line})"
    return None


def _allowed(name: str) -> bool:
    """``json``, ``json.decoder``, ``urllib.parse``, ``__future__``; not ``urllib`` or
    ``urllib.request``."""
    root = name.split(".")[0]
    return (name in ALLOWED_MODULES or name in DIRECTIVES or root in ALLOWED_MODULES
            or (root in _OPTIONAL and not _refused(name)))


def _refused(name: str) -> bool:
    """A refused part of an allowed optional package (``numpy.ctypeslib``, ``numpy.f2py.x``)."""
    root = name.split(".")[0]
    return root in _OPTIONAL and any(name == r or name.startswith(r + ".")
                                     for r in OPTIONAL_REFUSED[root])


def _import_message(name: str, line) -> str:
    # The whole list would be cut from a one-line message; the write prompt states it in full.
    return (f"import of '{name}' is not allowed (line {line}); use only the standard modules "
            "listed in the task")
