"""Write or check the shipped case library: ``python -m cases.generate [--out DIR] [--check]``.

``--cases A-B --out DIR`` writes cases A..B of every family instead (new instances drawn with
other seeds, e.g. distillation data that no study scores); a draw a generator refuses (its checks
fail for that seed) is skipped and counted.

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
from cases.generators.spec import GeneratorError

DEFAULT_OUT = Path(__file__).resolve().parent / "data"
_LIBRARY_FILE = re.compile(r"^(?P<fam>.+)_\d+\.json$")


def dump_case(obj: dict) -> bytes:
    return (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode("utf-8")


def render_library(indices: range | None = None) -> dict[str, bytes]:
    """Relative posix path -> file bytes, for every generated case (``indices``: those cases of each
    family instead of the shipped 1..CASES_PER_FAMILY; a draw its generator refuses is left out)."""
    files: dict[str, bytes] = {}
    for fam in FAMILIES:
        for k in indices or range(1, CASES_PER_FAMILY + 1):
            try:
                files[f"{fam.name}/{fam.name}_{k}.json"] = dump_case(build_case(fam, k))
            except GeneratorError:
                if indices is None:  # the shipped library must build whole
                    raise
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


def write(out: Path, indices: range | None = None) -> tuple[int, list[str], list[str]]:
    """Write every case; returns (files written, stale files removed, other files left alone)."""
    files = render_library(indices)  # build everything first: a generator error writes nothing
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
    ap = argparse.ArgumentParser(allow_abbrev=False, prog="python -m cases.generate", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="library folder (default: cases/data)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on any difference")
    ap.add_argument("--cases", metavar="A-B", default=None,
                    help="write cases A..B of each family (other seeds than the shipped 1-%d; needs --out "
                         "elsewhere than cases/data; default: the shipped library)" % CASES_PER_FAMILY)
    args = ap.parse_args(argv)
    indices = None
    if args.cases is not None:
        a, _, b = args.cases.partition("-")
        if not (a.isdigit() and b.isdigit() and 1 <= int(a) <= int(b)):
            ap.error(f"--cases: expected A-B with 1 <= A <= B, got {args.cases!r}")
        if args.check or args.out.resolve() == DEFAULT_OUT:
            ap.error("--cases: writes new instances elsewhere: give --out DIR (not cases/data) and no --check")
        indices = range(int(a), int(b) + 1)
    if args.check:
        problems = check(args.out)
        for line in problems:
            print(line)
        print(f"{args.out}: {'up to date' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    n, stale, others = write(args.out, indices)
    for rel in stale:
        print(f"removed stale {rel}")
    for rel in others:
        print(f"warning: {rel} is not a generated case file", file=sys.stderr)
    print(f"{args.out}: {n} case files for {len(FAMILIES)} families")
    return 0


if __name__ == "__main__":
    sys.exit(main())
