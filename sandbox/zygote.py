"""The pre-warmed worker process: one per sandbox slot, forking one child per run.

Started by the parent as ``python -I -S zygote.py LIMITS_JSON`` with an empty environment, in a
new session, with an empty temporary directory as its working directory. It then:

1. pre-imports the allowed modules (``policy.PRELOAD``), so a run never touches the file system;
2. enters new mount, network, IPC, UTS and PID namespaces where the kernel permits (PID: the
   process forks once, and the copy, pid 1 of the new namespace, serves; when it dies the
   kernel kills every process left in the namespace), and mounts an empty read-only tmpfs over
   its working directory for the children to ``chroot`` into;
3. forks a probe child that applies every protection and runs a self-test program, and keeps
   exactly the protections that worked (``protections()`` reports them, and each later child
   must apply all of them or refuse to run);
4. answers requests from the parent forever: read one request, fork a child (``_child.main``),
   wait for its result frame until the wall-clock deadline, SIGKILL it, reap it, classify,
   reply. It exits when the parent closes the request pipe.

Not covered: a worker that is itself stuck (the parent's grace deadline catches that) and
machines without ``fork`` (Linux only).
"""
from __future__ import annotations

import gc
import json
import math
import os
import select
import signal
import sys
import time

if __name__ == "__main__":  # run as a script: the sibling modules become top-level modules
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
                report.setdefault("notes", []).append(f"{name}: {exc.strerror}")
    if report["mount_namespace"]:
        try:  # nothing mounted here may leak back, then an empty read-only root for children
            _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
            _kernel.mount("tmpfs", os.getcwd(), "tmpfs", _kernel.MS_RDONLY | _kernel.MS_NOSUID
                          | _kernel.MS_NODEV | _kernel.MS_NOEXEC, "size=4k,mode=0555")
        except OSError as exc:
            report.setdefault("notes", []).append(f"read-only root: {exc.strerror}")
    if report["pid_namespace"]:
        pid = os.fork()
        if pid:  # the outer process only waits, so the parent can still kill its group
            os.close(req_fd)
            os.close(resp_fd)
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGKILL)


def _vm_status() -> tuple[int, int]:
    """(VmSize, VmRSS) of this process in bytes."""
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmSize", "VmRSS"):
                fields[key] = int(value.split()[0]) * 1024
    return fields["VmSize"], fields["VmRSS"]


