"""``Sandbox``: a pool of worker processes that run untrusted ``transform(table)`` programs.

Each run gets a fresh child forked from a pristine template inside its worker (see
``zygote.py`` for the worker, ``_child.py`` for the protections). The parent sends each
request as one length-prefixed frame (and queues one more small one behind each running request,
so a worker never waits for the parent between runs), waits on all workers with ``poll``, and
decodes every output itself (``result.decode_output``: a structural pre-check first, the garbage
collector paused). Every run is judged on its own: nothing another run of the batch did (its
output's size, its timing) can change a run's result, and no output is ever refused for its
batch's sake (memory is bounded per run by ``OutputLimits`` and, for the batch, by streaming
through ``iter_many``).

The parent's own deadline judges stalls by progress: a worker is stalled only once ``GRACE_S``
have passed since its run's deadline *and* since the last byte the parent read from it, so the
parent being away (a caller asleep inside ``iter_many``, another thread holding the GIL) never
turns a finished reply into a ``timeout``. A stalled or dead worker is killed with its whole
process group and replaced; such runs come back as ``timeout`` or ``crash``; the program is never
run a second time (a request queued behind one that failed had not started, and goes to the next
worker).

The ``sandbox-XXXXXXXX`` folder in the temporary directory holds only a lock file, ``flock``-ed
for the ``Sandbox``'s life; a later ``Sandbox`` removes a folder only when it can take that lock
(its owner is gone), which holds across pid namespaces. The workers never learn its name. Each
worker is pinned to a CPU its ``Sandbox`` leased, where one is free (``_leases.py``).

Not covered: sharing one ``Sandbox`` across processes (use one per process; a ``Sandbox`` used
after ``fork`` raises), concurrent ``run_many`` calls on one ``Sandbox`` from several threads
(they are serialised by a lock), and calling a ``Sandbox`` from inside its own ``iter_many``
loop (the lock is held until the generator ends: such a call raises ``RuntimeError`` at once
rather than wait forever).
"""
from __future__ import annotations

import atexit
import gc
import json
import keyword
import os
import select
import shutil
import tempfile
import threading
import time
import weakref
from collections import deque

from . import _leases, _wire
from ._worker import WAKE_S, Worker, WorkerEnded, WorkerError
from .result import OutputLimits, RunResult, clean_message, decode_message, decode_output
from .runtime import Runtime

GRACE_S = 2.0
WALL_FACTOR = 20.0  # the worker's wall-clock hard cap, as a multiple of the CPU limit (_collect.py)
PIPELINE_BYTES = 16 << 10  # a request this small fits in a pipe behind a running one
MAX_CODE_CHARS = 100_000
MIN_MEMORY_MB = 16


def _cleanup(workers: list, tmp: str, owner: int, lock_fd: int, cpus: list) -> None:
    if os.getpid() != owner:  # a forked copy of the owner exiting: the workers are not ours
        return
    for worker in workers:
        worker.end(grace_s=1.0)
    _leases.release_cpus(cpus)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        os.close(lock_fd)
    except OSError:
        pass


