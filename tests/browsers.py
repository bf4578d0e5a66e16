"""The system Chromium the browser tests drive through playwright (never a downloaded one)."""
from __future__ import annotations

import os
import shutil

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def find_browser() -> str | None:
    """VIEWER_BROWSER, else a system Chromium on PATH."""
    if os.environ.get("VIEWER_BROWSER"):
        return os.environ["VIEWER_BROWSER"]
    for name in BROWSERS:
        if shutil.which(name):
            return shutil.which(name)
    return None
