"""The seccomp filter, read by a small BPF interpreter: every syscall number and argument the
filter looks at gets the decision its tables (``sandbox._seccomp``) say, and no number walks
more than 16 instructions (12 on average).

The path length matters for speed, not safety: when a child installs the filter, the kernel
runs it once for every syscall number of both x86 ABIs to precompute its action cache, with the
signal lock held. The filter was a chain of ~50 comparisons (about 0.1 ms of every run, a
twentieth of a small run's CPU); it is now a binary search. The real kernel's answers are checked
by the sandbox tests that make denied calls (``test_sandbox_escape_and_leak``,
``test_sandbox_madvise``, ``test_sandbox_host_facts``).
"""
from __future__ import annotations

import errno
import platform

import pytest

from sandbox import _seccomp as sc

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter covers x86_64")

LD_ABS_W, JEQ_K, JGE_K, JSET_K, RET_K = sc.LD_ABS_W, sc.JEQ_K, sc.JGE_K, sc.JSET_K, sc.RET_K
DENY, EACCES = sc.RET_ERRNO | errno.EPERM, sc.RET_ERRNO | errno.EACCES
EINVAL = sc.RET_ERRNO | errno.EINVAL


def run_filter(prog, nr: int, arch: int = sc.AUDIT_ARCH_X86_64, args=(0,) * 6):
    """(action, instructions executed) of classic BPF over a ``seccomp_data``."""
    data = {sc.OFF_NR: nr, sc.OFF_ARCH: arch}
    data.update({sc._arg_lo(i): a & 0xFFFFFFFF for i, a in enumerate(args)})
    acc, pc, steps = 0, 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        steps += 1
        if code == LD_ABS_W:
            acc, pc = data[k], pc + 1
        elif code == RET_K:
            return k, steps
        else:
            hit = {JEQ_K: acc == k, JGE_K: acc >= k, JSET_K: bool(acc & k)}[code]
            pc += 1 + (jt if hit else jf)


def expected(nr: int, args) -> int:
    """What the tables say, written without the filter's layout."""
    if nr & sc.X32_SYSCALL_BIT:
        return DENY
    if nr in sc.X86_64_ALLOW.values():
        return sc.RET_ALLOW
    if nr in sc.X86_64_OPEN.values():
        return EACCES
    if nr in sc.X86_64_NO_EXEC.values():
        return DENY if args[2] & sc.PROT_EXEC else sc.RET_ALLOW
    if nr in sc.X86_64_CLOCK.values():
        return EINVAL if args[0] & 0x80000000 else sc.RET_ALLOW
    if nr == sc.X86_64_MADVISE:
        return DENY if args[2] == sc.MADV_MERGEABLE else sc.RET_ALLOW
    if nr == sc.X86_64_FCNTL:
        return sc.RET_ALLOW if args[1] in sc.FCNTL_ALLOWED.values() else DENY
    return DENY


ARGS = [(0,) * 6, (0, 0, sc.PROT_EXEC | 1, 0, 0, 0), (-1, 0, 0, 0, 0, 0), (1, 4, 12, 0, 0, 0),
        (0, 1030, 3, 0, 0, 0), (0, 4, 0, 0, 0, 0), (7, 1034, 5, 0, 0, 0)]


def test_every_syscall_number_gets_what_the_tables_say():
    prog = sc.instructions()
    numbers = list(range(0, 1100)) + [sc.X32_SYSCALL_BIT | n for n in (0, 1, 257, 512)] + [
        0xFFFFFFFF]
    for nr in numbers:
        for args in ARGS:
            assert run_filter(prog, nr, args=args)[0] == expected(nr, args), (nr, args)
    for arch in (0x40000003, 0, 0xC00000B7):  # i386, none, aarch64: killed
        assert run_filter(prog, 0, arch=arch)[0] == sc.RET_KILL_PROCESS


def test_every_fcntl_command_and_madvise_advice():
    prog = sc.instructions()
    for value in range(0, 1100):
        args = (0, value, value, 0, 0, 0)
        assert run_filter(prog, sc.X86_64_FCNTL, args=args)[0] == expected(sc.X86_64_FCNTL, args)
        assert run_filter(prog, sc.X86_64_MADVISE, args=args)[0] == expected(sc.X86_64_MADVISE,
                                                                              args)


def test_no_syscall_number_walks_a_long_path():
    prog = sc.instructions()
    steps = [run_filter(prog, nr)[1] for nr in range(0, 512)]
    assert max(steps) <= 16, max(steps)  # the chain took up to 57
    assert sum(steps) / len(steps) <= 13, sum(steps) / len(steps)  # the chain: 54
    assert len(prog) < 256  # every jump fits BPF's 8-bit offsets
