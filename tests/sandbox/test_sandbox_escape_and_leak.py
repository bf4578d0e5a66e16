"""Hostile programs, classes "escape" and "leak": programs that try to read or write what they should
not (canary files, the environment, the parent's memory), open sockets, start programs, or
leave processes, threads and descriptors behind.

As in the other hostile-program files the AST check is off and the programs reach ``os``, ``sys`` and
``ctypes`` through ``random._os``; raw system calls go through ``libc.syscall`` so that no
Python-level guard is in the way. Assertions are about outcomes (the canary's secret never
appears, the file is never created, the server never sees a connection, the census of the
workers' processes, threads and descriptors is unchanged), not about which layer stopped it.
"""
from __future__ import annotations

import os
import select
import socket

import pytest

from sandbox import Sandbox

PRELUDE = '''
import random
os = random._os
sys = os.sys
ctypes = sys.modules["ctypes"]
libc = ctypes.CDLL(None, use_errno=True)
open = sys.modules["builtins"].open  # the real one: the guarded builtins leave it out
def attempt(fn, *args):
    try:
        return "ok:" + str(fn(*args))
    except BaseException as exc:
        return "err:" + type(exc).__name__
'''
TABLE = [["a", "b"]]
SECRET = "canary-7f3a9c"


@pytest.fixture(scope="module")
def sb():
    with Sandbox(workers=2, ast_check=False) as box:
        yield box


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "canary.txt"
    path.write_text(SECRET)
    return path


def run(sb, body, timeout_s=1.0):
    return sb.run(PRELUDE + body, TABLE, timeout_s=timeout_s, memory_mb=128)


def leaked(r) -> bool:
    return SECRET in repr(r.output) or SECRET in r.message


# ----------------------------------------------------------------------------- escape: read

READS = [
    "def transform(t):\n    fd = os.open(PATH, os.O_RDONLY)\n"
    "    return [[os.read(fd, 100).decode()]]\n",
    "def transform(t):\n    return [[open(PATH).read()]]\n",
    # openat(AT_FDCWD, path, O_RDONLY) as a raw system call, past every Python-level guard
    "def transform(t):\n    fd = libc.syscall(257, -100, PATH.encode(), 0)\n"
    "    buf = ctypes.create_string_buffer(100)\n    libc.read(fd, buf, 100)\n"
    "    return [[str(fd), buf.value.decode()]]\n",
    "def transform(t):\n    fd = libc.syscall(2, PATH.encode(), 0)\n    return [[str(fd)]]\n",
]


@pytest.mark.parametrize("body", READS, ids=["os_open", "builtin_open", "raw_openat", "raw_open"])
def test_canary_file_cannot_be_read(sb, canary, body):
    r = run(sb, f"PATH = {str(canary)!r}\n" + body)
    assert not leaked(r)
    assert not r.ok or r.output[0][0] == "-1"


@pytest.mark.parametrize("body", READS[:3], ids=["os_open", "builtin_open", "raw_openat"])
def test_control_the_same_reads_work_unconfined(canary, body):
    """The hostile programs are real: run in this process, they do read the canary."""
    namespace: dict = {}
    exec(PRELUDE + f"PATH = {str(canary)!r}\n" + body, namespace)
    assert SECRET in repr(namespace["transform"](TABLE))


def test_file_system_is_empty_and_system_files_unreadable(sb):
    r = run(sb, "def transform(t):\n"
                "    return [[attempt(os.listdir, '/'), attempt(os.listdir, '/etc'),"
                " attempt(lambda: open('/etc/passwd').read()), attempt(os.stat, '/etc/passwd'),"
                " attempt(os.getcwd)]]\n")
    assert r.ok, r
    listing, etc, passwd, stat, cwd = r.output[0]
    assert listing in ("ok:[]", "err:PermissionError") and "etc" not in listing
    assert etc.startswith("err:") and passwd.startswith("err:") and "root:" not in passwd
    if sb.protections()["chroot"]:  # without it (no root) metadata is visible, contents not
        assert stat.startswith("err:")


