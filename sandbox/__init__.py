"""Run untrusted ``transform(table)`` programs: isolation, limits, result checking.

    from sandbox import run_transform, Sandbox, RunResult
    r = run_transform(code, table, timeout_s=1.5, memory_mb=256)
    with Sandbox(workers=2) as sb:
        results = sb.run_many([(code, table), ...], timeout_s=1.5, memory_mb=256)
        for i, r in sb.iter_many(items):   # the same runs, each handed over as it ends
            ...

Every run is a fresh child forked from a pre-warmed worker and confined by the kernel
(resource limits, seccomp, an unprivileged uid, an empty chroot, namespaces: whatever this
machine permits, as ``protections()`` reports). ``RunResult.output`` is always decoded from
JSON in the parent. See docs/sandbox.md for what is covered and what is not.
"""
from .pool import Sandbox, default_sandbox, protections, run_transform
from .result import ERRORS, OutputLimits, RunResult
from ._worker import WorkerError
from .policy import ALLOWED_MODULES, allowed_modules
from .runtime import Runtime, RuntimeUnavailable

__all__ = ["ALLOWED_MODULES", "ERRORS", "OutputLimits", "RunResult", "Sandbox", "WorkerError",
           "Runtime", "RuntimeUnavailable", "allowed_modules", "default_sandbox", "protections",
           "run_transform"]