class Sandbox:
    """A pool of ``workers`` worker processes; use as a context manager or call ``close()``.

    ``ast_check=False`` switches off the courtesy AST check (the hostile-program tests do, to show the
    kernel-level limits hold on their own). ``runtime`` (``sandbox.Runtime``) adds numpy (and scipy) on request
    (``RuntimeUnavailable`` if not installed). ``pin_cpus``: pin each worker to a CPU no other
    sandbox on the machine holds, where there is one (``_leases.py``; faster, grades unchanged).
    Raises ``WorkerError`` if a worker cannot start.
    """

    def __init__(self, workers: int = 2, *, limits: OutputLimits = OutputLimits(),
                 ast_check: bool = True, start_timeout_s: float = 30.0,
                 runtime: Runtime | None = None, pin_cpus: bool = True):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.limits = limits
        self.runtime = runtime or Runtime()
        self.start_timeout_s = start_timeout_s
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread whose iter_many holds the lock
        self._closing = False  # set first by close(), from any thread
        options = {"limits": limits.as_dict(), "ast_check": ast_check}
        if self.runtime:  # raises RuntimeUnavailable before any folder or process is made
            options["runtime"] = self.runtime.worker_options()
        _leases.remove_stale(tempfile.gettempdir())
        self._tmp, self._lock_fd = _leases.make_folder(tempfile.gettempdir())
        self._cpus = _leases.lease_cpus(workers, tempfile.gettempdir()) if pin_cpus else []
        cpus = [cpu for cpu, _ in self._cpus] + [None] * (workers - len(self._cpus))
        # The workers start in "/": they never learn the name of this folder (or of the
        # temporary directory it is in); see zygote.py. A restarted worker keeps its CPU.
        self._workers = [Worker(options, "/", cpu) for cpu in cpus]
        self.restarts = 0  # workers replaced after dying or stalling
        self._finalizer = weakref.finalize(self, _cleanup, self._workers, self._tmp, self._pid,
                                           self._lock_fd, self._cpus)
        try:
            for worker in self._workers:
                worker.spawn()
            for worker in self._workers:
                worker.wait_ready(start_timeout_s)
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every worker (and anything they started) and remove the temporary directory.

        Safe from any thread: a call in progress (``iter_many`` in another thread) hands over
        the results it has finished, then raises ``RuntimeError("this Sandbox is closed")``;
        no worker is restarted after this.
        """
        self._closing = True
        self._finalizer()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def protections(self) -> dict[str, bool | str]:
        """Which protections the workers applied on this machine (see ``sandbox.protections``)."""
        return dict(self._workers[0].report)

    def cpus(self) -> list[int | None]:
        """The CPU each worker is pinned to (``None``: wherever the scheduler puts it)."""
        return [w.cpu for w in self._workers]

    def worker_pids(self) -> list[int]:
        """The pids of the worker processes the parent started (one per slot)."""
        return [w.proc.pid for w in self._workers if w.proc is not None]

    def census(self) -> dict[str, int]:
        """Processes, threads, open descriptors and resident KiB of everything the workers run.

        Counts every process in the workers' process groups, from /proc; between runs that is
        three per worker (the worker, its PID-namespace copy and the template it forks run
        children from), two without that namespace.
        For leak checks and monitoring; Linux only.
        """
        # Right after a restart the new worker's template may not be forked yet, and a child
        # killed a moment ago may not be reaped yet: wait up to a second for the count a quiet
        # pool has, then report what is there.
        quiet = len(self.worker_pids()) * (3 if self.protections().get("pid_namespace") else 2)
        deadline = time.monotonic() + 1.0
        while True:
            total = self._census_once()
            if total["processes"] <= quiet or time.monotonic() > deadline:
                return total
            time.sleep(0.005)

    def _census_once(self) -> dict[str, int]:
        groups = set(self.worker_pids())
        total = {"processes": 0, "threads": 0, "fds": 0, "rss_kb": 0}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    pgrp = int(fh.read().rsplit(")", 1)[1].split()[2])
                if pgrp not in groups:
                    continue
                with open(f"/proc/{entry}/status") as fh:
                    status = dict(line.split(":", 1) for line in fh if ":" in line)
                total["fds"] += len(os.listdir(f"/proc/{entry}/fd"))
            except (OSError, IndexError, ValueError):
                continue  # the process ended while we looked
            total["processes"] += 1
            total["threads"] += int(status["Threads"])
            total["rss_kb"] += int(status.get("VmRSS", "0 kB").split()[0])
        return total

    # -- running -----------------------------------------------------------------------------

    def run(self, code: str, x, timeout_s: float = 1.5, memory_mb: int = 256, *,
            kind: str = "table", entry: str = _wire.ENTRY) -> RunResult:
        """Run ``code``'s function ``entry`` on ``x``; its result must be of ``kind``."""
        return self.run_many([(code, x, kind, entry)], timeout_s, memory_mb)[0]

    def run_many(self, items, timeout_s: float = 1.5, memory_mb: int = 256) -> list[RunResult]:
        """Run each item; results in input order.

        An item is ``(code, x)`` (kind ``"table"``, entry ``transform``), ``(code, x, kind)``
        or ``(code, x, kind, entry)``. ``kind`` is what the output must be: ``"table"`` (a
        list of lists of str; then ``x`` must be one too), ``"grid"`` (a list of lists of int,
        rows of any length) or ``"json"`` (any JSON value within ``OutputLimits``); ``x`` is
        handed to the program decoded from JSON (a fresh value). Raises ``ValueError`` for a
        bad timeout, memory limit, kind or entry name, ``TypeError`` for an ``x`` that does not
        fit, and ``RuntimeError`` if the sandbox is closed or was created in another process.
        Holds every output until it returns; ``iter_many`` hands each one over as it arrives
        instead.
        """
        items = list(items)
        results: list[RunResult | None] = [None] * len(items)
        for i, result in self.iter_many(items, timeout_s, memory_mb):
            results[i] = result
        return results

    def iter_many(self, items, timeout_s: float = 1.5, memory_mb: int = 256):
        """Like ``run_many``, but yields ``(index, RunResult)`` as each run ends (any order).

        For a grader that looks at each output once: nothing is held here after it is
        yielded, so the parent's memory is one output per worker, not the batch's. The time
        the caller spends between results never counts against a worker (stalls are judged
        by progress). Closing the generator early kills the workers still running (their
        replies would be out of step).
        """
        if not 0 < timeout_s <= 3600:
            raise ValueError("timeout_s must be in (0, 3600]")
        if memory_mb < MIN_MEMORY_MB:
            raise ValueError(f"memory_mb must be at least {MIN_MEMORY_MB}")
        items = list(items)
        if self._owner == threading.get_ident():  # the lock is ours: waiting would be forever
            raise RuntimeError("this Sandbox is busy with the iter_many loop this call is in: "
                               "finish the loop first, or run it in another Sandbox")
        with self._lock:
            if self.closed or self._closing:
                raise RuntimeError("this Sandbox is closed")
            if os.getpid() != self._pid:
                raise RuntimeError("a Sandbox cannot be used after fork; create a new one")
            self._owner = threading.get_ident()
            try:
                yield from self._iter_many(items, timeout_s, int(memory_mb))
            finally:
                self._owner = None

    def _iter_many(self, items, timeout_s, memory_mb):
        requests: list[bytes | None] = [None] * len(items)
        kinds: list[str] = [_wire.KINDS[0]] * len(items)  # what each output is checked against
        refused = []
        inputs: dict[tuple, bytes] = {}
        for i, item in enumerate(items):
            code, x, kinds[i], entry = _unpack(item)
            requests[i], result = _encode(code, x, kinds[i], entry, timeout_s, memory_mb, inputs)
            if result is not None:
                refused.append((i, result))
        del inputs
        self._kinds = kinds
        yield from refused
        queue = deque(i for i, req in enumerate(requests) if req is not None)
        for worker in self._workers:
            if worker.proc is None:  # left mid-run by an interrupted call: its reply is lost
                self._restart(worker)
        idle = list(self._workers)
        # worker -> its requests in flight, oldest first: [index, start]; the start of the one
        # queued behind is None until the reply before it arrives (the worker then starts it)
        busy: dict[Worker, deque] = {}
        # worker -> when the parent last saw progress from it (a byte read, or the start of
        # its current run): a worker is stalled only when no byte has come for GRACE_S after
        # its run's deadline, counted from when the parent last looked (see _step)
        seen: dict[Worker, float] = {}
        try:
            while queue or busy:
                if self._closing:
                    raise RuntimeError("this Sandbox is closed")
                # The garbage collector stays off while the parent reads and decodes: a
                # collection walks every object the caller holds, and the time it takes made
                # a waiting reply look like a stalled worker. Back on while the caller runs.
                enabled = gc.isenabled()
                gc.disable()
                try:
                    done = self._step(queue, idle, busy, requests, timeout_s, seen)
                except Exception:
                    if self._closing:  # closed from another thread under our feet
                        raise RuntimeError("this Sandbox is closed") from None
                    raise
                finally:
                    if enabled:
                        gc.enable()
                yield from done
        finally:
            for worker in busy:  # only on an exception or an abandoned generator: a late
                worker.kill()    # reply would be taken for the answer to the next request

    def _step(self, queue, idle, busy, requests, timeout_s, seen) -> list:
        """Dispatch, wait for replies until the first deadline, handle what came."""
        done = []
        while queue and idle:
            worker, i = idle.pop(), queue.popleft()
            self._send(worker, requests[i])
            busy[worker] = deque([[i, time.monotonic()]])
            seen[worker] = busy[worker][0][1]
        # One more small request queued behind each running one: the worker starts it the
        # moment it has replied, without waiting for the parent to read the reply.
        for worker, flight in busy.items():
            # (both small: the running one's body may not all be read yet, and the write must
            # fit in the pipe at once, or the parent would wait on it)
            if queue and len(flight) == 1 and len(requests[queue[0]]) <= PIPELINE_BYTES \
                    and len(requests[flight[0][0]]) <= PIPELINE_BYTES:
                try:
                    worker.send(requests[queue[0]])
                except OSError:  # it died: its pipe says so in a moment
                    continue
                flight.append([queue.popleft(), None])
        # Stalls are judged by progress: a worker is stalled only once GRACE_S have passed since
        # its run's deadline *and* since the last byte the parent saw from it. The parent's own
        # absence (a caller sleeping inside ``iter_many``, a thread holding the GIL, a long
        # decode) never counts against a worker: whatever it finds waiting when it comes back
        # is progress, and a big reply that had filled the pipe gets GRACE_S more for the rest.
        def expiry(worker):
            return max(busy[worker][0][1] + WALL_FACTOR * timeout_s, seen[worker]) + GRACE_S

        by_fd = {w.rfd: w for w in busy}
        wait_s = max(0.0, min(expiry(w) for w in busy) - time.monotonic())
        poller = select.poll()  # not select(): the caller may hold fds above 1024
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(min(wait_s, WAKE_S) * 1000):
            self._take(by_fd[fd], busy, idle, queue, requests, done, seen)
        now = time.monotonic()
        for worker, flight in list(busy.items()):
            if now <= expiry(worker):
                continue
            # One more look right now (the parent may have been away since the poll): a byte
            # waiting is progress, and the worker gets GRACE_S more from now.
            poller = select.poll()
            poller.register(worker.rfd, select.POLLIN)
            if poller.poll(0):
                self._take(worker, busy, idle, queue, requests, done, seen)
                continue
            self._retire(worker, busy, idle, queue, requests, done, _failure(
                "timeout", f"transform did not finish within {timeout_s:g} s (the worker was "
                "restarted)", flight[0][1]))
        return done

    def _take(self, worker: Worker, busy, idle, queue, requests, done, seen) -> None:
        """Read what ``worker`` has sent and handle every whole reply in it."""
        flight = busy[worker]
        while flight:
            i, start = flight[0]
            try:
                got = len(worker.buf)
                reply = worker.feed()
                if reply is not None or len(worker.buf) != got:
                    seen[worker] = time.monotonic()  # progress: bytes came
            except EOFError:
                self._retire(worker, busy, idle, queue, requests, done, _failure(
                    "crash", "the sandbox worker died during the run and was restarted", start))
                return
            if reply is None:
                return
            flight.popleft()
            requests[i] = None
            done.append((i, self._result(reply, start, self._kinds[i])))
            if reply[0] == _wire.STOP:  # it reads nothing more: what is queued never started
                self._retire(worker, busy, idle, queue, requests, done, None)
                return
            if flight:
                flight[0][1] = time.monotonic()  # the worker started it on replying
        del busy[worker]
        idle.append(worker)

    def _retire(self, worker: Worker, busy, idle, queue, requests, done, failure) -> None:
        """Replace ``worker``: its running request ends with ``failure``; the one queued behind
        it goes back to the front of the queue (the worker had not read it)."""
        flight = busy.pop(worker)
        if failure is not None and flight:
            i, _ = flight.popleft()
            requests[i] = None
            done.append((i, failure))
        for i, _ in reversed(flight):
            queue.appendleft(i)
        self._restart(worker)
        idle.append(worker)

    def _send(self, worker: Worker, request: bytes) -> None:
        try:
            worker.send(request)
        except OSError:  # the worker died while idle: the program never started, so resend
            self._restart(worker)
            worker.send(request)

    def _restart(self, worker: Worker) -> None:
        worker.kill()
        self.restarts += 1
        for attempt in range(3):
            # never start a worker on a closed pool: close() may come at any moment of this,
            # from another thread, and then ends whatever spawn() has started (Worker.end)
            if self._closing:
                raise RuntimeError("this Sandbox is closed")
            try:
                worker.spawn()
                worker.wait_ready(self.start_timeout_s)
                return
            except WorkerEnded:
                raise RuntimeError("this Sandbox is closed") from None
            except WorkerError:
                if self._closing:
                    raise RuntimeError("this Sandbox is closed") from None
                if attempt == 2:
                    raise

    def _result(self, reply, start: float, kind_name: str) -> RunResult:
        kind, code, _wall_us, cpu_us, payload = reply
        wall_ms = (time.monotonic() - start) * 1000
        if kind == _wire.OK:  # each output on its own: nothing else in the batch counts
            value, why = decode_output(payload, self.limits, kind_name)
            del payload
            if value is not None or not why:
                return RunResult(True, value, None, "", wall_ms, cpu_us / 1000)
            return RunResult(False, None, "bad_output", clean_message(why), wall_ms,
                             cpu_us / 1000)
        error = _wire.ERRORS[code] if code < len(_wire.ERRORS) else "crash"
        message = decode_message(payload)
        if message is None:  # only a program writing its own frame gets here
            return RunResult(False, None, "bad_output", "the program's error message is not "
                             "valid UTF-8", wall_ms, cpu_us / 1000)
        # whitespace to single spaces, then every other control escaped, then the length cut
        message = _wire.cut(clean_message(" ".join(message.split())))
        return RunResult(False, None, error, message, wall_ms, cpu_us / 1000)


