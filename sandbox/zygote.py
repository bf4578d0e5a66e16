"""The pre-warmed worker process: one per sandbox slot, forking one child per run.

Started by the parent as ``python -s -S -B -c BOOT`` (``_worker.BOOT`` first starts itself again
with address-space randomisation off, then compiles this module and its siblings under
``<sandbox>/`` names) with an environment of its own (``LD_BIND_NOW`` and a fixed
``PYTHONHASHSEED``, both removed once read), in a new session, in ``/``: it never learns the name
of any folder of the parent's. It then:

1. pre-imports the allowed modules (``policy.PRELOAD``), so a run never needs the file system,
   and removes every host path from ``sys`` and the modules (``hide_host_paths``);
2. enters new mount, network, IPC, UTS and PID namespaces where the kernel permits (PID: the
   process forks once, and the copy, pid 1 of the new namespace, serves; when it dies the
   kernel kills every process left in the namespace) and a time namespace for what it forks
   (its monotonic and boot clocks start near 1 s), mounts an empty read-only tmpfs over a
   standard folder (``/tmp``) of its private mount namespace, holding only ``dev/null`` (a null
   device of its own), and ``chroot``s into it, sets no-new-privileges and the resource limits
   that are the same for every run (all inherited by each child);
3. forks a probe child that applies every per-run protection and runs a self-test program,
   and keeps exactly the protections that worked (``protections()`` reports them; each later
   child must apply all of them or refuse to run), then runs the self-test once itself so
   lazy initialisation happens here and not in every child, and overwrites every copy of a
   host path in its memory (``scrub``, which also resets the cached hashes of the strings it
   rewrote); nothing is read from the host's procfs after that but page counts (``statm``);
4. forks the pristine *template* and becomes the *collector*. For each request the collector
   reads the 16-byte header (sizes and limits only) and hands it to the template, which lays
   out the child's descriptors (a ``/dev/null`` of its own on 0-2, the shared result pipe on 3
   and tag pipe on 4), resets its PID namespace's pid counter (``ns_last_pid``), forks the run's
   child (``_child.main_from_header``, which reads the code and table itself), reaps it and
   passes its wait status and resource usage back. The collector reads the result frame until
   the wall-clock deadline, SIGKILLs the child, drains both pipes, reads the tags, decides the
   class and replies. The template never holds a request, an output or a message (only the
   header, in a buffer it overwrites), so every run's child is a copy of the same state,
   whatever ran before: same pids, same heap statistics, same addresses, same pipe inodes.

Not covered: a worker that is itself stuck (the parent's grace deadline catches that) and
systems without ``fork`` and ``/proc`` (Linux only).
"""
from __future__ import annotations

import fcntl
import gc
import json
import math
import os
import resource
import select
import signal
import stat
import struct
import sys
import time

try:
    from . import _child, _kernel, _seccomp, _wire, policy
except ImportError:
    import _child
    import _kernel
    import _seccomp
    import _wire
    import policy

MIB = 1 << 20
NOBODY = 65534
NAMESPACES = {"mount_namespace": _kernel.CLONE_NEWNS, "net_namespace": _kernel.CLONE_NEWNET,
              "ipc_namespace": _kernel.CLONE_NEWIPC, "uts_namespace": _kernel.CLONE_NEWUTS,
              "pid_namespace": _kernel.CLONE_NEWPID}
# Where the empty root is mounted, in the worker's own mount namespace: a standard folder,
# so no name of the parent's (its temporary folder, its pid) ever reaches the worker.
MOUNT_POINTS = ("/tmp", "/mnt", "/var/tmp", "/media", "/srv")
SELF_TEST = """
import re, json, datetime, statistics, collections, math, itertools
def transform(table):
    d = datetime.datetime.strptime("2024-03-05", "%Y-%m-%d")
    n = statistics.mean(len(c) for r in table for c in r)
    try:
        {}["x"]
    except KeyError:
        pass
    c = collections.Counter(re.findall(r"\\w", json.dumps(table)))
    return [[d.strftime("%d/%m"), str(round(n, 1)), str(sum(c.values()))]] + table
"""


SELF_TEST_LIMITS = {"max_rows": 100, "max_cols": 100, "max_cell_chars": 100, "max_bytes": 10000}


def preload() -> None:
    for name in policy.PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass


def enter_namespaces(report: dict, req_fd: int, resp_fd: int) -> None:
    """Unshare what the kernel permits; with a PID namespace, only the forked copy returns."""
    try:
        _kernel.unshare(sum(NAMESPACES.values()))
        report.update({name: True for name in NAMESPACES})
    except OSError:
        for name, flag in NAMESPACES.items():
            try:
                _kernel.unshare(flag)
                report[name] = True
            except OSError as exc:
                report[name] = False
                report["notes"].append(f"{name}: {exc.strerror}")
    if report["uts_namespace"]:  # the copy of the host's names it starts with: neutral ones
        lib = _kernel.libc()
        if lib.sethostname(b"sandbox", 7) or lib.setdomainname(b"(none)", 6):
            report["notes"].append("uts names: could not be set")
    report["root_mounted"] = report["own_dev_null"] = False
    if report["mount_namespace"]:
        try:  # nothing mounted here may leak back, then an empty read-only root for children
            _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
            here = next(p for p in MOUNT_POINTS if os.path.isdir(p))
            flags = _kernel.MS_NOSUID | _kernel.MS_NOEXEC
            _kernel.mount("tmpfs", here, "tmpfs", flags | _kernel.MS_NODEV, "size=4k,mode=0555")
            # Walk into the mount by name, so the ``chroot(".")`` that follows makes the empty
            # tmpfs the root. (A standard folder, and only in this private mount namespace: the
            # worker never learns the name of any folder of the parent's.)
            os.chdir(here)
            flags |= own_dev_null(report)
            _kernel.mount(None, ".", None, _kernel.MS_REMOUNT | _kernel.MS_RDONLY | flags)
            report["root_mounted"] = True
        except (OSError, StopIteration) as exc:
            report["own_dev_null"] = False
            report["notes"].append(f"read-only root: {getattr(exc, 'strerror', 'no folder')}")
    enter_time_namespace(report)
    if report["pid_namespace"]:
        pid = os.fork()
        if pid:  # the outer process only waits, so the parent can still kill its group
            os.close(req_fd)
            os.close(resp_fd)
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGKILL)


