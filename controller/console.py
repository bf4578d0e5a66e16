"""What a CLI run prints besides its own lines: library progress bars only on a terminal, and
third-party warnings (transformers, peft, scikit-learn, torch, ...) counted and summarised in one
line at the end instead of scattered through the log.

``LIVE_TOOL_DAGGER_WARNINGS=1`` shows every warning as Python would.
"""
from __future__ import annotations

import os
import sys
import warnings
from collections import Counter

THIRD_PARTY = ("transformers", "peft", "sklearn", "torch", "trl", "accelerate", "datasets", "huggingface_hub",
               "tokenizers", "scipy", "statsmodels", "matplotlib", "numpy", "gguf")


def _package(filename: str) -> str | None:
    parts = filename.replace("\\", "/").split("/")
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages") and parts[i + 1].split(".")[0] in THIRD_PARTY:
            return parts[i + 1].split(".")[0]
    return None


class WarningSummary:
    """Replaces ``warnings.showwarning``: a warning raised inside a third-party package is counted,
    anything else is shown as usual. ``line()`` says how many were held back, by package."""

    def __init__(self):
        self.counts: Counter = Counter()
        self._show = warnings.showwarning

    def showwarning(self, message, category, filename, lineno, file=None, line=None):
        pkg = _package(filename)
        if pkg is None:
            return self._show(message, category, filename, lineno, file, line)
        self.counts[pkg] += 1

    def line(self) -> str | None:
        if not self.counts:
            return None
        by = ", ".join(f"{pkg} {n}" for pkg, n in self.counts.most_common())
        total = sum(self.counts.values())
        return (f"note: {total} warning{'s' * (total != 1)} from libraries held back ({by}); "
                "set LIVE_TOOL_DAGGER_WARNINGS=1 to see them")


def quiet_libraries(stream=None) -> WarningSummary | None:
    """Call before the heavy libraries are imported. Returns the summary to print at the end, or
    None when the user asked for every warning."""
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("LIVE_TOOL_DAGGER_WARNINGS", "") not in ("", "0"):
        return None
    # transformers' own log lines (kernel fall-backs, advisories) are warnings by another route
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:  # model loading and saving bars (transformers reads this at import)
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    summary = WarningSummary()
    warnings.showwarning = summary.showwarning
    return summary
