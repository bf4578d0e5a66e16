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

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")


class WorkerError(RuntimeError):
    """A worker process could not be started."""


class Worker:
    def __init__(self, options: dict, cwd: str):
        self.options = json.dumps(options)
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
            [sys.executable, "-I", "-S", "-B", ZYGOTE, self.options],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={}, cwd=self.cwd,
            close_fds=True, start_new_session=True, bufsize=0)
        os.set_blocking(self.rfd, False)

    def wait_ready(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError(f"sandbox worker did not start within {timeout_s:g} s")
            select.select([self.rfd], [], [], left)
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
                    raise WorkerError("sandbox worker sent a reply before it was ready")
                self.report = json.loads(payload)
                return self.report

    def send(self, request: bytes) -> None:
        """Write one request; raises ``OSError`` (``BrokenPipeError``) if the worker is gone."""
        _wire.write_all(self.proc.stdin.fileno(), request)

    def feed(self):
        """Read what is available; a complete ``(kind, code, wall_us, cpu_us, payload)`` or None.

        Raises ``EOFError`` when the worker has closed its end (it died).
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
        if len(self.buf) < size + n:
            return None
        payload = bytes(self.buf[size:size + n])
        del self.buf[:size + n]
        return kind, code, wall_us, cpu_us, payload

    def kill(self) -> int | None:
        """SIGKILL the worker's whole process group, close the pipes, reap; the exit status."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
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
