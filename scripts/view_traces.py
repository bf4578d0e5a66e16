#!/usr/bin/env python
"""(Re)build the trace viewer of a run: ROOT/reports/viewer/index.html, from the files under
ROOT/reports (final_summary.json, the trace file, split_manifest.json, predictions/*.jsonl).

    python scripts/view_traces.py [ROOT]      # ROOT defaults to the repository root

Prints the page's path; open it in a browser (no server needed). Exit status 2 on bad input.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without install


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", nargs="?", default=str(REPO), help="run root (or its reports/ folder)")
    args = p.parse_args(argv)
    from controller.viewer import ViewerInputError, build_viewer

    try:
        path = build_viewer(args.root)
    except ViewerInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
