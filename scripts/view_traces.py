#!/usr/bin/env python
"""(Re)build the trace viewer of a run: ROOT/reports/viewer/data.json.gz (its data, what a committed
study keeps) and index.html (the page), from the files under ROOT/reports (final_summary.json, the
trace file, split_manifest.json, predictions/*.jsonl, run_config.json).

    python scripts/view_traces.py [ROOT]              # ROOT defaults to the repository root
    python scripts/view_traces.py ROOT --measure 5    # then time 5 loads in a system Chromium

Prints the page's path; open it in a browser (no server needed). Exit status 2 on bad input.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without install
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def measure(page: Path, runs: int) -> str:
    """Open the page ``runs`` times in fresh tabs of a system Chromium; its size and the time from
    navigation start until it is drawn (the page's "viewer-ready" mark), median over the runs."""
    exe = os.environ.get("VIEWER_BROWSER") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if exe is None:
        raise RuntimeError("no system Chromium found (install chromium-headless-shell or set VIEWER_BROWSER)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise RuntimeError("playwright is not installed (pip install playwright)") from None
    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe)
        for _ in range(runs):
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            tab.goto(page.as_uri())
            tab.wait_for_selector("body[data-ready]", state="attached", timeout=60_000)
            times.append(tab.evaluate("performance.getEntriesByName('viewer-ready')[0].startTime"))
            tab.close()
        browser.close()
    return (f"{page.stat().st_size / 1e6:.2f} MB; drawn {statistics.median(times):.0f} ms after navigation "
            f"(median of {runs}; min {min(times):.0f}, max {max(times):.0f}; {Path(exe).name})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("root", nargs="?", default=".", help="run root (or its reports/ folder) (default: the current directory, like live-tool-dagger --root)")
    p.add_argument("--measure", type=_positive, default=0, metavar="N",
                   help="after building, load the page N times in a system Chromium and print its size and load time "
                        "(needs playwright; default: off)")
    args = p.parse_args(argv)
    from controller.report.viewer import ViewerInputError, build_viewer

    try:
        path = build_viewer(args.root)
    except ViewerInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(path)
    if args.measure:
        try:
            print(measure(path, args.measure))
        except RuntimeError as err:
            print(f"error: --measure: {err}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
