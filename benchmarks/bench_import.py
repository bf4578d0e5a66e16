"""How fast ``live-tool-dagger import`` turns recorded outputs into trace records.

    python benchmarks/bench_import.py                  # 1,000 cases x 5 attempts (the goal: within 60 s)
    python benchmarks/bench_import.py --cases 200      # a quicker look

A file of ``--cases`` generated cases is written to a temporary folder, a third each of string
tables (one example), grids with three examples and strings (three examples), each with one direct
answer and one program chain of four attempts (five attempts a case; ``--kinds`` picks fewer
kinds): the first program is wrong, the second raises, the third passes every public example and
the fourth comes after the pass, so the import cuts it (counted). Then the import runs in this
process, as the command does (every line checked, the rollout with the ``imported`` backend, the
sandbox with ``--workers``), and prints the wall seconds, cases/s and programs/s (programs run:
each in the sandbox on every public example and on the new input),
with the machine's load average at the start (on a shared machine the ratio to the goal is the
figure to quote).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GOAL_S = 60.0  # the whole import of 1,000 cases x 5 attempts on the 2-core machine

_WRONG = "def transform(x):\n    return x\n"
_RAISES = "def transform(x):\n    return x[10 ** 6]\n"
_PROGRAMS = {  # value type -> a right program
    "table": "def transform(table):\n    return [[c.upper() for c in row] for row in table]\n",
    "grid": "def transform(grid):\n    return [[(c + 1) % 10 for c in row] for row in grid]\n",
    "string": "def transform(s):\n    return s[::-1]\n",
}


def _task(kind: str, i: int):
    """(examples, test input, test answer) of generated case ``i``."""
    if kind == "table":
        f = lambda t: [[c.upper() for c in row] for row in t]  # noqa: E731
        make = lambda k: [[f"r{k}c{j}x{i}" for j in range(3)] for k in range(4)]  # noqa: E731
        ins = [make(k) for k in range(2)]
    elif kind == "grid":
        f = lambda g: [[(c + 1) % 10 for c in row] for row in g]  # noqa: E731
        ins = [[[(i + k + r * c) % 10 for c in range(5)] for r in range(4)] for k in range(4)]
    else:
        f = lambda s: s[::-1]  # noqa: E731
        ins = [f"case{i}-example{k}" for k in range(4)]
    *examples, test = ins
    return [{"input": x, "output": f(x)} for x in examples], test, f(test)


def case_line(i: int, kinds=("table", "grid", "string")) -> dict:
    kind = kinds[i % len(kinds)]
    examples, test, answer = _task(kind, i)
    right = _PROGRAMS[kind]
    chain = [{"code": _WRONG, "model": "bench"},
             {"text": f"```python\n{_RAISES}```", "tokens": {"prompt": 400, "completion": 30}},
             {"text": f"Fixed:\n```python\n{right}```", "tokens": {"prompt": 450, "completion": 40}},
             {"code": right + "# asked again after it passed\n"}]
    return {"case_id": f"{kind}/case_{i:05d}", "family": f"{kind}_{i % 7}", "examples": examples,
            "test": {"input": test, "output": answer},
            "direct": [{"answer": answer if i % 2 else examples[0]["output"]}],
            "programs": [chain]}


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000, help="generated cases (default: 1000)")
    ap.add_argument("--workers", type=int, default=2, help="sandbox workers (default: 2)")
    ap.add_argument("--kinds", default="table,grid,string", help="the task kinds, dealt in turn (default: "
                    "table,grid,string)")
    args = ap.parse_args()
    from controller.importer import import_main
    from tracegen.records import read_traces

    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        src = Path(tmp) / "outputs.jsonl"
        kinds = tuple(args.kinds.split(","))
        src.write_text("".join(json.dumps(case_line(i, kinds)) + "\n" for i in range(args.cases)))
        root = Path(tmp) / "run"
        t0 = time.perf_counter()
        rc = import_main([str(src), "--root", str(root), "--workers", str(args.workers), "--no-progress"])
        wall = time.perf_counter() - t0
        if rc != 0:
            print(f"import failed (exit {rc})")
            return 1
        records = read_traces(root / "reports" / "fresh_traces.jsonl")
    programs = sum(len(r["rounds"]) + sum(len(s) for s in r.get("samples", [])) for r in records)
    print(f"load average at start {load:.2f} ({os.cpu_count()} cores)")
    print(f"{len(records)} cases, {programs} programs run, in {wall:.1f} s: {len(records) / wall:.1f} cases/s, "
          f"{programs / wall:.1f} programs/s")
    if args.cases == 1000:
        print(f"goal: within {GOAL_S:.0f} s: {wall / GOAL_S:.2f} of it ({'met' if wall <= GOAL_S else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
