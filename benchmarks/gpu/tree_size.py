"""What travels to the GPU machine, in bytes: the checkout's files that git tracks or does not
ignore, plus the carried wheel set (benchmarks/gpu/wheels/), against the 64 MiB the machine takes.

    python benchmarks/gpu/tree_size.py        # prints the sizes; exit 1 when over TREE_BUDGET or 64 MiB
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 64 * 2**20  # the machine's limit on what travels with the project
TREE_BUDGET = 20 * 2**20  # the checkout's share: the rest is the wheels' (~37 MiB) and headroom
WHEELS = REPO / "benchmarks" / "gpu" / "wheels"


def tree_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True).stdout.decode()
    return [REPO / f for f in out.split("\0") if f and (REPO / f).is_file()]


def sizes() -> dict:
    files = tree_files()
    by_top: dict[str, int] = {}
    for f in files:
        top = f.relative_to(REPO).parts[0]
        by_top[top] = by_top.get(top, 0) + f.stat().st_size
    wheels = sum(p.stat().st_size for p in WHEELS.rglob("*") if p.is_file()) if WHEELS.is_dir() else 0
    tree = sum(by_top.values())
    return {"tree": tree, "by_top": by_top, "wheels": wheels, "total": tree + wheels}


def main() -> int:
    s = sizes()
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    for top, b in sorted(s["by_top"].items(), key=lambda kv: -kv[1])[:6]:
        print(f"  {top + '/':<14} {mib(b)}")
    print(f"tree {mib(s['tree'])} (budget {mib(TREE_BUDGET)}) + wheels {mib(s['wheels'])}"
          f"{'' if s['wheels'] else ' (not built: bash benchmarks/gpu/build_wheels.sh)'} = {mib(s['total'])} "
          f"of {mib(LIMIT)}")
    return 1 if s["tree"] > TREE_BUDGET or s["total"] > LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
