"""close() from another thread while a consumer is inside ``iter_many``: the consumer gets the
results already finished, then one clean ``RuntimeError("this Sandbox is closed")``; no worker
is left and nothing restarts one."""
from __future__ import annotations

import os
import threading
import time

import pytest

from sandbox import Sandbox

SPIN = "import time\ndef transform(t):\n    e = time.process_time() + 0.25\n    while time.process_time() < e:\n        pass\n    return t\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("rep", range(3))
def test_close_from_another_thread_inside_iter_many(rep):
    box = Sandbox(workers=2)
    pids = box.worker_pids()
    got, errors = [], []
    first = threading.Event()

    def consume():
        try:
            for i, r in box.iter_many([(SPIN, [["x"]])] * 6, timeout_s=1.5):
                got.append((i, r))
                first.set()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    t = threading.Thread(target=consume)
    t.start()
    assert first.wait(20)
    box.close()
    t.join(20)
    assert not t.is_alive()
    assert 1 <= len(got) <= 6
    assert all(r.ok and r.output == [["x"]] for _, r in got), got
    if len(got) < 6:
        assert len(errors) == 1, errors
        assert type(errors[0]) is RuntimeError and str(errors[0]) == "this Sandbox is closed"
    else:
        assert not errors
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    assert box.closed
    with pytest.raises(RuntimeError, match="this Sandbox is closed"):
        box.run(SPIN, [["x"]])
    assert all(w.proc is None for w in box._workers)  # no restart on a closed pool


def _live_workers() -> list[int]:
    """Worker processes of this process still alive (a zombie is not), found by their marker."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"# sandbox worker" not in f.read():
                    continue
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry))
    return found


@pytest.mark.parametrize("offset_ms", [0, 1, 2, 3, 4, 6, 8])
def test_close_ends_a_worker_being_restarted(offset_ms):
    """A worker dies (OOM killer, an operator) while a consumer is inside ``iter_many``, and
    ``close()`` comes while the pool is starting its replacement: the new worker must end too
    (``_restart`` checked ``_closing`` only before ``spawn()``, and ``close()`` killed only
    ``worker.proc``, which is ``None`` until ``Popen`` returns)."""
    before = set(_live_workers())  # other pools of this process (run_transform's) stay
    box = Sandbox(workers=2)
    started = threading.Event()

    def consume():
        try:
            for _ in box.iter_many([(SPIN, [["x"]])] * 40, timeout_s=1.5):
                started.set()
        except RuntimeError:
            pass

    t = threading.Thread(target=consume)
    t.start()
    assert started.wait(30)
    os.killpg(box.worker_pids()[0], 9)
    time.sleep(offset_ms / 1000)
    box.close()
    t.join(30)
    assert not t.is_alive()
    deadline = time.monotonic() + 5
    while set(_live_workers()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(_live_workers()) - before, "a worker outlived close()"


def test_close_while_popen_starts_the_replacement_ends_it(monkeypatch):
    """The same race made certain: ``close()`` runs (from another thread) exactly while
    ``Popen`` starts the replacement of a dead worker, before ``spawn`` has the new process."""
    from sandbox import _worker

    before = set(_live_workers())
    box = Sandbox(workers=1)
    real = _worker.subprocess.Popen

    def popen(*args, **kwargs):
        proc = real(*args, **kwargs)
        closer = threading.Thread(target=box.close)
        closer.start()
        closer.join(30)
        return proc

    os.killpg(box.worker_pids()[0], 9)
    monkeypatch.setattr(_worker.subprocess, "Popen", popen)
    with pytest.raises(RuntimeError, match="this Sandbox is closed"):
        box.run(SPIN, [["x"]])
    deadline = time.monotonic() + 5
    while set(_live_workers()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(_live_workers()) - before, "a worker outlived close()"
