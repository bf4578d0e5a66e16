"""``timeout`` is judged on the child's own CPU time: a program needing 85% of its CPU limit
passes beside a CPU and memory hog on the other worker, every time; a program that sleeps is
still stopped, by the wall-clock backstop (5x the limit)."""
from __future__ import annotations

import time

import pytest

from sandbox import Sandbox

LIMIT = 1.0
BENIGN = ("import time\ndef transform(t):\n    e = time.process_time() + %r\n"
          "    x = 0\n    while time.process_time() < e:\n        x += 1\n    return t\n"
          % (0.85 * LIMIT))
HOG = ("def transform(t):\n    b = []\n    while True:\n        b.append(bytearray(1 << 20))\n"
       "        if len(b) > 150:\n            b.clear()\n")
SLEEPER = "import time\ndef transform(t):\n    time.sleep(60)\n    return t\n"


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2) as sb:
        yield sb


def test_program_at_85_percent_of_cpu_limit_passes_beside_a_hog(box):
    items = []
    for _ in range(4):
        items += [(BENIGN, [["x"]]), (HOG, [["h"]])]
    results = box.run_many(items, timeout_s=LIMIT, memory_mb=256)
    for k in range(0, len(items), 2):
        assert results[k].ok and results[k].output == [["x"]], results[k]
        assert results[k + 1].error in ("timeout", "memory"), results[k + 1]


def test_sleeping_program_is_stopped_by_the_wall_backstop(box):
    t0 = time.monotonic()
    r = box.run(SLEEPER, [["x"]], timeout_s=0.5)
    took = time.monotonic() - t0
    assert r.error == "timeout" and "wall" in r.message, r
    assert 2.4 <= took < 15, took
    assert r.cpu_ms < 500
