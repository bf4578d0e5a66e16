"""What a ``Sandbox`` holds on this machine, each by a lock file ``flock``-ed for its life (the
kernel drops a lock when its owner dies, however it dies): its folder in the temporary
directory, and the CPUs its workers are pinned to.

**The folder.** ``sandbox-XXXXXXXX`` holds only a lock file; a later ``Sandbox`` removes a folder
only when it can take that lock (its owner is gone), which holds across pid namespaces. The
workers never learn its name.

**The CPUs.** A run passes through three processes of its worker (the collector, the template,
the run's child) one after the other. Left to the scheduler, the child of a fork is placed on
the idlest CPU, so a run hops between CPUs: each hand-over is a wake-up by inter-processor
interrupt, and each copy-on-write fault of the child flushes the TLB of every CPU its address
space has been on. A worker pinned to one CPU (the parent pins it before sending its boot
frame, ``Worker.spawn``, so it forks nothing before and never learns the CPU) keeps all of that
on one CPU: docs/sandbox.md has the figures. Pinning is safe only when the pinned CPUs are not
everybody's: two processes that each pinned their worker 0 to CPU 0 would share it while other
CPUs idle. So CPUs are leased,
one lock file per CPU in the temporary directory (``sandbox-cpu-N.lock``): a worker is pinned
only to a CPU whose lock its ``Sandbox`` took; when every allowed CPU is taken (more workers
than CPUs, other sandboxes running) it runs wherever the scheduler puts it. Grades depend on
none of this: a run's limit is on its own CPU time (``_collect.py``).

Not covered: processes that are not sandboxes are not asked (the scheduler moves them off a
busy CPU, as it moves anything that is not pinned).
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from pathlib import Path

LOCK_NAME = "lock"
_OWNED = re.compile(r"sandbox-[A-Za-z0-9_]+$")


def make_folder(tmpdir: str) -> tuple[str, int]:
    """A fresh ``sandbox-XXXXXXXX`` folder and a descriptor holding the lock inside it.

    The name says nothing about the owner (no pid). The lock (``flock``, held on an open file
    description for the ``Sandbox``'s life, released by the kernel when the owner dies however
    it dies) is made under a temporary name and renamed into place only once it is held, so a
    folder that has a ``lock`` file is always either locked by a live owner or stale.
    """
    folder = tempfile.mkdtemp(prefix="sandbox-", dir=tmpdir)
    fd = os.open(os.path.join(folder, ".lock-new"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.rename(os.path.join(folder, ".lock-new"), os.path.join(folder, LOCK_NAME))
    return folder, fd


def _try_lock(path: str, flags: int = 0) -> int | None:
    """A descriptor holding ``path``'s ``flock``, or ``None`` (held by a live owner, or not
    there / not ours to open). Never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | flags, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its owner lives
        os.close(fd)
        return None
    return fd


def _lock_if_stale(folder: str) -> int | None:
    """A descriptor holding ``folder``'s lock if it could be taken (the owner is gone), else
    ``None``."""
    return _try_lock(os.path.join(folder, LOCK_NAME))


def _candidates(tmpdir: str) -> list[str]:
    try:
        entries = list(os.scandir(tmpdir))
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            if _OWNED.match(entry.name) and entry.is_dir(follow_symlinks=False) and \
                    entry.stat(follow_symlinks=False).st_uid == os.geteuid():
                found.append(entry.path)
        except OSError:
            continue
    return found


def stale_folders(tmpdir: str) -> list[Path]:
    """Sandbox folders in ``tmpdir`` whose owner is gone (a parent killed by SIGKILL).

    A folder is stale only if the ``flock`` on its ``lock`` file can be taken: the owner holds
    it for its whole life, and the kernel drops it when the owner dies, however it dies. A lock
    lives on the file, not on a pid, so a toolkit in another pid namespace that shares this
    temporary directory never takes a live folder for a stale one. Only folders named
    ``sandbox-*`` and owned by this user count; one without a lock file (being made right now,
    or made by something else) is left alone, and so is anything else.
    """
    stale = []
    for folder in _candidates(tmpdir):
        fd = _lock_if_stale(folder)
        if fd is not None:
            os.close(fd)
            stale.append(Path(folder))
    return stale


def remove_stale(tmpdir: str) -> None:
    """Remove every stale folder, holding its lock while it goes."""
    for folder in _candidates(tmpdir):
        fd = _lock_if_stale(folder)
        if fd is not None:
            try:
                shutil.rmtree(folder, ignore_errors=True)
            finally:
                os.close(fd)


# ----------------------------------------------------------------------------- CPUs

def lease_cpus(count: int, tmpdir: str) -> list[tuple[int, int]]:
    """Up to ``count`` free CPUs of this process's allowed set, as ``(cpu, lock descriptor)``;
    close the descriptors to give them back."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this system: nothing to pin
        return []
    if len(allowed) < 2:  # one CPU: every process shares it whatever happens
        return []
    taken: list[tuple[int, int]] = []
    for cpu in allowed:
        if len(taken) == count:
            break
        # made if missing, readable by every user: any user's sandbox can take it
        fd = _try_lock(os.path.join(tmpdir, f"sandbox-cpu-{cpu}.lock"), os.O_CREAT)
        if fd is not None:
            taken.append((cpu, fd))
    return taken


def release_cpus(taken: list[tuple[int, int]]) -> None:
    for _, fd in taken:
        try:
            os.close(fd)
        except OSError:
            pass
    taken.clear()
