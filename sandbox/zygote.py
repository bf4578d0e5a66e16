"""The pre-warmed worker process: one per sandbox slot, forking one child per run.

Started by the parent as ``python -s -S -B -c BOOT`` (``_worker.BOOT`` first starts itself again
with address-space randomisation off, then compiles this module and its siblings under
``<sandbox>/`` names) with an environment of its own (``LD_BIND_NOW`` and a fixed
``PYTHONHASHSEED``, both removed once read), in a new session, in ``/``: it never learns the name
of any folder of the parent's. It then:

1. pre-imports the allowed modules (``policy.PRELOAD``), so a run never needs the file system,
   and, when its sandbox asked for the opt-in runtime, numpy or numpy and scipy
   (``_optional.load``), then removes every host path from ``sys`` and the modules
   (``_scrub.hide_host_paths``);
2. (``_confine``) enters new mount, network, IPC, UTS and PID namespaces where the kernel
   permits (PID: the process forks once, and the copy, pid 1 of the new namespace, serves; when
   it dies the kernel kills every process left in the namespace) and a time namespace for what
   it forks (its monotonic and boot clocks start near 1 s), mounts an empty read-only tmpfs over
   a standard folder (``/tmp``) of its private mount namespace, holding only ``dev/null`` (a
   null device of its own), and ``chroot``s into it, sets no-new-privileges and the resource
   limits that are the same for every run (all inherited by each child);
3. forks a probe child that applies every per-run protection and runs a self-test program,
   and keeps exactly the protections that worked (``protections()`` reports them; each later
   child must apply all of them or refuse to run), then runs the self-test once itself so
   lazy initialisation happens here and not in every child, and overwrites every copy of a
   host path in its memory (``_scrub.scrub``, which also resets the cached hashes of the strings it
   rewrote); nothing is read from the host's procfs after that but page counts (``statm``);
4. forks the pristine *template* and becomes the *collector*. For each request the collector
   reads the 20-byte header (sizes, limits, output kind) and hands it to the template, which lays
   out the child's descriptors (a ``/dev/null`` of its own on 0-2, the shared result pipe on 3
   and tag pipe on 4), resets its PID namespace's pid counter (``ns_last_pid``), forks the run's
   child (``_child.main_from_header``, which reads the code and table itself), reaps it and
   passes its wait status and resource usage back. The collector (``_collect.run_one``) reads
   the result frame until the deadline, SIGKILLs the child, drains both pipes, reads the tags,
   decides the class and replies. The template never holds a request, an output or a message (only the
   header, in a buffer it overwrites), so every run's child is a copy of the same state,
   whatever ran before: same pids, same heap statistics, same addresses, same pipe inodes.

Not covered: a worker that is itself stuck (the parent's grace deadline catches that) and
systems without ``fork`` and ``/proc`` (Linux only).
"""
from __future__ import annotations

import fcntl
import gc
import json
import os
import random
import resource
import signal

try:
    from . import _child, _collect, _confine, _kernel, _optional, _scrub, _seccomp, _wire, policy
except ImportError:
    import _child
    import _collect
    import _confine
    import _kernel
    import _optional
    import _scrub
    import _seccomp
    import _wire
    import policy

MIB = 1 << 20
NOBODY = 65534
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


PAGE = os.sysconf("SC_PAGE_SIZE")


def _vm_status(statm_fd: int) -> tuple[int, int]:
    """(VmSize, VmRSS) in bytes, from this process's /proc ``statm`` opened before chroot: page
    counts only (``status`` also names the host pids, which would then lie in freed memory)."""
    size, resident = os.pread(statm_fd, 256, 0).split()[:2]
    return int(size) * PAGE, int(resident) * PAGE


def probe(plan: dict, program: str = SELF_TEST) -> tuple[dict, str]:
    """Fork a child that applies every protection and runs a self-test program."""
    r, tr = child_fds(plan)
    pid = os.fork()
    if pid == 0:
        try:
            report: dict = {}
            _child.confine(dict(plan, required={}), report)
            error, payload = _child.execute(program.encode(), b'[["a","b"]]', SELF_TEST_LIMITS)
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


