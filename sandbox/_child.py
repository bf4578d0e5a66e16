"""What happens inside the short-lived child forked for one run: confine, run, report.

``main_from_header`` computes the run's limits from its request header (the worker's template
hands the header over and never parses it), then ``main`` reads the run's request (code and
table) from the request pipe itself, so the worker never holds it, and writes the tag ``R`` to
fd 4. ``confine`` then applies, in this order,
each kernel protection the worker's plan enables: close every inherited descriptor above 4 (the
worker has already put a ``/dev/null`` of this run's own on 0-2, the result pipe on 3 and the tag
pipe on 4); drop to an unprivileged uid/gid with no supplementary groups (which also makes the
process non-dumpable); outside a PID namespace, ask for SIGKILL if the worker dies; resource
limits (address space, CPU seconds, no new descriptors, and no new processes where the worker
could not set that for it); the seccomp filter. The worker has already set what is the same for
every run, and the child inherits it: the ``chroot`` into an empty read-only directory,
no-new-privileges and ``STATIC_RLIMITS``. If a step the plan marks as required fails, the child
ends with ``crash`` rather than run the program with less protection than the worker reported.

``execute`` then parses the program, applies the courtesy AST check, writes the tag ``S``, runs
its top level with guarded builtins (in the module ``transform_program``, emptied first), calls
``transform`` on a table decoded from JSON (a fresh object, so mutating it changes nothing
outside the run), checks the result is exactly a list of lists of ``str``
within the size limits, and serialises it. Exception messages are built without calling code
the program wrote (``__str__`` of its own classes is never called), and encoded so that a lone
surrogate cannot make them invalid UTF-8.

Not covered here: wall-clock limits and classification of deaths, which the worker does from
outside (``zygote.py``), and the final strict check, which the parent does on the JSON it decodes.
"""
from __future__ import annotations

import builtins
import json
import math
import os
import random
import resource
import signal
import sys
import time
import types

try:  # loaded as part of the package in tests, as top-level modules inside the worker
    from . import _kernel, _optional, _wire, policy
except ImportError:
    import _kernel
    import _optional
    import _wire
    import policy

FILENAME = "<transform>"


class Refused(Exception):
    """A required protection could not be applied."""


# ----------------------------------------------------------------------------- confinement

# Limits that are the same for every run are set once in the worker and inherited; the worker
# itself needs none of what they forbid. RLIMIT_NPROC joins them when the worker is root (root
# is exempt from it, the unprivileged child is not), else each child sets it.
STATIC_RLIMITS = ((resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0),
                  (resource.RLIMIT_MEMLOCK, 0), (resource.RLIMIT_MSGQUEUE, 0))


def set_rlimits(pairs) -> None:
    for res, value in pairs:
        try:
            resource.setrlimit(res, value if isinstance(value, tuple) else (value, value))
        except ValueError as exc:  # e.g. a hard limit below ours: keep the lower one
            raise OSError(1, str(exc)) from None


def _failed(plan: dict, name: str, exc: OSError, done: dict) -> None:
    if plan["required"].get(name):
        raise Refused(f"{name}: {exc}") from None
    done[name] = False


