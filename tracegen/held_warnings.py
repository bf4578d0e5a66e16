"""Third-party warnings counted instead of shown, in any process of a run: the CLI's (through
``controller.console.quiet_libraries``) and the LoRA worker's, which sends its counts back so
the run's one summary line covers both."""
from __future__ import annotations

import warnings
from collections import Counter

HOLD_ENV = "LIVE_TOOL_DAGGER_HOLD_WARNINGS"  # set for a child process whose warnings the parent summarises
ACTIVE: "WarningSummary | None" = None  # the summary this process installed, if any

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


def hold() -> "WarningSummary":
    """Install a summary as ``warnings.showwarning`` in this process and return it."""
    global ACTIVE
    ACTIVE = WarningSummary()
    warnings.showwarning = ACTIVE.showwarning
    return ACTIVE