def make_plan(limits: dict, ast_check: bool, report: dict, status_fd: int, dev_fd: int) -> dict:
    root = os.geteuid() == 0
    fprog = _seccomp.build()
    plan = {"uid": NOBODY if root else None,
            "gid": NOBODY, "worker_pid": os.getpid(), "limits": limits, "ast_check": ast_check,
            "death_signal": not report["pid_namespace"],
            "child_rlimits": tuple(_confine.confine_worker(report)),
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
    for name, program in _optional.self_tests():  # every protection that held must hold them too
        _, failure = probe(plan, program)
        if failure:
            raise RuntimeError(f"sandbox runtime self-test failed ({name}): {failure}")
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
    for _, program in _optional.self_tests():
        _child.execute(program.encode(), b"[[1,2],[3,4]]", SELF_TEST_LIMITS, plan["ast_check"])
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


EMPTY_HEADER = bytes(_wire.REQUEST.size)  # a warm-up round: the child exits at once
WARM_UP_ROUNDS = 40


def serve(req_fd: int, resp_fd: int, plan: dict, ready: bytes) -> None:
    """Fork the pristine template, send ``ready``, then answer requests from the parent until
    the pipe closes.

    This process (the *collector*) reads each request header, has the template fork the run's
    child, collects its result, classifies and replies. The template is forked from it here,
    before any request: it never reads a request, an output or a message (it gets only each
    request's 20-byte header, which it hands to the child it forks), so every run's child is a
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
    if _wire.read_exact(fds["st_r"], WARM_UP_ROUNDS * _collect.STATUS_BYTES) is None:
        raise EOFError("the template did not start")
    _wire.write_all(resp_fd, ready)  # only now: the template is there when the parent counts
    header = bytearray(_wire.REQUEST.size)  # sizes, limits, kind: the child reads the rest
    try:
        while _wire.read_into(req_fd, header):
            timeout_ms, memory_mb = _wire.REQUEST.unpack(header)[:2]
            if not _collect.run_one(req_fd, bytes(header), timeout_ms / 1000, memory_mb,
                                    resp_fd, plan, fds):
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
    fork = _kernel.bare_fork()  # no after-fork hooks: this process has one thread
    random.seed(0)  # what every child starts from (os.fork's child reseeded from urandom)
    header = bytearray(_wire.REQUEST.size)
    buf = (ctypes.c_char * (_collect.STATUS_BYTES + 4))()
    pid_c = ctypes.c_int.from_buffer(buf, 0)
    status_p, usage_p = ctypes.byref(buf, 4), ctypes.byref(buf, 8)
    view = memoryview(buf).cast("B")
    first, rest = view[:4], view[4:_collect.STATUS_BYTES]
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
        pid_c.value = fork()
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


def _own_proc(report: dict) -> int | None:
    """A handle on a procfs of this PID namespace (mounted over ``/proc`` in the worker's private
    mount namespace, outside the root the children get), from which the collector reads a run's
    ``schedstat``: how long it ran and how long it waited for a CPU. ``None`` (and a note)
    without the namespaces or the right to mount: runs are then judged by the wall backstop
    alone. ``blocked_detection`` says which."""
    report["blocked_detection"] = False
    if not (report["pid_namespace"] and report["mount_namespace"]):
        return None
    try:
        _kernel.mount("proc", "/proc", "proc", _kernel.MS_NOSUID | _kernel.MS_NOEXEC | _kernel.MS_NODEV)
        fd = _high_fd(os.open("/proc", os.O_PATH | os.O_DIRECTORY))
        with open(os.open("self/schedstat", os.O_RDONLY, dir_fd=fd), "rb") as fh:
            fh.read()
    except OSError as exc:
        report["notes"].append(f"blocked detection: {exc.strerror}")
        return None
    report["blocked_detection"] = True
    return fd


def _high_fd(fd: int) -> int:
    """Move ``fd`` out of the way (to 100 and up), so a run's pipe lands on fds 3 and 4."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return high


def main(options: dict) -> None:
    for name in ("LD_BIND_NOW", "PYTHONHASHSEED"):  # read at start-up; programs see neither
        os.environ.pop(name, None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    req_fd, resp_fd = _high_fd(0), _high_fd(1)
    devnull = os.open("/dev/null", os.O_RDWR)  # lands on fd 0, freed just above
    os.dup2(devnull, 1)
    preload()
    runtime = options.get("runtime")
    if runtime:
        try:
            _optional.load(runtime)
        except Exception as exc:  # tell the parent why, then give up
            why = f"sandbox runtime: {type(exc).__name__}: {exc}".encode()
            _wire.write_all(resp_fd, _wire.REPLY.pack(_wire.ERR, _wire.CODE["crash"], 0, 0,
                                                      len(why)) + why)
            os._exit(1)
    os.times = _child.times  # the times() call tells the host's uptime: seccomp refuses it
    paths = _scrub.needles(_scrub.host_paths(runtime["paths"] if runtime else ()))
    _scrub.hide_host_paths()
    report: dict = {"fresh_process_per_run": True, "closed_fds": True,
                    "cleared_env": set(os.environ) <= {"LC_CTYPE"},  # set by Python itself
                    "arch": os.uname().machine, "notes": []}
    _confine.enter_namespaces(report, req_fd, resp_fd)
    # Each child gets a /dev/null of its own (opened per run), through this handle on the
    # worker's own dev/ in the new root, or on the host's /dev (the chroot hides both)
    dev_fd = _high_fd(os.open("dev" if report["own_dev_null"] else "/dev", os.O_PATH | os.O_DIRECTORY))
    try:
        status_fd = _high_fd(os.open("/proc/self/statm", os.O_RDONLY))
        maps_fd = _high_fd(os.open("/proc/self/maps", os.O_RDONLY))
        last_pid = _last_pid_fd(report)
        proc_fd = _own_proc(report)
        plan = make_plan(options["limits"], options["ast_check"], report, status_fd, dev_fd)
        plan["last_pid_fd"] = last_pid
        plan["proc_fd"] = proc_fd
        plan["optional"] = bool(runtime)  # without a runtime a child never reads _optional
        warm_up(plan)
        gc.collect()
        report["host_paths_scrubbed"] = _scrub.scrub(paths, maps_fd) >= 0
        del paths
        os.close(maps_fd)
        plan["base"] = _vm_status(status_fd)
        # TZ goes only now, inside the empty root: a tzset() before would read the host's
        # /etc/localtime (``import _strptime`` calls one), one after finds no zone file: UTC
        os.environ.pop("TZ", None)
        report["cleared_env"] = set(os.environ) <= {"LC_CTYPE"}
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