def confine(plan: dict, report: dict | None = None) -> None:
    """Apply the plan's per-run protections; record each step's success in ``report``.

    The worker has already put this run's own ``/dev/null`` on 0-2, the result pipe on 3 and
    the tag pipe on 4 (``zygote.child_fds``), so nothing here has to move a descriptor. Written
    without helpers or closures: every object a child touches costs it a copy-on-write fault.
    """
    os.closerange(5, 1 << 16)  # the worker's pipes, the request pipe, its /dev and /proc handles
    done: dict = {}
    if plan["uid"] is not None:  # also makes the process non-dumpable (kernel rule on setuid)
        try:
            os.setgroups([])
            os.setresgid(plan["gid"], plan["gid"], plan["gid"])
            os.setresuid(plan["uid"], plan["uid"], plan["uid"])
            done["drop_uid"] = True
        except OSError as exc:
            _failed(plan, "drop_uid", exc, done)
    if plan["death_signal"]:  # not needed inside a PID namespace: its pid 1 is the worker
        try:
            _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
            done["parent_death_signal"] = True
        except OSError as exc:
            _failed(plan, "parent_death_signal", exc, done)
        if os.getppid() != plan["worker_pid"]:
            os._exit(111)  # the worker died before the death signal was armed
    try:
        cpu = plan["cpu_s"]
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # XCPU, then KILL
        resource.setrlimit(resource.RLIMIT_AS, (plan["as_bytes"], plan["as_bytes"]))
        resource.setrlimit(resource.RLIMIT_NOFILE, (5, 5))  # 0-4 are open: no new descriptor
        if plan["child_rlimits"]:
            set_rlimits(plan["child_rlimits"])
        done["rlimits"] = True
    except (OSError, ValueError) as exc:
        _failed(plan, "rlimits", OSError(1, str(exc)), done)
    if plan["seccomp"] is not None:
        try:
            _kernel.install_seccomp(plan["seccomp"])
            done["seccomp"] = True
        except OSError as exc:
            _failed(plan, "seccomp", exc, done)
    if report is not None:
        report.update(done)


