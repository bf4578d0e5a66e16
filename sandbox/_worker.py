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
import time

from . import _wire

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))
MODULES = ("_wire", "_kernel", "_seccomp", "policy", "_child", "zygote")  # dependency order

# The worker's whole command line (``python -c BOOT OPTIONS``). It compiles the sandbox's modules
# under ``<sandbox>/NAME.py`` names, so no frame or function a program can reach names a path of
# this machine; the source folder arrives in the options, which ``hide_host_paths`` then drops.
BOOT = """# sandbox worker: zygote.py (how ps and tests tell a worker from other processes)
def _boot():
    import json, sys, types
    options = json.loads(sys.argv[1])
    folder = options.pop("source_dir")
    for name in options.pop("modules"):
        with open(folder + "/" + name + ".py", "rb") as fh:
            code = compile(fh.read(), "<sandbox>/" + name + ".py", "exec", dont_inherit=True)
        module = types.ModuleType(name)
        sys.modules[name] = module
        exec(code, module.__dict__)
    return sys.modules["zygote"].main, options
_main, _options = _boot()
del _boot
_main(_options)
"""


class WorkerError(RuntimeError):
    """A worker process could not be started."""


class Worker:
    def __init__(self, options: dict, cwd: str):
        self.options = json.dumps(dict(options, source_dir=SOURCE_DIR, modules=MODULES))
        # A reply is never bigger than an output at its limit (or the ready report): a worker
        # that claims more is broken, and the parent buffers nothing more of it.
        self.max_reply = options["limits"]["max_bytes"] + (1 << 16)
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.buf = bytearray()
        self.report: dict = {}

    @property
    def rfd(self) -> int:
        return self.proc.stdout.fileno()

    def spawn(self) -> None:
        """Start the process; ``wait_ready`` completes the start."""
        self.buf.clear()
        self.proc = subprocess.Popen(
            # Not -I: it would ignore PYTHONHASHSEED. The environment below is all there is,
            # so -s -S (no site, no user site) isolates as much. A fixed hash seed keeps set
            # and dict order, and so outputs, the same from one worker (and run) to the next.
            # LD_BIND_NOW: resolve every symbol once here, not lazily in each run's child
            # (a lazy binding writes the GOT: a copy-on-write fault per page per child).
            [sys.executable, "-s", "-S", "-B", "-c", BOOT, self.options],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=self.cwd,
            env={"LD_BIND_NOW": "1", "PYTHONHASHSEED": "0"},
            close_fds=True, start_new_session=True, bufsize=0)
        os.set_blocking(self.rfd, False)

    def wait_ready(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError(f"sandbox worker did not start within {timeout_s:g} s")
            poller = select.poll()
            poller.register(self.rfd, select.POLLIN)
            poller.poll(left * 1000)
            try:
                reply = self.feed()
            except EOFError:
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

    def kill(self, grace_s: float = 0.0) -> int | None:
        """End the worker and everything it started; close the pipes, reap; the exit status.

        With ``grace_s``, first close the request pipe and give an idle worker that long to
        exit by itself (it then reaps its own children, so their CPU time is accounted).
        Then SIGKILL the whole process group, unless the worker has already been reaped.
        """
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
