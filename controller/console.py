"""What a CLI run prints besides its own lines: library progress bars only on a terminal, and
third-party warnings (transformers, peft, scikit-learn, torch, ...) counted and summarised in one
line at the end instead of scattered through the log.

``LIVE_TOOL_DAGGER_WARNINGS=1`` shows every warning as Python would.
"""
from __future__ import annotations

import os
import sys

from tracegen.held_warnings import WarningSummary, hold


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
    return hold()  # the LoRA worker holds its own back too and sends the counts here