def test_environment_is_empty(monkeypatch):
    monkeypatch.setenv("SANDBOX_CANARY_ENV", SECRET)
    with Sandbox(workers=1, ast_check=False) as box:
        r = box.run(PRELUDE + f'''
def transform(t):
    out = [k + "=" + v for k, v in os.environ.items()]
    for path in ("/proc/self/environ", "/proc/1/environ", "/proc/{os.getpid()}/environ"):
        out.append(attempt(lambda: open(path, "rb").read().decode()))
    return [out]
''', TABLE)
    assert r.ok and not leaked(r), r
    assert all(not c.startswith("ok:") for c in r.output[0][-3:])


def test_parent_memory_cannot_be_read(sb):
    parent = os.getpid()
    r = run(sb, f'''
def transform(t):
    buf = ctypes.create_string_buffer(64)
    local = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 64)
    remote = (ctypes.c_void_p * 2)(0x400000, 64)
    vm = libc.syscall(310, {parent}, local, 1, remote, 1, 0)   # process_vm_readv
    return [[str(vm), attempt(lambda: open("/proc/{parent}/mem", "rb").read(1))]]
''')
    assert r.ok and r.output[0][0] == "-1" and r.output[0][1].startswith("err:"), r


# ----------------------------------------------------------------------------- escape: act

WRITES = [
    "def transform(t):\n    fd = os.open(PATH, os.O_WRONLY | os.O_CREAT, 0o644)\n"
    "    os.write(fd, b'x')\n",
    "def transform(t):\n    return [[str(libc.syscall(257, -100, PATH.encode(), 0o101, 0o644))]]\n",
    "def transform(t):\n    os.execv('/bin/sh', ['sh', '-c', 'touch ' + PATH])\n",
    "def transform(t):\n    return [[str(os.system('touch ' + PATH))]]\n",
    # execve(2) raw
    "def transform(t):\n"
    "    argv = (ctypes.c_char_p * 4)(b'/bin/sh', b'-c', ('touch ' + PATH).encode(), None)\n"
    "    return [[str(libc.syscall(59, b'/bin/sh', argv, None))]]\n",
    "def transform(t):\n    os.mkdir(PATH)\n",
]
WRITE_IDS = ["os_open_write", "raw_creat", "execv", "system", "raw_execve", "mkdir"]


@pytest.mark.parametrize("body", WRITES, ids=WRITE_IDS)
def test_nothing_is_written_or_started(sb, tmp_path, body):
    target = tmp_path / "written"
    r = run(sb, f"PATH = {str(target)!r}\n" + body)
    assert not target.exists()
    assert not r.ok or r.output[0][0] in ("-1", "127", "32512", "256")


@pytest.mark.parametrize("body", [WRITES[0], WRITES[1], WRITES[5]],
                         ids=["os_open_write", "raw_creat", "mkdir"])
def test_control_the_same_writes_work_unconfined(tmp_path, body):
    namespace: dict = {}
    exec(PRELUDE + f"PATH = {str(tmp_path / 'written')!r}\n" + body, namespace)
    namespace["transform"](TABLE)
    assert (tmp_path / "written").exists()


CONNECT = '''
def transform(t):
    s = libc.socket(2, 1, 0)
    addr = bytes([2, 0, PORT >> 8, PORT & 255, 127, 0, 0, 1]) + bytes(8)
    c = libc.connect(s, addr, 16)
    u = libc.socket(1, 1, 0)
    for fd in (s, u):
        if fd >= 0:
            os.close(fd)
    return [[str(s), str(c), str(u)]]
'''


def _listener_sees(program_runner) -> bool:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        program_runner(f"PORT = {server.getsockname()[1]}\n" + CONNECT)
        # a completed connection waits in the listen backlog, making the socket readable
        return bool(select.select([server], [], [], 0.2)[0])
    finally:
        server.close()


def test_no_network_even_to_a_local_listener(sb):
    results = []
    assert not _listener_sees(lambda code: results.append(run(sb, code)))
    assert results[0].ok and results[0].output == [["-1", "-1", "-1"]], results


