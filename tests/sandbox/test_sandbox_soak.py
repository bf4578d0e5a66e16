"""Many consecutive runs through one ``Sandbox`` leave nothing behind and keep memory flat.

The slow test is the issue's acceptance check (10,000 runs; ``python -m pytest -m slow
tests/sandbox/test_sandbox_soak.py``); the fast one runs the same check on a few hundred runs.
"""
from __future__ import annotations

import os

import pytest

from sandbox import Sandbox

TABLE = [[f"r{i}", f"{i * 7}", "x, y"] for i in range(8)]
MIX = [
    "import re\ndef transform(t):\n    return [[re.sub(r'\\d', '#', c) for c in r] for r in t]\n",
    "def transform(t):\n    return [r[::-1] for r in t]\n",
    "def transform(t):\n    return t[99]\n",                            # exception
    "def transform(t):\n    return [[1]]\n",                            # bad_output
    "def transform(t)\n    return t\n",                                # syntax
    "def transform(t):\n    x = bytearray(1 << 33)\n",                  # memory
    "import random\ndef transform(t):\n    while True:\n        random._os.fork()\n",
    "import random\ndef transform(t):\n    random._os._exit(1)\n",      # crash
]


def parent_state() -> tuple[int, int]:
    """(open descriptors, resident KiB) of this process."""
    with open("/proc/self/status") as fh:
        rss = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))
    return len(os.listdir("/proc/self/fd")), rss


def soak(runs: int, batch: int = 200) -> None:
    with Sandbox(workers=2) as sb:
        items = [(MIX[i % len(MIX)], TABLE) for i in range(batch)]
        sb.run_many(items, timeout_s=1.0, memory_mb=128)  # warm: first growth is not a leak
        before, (fds0, rss0) = sb.census(), parent_state()
        pids = sb.worker_pids()
        for _ in range(runs // batch):
            results = sb.run_many(items, timeout_s=1.0, memory_mb=128)
            errors = [r.error for r in results[: len(MIX)]]
            assert errors == [None, None, "exception", "bad_output", "syntax", "memory",
                              "exception", "crash"]
        after, (fds1, rss1) = sb.census(), parent_state()
        assert sb.worker_pids() == pids and sb.restarts == 0
        assert (after["processes"], after["threads"], after["fds"]) == (
            before["processes"], before["threads"], before["fds"])
        assert after["rss_kb"] <= before["rss_kb"] + 2048, (before, after)
        assert fds1 == fds0
        assert rss1 <= rss0 + 4096, (rss0, rss1)


def test_a_few_hundred_runs_leave_nothing_behind():
    soak(400)


@pytest.mark.slow
def test_ten_thousand_runs_leave_nothing_behind():
    soak(10_000)
