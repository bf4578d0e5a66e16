"""Write or check the shipped case library: ``python -m cases.generate [--out DIR] [--check]``.

Every file is ``<family>/<family>_<k>.json`` (k = 1..5), dumped with indent=1 and sorted keys
so diffs stay small. Writing removes stale library files (``X/X_<digits>.json`` not produced
any more) and only warns about other ``.json``/``.txt`` files. ``--check`` writes nothing and
exits 1 when any file differs, is missing, or is not produced by the generators.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from cases.generators import CASES_PER_FAMILY, FAMILIES, build_case

DEFAULT_OUT = Path(__file__).resolve().parent / "data"
_LIBRARY_FILE = re.compile(r"^(?P<fam>.+)_\d+\.json$")


def dump_case(obj: dict) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode("utf-8")


def render_library() -> dict[str, bytes]:
    """Relative posix path -> file bytes, for every generated case."""
    files: dict[str, bytes] = {}
    for fam in FAMILIES:
        for k in range(1, CASES_PER_FAMILY + 1):
            files[f"{fam.name}/{fam.name}_{k}.json"] = dump_case(build_case(fam, k))
    return files


def _existing(out: Path) -> dict[str, Path]:
    if not out.is_dir():
        return {}
    return {
        p.relative_to(out).as_posix(): p
        for p in out.rglob("*")
        if p.is_file() and p.suffix.lower() in (".json", ".txt")
    }


def _is_library_file(rel: str) -> bool:
    parts = rel.split("/")
    m = _LIBRARY_FILE.match(parts[-1])
    return len(parts) == 2 and m is not None and m["fam"] == parts[0]


def check(out: Path) -> list[str]:
    """Problems found comparing ``out`` with the generators; empty when identical."""
    files = render_library()
    existing = _existing(out)
    problems = [f"missing {rel}" for rel in files if rel not in existing]
    problems += [f"differs {rel}" for rel, data in files.items()
                 if rel in existing and existing[rel].read_bytes() != data]
    problems += [f"not generated {rel}" for rel in existing if rel not in files]
    return sorted(problems)


def write(out: Path) -> tuple[int, list[str], list[str]]:
    """Write every case; returns (files written, stale files removed, other files left alone)."""
    files = render_library()  # build everything first: a generator error writes nothing
    existing = _existing(out)
    for rel, data in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    stale = sorted(rel for rel in existing if rel not in files and _is_library_file(rel))
    for rel in stale:
        (out / rel).unlink()
    others = sorted(rel for rel in existing if rel not in files and not _is_library_file(rel))
    return len(files), stale, others


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cases.generate", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="library folder (default: cases/data)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on any difference")
    args = ap.parse_args(argv)
    if args.check:
        problems = check(args.out)
        for line in problems:
            print(line)
        print(f"{args.out}: {'up to date' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    n, stale, others = write(args.out)
    for rel in stale:
        print(f"removed stale {rel}")
    for rel in others:
        print(f"warning: {rel} is not a generated case file", file=sys.stderr)
    print(f"{args.out}: {n} case files for {len(FAMILIES)} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
