"""The parent's handle on one worker process (``zygote.py``): start, send, read, kill.

The worker runs in its own session (process group), so ``kill`` can take down the worker, the
PID-namespace copy it forked and any run child in one ``killpg`` before the worker is reaped
(until then its pid, and so the group id, cannot be reused). Replies are read without blocking
into a buffer; one request is in flight per worker at a time.

Not covered: deciding *when* to kill or restart a worker; ``pool.Sandbox`` does that.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import zlib

from . import _wire

# The longest the parent sleeps in one poll(): an interrupt that does not end the poll with EINTR
# (``_thread.interrupt_main``, a SIGINT the kernel gave another thread) runs its handler only
# when the main thread runs Python again, so a poll as long as a run's deadline (up to
# WALL_FACTOR x timeout_s + GRACE_S) held a Ctrl-C back that long.
WAKE_S = 0.05

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))
MODULES = ("_wire", "_kernel", "_seccomp", "policy", "_optional", "_child", "_scrub", "_confine",
           "_collect", "zygote")  # dependency order

# The worker's whole command line (``python -s -S -B -c BOOT``): it names no path but the
# interpreter's (which the worker overwrites in its own memory, ``_scrub.scrub``). The sandbox's
# modules and the options arrive through the request pipe as one frame (4-byte length, then
# zlib-compressed JSON ``{"modules": [[name, source], ...], "options": {...}}``), and are
# compiled under ``<sandbox>/NAME.py`` names: the worker never learns where the project lives.
# The worker first starts itself again with address-space randomisation off (``personality``,
# ADDR_NO_RANDOMIZE; the request pipe is untouched by the exec), so every worker, and so every
# run's child, has the same address layout: a run's allocation counts and addresses then do not
# depend on which worker it lands on. (A run has full FFI through ``ctypes`` anyway: ASLR
# protects nothing here.) Where the kernel refuses, the worker runs as it is.
BOOT = """# sandbox worker: zygote.py (how ps and tests tell a worker from other processes)
def _boot():
    import json, os, sys, types, zlib
    try:  # the same address layout in every worker: start again with ASLR off, once
        import ctypes
        persona = ctypes.CDLL(None).personality
        now = persona(0xFFFFFFFF)
        if now != -1 and not now & 0x40000 and persona(now | 0x40000) != -1:
            os.execv(sys.executable, [sys.executable] + sys.orig_argv[1:])
    except (ImportError, OSError, AttributeError):
        pass
    def read(n):
        parts = []
        while n:
            chunk = os.read(0, n)
            if not chunk:
                raise SystemExit(3)
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)
    boot = json.loads(zlib.decompress(read(int.from_bytes(read(4), "little"))))
    for name, source in boot["modules"]:
        code = compile(source, "<sandbox>/" + name + ".py", "exec", dont_inherit=True)
        module = types.ModuleType(name)
        sys.modules[name] = module
        exec(code, module.__dict__)
    return sys.modules["zygote"].main, boot["options"]