def test_control_the_same_connect_works_unconfined():
    assert _listener_sees(lambda code: exec(PRELUDE + code, ns := {}) or ns["transform"](TABLE))


@pytest.mark.parametrize("call", [
    "libc.ptrace(16, os.getppid(), 0, 0)",            # PTRACE_ATTACH
    "libc.setuid(0)",
    "libc.chroot(b'..')",
    "libc.unshare(0x10000000)",                        # CLONE_NEWUSER
    "libc.mount(b'none', b'/', b'tmpfs', 0, None)",
    "libc.syscall(425, 8, None)",                      # io_uring_setup
    "libc.syscall(321, 0, None, 0)",                   # bpf
    "libc.syscall(323, 0)",                            # userfaultfd
    "libc.syscall(298, None, 0, -1, -1, 0)",           # perf_event_open
    "libc.syscall(319, b'x', 0)",                      # memfd_create
    "libc.syscall(29, 0, 4096, 0o1600)",               # shmget
    "libc.syscall(308, 3, 0)",                         # setns
    "libc.syscall(0x40000000 + 39)",                   # getpid through the x32 ABI
    "libc.prctl(22, 0)",                               # switch seccomp off
    "libc.mmap(None, 4096, 7, 0x22, -1, 0)",           # executable memory (MAP_FAILED)
], ids=["ptrace", "setuid0", "chroot", "unshare", "mount", "io_uring", "bpf", "userfaultfd",
        "perf_event", "memfd", "shmget", "setns", "x32", "seccomp_off", "mmap_exec"])
def test_dangerous_system_calls_fail(sb, call):
    r = run(sb, f"def transform(t):\n    return [[str({call})]]\n")
    assert r.ok and r.output == [["-1"]], r


def test_forged_reply_to_the_workers_pipes_is_impossible(sb):
    r = run(sb, '''
def transform(t):
    forged = bytes([0, 0]) + bytes(12) + (9).to_bytes(4, "little") + b'[["pwn"]]'
    out = [attempt(os.write, fd, forged) for fd in (0, 1, 2, 4, 100, 101, 102)]
    return [out]
''')
    assert r.ok and r.output != [["pwn"]]
    # 0-2 are the child's own /dev/null, 4 its own tag pipe (the worker reads only the tags the
    # harness wrote before the program started); the workers' pipes (100 and up) are closed
    assert [c.startswith("ok:") for c in r.output[0]] == [True] * 4 + [False] * 3


# ----------------------------------------------------------------------------- leak

@pytest.mark.parametrize("body", [
    "def transform(t):\n"
    "    sys.modules['_thread'].start_new_thread(lambda: __import__('time').sleep(99), ())\n",
    "def transform(t):\n    if os.fork() == 0:\n        while True:\n            pass\n",
    "def transform(t):\n    os.setsid()\n",
    "def transform(t):\n    fds = []\n    while True:\n        fds.append(os.dup(0))\n",
    "def transform(t):\n    while True:\n        os.pipe()\n",
    # clone(2) with the flags of a thread, as a raw system call
    "def transform(t):\n    return [[str(libc.syscall(56, 0x10f00, 0, 0, 0, 0))]]\n",
], ids=["thread", "fork_child", "setsid", "dup_fds", "pipes", "raw_clone"])
def test_nothing_is_left_behind(sb, body):
    before = sb.census()
    r = run(sb, body)
    assert not r.ok or r.output == [["-1"]], r
    after = sb.census()
    assert (after["processes"], after["threads"], after["fds"]) == (
        before["processes"], before["threads"], before["fds"])


def test_output_to_stdout_and_stderr_goes_nowhere(sb, capfd):
    r = run(sb, "def transform(t):\n    for _ in range(2000):\n        print('noise' * 100)\n"
                "        sys.stderr.write('noise\\n')\n    os.write(1, b'raw')\n    return t\n")
    assert r.ok and r.output == TABLE
    out, err = capfd.readouterr()
    assert "noise" not in out + err and "raw" not in out + err