def _failure(error: str, message: str, start: float | None = None) -> RunResult:
    wall_ms = 0.0 if start is None else (time.monotonic() - start) * 1000
    return RunResult(False, None, error, message, wall_ms)


def _unpack(item) -> tuple:
    """``(code, x, kind, entry)`` of a run_many item (2, 3 or 4 long)."""
    if not isinstance(item, (tuple, list)) or not 2 <= len(item) <= 4:
        raise TypeError("an item is (code, x), (code, x, kind) or (code, x, kind, entry)")
    code, x, kind, entry = (*item, *(_wire.KINDS[0], _wire.ENTRY)[len(item) - 2:])
    if kind not in _wire.KINDS:
        raise ValueError(f"kind must be one of {', '.join(_wire.KINDS)}, not {kind!r}")
    if not isinstance(entry, str) or not (entry.isascii() and entry.isidentifier()) \
            or keyword.iskeyword(entry) or entry.startswith("__") or len(entry) > 100:
        raise ValueError(f"entry must be a plain function name, not {entry!r}")
    return code, x, kind, entry


def _encode(code, x, kind, entry, timeout_s, memory_mb, inputs: dict):
    """One request frame, or ``(None, RunResult)`` for a program refused before it runs."""
    if not isinstance(code, str):
        raise TypeError(f"code must be str, not {type(code).__name__}")
    if len(code) > MAX_CODE_CHARS:
        return None, _failure("forbidden", f"the program is longer than {MAX_CODE_CHARS} "
                              "characters")
    try:
        code_bytes = code.encode("utf-8")
    except UnicodeEncodeError:
        return None, _failure("syntax", "the program contains a lone surrogate character")
    key = (id(x), kind == "table")  # a table input is checked as one; other inputs only encoded
    x_bytes = inputs.get(key)
    if x_bytes is None:
        if kind == "table":
            _check_table(x)
        x_bytes = inputs[key] = _input_json(x)
    entry_bytes = b"" if entry == _wire.ENTRY else entry.encode("ascii")
    header = _wire.REQUEST.pack(max(1, round(timeout_s * 1000)), memory_mb, len(code_bytes),
                                len(x_bytes), _wire.KINDS.index(kind), len(entry_bytes))
    return header + entry_bytes + code_bytes + x_bytes, None