def times():
    """``os.times()`` without the ``times`` system call, which seccomp refuses: its return value
    is the clock ticks since the host booted (the host's uptime, which no time namespace
    offsets). CPU times from ``getrusage``, ``elapsed`` from ``CLOCK_BOOTTIME`` (offset in the
    worker's time namespace, so it tells only how long the worker has lived), in ticks of 10 ms
    as the real one."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return os.times_result((me.ru_utime, me.ru_stime, kids.ru_utime, kids.ru_stime,
                            round(time.clock_gettime(time.CLOCK_BOOTTIME), 2)))


# ----------------------------------------------------------------------------- running

def _tname(obj) -> str:
    """The type's name without running the program's metaclass code."""
    return _wire.cut(type.__dict__["__name__"].__get__(type(obj)), 60)


_SAFE_ARGS = (str, int, float, bool, type(None), bytes)
_BUILTIN_EXC = {v for v in vars(builtins).values()
                if isinstance(v, type) and issubclass(v, BaseException)}


def _member(cls, name, exc):
    """``exc.name`` read through ``cls``'s own descriptor (no program code runs), or ``None``
    when it is not of a type whose ``str``/``repr`` is plain (``_SAFE_ARGS``, exact types)."""
    try:
        value = cls.__dict__[name].__get__(exc)
    except Exception:
        return None
    return value if type(value) in _SAFE_ARGS else None


def _plain(value) -> str:
    """``str`` of a value of an exact ``_SAFE_ARGS`` type: no program code can run."""
    kind = type(value)
    if kind is str:
        return value
    if kind is bool:
        return "True" if value else "False"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return float.__repr__(value)
    if kind is bytes:
        return bytes.__repr__(value)
    return "None"


def _exc_text(exc: BaseException) -> str:
    """What ``str(exc)`` would say, built only from values of plain types: never a call of
    the exception's own ``__str__`` (builtin ones format ``OSError.filename``,
    ``SyntaxError.msg``, ``UnicodeError.reason`` ..., which a program can set to any object,
    and then ``str()``/``repr()`` run its code)."""
    args = BaseException.args.__get__(exc)
    if not all(type(a) in _SAFE_ARGS for a in args):
        return ""
    cls = type(exc)
    if cls in _BUILTIN_EXC:
        if issubclass(cls, OSError):
            errno_, strerror = _member(OSError, "errno", exc), _member(OSError, "strerror", exc)
            if errno_ is not None and strerror is not None:
                text = f"[Errno {_plain(errno_)}] {_plain(strerror)}"
                name = _member(OSError, "filename", exc)
                if name is not None:
                    text += f": {name!r}" if type(name) in (str, bytes) else f": {_plain(name)}"
                return text
        elif issubclass(cls, SyntaxError):
            msg = _member(SyntaxError, "msg", exc)
            return "" if msg is None else _plain(msg)
        elif issubclass(cls, KeyError) and len(args) == 1:
            return repr(args[0]) if type(args[0]) in (str, bytes) else _plain(args[0])
        elif issubclass(cls, ImportError):
            msg = _member(ImportError, "msg", exc)
            if msg is not None:
                return _plain(msg)
        elif issubclass(cls, UnicodeError) and len(args) == 5:
            reason = _member(UnicodeError, "reason", exc)
            encoding = _member(UnicodeError, "encoding", exc)
            return "" if reason is None else (
                f"{_plain(encoding)!r} codec: {_plain(reason)}" if encoding is not None
                else _plain(reason))
    if len(args) == 1:
        return _plain(args[0])
    return "(" + ", ".join(repr(a) if type(a) in (str, bytes) else _plain(a)
                           for a in args) + ")" if args else ""


def describe(exc: BaseException) -> str:
    """``"IndexError: list index out of range (line 7)"``, computed defensively: the message
    is made only of values of plain types (``_exc_text``), so no code the program wrote runs."""
    name = _tname(exc)
    try:
        text = _wire.cut(_exc_text(exc)[:1000], 220)  # room left for the line number
    except Exception:
        text = ""
    line = None
    tb = BaseException.__traceback__.__get__(exc)
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f" (line {line})" if line is not None else ""
    return _wire.cut(f"{name}: {text}{where}" if text else f"{name}{where}")


# Also what allowed modules import lazily through the caller's builtins (``_strptime``).
_IMPORTABLE = (policy.ALLOWED_MODULES | policy.DIRECTIVES
               | {name.split(".")[0] for name in policy.PRELOAD})


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    root = name.split(".")[0]
    if level == 0 and (root in _IMPORTABLE or root in _optional.MODULES):
        return builtins.__import__(name, globals, locals, fromlist, level)
    raise ImportError(f"import of '{name}' is not allowed")


SAFE_BUILTINS = {k: v for k, v in vars(builtins).items() if k not in policy.FORBIDDEN_NAMES}
SAFE_BUILTINS["__import__"] = _guarded_import


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def check_output(out, limits: dict) -> tuple[bytes | None, str]:
    """Exactly a list of lists of ``str`` within limits -> (JSON bytes, ""), else (None, why)."""
    if type(out) is not list:
        return None, f"transform returned {_tname(out)}, expected a list of rows (lists of str)"
    if len(out) > limits["max_rows"]:
        return None, f"output has {len(out)} rows, more than the limit {limits['max_rows']}"
    cells = 0
    for i, row in enumerate(out):
        if type(row) is not list:
            return None, f"row {i} is {_tname(row)}, expected a list of str"
        if len(row) > limits["max_cols"]:
            return None, f"row {i} has {len(row)} cells, more than the limit {limits['max_cols']}"
        cells += len(row)
        if cells > limits.get("max_cells", cells):
            return None, f"output has more than {limits['max_cells']} cells, more than the limit"
        for j, cell in enumerate(row):
            if type(cell) is not str:
                return None, f"row {i}, cell {j} is {_tname(cell)}, expected str (use str())"
            if len(cell) > limits["max_cell_chars"]:
                return None, f"row {i}, cell {j} is longer than {limits['max_cell_chars']} chars"
    try:
        data = _ENCODE(out).encode()
    except UnicodeEncodeError:
        return None, "output contains a lone surrogate character"
    if len(data) > limits["max_bytes"]:
        return None, (f"output is {len(data)} bytes of JSON, more than the limit "
                      f"{limits['max_bytes']}")
    return data, ""


def _encoded(out, limits: dict, **options) -> tuple[bytes | None, str]:
    """Compact UTF-8 JSON of an output whose shape has been checked, within ``max_bytes``."""
    try:
        data = json.dumps(out, ensure_ascii=False, separators=(",", ":"), **options).encode()
    except UnicodeEncodeError:
        return None, "output contains a lone surrogate character"
    except ValueError as exc:  # an int past the conversion limit (4300 digits)
        return None, _wire.cut(f"output cannot be written as JSON: {exc}", 160)
    if len(data) > limits["max_bytes"]:
        return None, (f"output is {len(data)} bytes of JSON, more than the limit "
                      f"{limits['max_bytes']}")
    return data, ""


def check_grid(out, limits: dict, entry: str = _wire.ENTRY) -> tuple[bytes | None, str]:
    """A list of at most ``max_rows`` lists of ``int`` (not ``bool``; rows may differ in
    length) within the row, cell and byte limits -> (JSON bytes, ""), else (None, why)."""
    if type(out) is not list:
        return None, f"{entry} returned {_tname(out)}, expected a grid (a list of rows of int)"
    if len(out) > limits["max_rows"]:
        return None, f"output has {len(out)} rows, more than the limit {limits['max_rows']}"
    cells = 0
    for i, row in enumerate(out):
        if type(row) is not list:
            return None, f"row {i} is {_tname(row)}, expected a list of int"
        if len(row) > limits["max_cols"]:
            return None, f"row {i} has {len(row)} cells, more than the limit {limits['max_cols']}"
        cells += len(row)
        if cells > limits["max_cells"]:
            return None, f"output has more than {limits['max_cells']} cells, more than the limit"
        for j, cell in enumerate(row):
            if type(cell) is not int:
                return None, f"row {i}, cell {j} is {_tname(cell)}, expected int"
    return _encoded(out, limits)


_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})


def check_json(out, limits: dict, entry: str = _wire.ENTRY) -> tuple[bytes | None, str]:
    """Any JSON value made of exactly ``dict`` (``str`` keys), ``list``, ``str``, ``int``,
    finite ``float``, ``bool`` and ``None``, with at most ``max_cells`` values (keys count)
    nested at most ``max_depth`` deep, within ``max_bytes`` -> (JSON bytes, ""), else
    (None, why). A walk with its own stack: a cycle or shared lists end at the node limit."""
    nodes, most, depth_cap = 0, limits["max_cells"], limits["max_depth"]
    stack = [(out, 1)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > most:
            return None, f"output has more than {most} values, more than the limit"
        kind = type(value)
        if kind not in _JSON_TYPES:
            return None, (f"output holds {_tname(value)}, expected only dict, list, str, int, "
                          "float, bool or None")
        if kind is float and not math.isfinite(value):
            return None, "output holds NaN or an infinity, which JSON does not allow"
        if kind is list or kind is dict:
            if depth >= depth_cap:
                return None, f"output is nested more than {depth_cap} deep"
            if kind is dict:
                for key in value:  # a dict subclass is refused above: no program code runs
                    if type(key) is not str:
                        return None, f"output has a dict key of type {_tname(key)}, expected str"
                    nodes += 1
                stack.extend((v, depth + 1) for v in dict.values(value))
            else:
                stack.extend((v, depth + 1) for v in value)
    return _encoded(out, limits, allow_nan=False)


_START, _READ = bytes([_wire.TAG_START]), bytes([_wire.TAG_READ])
# The program's module, made once in the worker: ``dataclasses`` and ``typing`` look a class's
# module up in ``sys.modules``. Each run empties it first (its own copy, in its own child).
PROGRAM = types.ModuleType("transform_program")
sys.modules["transform_program"] = PROGRAM


def execute(code: bytes, table_json: bytes, limits: dict, ast_check: bool = True,
            start_fd: int | None = None, kind: str = "table", entry: str = _wire.ENTRY,
            optional: bool = True):
    """Run one program; returns ``(error name or None, payload bytes)``.

    The program's ``entry`` function gets the input decoded from JSON; its result must be of
    ``kind`` (``_wire.KINDS``). With ``start_fd``, ``TAG_START`` is written there just before
    the program's first line runs. ``optional``: whether to apply the opt-in runtime's globals
    and conversions (``_optional``); a run's child passes its worker's plan, so a worker without
    a runtime never touches that module (each object a child touches costs it a page fault).
    """
    try:
        source = code.decode("utf-8")
        if ast_check and not policy.quick_pass(source):
            problem = policy.check(policy.parse(source, FILENAME))
            if problem:
                return "forbidden", _msg(problem)
        compiled = compile(source, FILENAME, "exec")
    except SyntaxError as exc:  # and IndentationError, TabError
        where = f" (line {exc.lineno})" if exc.lineno else ""
        return "syntax", _msg(_wire.cut(f"{type(exc).__name__}: {exc.msg}{where}"))
    except (ValueError, RecursionError, MemoryError) as exc:  # bad bytes, nesting, size
        return "syntax", _msg(_wire.cut(f"{type(exc).__name__}: {exc}"))
    namespace = PROGRAM.__dict__
    namespace.clear()
    namespace["__builtins__"] = SAFE_BUILTINS
    namespace["__name__"] = "transform_program"
    if optional:
        namespace.update(_optional.GLOBALS)
    if start_fd is not None:
        os.write(start_fd, _START)
    try:
        exec(compiled, namespace)
        fn = namespace.get(entry)
        if fn is None:
            return "no_transform", (b"the program defines no function named transform(table)"
                                    if kind == "table" and entry == _wire.ENTRY else
                                    _msg(f"the program defines no function named {entry}(x)"))
        if not callable(fn):
            return "no_transform", _msg(f"{entry} is {_tname(fn)}, not a function")
        value = json.loads(table_json)
        if not optional:
            out = fn(value)
        else:
            out = fn(_optional.as_array(value) if _optional.ARRAY_INPUT else value)
            if _optional.NUMPY is not None:
                out, why = _optional.plain_output(out, limits)
                if why:
                    return "bad_output", _msg(why)
        # looked up by name each run: a hostile test replaces check_output to show the parent
        # checks again
        if kind == "table":
            data, why = check_output(out, limits)
        elif kind == "grid":
            data, why = check_grid(out, limits, entry)
        else:
            data, why = check_json(out, limits, entry)
    except MemoryError:
        return "memory", b"MemoryError: the program ran out of memory"
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are program errors
        return "exception", _msg(describe(exc))
    return (None, data) if data is not None else ("bad_output", _msg(why))


def _msg(text: str) -> bytes:
    """UTF-8 whatever the text holds (a lone surrogate in a message becomes ``\\udc80``)."""
    return text.encode("utf-8", "backslashreplace")


def main_from_header(req_fd: int, header, plan: dict) -> None:
    """The child's life from its request header (which the template handed over): the limits
    that depend on the request are computed here, in the child, never in the template."""
    timeout_ms, memory_mb, code_len, table_len, kind, entry_len = _wire.REQUEST.unpack(header)
    plan["cpu_s"] = max(1, math.ceil(timeout_ms / 1000 + 0.5))  # the backstop behind the kill
    plan["as_bytes"] = plan["base"][0] + memory_mb * (1 << 20)  # on top of the worker's own
    main(req_fd, code_len, table_len, plan, kind, entry_len)


def main(req_fd: int, code_len: int, table_len: int, plan: dict, kind: int = 0,
         entry_len: int = 0) -> None:
    """The child's whole life: read its own request, confine, run, report; never returns.

    Descriptors as ``zygote.child_fds`` left them: the result frame goes to 3, the tags to 4.
    """
    try:
        size = entry_len + code_len + table_len
        body = os.read(req_fd, size)  # the worker never held the request
        if len(body) < size:  # a long request arrives in pieces
            rest = _wire.read_exact(req_fd, size - len(body))
            if rest is None:
                os._exit(112)  # the parent went away mid-request
            body += rest
        os.write(4, _READ)
        confine(plan)
        entry = body[:entry_len].decode("ascii") if entry_len else _wire.ENTRY
        body = body[entry_len:]
        error, payload = execute(body[:code_len], body[code_len:], plan["limits"],
                                 plan["ast_check"], start_fd=4, kind=_wire.KINDS[kind],
                                 entry=entry, optional=plan["optional"])
    except Refused as exc:
        error, payload = "crash", _msg(f"sandbox setup failed: {exc}")
    except MemoryError:
        error, payload = "memory", b"MemoryError: the program ran out of memory"
    except BaseException as exc:  # noqa: BLE001 - must report, never raise
        error, payload = "crash", _msg(f"sandbox child failed: {_tname(exc)}")
    if error is None:
        frame = _wire.RESULT.pack(_wire.OK, 0, len(payload)) + payload
    else:
        payload = _wire.cut_utf8(payload)
        frame = _wire.RESULT.pack(_wire.ERR, _wire.CODE[error], len(payload)) + payload
    try:
        _wire.write_all(3, frame)
    finally:
        os._exit(0)