_main, _options = _boot()
del _boot
_main(_options)
"""
_SOURCES: list | None = None


def boot_frame(options: dict) -> bytes:
    """What a worker reads first from its request pipe: the sources and the options."""
    global _SOURCES
    if _SOURCES is None:
        _SOURCES = []
        for name in MODULES:
            with open(os.path.join(SOURCE_DIR, name + ".py"), encoding="utf-8") as fh:
                _SOURCES.append([name, fh.read()])
    data = zlib.compress(json.dumps({"modules": _SOURCES, "options": options}).encode(), 6)
    return len(data).to_bytes(4, "little") + data


class WorkerError(RuntimeError):
    """A worker process could not be started."""


class WorkerEnded(RuntimeError):
    """The worker was ended (its pool closed) and starts no process any more."""


class Worker:
    def __init__(self, options: dict, cwd: str, cpu: int | None = None):
        self.boot = boot_frame(options)  # under the 64 KiB of a pipe: spawn never blocks
        # A reply is never bigger than an output at its limit (or the ready report): a worker
        # that claims more is broken, and the parent buffers nothing more of it.
        self.max_reply = options["limits"]["max_bytes"] + (1 << 16)
        self.cpu = cpu  # the CPU it runs on (None: wherever the scheduler puts it)
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.buf = bytearray()
        self.report: dict = {}
        # ``end()`` may come from another thread at any moment, also while ``spawn`` is inside
        # ``Popen`` (``proc`` still None): the lock orders the two, and a process started after
        # ``end()`` is killed by ``spawn`` itself
        self._mu = threading.Lock()
        self.ended = False

    @property
    def rfd(self) -> int:
        return self.proc.stdout.fileno()

    def spawn(self) -> None:
        """Start the process; ``wait_ready`` completes the start. Raises ``WorkerEnded`` once
        ``end()`` has been called (before the start, or while it was under way)."""
        if self.ended:
            raise WorkerEnded("this worker has been ended")
        self.buf.clear()
        proc = subprocess.Popen(
            # Not -I: it would ignore PYTHONHASHSEED. The environment below is all there is,
            # so -s -S (no site, no user site) isolates as much. A fixed hash seed keeps set
            # and dict order, and so outputs, the same from one worker (and run) to the next.
            # LD_BIND_NOW: resolve every symbol once here, not lazily in each run's child
            # (a lazy binding writes the GOT: a copy-on-write fault per page per child).
            [sys.executable, "-s", "-S", "-B", "-c", BOOT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=self.cwd,
            # TZ: so the host's zone is never read (``zygote.main`` removes it once in the empty
            # root); a POSIX rule, not a zone name that a host file could stand for
            env={"LD_BIND_NOW": "1", "PYTHONHASHSEED": "0", "TZ": "UTC0"},
            close_fds=True, start_new_session=True, bufsize=0)
        with self._mu:
            self.proc = proc
            ended = self.ended
        if ended:  # end() came while Popen ran: this process is ours to end
            self.kill()
            raise WorkerEnded("this worker has been ended")
        os.set_blocking(self.rfd, False)
        if self.cpu is not None:
            # Pinned here, before the boot frame is sent: until it has read it, the process forks
            # nothing (all it starts inherits this), and it never learns the CPU (nothing in one
            # worker may differ from another's: a run could see it)
            try:
                os.sched_setaffinity(proc.pid, {self.cpu})
            except OSError:  # the parent's cpuset changed since the lease: run unpinned
                self.cpu = None  # (and say so: Sandbox.cpus)
        try:
            _wire.write_all(self.proc.stdin.fileno(), self.boot)
        except OSError:
            pass  # it died at once: wait_ready reports it

    def wait_ready(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError(f"sandbox worker did not start within {timeout_s:g} s")
            try:
                poller = select.poll()
                poller.register(self.rfd, select.POLLIN)
                poller.poll(min(left, WAKE_S) * 1000)  # an interrupt is raised within WAKE_S
                reply = self.feed()
            except (AttributeError, OSError, ValueError):
                if self.ended:  # end() from another thread took the process away
                    raise WorkerEnded("this worker has been ended") from None
                raise
            except EOFError:
                if self.ended:
                    raise WorkerEnded("this worker has been ended") from None
                status = self.kill()
                raise WorkerError(f"sandbox worker exited at start (status {status}); "
                                  "its stderr says why") from None
            if reply is not None:
                kind, payload = reply[0], reply[-1]
                if kind != _wire.READY:
                    self.kill()
                    raise WorkerError("sandbox worker failed to start: "
                                      + payload.decode("utf-8", "replace"))
                self.report = json.loads(payload)
                return self.report

    def send(self, request: bytes) -> None:
        """Write one request; raises ``OSError`` (``BrokenPipeError``) if the worker is gone."""
        _wire.write_all(self.proc.stdin.fileno(), request)

    def feed(self):
        """Read what is available; a complete ``(kind, code, wall_us, cpu_us, payload)`` or None.

        Raises ``EOFError`` when the worker has closed its end (it died) or announces a reply
        bigger than any it can legitimately send.
        """
        while True:
            try:
                chunk = os.read(self.rfd, 1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                raise EOFError
            self.buf += chunk
        size = _wire.REPLY.size
        if len(self.buf) < size:
            return None
        kind, code, wall_us, cpu_us, n = _wire.REPLY.unpack_from(self.buf)
        if n > self.max_reply:
            raise EOFError
        if len(self.buf) < size + n:
            return None
        payload = bytes(self.buf[size:size + n])
        del self.buf[:size + n]
        return kind, code, wall_us, cpu_us, payload

    def end(self, grace_s: float = 0.0) -> None:
        """Kill the process and start none again, from any thread: a ``spawn`` under way when
        this is called kills what it started."""
        with self._mu:
            self.ended = True
        self.kill(grace_s)

    def kill(self, grace_s: float = 0.0) -> int | None:
        """End the worker and everything it started; close the pipes, reap; the exit status.

        With ``grace_s``, first close the request pipe and give an idle worker that long to
        exit by itself (it then reaps its own children, so their CPU time is accounted).
        Then SIGKILL the whole process group, unless the worker has already been reaped.
        """
        with self._mu:
            proc, self.proc = self.proc, None
        if proc is None:
            return None
        if grace_s > 0:
            try:
                proc.stdin.close()
                proc.wait(grace_s)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if proc.returncode is None:  # once reaped, the id may belong to someone else
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        return proc.wait()
