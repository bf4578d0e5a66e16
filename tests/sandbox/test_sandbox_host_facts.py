"""Host facts a run could read, hidden where it is cheap (issue 34): the host's timezone (the worker
reads it with ``TZ`` fixed, before ``import time``), the host ``/dev/null`` (each run's fds 0-2 are a
null device of the worker's own root), and the host's uptime (``CLOCK_BOOTTIME``/``CLOCK_MONOTONIC``
in a time namespace start near 1 s). What stays visible is listed in docs/sandbox.md.

The AST check is off and the programs reach ``os`` and ``time`` as the hostile-program files do."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from sandbox import Sandbox

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRELUDE = "import random, time\nos = random._os\n"


@pytest.fixture(scope="module")
def sb():
    started = time.monotonic()
    with Sandbox(workers=1, ast_check=False, start_timeout_s=1800) as box:
        box.started = started
        yield box


def test_dev_null_is_the_workers_own_and_still_a_null_device(sb):
    r = sb.run(PRELUDE + """
def transform(t):
    st = [os.fstat(fd) for fd in (0, 1, 2)]
    os.write(2, b"x" * 100000)  # stderr takes anything, as /dev/null does
    return [[str(s.st_dev), str(s.st_ino), str(s.st_rdev), str(s.st_ctime_ns)] for s in st]
""", [["a"]], timeout_s=5)
    assert r.ok, r
    host = os.stat("/dev/null")
    assert len({tuple(row) for row in r.output}) == 1  # one description on 0-2
    dev, ino, rdev, ctime = map(int, r.output[0])
    assert rdev == host.st_rdev  # a null device (1, 3)
    assert (dev, ino) != (host.st_dev, host.st_ino), "the child's /dev/null is the host's"
    assert ctime != host.st_ctime_ns  # the host's is the time /dev was populated: its boot


def test_timezone_is_utc_whatever_the_host_has():
    """The host's timezone, which the worker would cache at ``import time``, is never seen. The
    host zone is changed for this check only, in a private mount namespace of a child process."""
    zone = "/usr/share/zoneinfo/Asia/Kolkata"  # +05:30, no daylight saving
    if not (shutil.which("unshare") and os.path.exists(zone) and os.path.exists("/etc/localtime")):
        pytest.skip("needs unshare and the zoneinfo database")
    code = ("import sys; from sandbox import Sandbox\n"
            "with Sandbox(workers=1, ast_check=False, start_timeout_s=1800) as sb:\n"
            f"    r = sb.run({PRELUDE!r} + 'def transform(t):\\n    return [[time.tzname[0], str(time.timezone),"
            " time.strftime(\"%z\", time.localtime(0)), str(os.environ.get(\"TZ\"))]]\\n', [['a']], timeout_s=5)\n"
            "print(r.ok, r.output, r.message)\n")
    host = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f'mount --bind {zone} /etc/localtime && exec "$0" -c "$1"', sys.executable, code],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    if host.returncode and "mount" in host.stderr + host.stdout and "Traceback" not in host.stderr:
        pytest.skip(f"no private mount namespace here: {host.stderr.strip()[:200]}")
    assert host.returncode == 0, host.stderr
    assert host.stdout.strip() == "True [['UTC', '0', '+0000', 'None']]", host.stdout


def test_monotonic_and_boot_clocks_do_not_show_the_host_uptime(sb):
    if not os.path.exists("/proc/self/ns/time"):
        pytest.skip("this kernel has no time namespaces")
    r = sb.run(PRELUDE + """
def transform(t):
    return [[repr(time.clock_gettime(time.CLOCK_BOOTTIME)), repr(time.monotonic())]]
""", [["a"]], timeout_s=5)
    assert r.ok, r
    boot, mono = map(float, r.output[0])
    age = time.monotonic() - sb.started  # the worker is younger than the fixture
    assert 1.0 <= boot <= age + 2 and 1.0 <= mono <= age + 2, (boot, mono, age)
    assert sb.protections()["time_namespace"] is True
    assert time.clock_gettime(time.CLOCK_BOOTTIME) > boot  # the host's own clock is not moved


def test_os_times_does_not_show_the_host_uptime(sb):
    """``os.times().elapsed`` was the host's uptime (the ``times`` call counts clock ticks since
    boot; no time namespace offsets it): now seccomp refuses the call and ``os.times`` answers
    from the run's own clocks; every clock a run can name is offset too."""
    if not os.path.exists("/proc/self/ns/time"):
        pytest.skip("this kernel has no time namespaces")
    r = sb.run(PRELUDE + """
import sys
def transform(t):
    try:
        raw = repr(sys.modules["posix"].times().elapsed)
    except OSError as exc:
        raw = type(exc).__name__
    clocks = [time.clock_gettime(c) for c in (1, 4, 6, 7)]  # MONOTONIC, _RAW, _COARSE, BOOTTIME
    return [[repr(os.times().elapsed), raw, repr(max(clocks))], [repr(v) for v in os.times()]]
""", [["a"]], timeout_s=5)
    assert r.ok, r
    elapsed, raw, clocks = r.output[0]
    age = time.monotonic() - sb.started
    host_uptime = time.clock_gettime(time.CLOCK_BOOTTIME)
    # the raw call is refused (glibc then answers 0 rather than raise)
    assert raw == "PermissionError" or float(raw) == 0.0, raw
    assert float(elapsed) <= age + 2 < host_uptime, (elapsed, age, host_uptime)
    assert float(clocks) <= age + 2, (clocks, age)
    assert all(float(v) >= 0 for v in r.output[1])
