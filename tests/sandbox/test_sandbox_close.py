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