def own_dev_null(report: dict) -> int:
    """Make ``dev/null`` in the new root (the working directory, still writable): a null device
    of this worker's own, so a run's ``fstat`` of fds 0-2 shows the root tmpfs's device and a
    small inode, not the host ``/dev/null``'s (its inode and its time, which is the host's boot).
    The root must then allow device files: ``MS_NODEV`` is dropped for it (returned as the flag
    to remount with: 0), and kept (``MS_NODEV``) when ``mknod`` is refused; the children then
    open the host's ``/dev/null`` as before."""
    try:
        os.mkdir("dev", 0o555)
        os.mknod("dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod("dev/null", 0o666)  # (the umask)
    except OSError as exc:
        report["notes"].append(f"own /dev/null: {exc.strerror}")
        return _kernel.MS_NODEV
    report["own_dev_null"] = True
    return 0


def enter_time_namespace(report: dict) -> None:
    """A time namespace for every process forked from here on, its ``CLOCK_MONOTONIC`` and
    ``CLOCK_BOOTTIME`` starting near 1 s: a run no longer reads the host's uptime. The offsets
    must be written before any process enters it (the next fork). Skipped, with a note, where
    the kernel has none (``EINVAL``) or refuses (``EPERM``)."""
    report["time_namespace"] = False
    try:
        _kernel.unshare(_kernel.CLONE_NEWTIME)
    except OSError as exc:
        report["notes"].append(f"time namespace: {exc.strerror}")
        return
    lines = []
    for name, clock in (("monotonic", time.CLOCK_MONOTONIC), ("boottime", time.CLOCK_BOOTTIME)):
        lines.append(f"{name} {1 - int(time.clock_gettime(clock))} 0")
    try:
        fd = os.open("/proc/self/timens_offsets", os.O_WRONLY)
        try:
            os.write(fd, "\n".join(lines).encode())
        finally:
            os.close(fd)
    except OSError as exc:  # the namespace is entered, with no offset: the host's clocks
        report["notes"].append(f"time namespace offsets: {exc.strerror}")
        return
    report["time_namespace"] = True


PAGE = os.sysconf("SC_PAGE_SIZE")


def _vm_status(statm_fd: int) -> tuple[int, int]:
    """(VmSize, VmRSS) in bytes, from this process's /proc ``statm`` opened before chroot: page
    counts only (``status`` also names the host pids, which would then lie in freed memory)."""
    size, resident = os.pread(statm_fd, 256, 0).split()[:2]
    return int(size) * PAGE, int(resident) * PAGE


def probe(plan: dict) -> tuple[dict, str]:
    """Fork a child that applies every protection and runs the self-test program."""
    r, tr = child_fds(plan)
    pid = os.fork()
    if pid == 0:
        try:
            report: dict = {}
            _child.confine(dict(plan, required={}), report)
            error, payload = _child.execute(SELF_TEST.encode(), b'[["a","b"]]', SELF_TEST_LIMITS)
            report["self_test"] = error or ""
            report["self_test_message"] = "" if error is None else payload.decode()
            _wire.write_all(3, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.closerange(3, 5)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.close(tr)
    os.waitpid(pid, 0)
    try:
        report = json.loads(b"".join(chunks))
    except ValueError:
        return {}, "probe child died"
    message = report.pop("self_test_message", "")
    return report, message if report.pop("self_test", "?") else ""


def confine_worker(report: dict) -> list:
    """What every child inherits: an empty root, no-new-privileges, per-run-invariant rlimits.

    Returns the rlimits each child must still set itself. The worker needs no file after
    this (every module is loaded), so it ``chroot``s itself into its empty working directory
    and its children start there; unprivileged, they cannot leave it.
    """
    try:
        if not report.get("root_mounted"):  # never chroot into a folder of the host's
            raise OSError(0, "no empty root was mounted")
        os.chroot(".")
        os.chdir("/")
        report["chroot"] = True
    except OSError as exc:
        report["chroot"] = False
        report["notes"].append(f"chroot: {exc.strerror}")
    try:
        _kernel.prctl(_kernel.PR_SET_NO_NEW_PRIVS, 1)
        report["no_new_privs"] = True
    except OSError as exc:
        report["no_new_privs"] = False
        report["notes"].append(f"no_new_privs: {exc.strerror}")
    static, per_child = list(_child.STATIC_RLIMITS), []
    (static if os.geteuid() == 0 else per_child).append((resource.RLIMIT_NPROC, 0))
    _child.set_rlimits(static)
    return per_child


def make_plan(limits: dict, ast_check: bool, report: dict, status_fd: int, dev_fd: int) -> dict:
    root = os.geteuid() == 0
    fprog = _seccomp.build()
    plan = {"uid": NOBODY if root else None,
            "gid": NOBODY, "worker_pid": os.getpid(), "limits": limits, "ast_check": ast_check,
            "death_signal": not report["pid_namespace"],
            "child_rlimits": tuple(confine_worker(report)),
            "seccomp": None if fprog is None else _seccomp.ctypes.addressof(fprog),
            "required": {}, "cpu_s": 10, "as_bytes": _vm_status(status_fd)[0] + 1024 * MIB,
            "dev_fd": dev_fd, "_fprog": fprog}
    steps, failure = probe(plan)
    if failure and plan["seccomp"] is not None:  # the filter must never break real programs
        plan["seccomp"] = None
        report["notes"].append(f"seccomp: self-test failed ({failure})")
        steps, failure = probe(plan)
    if failure:
        raise RuntimeError(f"sandbox self-test failed: {failure}")
    if fprog is None:
        report["notes"].append("seccomp: no syscall table for this machine")
    plan["required"] = {name: True for name, ok in steps.items() if ok}
    for name in ("drop_uid", "seccomp"):
        steps.setdefault(name, False)
    report.update(steps)
    report["non_dumpable"] = steps["drop_uid"]
    report["children_die_with_worker"] = report["pid_namespace"] or steps.get(
        "parent_death_signal", False)
    report.pop("parent_death_signal", None)
    return plan


def warm_up(plan: dict) -> None:
    """Run the self-test once here, so lazy set-up (ctypes call paths, regex and encoder
    caches) happens once in the worker instead of in every child."""
    _child.execute(SELF_TEST.encode(), b'[["a","b"]]', SELF_TEST_LIMITS, plan["ast_check"])
    _child.execute(b"import socket\n", b"[]", SELF_TEST_LIMITS, True)  # the slow check path
    _child.PROGRAM.__dict__.clear()
    resource.getrlimit(resource.RLIMIT_AS)
    try:
        _kernel.prctl(_kernel.PR_SET_DUMPABLE, 1)  # a no-op: warms the ctypes call path
    except OSError:
        pass


# ----------------------------------------------------------------------------- serving

def child_fds(plan: dict) -> tuple[int, int]:
    """Lay out the next child's descriptors in the worker, before the fork (where it costs no
    copy-on-write fault): a ``/dev/null`` of its own on 0-2, the write ends of a fresh result
    pipe on 3 and tag pipe on 4. Returns the read ends (5 and up; the child closes them).

    A ``/dev/null`` of its own: kernel state kept on an open file description (``F_SETSIG``,
    ``O_NONBLOCK``, OFD locks) then ends with the run instead of reaching the next one or the
    host (the worker drops the last run's here, once that child is long gone). The chroot hides
    /dev, so it is opened through the worker's handle on it.
    """
    os.close(0)
    null = os.open("null", os.O_RDWR, dir_fd=plan["dev_fd"])  # the lowest free: 0
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    r, w = os.pipe()
    tr, tw = os.pipe()  # tags: read once the child is gone, so they cost the worker no wake-up
    if (null, r, w, tr, tw) == (0, 3, 4, 5, 6):  # always, as 3 and up are free between runs
        r = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 100)
        os.dup2(4, 3)
        os.dup2(6, 4)
        os.close(6)
        return r, tr
    ends = fcntl.fcntl(r, fcntl.F_DUPFD_CLOEXEC, 100), fcntl.fcntl(tr, fcntl.F_DUPFD_CLOEXEC, 100)
    os.dup2(w, 3)
    os.dup2(tw, 4)
    for fd in {null, r, w, tr, tw} - {0, 1, 2, 3, 4}:
        os.close(fd)
    return ends


class Usage:
    """The parts of a ``struct rusage`` (as the template's ``wait4`` wrote it) that are used."""

    def __init__(self, raw: bytes):
        us, uu, ss, su, maxrss = _RUSAGE.unpack_from(raw)
        self.ru_utime, self.ru_stime, self.ru_maxrss = us + uu / 1e6, ss + su / 1e6, maxrss


_RUSAGE = struct.Struct("<qqqqq")  # ru_utime, ru_stime (timevals), ru_maxrss (x86_64, arm64)
_PID = struct.Struct("<i")
STATUS_BYTES = 4 + 4 + 144  # the pid, then the wait status and the struct rusage
EMPTY_HEADER = bytes(_wire.REQUEST.size)  # a warm-up round: the child exits at once
WARM_UP_ROUNDS = 40


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
# the collector): what a neighbour does to the wall clock never changes a result. The wall clock
# is only a backstop against sleeping and blocking, at WALL_FACTOR times the limit (generous:
# a program at 85% of its limit passes even when it gets a fifth of a core).
WALL_FACTOR = 5.0


def _cpu_clock(pid: int) -> int:
    """The clock id of process ``pid``'s CPU clock (``clock_getcpuclockid``: CPUCLOCK_SCHED)."""
    return ((~pid) << 3) | 2


def collect(io: dict, pid: int, deadline: float, max_payload: int, cpu_limit: float = math.inf):
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
    while outcome is None:
        left = deadline - time.monotonic()
        if left <= 0:
            outcome = "wall_timeout"
            break
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
    kind, code, payload, outcome, status, usage = collect(
        io, pid, start + WALL_FACTOR * timeout_s, plan["limits"]["max_bytes"] + 64, timeout_s)
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
    if outcome == "wall_timeout":
        return "timeout", (f"transform did not finish within {WALL_FACTOR * timeout_s:g} s of "
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


def serve(req_fd: int, resp_fd: int, plan: dict, ready: bytes) -> None:
    """Fork the pristine template, send ``ready``, then answer requests from the parent until
    the pipe closes.

    This process (the *collector*) reads each request header, has the template fork the run's
    child, collects its result, classifies and replies. The template is forked from it here,
    before any request: it never reads a request, an output or a message (it gets only each
    request's 16-byte header, which it hands to the child it forks), so every run's child is a
    copy of the same state, whatever ran before: no earlier table, output or message in its
    memory, the same heap statistics, the same addresses. With a PID namespace the template
    also resets the namespace's pid counter before each fork (``ns_last_pid``), so every child
    has the same pid and a run cannot count the runs before it. The result and tag pipes are
    made once and shared by every run (the collector drains them after each): so a run's pipes
    have the same inode numbers every time, and count nothing made on the host.
    """
    last_pid = plan.pop("last_pid_fd", None)
    fds = {}
    for name in ("res", "tag", "cmd", "st"):
        rd, wr = os.pipe()
        fds[name + "_r"], fds[name + "_w"] = _high_fd(rd), _high_fd(wr)
    if last_pid is not None:
        os.pwrite(last_pid, b"1", 0)  # the template is pid 2
    pid = os.fork()
    if pid == 0:
        try:
            for name in ("res_r", "tag_r", "cmd_w", "st_r"):
                os.close(fds[name])
            os.close(resp_fd)
            template(req_fd, fds, last_pid, plan)
        finally:
            os._exit(0)
    for name in ("res_w", "tag_w", "cmd_r", "st_w"):
        os.close(fds[name])
    if last_pid is not None:
        os.close(last_pid)
    os.set_blocking(fds["res_r"], False)
    os.set_blocking(fds["tag_r"], False)
    # Warm-up rounds, through exactly the path a run takes: the interpreter specialises a
    # function's bytecode after its first few calls (which changes what a fork copies, down to
    # reference counts), so the template's loop must be past that before the first run.
    os.write(fds["cmd_w"], EMPTY_HEADER * WARM_UP_ROUNDS)
    if _wire.read_exact(fds["st_r"], WARM_UP_ROUNDS * STATUS_BYTES) is None:
        raise EOFError("the template did not start")
    _wire.write_all(resp_fd, ready)  # only now: the template is there when the parent counts
    header = bytearray(_wire.REQUEST.size)  # sizes and limits only: the child reads the rest
    try:
        while _wire.read_into(req_fd, header):
            timeout_ms, memory_mb, _, _ = _wire.REQUEST.unpack(header)
            if not run_one(req_fd, bytes(header), timeout_ms / 1000, memory_mb, resp_fd, plan,
                           fds):
                return
    finally:
        os.close(fds["cmd_w"])  # the template ends
        os.waitpid(pid, 0)


def template(req_fd: int, fds: dict, last_pid, plan: dict) -> None:
    """The template's loop: per header from the collector, lay out the child's descriptors,
    reset the pid counter, fork the child, name it, reap it, pass on its wait status and
    resource usage. Everything per run goes through buffers made before the first run (the
    status through ``wait4`` into a ctypes buffer, cleared after use), so nothing of one run is
    left in this process's objects for the next child to find."""
    import ctypes
    wait4 = _kernel.libc().wait4
    header = bytearray(_wire.REQUEST.size)
    buf = (ctypes.c_char * (STATUS_BYTES + 4))()
    pid_c = ctypes.c_int.from_buffer(buf, 0)
    status_p, usage_p = ctypes.byref(buf, 4), ctypes.byref(buf, 8)
    view = memoryview(buf).cast("B")
    first, rest = view[:4], view[4:STATUS_BYTES]
    plan["worker_pid"] = os.getpid()  # the child's parent (for its death-signal check)
    dev_fd, res_w, tag_w, cmd_r, st_w = (plan["dev_fd"], fds["res_w"], fds["tag_w"],
                                         fds["cmd_r"], fds["st_w"])

    while _wire.read_into(cmd_r, header):
        os.close(0)
        os.open("null", os.O_RDWR, dir_fd=dev_fd)  # this run's own /dev/null: fd 0
        os.dup2(0, 1)
        os.dup2(0, 2)
        os.dup2(res_w, 3)
        os.dup2(tag_w, 4)
        if last_pid is not None:
            os.pwrite(last_pid, b"2", 0)  # the template is pid 2, every child pid 3
        pid_c.value = os.fork()
        if pid_c.value == 0:
            try:
                if header != EMPTY_HEADER:  # (an empty one: a warm-up round)
                    _child.main_from_header(req_fd, header, plan)
            finally:
                os._exit(0 if header == EMPTY_HEADER else 1)
        os.write(st_w, first)
        wait4(pid_c.value, status_p, 0, usage_p)
        os.write(st_w, rest)
        ctypes.memset(buf, 0, len(buf))


def _last_pid_fd(report: dict) -> int | None:
    """A handle on this PID namespace's pid counter (``ns_last_pid``), opened before the
    chroot; ``None`` (and a note) without a PID namespace of our own or the right to set it."""
    report["same_pids"] = False
    if not report["pid_namespace"]:
        return None
    try:
        fd = _high_fd(os.open("/proc/sys/kernel/ns_last_pid", os.O_WRONLY))
        os.pwrite(fd, b"1", 0)  # (the template is forked next: pid 2)
    except OSError as exc:
        report["notes"].append(f"same pids: {exc.strerror}")
        return None
    report["same_pids"] = True
    return fd


def _high_fd(fd: int) -> int:
    """Move ``fd`` out of the way (to 100 and up), so a run's pipe lands on fds 3 and 4."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return high


def hide_host_paths() -> None:
    """Leave no path of this machine where a program looks: ``sys.argv``, ``sys.path``, the
    interpreter's prefixes, modules' ``__file__``/``__cached__``/``__spec__``/``__path__``.

    Every module is loaded by now, and the sandbox's own code was compiled under ``<sandbox>/``
    names (``_worker.BOOT``). Not covered: ``co_filename`` of the standard library's code
    objects, which still names where Python is installed.
    """
    sys.argv, sys.orig_argv, sys.path = ["transform"], [], []
    sys.path_importer_cache.clear()
    for name in ("executable", "_base_executable", "prefix", "base_prefix", "exec_prefix",
                 "base_exec_prefix", "_stdlib_dir", "pycache_prefix", "_home"):
        if hasattr(sys, name):
            setattr(sys, name, None if name in ("pycache_prefix", "_home") else "")
    for module in list(sys.modules.values()):
        for attr in ("__file__", "__cached__"):
            if hasattr(module, attr):
                try:
                    delattr(module, attr)
                except (AttributeError, TypeError):
                    pass
        if isinstance(getattr(module, "__path__", None), list):
            module.__path__ = []
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            try:
                spec.origin, spec.cached, spec.has_location = None, None, False
                if spec.submodule_search_locations is not None:
                    spec.submodule_search_locations = []
            except AttributeError:
                pass


# Standard places: naming them tells a program nothing about this machine, and scrubbing them
# would rewrite unrelated strings (``os.defpath``).
_STANDARD = frozenset({"/", "/usr", "/usr/local", "/opt", "/bin", "/sbin", "/lib", "/lib64",
                       "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/local/bin",
                       "/usr/local/lib", "/tmp", "/var/tmp"})


def host_paths() -> list[str]:
    """The host paths this worker knows (read before ``hide_host_paths``), longest first: the
    interpreter's install folders and every parent of them. Its working directory is ``/``
    (the parent starts it there), so it never knows the parent's folders at all. Standard
    system folders are left out. Every parent too, not just the deepest path: a copy of a
    path the heap has half reused, or a shorter path of its own, still names the folders above.
    """
    found = set()
    for name in ("executable", "_base_executable"):
        path = getattr(sys, name, None)
        if path:
            found.update({os.path.dirname(path), os.path.dirname(os.path.realpath(path))})
    for name in ("prefix", "base_prefix", "exec_prefix", "base_exec_prefix", "_stdlib_dir"):
        path = getattr(sys, name, None)
        if path:
            found.update({path, os.path.realpath(path)})
    for path in list(found):
        while path not in ("/", ""):
            found.add(path)
            path = os.path.dirname(path)
    found = {p for p in found if len(p) >= 4 and p not in _STANDARD and not (
        os.path.dirname(p) in _STANDARD and os.path.basename(p).startswith(("python", "bin")))}
    return sorted(found, key=lambda p: (-len(p), p))


_BYTES_DATA = sys.getsizeof(b"") - 1  # where a bytes object's data starts, from its address


def needles(paths: list[str]) -> list[tuple[bytes, bytes]]:
    """``(path bytes, filler)`` in each encoding a copy may take (made before the codecs'
    modules lose their paths): UTF-8 and UTF-32 (``wchar_t``), Latin-1/UTF-16 when not ASCII.
    Longest first. Also each long path's UTF-8 tail without its first 8 and 16 bytes: what is
    left of a freed heap copy once malloc has written its list pointers over the start."""
    variants, seen = [], set()
    for path in paths:
        for enc in ("utf-8", "latin-1", "utf-16-le", "utf-32-le"):
            if enc in ("latin-1", "utf-16-le") and path.isascii():
                continue
            try:
                data = path.encode(enc)
            except UnicodeEncodeError:
                continue
            forms = [data]
            if enc == "utf-8":
                forms += [data[k:] for k in (8, 16) if len(data) - k >= 12 and b"/" in data[k:]]
            for form in forms:
                if form not in seen:
                    seen.add(form)
                    variants.append((form, b"x" * len(form) if enc == "utf-8"
                                     else "x".encode(enc) * (len(form) // len("x".encode(enc)))))
    variants.sort(key=lambda v: -len(v[0]))
    return variants


def scrub(variants: list[tuple[bytes, bytes]], maps_fd: int) -> int:
    """Overwrite every copy of the ``needles`` in this process's writable memory; the count.

    A program can read any byte of its child's memory (``ctypes.string_at``), including
    freed heap blocks, the argument and environment strings on the stack, the C-level copies
    of the interpreter's configuration (``wchar_t``) and the dynamic linker's list of loaded
    libraries. So each path is replaced in place by as many ``x``: same length, so no
    structure moves; a live string that held one (a standard-library ``co_filename``) now
    reads ``xxxx/lib/python3.11/...``. Private writable mappings only (``/proc/self/maps``
    through ``maps_fd``, opened before the chroot); read-only file mappings (the interpreter
    binary's own constants, such as its compiled-in prefix and library search path) cannot be
    written and are not covered. Passes repeat until one finds nothing (a pass's own
    snapshots are copies too).
    """
    import ctypes
    own = [(id(v) + _BYTES_DATA, id(v) + _BYTES_DATA + len(v)) for v, _ in variants]
    total = 0
    # (address, length, region start) of every hit, for ``reset_hash``: a ctypes array made
    # before the scan, because nothing may be allocated while one runs (an allocation can
    # reuse a freed block that held a path, and the stale snapshot would then send the filler
    # over a live object)
    hits_at = (ctypes.c_uint64 * (3 * 4096))()
    n_hits = 0
    for _ in range(4):
        regions = []
        text = b""
        while chunk := os.pread(maps_fd, 1 << 16, len(text)):
            text += chunk
        for line in text.split(b"\n"):
            fields = line.split()
            if len(fields) >= 2 and fields[1][:2] == b"rw" and fields[1][3:4] == b"p" and \
                    not (len(fields) > 5 and fields[5] in (b"[vvar]", b"[vsyscall]")):
                start, _, end = fields[0].partition(b"-")
                regions.append((int(start, 16), int(end, 16)))
        ctypes.memset(id(text) + _BYTES_DATA, 0, len(text))  # it names every mapped library
        del text, line, fields, chunk
        hits = 0
        for start, end in regions:
            snap = ctypes.string_at(start, end - start)
            for needle, filler in variants:
                at = snap.find(needle)
                while at >= 0:
                    addr = start + at
                    if not any(lo <= addr < hi for lo, hi in own) and \
                            ctypes.string_at(addr, len(needle)) == needle:  # still there
                        ctypes.memmove(addr, filler, len(filler))
                        hits += 1
                        if n_hits < 4096:
                            hits_at[3 * n_hits:3 * n_hits + 3] = (addr, len(filler), start)
                            n_hits += 1
                    at = snap.find(needle, at + 1)
            ctypes.memset(id(snap) + _BYTES_DATA, 0, len(snap))
            del snap
        total += hits
        if not hits:
            break
    for k in range(n_hits):
        reset_hash(hits_at[3 * k], hits_at[3 * k + 1], hits_at[3 * k + 2])
    for needle, _ in variants:  # the needles themselves, last
        ctypes.memset(id(needle) + _BYTES_DATA, 0, len(needle))
    return total


_STR_TYPE, _BYTES_TYPE = id(str).to_bytes(8, "little"), id(bytes).to_bytes(8, "little")
_ASCII_DATA = sys.getsizeof("") - 1  # where a compact ASCII str's characters start
_COMPACT_DATA = sys.getsizeof("\u0100") - 4  # ... and a compact non-ASCII one's (1-4 bytes each)


def reset_hash(addr: int, size: int, floor: int, reach: int = 1 << 16) -> bool:
    """Forget the cached hash of the ``str`` or ``bytes`` object whose characters hold
    ``addr .. addr + size`` (just overwritten by ``scrub``): the hash was computed from the
    old text, so with the fixed hash seed ``hash(s) == hash(guess)`` would confirm a guessed
    path, and ``ctypes`` can read it from any object, live or freed. Looks back up to ``reach``
    bytes (not below ``floor``, the region's start) for the nearest object header (a type
    pointer to ``str``/``bytes`` and a length that covers the hit) and sets its hash to -1 (not computed yet), so the next
    ``hash()`` computes it from the scrubbed text."""
    import ctypes
    lo = max(floor, (addr - reach) & ~7)
    window = ctypes.string_at(lo, addr - lo)
    at = len(window) - len(window) % 8
    while at >= 8:
        at -= 8
        kind = window[at:at + 8]
        if kind != _STR_TYPE and kind != _BYTES_TYPE:
            continue
        obj = lo + at - 8
        # (no check of the reference count: a freed object's holds the allocator's list
        # pointer, and its hash can still be read from raw memory)
        length = ctypes.c_ssize_t.from_address(obj + 16).value
        if not 0 < length < 1 << 24:
            continue
        if kind == _BYTES_TYPE:
            data, width = obj + _BYTES_DATA, 1
        else:
            state = ctypes.c_uint32.from_address(obj + 32).value
            if not state & 0x20:  # not compact: the characters live elsewhere
                continue
            width = (state >> 2) & 7
            data = obj + (_ASCII_DATA if state & 0x40 else _COMPACT_DATA)
            if width not in (1, 2, 4):
                continue
        if data <= addr and addr + size <= data + length * width:
            ctypes.c_ssize_t.from_address(obj + 24).value = -1
            return True
    return False


def main(options: dict) -> None:
    # read at start-up (TZ by ``import time``, so the host's timezone is never cached); programs
    # see none of them
    for name in ("LD_BIND_NOW", "PYTHONHASHSEED", "TZ"):
        os.environ.pop(name, None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    req_fd, resp_fd = _high_fd(0), _high_fd(1)
    devnull = os.open("/dev/null", os.O_RDWR)  # lands on fd 0, freed just above
    os.dup2(devnull, 1)
    preload()
    paths = needles(host_paths())
    hide_host_paths()
    report: dict = {"fresh_process_per_run": True, "closed_fds": True,
                    "cleared_env": set(os.environ) <= {"LC_CTYPE"},  # set by Python itself
                    "arch": os.uname().machine, "notes": []}
    enter_namespaces(report, req_fd, resp_fd)
    # Each child gets a /dev/null of its own (opened per run), through this handle on the
    # worker's own dev/ in the new root, or on the host's /dev (the chroot hides both)
    dev_fd = _high_fd(os.open("dev" if report["own_dev_null"] else "/dev", os.O_PATH | os.O_DIRECTORY))
    try:
        status_fd = _high_fd(os.open("/proc/self/statm", os.O_RDONLY))
        maps_fd = _high_fd(os.open("/proc/self/maps", os.O_RDONLY))
        last_pid = _last_pid_fd(report)
        plan = make_plan(options["limits"], options["ast_check"], report, status_fd, dev_fd)
        plan["last_pid_fd"] = last_pid
        warm_up(plan)
        gc.collect()
        report["host_paths_scrubbed"] = scrub(paths, maps_fd) >= 0
        del paths
        os.close(maps_fd)
        plan["base"] = _vm_status(status_fd)
    except Exception as exc:  # tell the parent why, then give up
        why = f"{type(exc).__name__}: {exc}".encode()
        _wire.write_all(resp_fd, _wire.REPLY.pack(_wire.ERR, _wire.CODE["crash"], 0, 0,
                                                  len(why)) + why)
        os._exit(1)
    report.pop("root_mounted", None)
    report["notes"] = "; ".join(report["notes"])
    ready = json.dumps(report).encode()
    ready = _wire.REPLY.pack(_wire.READY, 0, 0, 0, len(ready)) + ready
    gc.collect()
    gc.freeze()  # a child's garbage collector then never touches (and copies) these pages
    try:  # hand free heap pages back: every page still mapped is copied into each child's tables
        _kernel.libc().malloc_trim(0)
    except (AttributeError, OSError):
        pass
    try:
        serve(req_fd, resp_fd, plan, ready)
    except BrokenPipeError:
        pass
    os._exit(0)  # nothing to flush or finalise
