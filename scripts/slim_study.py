"""Gzip a committed study's large files in place, so the checkout travels light (the GPU machine
takes at most 64 MiB with the project): ``fresh_traces*.jsonl`` and ``predictions/**/*.jsonl``
become ``.jsonl.gz`` (gzip level 9, no time stamp: the same bytes every time), each plain file
removed once its gzipped copy is written. Every reader takes either form (``compare``, ``view``,
the viewer, ``scripts/view_traces.py``); a re-analysis reads its traces gunzipped from
``ROOT/reports/`` (results/README.md).

    python scripts/slim_study.py results/foofah results/library     # after copying a run's reports in
    python scripts/slim_study.py --check results/*                  # exit 1 if any plain file is left
"""
from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

PATTERNS = ("fresh_traces*.jsonl", "predictions/**/*.jsonl")


def plain_files(study: Path) -> list[Path]:
    return sorted({p for pat in PATTERNS for p in study.glob(pat) if p.is_file()})


def slim(study: Path) -> tuple[int, int]:
    """Gzip the study's plain files; returns (bytes before, bytes after)."""
    before = after = 0
    for p in plain_files(study):
        data = p.read_bytes()
        gz = p.with_name(p.name + ".gz")
        tmp = gz.with_name(gz.name + ".part")
        tmp.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        tmp.replace(gz)
        p.unlink()
        before, after = before + len(data), after + gz.stat().st_size
    return before, after


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("studies", nargs="+", type=Path, help="study folders (e.g. results/foofah)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a plain file is left")
    args = ap.parse_args(argv)
    for s in args.studies:
        if not (s / "final_summary.json").is_file():
            print(f"error: {s}: not a study folder (no final_summary.json)", file=sys.stderr)
            return 2
    if args.check:
        left = [p for s in args.studies for p in plain_files(s)]
        for p in left:
            print(f"{p}: not gzipped (python scripts/slim_study.py STUDY gzips it)")
        return 1 if left else 0
    for s in args.studies:
        before, after = slim(s)
        if before:
            print(f"{s}: {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