def probe(plan: dict) -> tuple[dict, str]:
    """Fork a child that applies every protection and runs the self-test program."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            report: dict = {}
            _child.confine(dict(plan, required={}), w, report)
            error, payload = _child.execute(SELF_TEST.encode(), b'[["a","b"]]', plan["limits"])
            report["self_test"] = error or ""
            report["self_test_message"] = "" if error is None else payload.decode()
            _wire.write_all(3, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    try:
        report = json.loads(b"".join(chunks))
    except ValueError:
        return {}, "probe child died"
    return report, report.pop("self_test_message", "") if report.pop("self_test") else ""


def make_plan(limits: dict, ast_check: bool, report: dict) -> dict:
    root = os.geteuid() == 0
    fprog = _seccomp.build()
    plan = {"chroot": os.getcwd() if root else None, "uid": NOBODY if root else None,
            "gid": NOBODY, "worker_pid": os.getpid(), "limits": limits, "ast_check": ast_check,
            "seccomp": None if fprog is None else _seccomp.ctypes.addressof(fprog),
            "required": {}, "cpu_s": 10, "as_bytes": _vm_status()[0] + 1024 * MIB,
            "_fprog": fprog}
    steps, failure = probe(plan)
    if failure and plan["seccomp"] is not None:  # the filter must never break real programs
        plan["seccomp"] = None
        report.setdefault("notes", []).append(f"seccomp: self-test failed ({failure})")
        steps, failure = probe(plan)
    if failure:
        raise SystemExit(f"sandbox self-test failed: {failure}")
    if fprog is None:
        report.setdefault("notes", []).append("seccomp: no syscall table for this machine")
    plan["required"] = {name: True for name, ok in steps.items() if ok}
    for name in ("chroot", "drop_uid", "seccomp"):
        steps.setdefault(name, False)
    report.update(steps)
    return plan


# ----------------------------------------------------------------------------- serving

def collect(r: int, pid: int, deadline: float, max_payload: int):
    """Read the child's result frame, then end and reap the child.

    Returns ``(frame or None, outcome, wait status, rusage)``.
    """
    buf = bytearray()
    need = _wire.RESULT.size
    poller = select.poll()
    poller.register(r, select.POLLIN)
    outcome = "eof"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            outcome = "timeout"
            break
        if not poller.poll(left * 1000 + 1):
            continue
        chunk = os.read(r, max(65536, need - len(buf)))
        if not chunk:
            break
        buf += chunk
        if len(buf) >= _wire.RESULT.size and need == _wire.RESULT.size:
            need += _wire.RESULT.unpack_from(buf)[2]
            if need - _wire.RESULT.size > max_payload:
                outcome = "too_big"
                break
        if len(buf) >= need:
            outcome = "done"
            break
    frame = bytes(buf[:need]) if outcome == "done" else None
    if outcome == "eof":  # the child closed its pipe: give it until the deadline to exit
        while time.monotonic() < deadline:
            reaped, status, usage = os.wait4(pid, os.WNOHANG)
            if reaped:
                return frame, "exited", status, usage
            time.sleep(0.0005)
        outcome = "timeout"
    os.kill(pid, signal.SIGKILL)  # done or not, the child ends now
    _, status, usage = os.wait4(pid, 0)
    return frame, outcome, status, usage


def run_one(body: bytes, code_len: int, timeout_s: float, memory_mb: int, plan: dict) -> bytes:
    base_vm, base_rss = plan["base"]
    run_plan = dict(plan, cpu_s=max(1, math.ceil(timeout_s + 0.5)),
                    as_bytes=base_vm + memory_mb * MIB)
    r, w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _child.main(body, code_len, w, run_plan)
        finally:
            os._exit(1)
    os.close(w)
    frame, outcome, status, usage = collect(r, pid, start + timeout_s,
                                            plan["limits"]["max_bytes"] + 64)
    os.close(r)
    wall_us = int((time.monotonic() - start) * 1e6)
    cpu_us = int((usage.ru_utime + usage.ru_stime) * 1e6)
    if frame is not None:
        kind, code, _ = _wire.RESULT.unpack_from(frame)
        payload = frame[_wire.RESULT.size:]
        if kind == _wire.OK:
            return _wire.REPLY.pack(_wire.OK, 0, wall_us, cpu_us, len(payload)) + payload
        if kind != _wire.ERR or code >= len(_wire.ERRORS):
            code, payload = _wire.CODE["crash"], b"the program wrote a malformed result"
        payload = payload[:_wire.MAX_MESSAGE_BYTES]
        return _wire.REPLY.pack(_wire.ERR, code, wall_us, cpu_us, len(payload)) + payload
    error, message = classify(outcome, status, usage, timeout_s, memory_mb, run_plan, base_rss)
    payload = message.encode()
    return _wire.REPLY.pack(_wire.ERR, _wire.CODE[error], wall_us, cpu_us, len(payload)) + payload


def classify(outcome, status, usage, timeout_s, memory_mb, plan, base_rss) -> tuple[str, str]:
    """Name a death that left no result frame."""
    if outcome == "too_big":
        return "bad_output", f"output is more than {plan['limits']['max_bytes']} bytes of JSON"
    if outcome == "timeout":
        return "timeout", (f"transform did not finish within {timeout_s:g} s "
                           "(look for an infinite loop or very slow code)")
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


def serve(req_fd: int, resp_fd: int, plan: dict) -> None:
    while True:
        header = _wire.read_exact(req_fd, _wire.REQUEST.size)
        if header is None:
            return
        timeout_ms, memory_mb, code_len, table_len = _wire.REQUEST.unpack(header)
        body = _wire.read_exact(req_fd, code_len + table_len)
        if body is None:
            return
        reply = run_one(body, code_len, timeout_ms / 1000, memory_mb, plan)
        _wire.write_all(resp_fd, reply)


def main() -> None:
    options = json.loads(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    req_fd, resp_fd = os.dup(0), os.dup(1)
    devnull = os.open("/dev/null", os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    preload()
    report: dict = {"fresh_process_per_run": True, "cleared_env": not os.environ,
                    "closed_fds": True, "arch": os.uname().machine}
    enter_namespaces(report, req_fd, resp_fd)
    plan = make_plan(options["limits"], options["ast_check"], report)
    report["notes"] = "; ".join(report.get("notes", []))
    plan["base"] = _vm_status()
    ready = json.dumps(report).encode()
    _wire.write_all(resp_fd, _wire.REPLY.pack(_wire.READY, 0, 0, 0, len(ready)) + ready)
    gc.collect()
    gc.freeze()  # a child's garbage collector then never touches (and copies) these pages
    try:
        serve(req_fd, resp_fd, plan)
    except BrokenPipeError:
        pass


if __name__ == "__main__":
    main()
