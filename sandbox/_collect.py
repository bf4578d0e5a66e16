"""The collector's side of one run: read the child's result frame while watching its CPU clock and
``schedstat``, end it, read its wait status from the template, decide the class and reply.

Loaded both as ``sandbox._collect`` and as a top-level module inside the worker process (after
``_wire``, before ``zygote``), so it imports only the standard library. ``zygote.serve`` calls
``run_one`` once per request; nothing here forks.
"""
from __future__ import annotations

import math
import os
import select
import signal
import struct
import time

try:
    from . import _wire
except ImportError:
    import _wire

MIB = 1 << 20


class Usage:
    """The parts of a ``struct rusage`` (as the template's ``wait4`` wrote it) that are used."""

    def __init__(self, raw: bytes):
        us, uu, ss, su, maxrss = _RUSAGE.unpack_from(raw)
        self.ru_utime, self.ru_stime, self.ru_maxrss = us + uu / 1e6, ss + su / 1e6, maxrss


_RUSAGE = struct.Struct("<qqqqq")  # ru_utime, ru_stime (timevals), ru_maxrss (x86_64, arm64)
_PID = struct.Struct("<i")
STATUS_BYTES = 4 + 4 + 144  # the pid, then the wait status and the struct rusage


def _drain(fd: int) -> bytes:
    """Everything waiting in a non-blocking pipe (a dead child's leftovers)."""
    parts = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        parts.append(chunk)
    return b"".join(parts)


# A run's time limit is on the child's own CPU time (user + system, read from its CPU clock by
# the collector): what a neighbour does to the wall clock never changes a result. A run that
# waits without running (neither on a CPU nor waiting for one, from its ``schedstat``) for as
# long as its limit is blocked (a sleep, a lock, input that never comes) and is stopped then,
# whatever the load. The wall clock is only a hard cap, at WALL_FACTOR times the limit: a run
# starved of CPU by other processes is not stopped while it waits for a CPU, up to that cap.
# (Without a procfs of the worker's own, ``blocked_detection`` false, the cap is BACKSTOP_FACTOR
# and also stops sleepers, as before.)
WALL_FACTOR = 20.0
BACKSTOP_FACTOR = 5.0


def _cpu_clock(pid: int) -> int:
    """The clock id of process ``pid``'s CPU clock (``clock_getcpuclockid``: CPUCLOCK_SCHED)."""
    return ((~pid) << 3) | 2


def _schedstat(fd: int) -> float:
    """Seconds the run has been on a CPU or waiting for one (``schedstat``: run time, run delay)."""
    ran, waited = os.pread(fd, 128, 0).split()[:2]
    return (int(ran) + int(waited)) / 1e9


def collect(io: dict, pid: int, deadline: float, max_payload: int, cpu_limit: float = math.inf,
            proc_fd: int | None = None, start: float = 0.0):
    """Read the child's result frame from the result pipe until it is whole, the child has
    died (the template says so on the status pipe) or the deadline; then end the child and
    read its wait status and resource usage from the template.

    Reads straight into buffers sized from the header. Returns ``(kind, code, payload
    bytearray or None, outcome, status, rusage)``.
    """
    r, st_r = io["res_r"], io["st_r"]
    head = bytearray(_wire.RESULT.size)
    view, got, payload = memoryview(head), 0, None
    kind = code = None
    poller = select.poll()
    poller.register(r, select.POLLIN)
    poller.register(st_r, select.POLLIN)
    outcome = None
    clock = _cpu_clock(pid)
    stat_fd = None
    while outcome is None:
        now = time.monotonic()
        left = deadline - now
        if left <= 0:
            outcome = "wall_timeout"
            break
        if proc_fd is not None and now - start >= cpu_limit:  # long enough to have waited that long
            if stat_fd is None:
                try:
                    stat_fd = os.open(f"{pid}/schedstat", os.O_RDONLY, dir_fd=proc_fd)
                except OSError:  # already gone: its status says so on the pipe
                    proc_fd = None
            if stat_fd is not None:
                try:
                    waited = now - start - _schedstat(stat_fd)
                except (OSError, ValueError):
                    waited = 0.0
                if waited >= cpu_limit:
                    outcome = "blocked"
                    break
                left = min(left, cpu_limit - waited + 0.002)
        elif proc_fd is not None:
            left = min(left, start + cpu_limit - now + 0.002)
        if cpu_limit != math.inf:
            try:
                used = time.clock_gettime(clock)
            except OSError:  # already gone: its status says so on the pipe
                used = 0.0
            if used >= cpu_limit:
                outcome = "timeout"
                break
            # it cannot use its remaining CPU in less wall time than that
            left = min(left, cpu_limit - used + 0.002)
        events = poller.poll(left * 1000 + 1)
        if not events:
            continue
        if not any(fd == r for fd, _ in events):
            outcome = "exited"  # dead, and all it wrote has been read
            break
        try:
            n = os.readv(r, [view[got:]])
        except BlockingIOError:
            continue
        got += n
        if got < len(view):
            continue
        if payload is not None:
            outcome = "done"
            break
        kind, code, size = _wire.RESULT.unpack_from(head)
        if kind not in (_wire.OK, _wire.ERR) or (kind == _wire.ERR and code >= len(_wire.ERRORS)):
            outcome = "malformed"
            break
        if size > max_payload:
            outcome = "too_big"
            break
        payload = bytearray(size)
        view, got = memoryview(payload), 0
        if not size:
            outcome = "done"
    del view
    if stat_fd is not None:
        os.close(stat_fd)
    if outcome != "done" and payload is not None:
        _wire.wipe(payload)
        payload = None
    # Done or not, the child ends now; unless the template has already reaped it (its status
    # is waiting): then the pid may be free again, and is not signalled.
    done_poll = select.poll()
    done_poll.register(st_r, select.POLLIN)
    if outcome != "exited" and not done_poll.poll(0):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    raw = _wire.read_exact(st_r, STATUS_BYTES - 4)
    if raw is None:
        raise EOFError("the template is gone")
    status = _PID.unpack_from(raw)[0]
    return kind, code, payload, outcome, status, Usage(raw[4:])


