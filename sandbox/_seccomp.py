"""The seccomp-BPF allowlist each run's child installs just before it runs the program.

Covered: x86_64. The filter lets through only what a pure-Python computation needs (memory
management, reading and writing already-open descriptors, clocks, sleeping, signal masks,
exit) and answers everything else with ``EPERM`` (``EACCES`` for opening files), so a program
that reaches a denied call gets an ordinary ``OSError`` instead of a dead process. In
particular it denies: opening files, sockets, ``fork``/``clone`` (no processes, no threads),
``execve``, ``kill`` and friends, ``ptrace``, ``setsid``/``setpgid``, mounts, namespaces,
``prctl``, ``bpf``, ``io_uring``, ``ioctl``, ``flock``, ``times`` (its return value counts clock
ticks since the host booted, which no time namespace offsets; ``os.times`` is replaced in the
worker, ``_child.times``) and the x32 ABI; ``mmap``/``mprotect``
may not ask for executable memory, ``madvise`` may not ask for ``MADV_MERGEABLE`` (KSM), the clock calls take only clock ids >= 0 (a negative one
names another process's CPU clock: ``EINVAL``), and ``fcntl`` is limited to commands that change nothing
shared (``FCNTL_ALLOWED``: no locks, no changes to an open file description). The architecture is checked first, and a foreign one kills the process.

Not covered: other architectures (``build()`` returns ``None``, and the sandbox reports
seccomp as missing). Loaded both as ``sandbox._seccomp`` and as a top-level module inside the
worker, so it imports only the standard library.
"""
from __future__ import annotations

import ctypes
import errno
import itertools
import os

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
PROT_EXEC = 0x4

RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# BPF opcodes (linux/filter.h)
LD_ABS_W = 0x20
JEQ_K = 0x15
JGE_K = 0x35
JSET_K = 0x45
RET_K = 0x06

# seccomp_data offsets: nr, arch, instruction pointer, then six 64-bit arguments
OFF_NR, OFF_ARCH = 0, 4


def _arg_lo(i: int) -> int:
    return 16 + 8 * i  # low 32 bits of argument i on a little-endian machine


# x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl)
X86_64_ALLOW = {
    "read": 0, "write": 1, "close": 3, "fstat": 5, "poll": 7, "lseek": 8, "munmap": 11,
    "brk": 12, "rt_sigaction": 13, "rt_sigprocmask": 14, "rt_sigreturn": 15, "readv": 19,
    "writev": 20, "select": 23, "sched_yield": 24, "mremap": 25,
    "nanosleep": 35, "getpid": 39, "exit": 60, "gettimeofday": 96,
    "getrusage": 98, "getuid": 102, "getgid": 104, "geteuid": 107,
    "getegid": 108, "getppid": 110, "sigaltstack": 131, "gettid": 186, "time": 201,
    "futex": 202, "sched_getaffinity": 204, "restart_syscall": 219,
    "exit_group": 231, "newfstatat": 262,
    "pselect6": 270, "ppoll": 271, "getrandom": 318, "statx": 332, "rseq": 334,
}
X86_64_NO_EXEC = {"mmap": 9, "mprotect": 10}  # allowed unless PROT_EXEC is asked for
X86_64_OPEN = {"open": 2, "creat": 85, "openat": 257, "openat2": 437}  # -> EACCES
X86_64_FCNTL = 72  # allowed only for the commands below
# madvise with any advice but MADV_MERGEABLE: with KSM on, merged pages are a timing channel between
# runs (a write to a page merged with another run's copy takes a copy-on-write fault)
X86_64_MADVISE = 28
MADV_MERGEABLE = 12
# Allowed only for clock ids >= 0: a negative id names another process's or thread's CPU clock
# (``~pid << 3 | type``), e.g. the worker's, whose CPU time counts the runs before this one.
X86_64_CLOCK = {"clock_gettime": 228, "clock_getres": 229, "clock_nanosleep": 230}

# fcntl commands that change nothing another process can see: they read, or they change this
# process's own descriptor table (FD_CLOEXEC, duplicates, which RLIMIT_NOFILE already caps).
# Everything that changes an open file description, shared with the worker and every other
# child (F_SETFL, F_SETOWN, F_SETSIG, F_SETLEASE, F_NOTIFY, F_SETPIPE_SZ, seals, hints) or takes
# a lock (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW) is EPERM.
FCNTL_ALLOWED = {"F_DUPFD": 0, "F_GETFD": 1, "F_SETFD": 2, "F_GETFL": 3, "F_GETLK": 5,
                 "F_GETOWN": 9, "F_GETSIG": 11, "F_GETOWN_EX": 16, "F_OFD_GETLK": 36,
                 "F_GETLEASE": 1025, "F_DUPFD_CLOEXEC": 1030, "F_GETPIPE_SZ": 1032,
                 "F_GET_SEALS": 1034}


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def _targets() -> dict[int, str]:
    """Each syscall number the filter names -> the block that decides it (every other number is
    denied)."""
    targets = {nr: "allow" for nr in X86_64_ALLOW.values()}
    targets.update({nr: "eacces" for nr in X86_64_OPEN.values()})
    targets.update({nr: "noexec" for nr in X86_64_NO_EXEC.values()})
    targets.update({nr: "clock" for nr in X86_64_CLOCK.values()})
    targets[X86_64_FCNTL], targets[X86_64_MADVISE] = "fcntl", "madvise"
    return targets