def _input_json(x) -> bytes:
    try:
        text = json.dumps(x, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(f"x must be a JSON value (no NaN or infinity): {exc}") from None
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate: written as an escape, decoded as one
        return json.dumps(x, separators=(",", ":")).encode()


def _check_table(table) -> None:
    if not isinstance(table, list) or not all(
            isinstance(row, list) and all(isinstance(c, str) for c in row) for row in table):
        raise TypeError("table must be a list of lists of str")


# ----------------------------------------------------------------------------- module level

_DEFAULT: Sandbox | None = None
_DEFAULT_LOCK = threading.Lock()


def default_sandbox() -> Sandbox:
    """A lazily started one-worker ``Sandbox`` for this process, closed at exit."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT.closed or _DEFAULT._pid != os.getpid():
            _DEFAULT = Sandbox(workers=1)
        return _DEFAULT


@atexit.register
def _close_default() -> None:
    if _DEFAULT is not None and _DEFAULT._pid == os.getpid():
        _DEFAULT.close()


def run_transform(code: str, x, timeout_s: float = 1.5, memory_mb: int = 256, *,
                  kind: str = "table", entry: str = _wire.ENTRY) -> RunResult:
    """Run one program on one input in the process-wide default ``Sandbox`` (see ``run_many``)."""
    return default_sandbox().run(code, x, timeout_s, memory_mb, kind=kind, entry=entry)


def protections() -> dict[str, bool | str]:
    """Which protections are active on this machine, as the default sandbox's workers found.

    Keys with ``True``/``False``: ``fresh_process_per_run``, ``cleared_env``, ``closed_fds``,
    ``rlimits``, ``no_new_privs``, ``seccomp``, ``drop_uid``, ``chroot``, ``non_dumpable``,
    ``parent_death_signal``, ``pid_namespace``, ``net_namespace``, ``ipc_namespace``,
    ``mount_namespace``, ``uts_namespace``, ``time_namespace``, ``own_dev_null``,
    ``blocked_detection`` (a run waiting without running is stopped after its limit; see
    ``zygote.WALL_FACTOR``); strings: ``arch``
    and ``notes`` (why something is missing, empty when nothing is).
    """
    return default_sandbox().protections()