def run_one(req_fd: int, header: bytes, timeout_s: float, memory_mb: int, resp_fd: int,
            plan: dict, io: dict) -> bool:
    """Have the template fork a child for one request (it reads the request itself), collect,
    classify, reply.

    Returns ``False`` when the request pipe may hold unread bytes of this request (the child
    died before reading it all): the worker must then stop, and the parent starts a new one.
    """
    base_vm, base_rss = plan["base"]
    cpu_s = max(1, math.ceil(timeout_s + 0.5))  # what the child sets (the same formula)
    start = time.monotonic()
    os.write(io["cmd_w"], header)  # the template forks the child and names it
    raw = _wire.read_exact(io["st_r"], 4)
    if raw is None:
        raise EOFError("the template is gone")
    pid = _PID.unpack(raw)[0]
    proc_fd = plan.get("proc_fd")
    cap = WALL_FACTOR if proc_fd is not None else BACKSTOP_FACTOR
    kind, code, payload, outcome, status, usage = collect(
        io, pid, start + cap * timeout_s, plan["limits"]["max_bytes"] + 64, timeout_s, proc_fd, start)
    tags = _drain(io["tag_r"])[:2]  # the child is reaped: all there is
    _wire.wipe(bytearray(_drain(io["res_r"])))  # anything it wrote beyond its frame
    stage = (0 if tags[:1] != _TAG_READ else 2 if tags == _TAG_READ + _TAG_START else 1)
    wall_us = int((time.monotonic() - start) * 1e6)
    cpu_us = int((usage.ru_utime + usage.ru_stime) * 1e6)
    try:
        if stage == 0:  # it may have read part of the request: the pipe is out of step
            error, message = "crash", "the sandbox child could not read its request"
        elif outcome == "done":
            if kind == _wire.OK and stage == 2:
                _reply(resp_fd, _wire.OK, 0, wall_us, cpu_us, payload)
                return True
            allowed = _wire.PROGRAM if stage == 2 else _wire.PRE_START
            if kind == _wire.ERR and _wire.ERRORS[code] in allowed:
                _reply(resp_fd, _wire.ERR, code, wall_us, cpu_us,
                       _wire.cut_utf8(memoryview(payload)))
                return True
            error, message = _forged(stage)
        elif outcome == "malformed" or (outcome == "too_big" and stage < 2):
            error, message = _forged(stage)
        else:
            error, message = classify(outcome, status, usage, timeout_s, memory_mb,
                                      dict(plan, cpu_s=cpu_s), base_rss)
        # STOP: an error reply after which this worker reads nothing more (the parent restarts
        # it and sends again whatever it had queued behind this request: none of it started)
        _reply(resp_fd, _wire.ERR if stage else _wire.STOP, _wire.CODE[error], wall_us, cpu_us,
               message.encode())
        return stage != 0
    finally:
        if payload is not None:
            _wire.wipe(payload)


_TAG_READ, _TAG_START = bytes([_wire.TAG_READ]), bytes([_wire.TAG_START])


def _forged(stage: int) -> tuple[str, str]:
    if stage == 2:  # only the program can have written this
        return "bad_output", "the program wrote its own bytes to the sandbox's result pipe"
    return "crash", "the sandbox child wrote a malformed result"


def _reply(fd: int, kind: int, code: int, wall_us: int, cpu_us: int, payload) -> None:
    header = _wire.REPLY.pack(kind, code, wall_us, cpu_us, len(payload))
    n = os.writev(fd, [header, payload])  # one system call for the usual small reply
    if n < len(header):
        _wire.write_all(fd, header[n:])
        n = len(header)
    _wire.write_all(fd, memoryview(payload)[n - len(header):])


def classify(outcome, status, usage, timeout_s, memory_mb, plan, base_rss) -> tuple[str, str]:
    """Name a death that left no result frame."""
    if outcome == "too_big":
        return "bad_output", f"output is more than {plan['limits']['max_bytes']} bytes of JSON"
    if outcome == "timeout":
        return "timeout", (f"transform used more than {timeout_s:g} s of CPU time "
                           "(look for an infinite loop or very slow code)")
    if outcome == "blocked":
        return "blocked", (f"transform was blocked: it waited {timeout_s:g} s without running "
                           "(look for sleeping, or waiting for input that never comes)")
    if outcome == "wall_timeout":
        factor = WALL_FACTOR if plan.get("proc_fd") is not None else BACKSTOP_FACTOR
        return "timeout", (f"transform did not finish within {factor * timeout_s:g} s of "
                           "wall time (look for sleeping or waiting)")
    memory_hit = usage.ru_maxrss * 1024 >= base_rss + 0.9 * memory_mb * MIB
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and
                                     usage.ru_utime + usage.ru_stime >= plan["cpu_s"]):
            return "timeout", f"transform used more than {plan['cpu_s']} s of CPU time"
        if memory_hit:
            return "memory", f"the program used more than {memory_mb} MB of memory"
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        return "crash", f"the program crashed (killed by {name})"
    code = os.waitstatus_to_exitcode(status)
    return "crash", f"the program exited with status {code} without returning a table"