LEAF = 3  # numbers compared one by one at the bottom of the search tree


def _search(keys: list[tuple[int, str]], prog: list[list], names) -> None:
    """Emit a binary search over the sorted ``(nr, target)`` pairs: ``JGE`` splits down to
    leaves of at most ``LEAF`` ``JEQ`` tests, each leaf ending at ``deny``.

    A search and not one ``JEQ`` per number because the kernel, when a child installs the
    filter, runs it once for every syscall number to precompute which are always allowed (its
    action cache), with the signal lock held: along a chain of ~50 tests that was about 0.1 ms
    of every run, along the tree's ~12 (the arch check included) about a fifth. The decisions are the same.
    """
    if len(keys) <= LEAF:
        for j, (nr, target) in enumerate(keys):
            prog.append([JEQ_K, target, "deny" if j == len(keys) - 1 else 0, nr])
        return
    mid = len(keys) // 2
    right = next(names)
    prog.append([JGE_K, right, 0, keys[mid][0]])
    _search(keys[:mid], prog, names)
    prog.append(right)  # a label: where the upper half starts
    _search(keys[mid:], prog, names)


def instructions() -> list[tuple[int, int, int, int]] | None:
    """The filter as ``(code, jt, jf, k)`` tuples, or ``None`` on an unsupported machine."""
    if os.uname().machine != "x86_64":
        return None
    deny = RET_ERRNO | errno.EPERM
    prog: list = []  # jump targets are labels until resolved below; a str alone marks one
    prog += [[LD_ABS_W, 0, 0, OFF_ARCH], [JEQ_K, 0, "kill", AUDIT_ARCH_X86_64],
             [LD_ABS_W, 0, 0, OFF_NR], [JGE_K, "deny", 0, X32_SYSCALL_BIT]]
    _search(sorted(_targets().items()), prog, (f"node{i}" for i in itertools.count()))
    prog.append("deny")  # the default: every syscall not matched above
    prog.append([RET_K, 0, 0, deny])
    prog.append("noexec")  # BPF jumps only forward, so these blocks sit after the search
    prog += [[LD_ABS_W, 0, 0, _arg_lo(2)], [JSET_K, 0, "allow", PROT_EXEC], [RET_K, 0, 0, deny]]
    prog.append("clock")  # clockid_t is an int: its sign is the low word's top bit
    prog += [[LD_ABS_W, 0, 0, _arg_lo(0)], [JSET_K, 0, "allow", 0x80000000],
             [RET_K, 0, 0, RET_ERRNO | errno.EINVAL]]
    prog.append("madvise")  # the advice is an int: its low word is all of it
    prog += [[LD_ABS_W, 0, 0, _arg_lo(2)], [JEQ_K, 0, "allow", MADV_MERGEABLE], [RET_K, 0, 0, deny]]
    prog.append("fcntl")  # the command is an unsigned int: its low word is all of it
    prog.append([LD_ABS_W, 0, 0, _arg_lo(1)])
    for cmd in sorted(FCNTL_ALLOWED.values()):
        prog.append([JEQ_K, "allow", 0, cmd])
    prog.append([RET_K, 0, 0, deny])
    for name, ret in (("allow", RET_ALLOW), ("kill", RET_KILL_PROCESS),
                      ("eacces", RET_ERRNO | errno.EACCES)):
        prog += [name, [RET_K, 0, 0, ret]]
    labels, code = {}, []
    for item in prog:
        if isinstance(item, str):
            labels[item] = len(code)
        else:
            code.append(item)
    out = []
    for i, (op, jt, jf, k) in enumerate(code):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        assert 0 <= jt < 256 and 0 <= jf < 256, "BPF jump out of range"
        out.append((op, jt, jf, k))
    return out


def build() -> SockFprog | None:
    """A ready ``struct sock_fprog``; keep the returned object alive while it may be used."""
    ins = instructions()
    if ins is None:
        return None
    array = (SockFilter * len(ins))(*[SockFilter(*t) for t in ins])
    prog = SockFprog(len(ins), ctypes.cast(array, ctypes.POINTER(SockFilter)))
    prog._keep = array  # the filter array must outlive the struct that points at it
    return prog
