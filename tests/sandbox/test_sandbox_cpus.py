"""Workers pinned to CPUs of their own (``sandbox/_leases.py``): a worker and every process it
starts run on its CPU, no two sandboxes on the machine pin to the same CPU, a CPU comes back
when its ``Sandbox`` closes or its owner is killed, and ``pin_cpus=False`` pins nothing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sandbox import Sandbox

ALLOWED = sorted(os.sched_getaffinity(0))
pytestmark = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs two CPUs")


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """A temporary directory of this test's own: the leases of sandboxes in other test
    processes (pytest-xdist) are not seen."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").iterdir():
            todo += [int(c) for c in (task / "children").read_text().split()]
    return out


def test_each_worker_and_what_it_starts_runs_on_its_own_cpu(own_tmp):
    with Sandbox(workers=2) as sb:
        assert sb.cpus() == ALLOWED[:2]
        for cpu, pid in zip(sb.cpus(), sb.worker_pids()):
            procs = descendants(pid)
            assert len(procs) >= 3  # the worker, its namespace's collector and the template
            assert all(os.sched_getaffinity(p) == {cpu} for p in procs)
        assert sb.run("def transform(t):\n    return t\n", [["a"]]).output == [["a"]]
        # a run's child cannot move itself: sched_setaffinity is not in the seccomp allowlist
        r = sb.run("import os\ndef transform(t):\n    os.sched_setaffinity(0, {0, 1})\n"
                   "    return t\n", [["a"]])
        if sb.protections()["seccomp"]:
            assert r.error == "exception" and "Operation not permitted" in r.message, r


def test_no_two_sandboxes_pin_to_one_cpu_and_a_closed_one_gives_its_cpus_back(own_tmp):
    first = Sandbox(workers=2)
    try:
        with Sandbox(workers=len(ALLOWED)) as second:
            assert set(second.cpus()) - {None} == set(ALLOWED[2:])  # only the free ones
            assert second.cpus().count(None) == 2
            r = second.run_many([("def transform(t):\n    return t\n", [["x"]])] * 8)
            assert all(x.ok for x in r)
    finally:
        first.close()
    with Sandbox(workers=1) as third:
        assert third.cpus() == ALLOWED[:1]
    with Sandbox(workers=2, pin_cpus=False) as unpinned:
        assert unpinned.cpus() == [None, None]
        assert all(os.sched_getaffinity(p) == set(ALLOWED) for p in unpinned.worker_pids())


def test_a_killed_owner_gives_its_cpus_back(own_tmp):
    code = (f"import os, signal, tempfile; tempfile.tempdir = {str(own_tmp)!r}; "
            "from sandbox import Sandbox; sb = Sandbox(workers=2); print(sb.cpus(), flush=True); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[2])
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.strip() == str(ALLOWED[:2])
    with Sandbox(workers=2) as sb:  # its workers died with it (their pipes closed)
        assert sb.cpus() == ALLOWED[:2]
