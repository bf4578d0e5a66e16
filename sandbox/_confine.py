"""What a worker applies to itself before it serves runs, and so every run's child inherits (used
by ``zygote.main``): new mount, network, IPC, UTS, PID and time namespaces where the kernel permits,
an empty read-only root (a tmpfs over a standard folder of the private mount namespace, holding
only a null device of its own), ``chroot`` into it, no-new-privileges and the resource limits that
are the same for every run. Each step that the kernel refuses is reported ``False`` in the report
(with the reason in ``notes``) and the worker goes on without it.

Loaded both as ``sandbox._confine`` and as a top-level module inside the worker, so it imports
only the standard library and its siblings.
"""
from __future__ import annotations

import os
import resource
import signal
import stat
import time

try:
    from . import _child, _kernel
except ImportError:
    import _child
    import _kernel

NAMESPACES = {"mount_namespace": _kernel.CLONE_NEWNS, "net_namespace": _kernel.CLONE_NEWNET,
              "ipc_namespace": _kernel.CLONE_NEWIPC, "uts_namespace": _kernel.CLONE_NEWUTS,
              "pid_namespace": _kernel.CLONE_NEWPID}
# Where the empty root is mounted, in the worker's own mount namespace: a standard folder,
# so no name of the parent's (its temporary folder, its pid) ever reaches the worker.
MOUNT_POINTS = ("/tmp", "/mnt", "/var/tmp", "/media", "/srv")


def enter_namespaces(report: dict, req_fd: int, resp_fd: int) -> None:
    """Unshare what the kernel permits; with a PID namespace, only the forked copy returns."""
    try:
        _kernel.unshare(sum(NAMESPACES.values()))
        report.update({name: True for name in NAMESPACES})
    except OSError:
        for name, flag in NAMESPACES.items():
            try:
                _kernel.unshare(flag)
                report[name] = True
            except OSError as exc:
                report[name] = False
                report["notes"].append(f"{name}: {exc.strerror}")
    if report["uts_namespace"]:  # the copy of the host's names it starts with: neutral ones
        lib = _kernel.libc()
        if lib.sethostname(b"sandbox", 7) or lib.setdomainname(b"(none)", 6):
            report["notes"].append("uts names: could not be set")
    report["root_mounted"] = report["own_dev_null"] = False
    if report["mount_namespace"]:
        try:  # nothing mounted here may leak back, then an empty read-only root for children
            _kernel.mount(None, "/", None, _kernel.MS_REC | _kernel.MS_PRIVATE)
            here = next(p for p in MOUNT_POINTS if os.path.isdir(p))
            flags = _kernel.MS_NOSUID | _kernel.MS_NOEXEC
            _kernel.mount("tmpfs", here, "tmpfs", flags | _kernel.MS_NODEV, "size=4k,mode=0555")
            # Walk into the mount by name, so the ``chroot(".")`` that follows makes the empty
            # tmpfs the root. (A standard folder, and only in this private mount namespace: the
            # worker never learns the name of any folder of the parent's.)
            os.chdir(here)
            flags |= own_dev_null(report)
            _kernel.mount(None, ".", None, _kernel.MS_REMOUNT | _kernel.MS_RDONLY | flags)
            report["root_mounted"] = True
        except (OSError, StopIteration) as exc:
            report["own_dev_null"] = False
            report["notes"].append(f"read-only root: {getattr(exc, 'strerror', 'no folder')}")
    enter_time_namespace(report)
    if report["pid_namespace"]:
        pid = os.fork()
        if pid:  # the outer process only waits, so the parent can still kill its group
            os.close(req_fd)
            os.close(resp_fd)
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        _kernel.prctl(_kernel.PR_SET_PDEATHSIG, signal.SIGKILL)


def own_dev_null(report: dict) -> int:
    """Make ``dev/null`` in the new root (the working directory, still writable): a null device
    of this worker's own, so a run's ``fstat`` of fds 0-2 shows the root tmpfs's device and a
    small inode, not the host ``/dev/null``'s (its inode and its time, which is the host's boot).
    The root must then allow device files: ``MS_NODEV`` is dropped for it (returned as the flag
    to remount with: 0), and kept (``MS_NODEV``) when ``mknod`` is refused; the children then
    open the host's ``/dev/null`` as before."""
    try:
        os.mkdir("dev", 0o555)
        os.mknod("dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod("dev/null", 0o666)  # (the umask)
    except OSError as exc:
        report["notes"].append(f"own /dev/null: {exc.strerror}")
        return _kernel.MS_NODEV
    report["own_dev_null"] = True
    return 0


def enter_time_namespace(report: dict) -> None:
    """A time namespace for every process forked from here on, its ``CLOCK_MONOTONIC`` and
    ``CLOCK_BOOTTIME`` starting near 1 s: a run no longer reads the host's uptime. The offsets
    must be written before any process enters it (the next fork). Skipped, with a note, where
    the kernel has none (``EINVAL``) or refuses (``EPERM``)."""
    report["time_namespace"] = False
    try:
        _kernel.unshare(_kernel.CLONE_NEWTIME)
    except OSError as exc:
        report["notes"].append(f"time namespace: {exc.strerror}")
        return
    lines = []
    for name, clock in (("monotonic", time.CLOCK_MONOTONIC), ("boottime", time.CLOCK_BOOTTIME)):
        lines.append(f"{name} {1 - int(time.clock_gettime(clock))} 0")
    try:
        fd = os.open("/proc/self/timens_offsets", os.O_WRONLY)
        try:
            os.write(fd, "\n".join(lines).encode())
        finally:
            os.close(fd)
    except OSError as exc:  # the namespace is entered, with no offset: the host's clocks
        report["notes"].append(f"time namespace offsets: {exc.strerror}")
        return
    report["time_namespace"] = True


def confine_worker(report: dict) -> list:
    """What every child inherits: an empty root, no-new-privileges, per-run-invariant rlimits.

    Returns the rlimits each child must still set itself. The worker needs no file after
    this (every module is loaded), so it ``chroot``s itself into its empty working directory
    and its children start there; unprivileged, they cannot leave it.
    """
    try:
        if not report.get("root_mounted"):  # never chroot into a folder of the host's
            raise OSError(0, "no empty root was mounted")
        os.chroot(".")
        os.chdir("/")
        report["chroot"] = True
    except OSError as exc:
        report["chroot"] = False
        report["notes"].append(f"chroot: {exc.strerror}")
    try:
        _kernel.prctl(_kernel.PR_SET_NO_NEW_PRIVS, 1)
        report["no_new_privs"] = True
    except OSError as exc:
        report["no_new_privs"] = False
        report["notes"].append(f"no_new_privs: {exc.strerror}")
    static, per_child = list(_child.STATIC_RLIMITS), []
    (static if os.geteuid() == 0 else per_child).append((resource.RLIMIT_NPROC, 0))
    _child.set_rlimits(static)
    return per_child
