"""Imports a run does while it waits: what the controllers, statistics and figures import (~4 s
on a 2-core machine) is imported in a niced thread while tracing keeps the cores busy, and the
plotting modules while the LoRA worker trains, so neither import is paid for after them."""
from __future__ import annotations

import os

TRACING_NICE = 10  # niceness of the imports done while tracing keeps the cores busy
WARM_MODULES = ("sklearn.linear_model", "sklearn.ensemble", "sklearn.tree", "sklearn.pipeline",
                "sklearn.preprocessing", "scipy.stats", "statsmodels.stats.multitest",
                "statsmodels.stats.proportion", "statsmodels.stats.contingency_tables")


def warm_imports(nice: int):
    """Import ``WARM_MODULES`` and the plotting modules in a thread at ``nice`` more niceness
    (Linux keeps a niceness per thread), and return the started thread."""
    import importlib
    import threading

    def run() -> None:
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)
        except (AttributeError, OSError):  # no per-thread niceness here: import at full priority
            pass
        for name in WARM_MODULES:
            try:
                importlib.import_module(name)
            except ImportError:  # the step that needs it says so itself
                pass
        import_plotting()

    thread = threading.Thread(target=run, name="warm-imports")
    thread.start()
    return thread


def import_plotting() -> None:
    """What writing the figures imports first (~1 s): done while the LoRA worker trains."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
