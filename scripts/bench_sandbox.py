"""Throughput of the sandbox against one subprocess per run, measured in one process and one run.

    python scripts/bench_sandbox.py                # default workload, prints a table
    python scripts/bench_sandbox.py --json out.json --repeat 20

The workload is a fixed list of realistic ``transform`` programs (splitting, merging, regex
extraction, date reformatting, fill-down, pivoting ...) each paired with a few tables. It runs
(a) the baseline way, one ``subprocess.run([sys.executable, "-I", "-c", RUNNER])`` per
execution, in sequence, and (b) through ``Sandbox(workers=2)`` with every protection on; the
sandbox pass repeats the same workload ``--repeat`` times so its clock runs long enough to
measure. It prints runs/s of each and their ratio, median and p99 latency, and the CPU time per
run (parent + workers + children; the workers are closed gracefully so their children's time is
counted). Both ways must produce the same outputs, or it exits 1. The sandbox needs both cores
and the baseline one, so other load on the machine lowers the ratio: the script prints the load
average it started under, and the ratio of CPU per run, which load barely moves.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sandbox import Sandbox  # noqa: E402

RUNNER = r"""
import json, sys
req = json.loads(sys.stdin.read())
ns = {}
exec(compile(req["code"], "<transform>", "exec"), ns)
print(json.dumps(ns["transform"](req["table"])))
"""

PROGRAMS = [
    # split a "last, first" column in two
    '''def transform(table):
    out = []
    for row in table:
        last, _, first = row[0].partition(", ")
        out.append([first, last] + row[1:])
    return out
''',
    # reformat dates
    '''import datetime
def transform(table):
    out = []
    for row in table:
        d = datetime.datetime.strptime(row[1], "%Y-%m-%d")
        out.append([row[0], d.strftime("%d/%m/%Y")] + row[2:])
    return out
''',
    # regex: pull numbers out of free text
    '''import re
def transform(table):
    return [[row[0], ";".join(re.findall(r"\\d+", " ".join(row[1:])))] for row in table]
''',
    # fill down empty cells
    '''def transform(table):
    out, last = [], None
    for row in table:
        row = list(row)
        if row[0] == "" and last is not None:
            row[0] = last
        last = row[0]
        out.append(row)
    return out
''',
    # drop rows with an empty cell, upper-case the first column
    '''def transform(table):
    return [[r[0].upper()] + r[1:] for r in table if all(c.strip() for c in r)]
''',
    # transpose
    '''def transform(table):
    width = max(len(r) for r in table)
    return [[r[i] if i < len(r) else "" for r in table] for i in range(width)]
''',
    # group and count by the second column
    '''from collections import Counter
def transform(table):
    counts = Counter(row[1] for row in table)
    return [[k, str(v)] for k, v in sorted(counts.items())]
''',
    # merge the columns with a separator
    '''def transform(table):
    return [[" - ".join(c for c in row if c)] for row in table]
''',
    # unfold key/value rows into a wide table
    '''def transform(table):
    keys, rows = [], {}
    for name, key, value in (r[:3] for r in table):
        if key not in keys:
            keys.append(key)
        rows.setdefault(name, {})[key] = value
    return [["name"] + keys] + [[n] + [d.get(k, "") for k in keys] for n, d in rows.items()]
''',
    # numeric clean-up and rounding
    '''import math
def transform(table):
    out = []
    for row in table:
        cells = []
        for c in row:
            try:
                cells.append(str(math.floor(float(c.replace(",", "")) * 100) / 100))
            except ValueError:
                cells.append(c.title())
        out.append(cells)
    return out
''',
    # sort rows by a column, keep the top ones
    '''def transform(table):
    return sorted(table, key=lambda r: (r[2], r[0]))[:5]
''',
    # strip punctuation, split words into cells
    '''import string
def transform(table):
    strip = str.maketrans("", "", string.punctuation)
    return [row[0].translate(strip).split()[:4] for row in table]
''',
]


def tables(seed: int, n: int) -> list[list[list[str]]]:
    """Deterministic small tables in the shape of the benchmark cases (3 columns and more)."""
    rng = random.Random(seed)
    first = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Fay", "Gus"]
    last = ["Smith", "Ng", "Okafor", "Lee", "Brown", "Diaz"]
    out = []
    for _ in range(n):
        rows = []
        for _ in range(rng.randint(4, 12)):
            day = f"20{rng.randint(10, 24)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            amount = f"{rng.randint(1, 9999):,}.{rng.randint(0, 99)} units, lot {rng.randint(1, 99)}"
            rows.append([f"{rng.choice(last)}, {rng.choice(first)}", day,
                         rng.choice(["red", "green", "blue", ""]), amount])
        out.append(rows)
    return out


def workload(per_program: int) -> list[tuple[str, list[list[str]]]]:
    return [(code, table) for i, code in enumerate(PROGRAMS)
            for table in tables(seed=i, n=per_program)]


def run_baseline(items, timeout_s: float):
    outputs, latencies = [], []
    for code, table in items:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-I", "-c", RUNNER], capture_output=True,
                              input=json.dumps({"code": code, "table": table}), text=True,
                              timeout=timeout_s)
        latencies.append((time.perf_counter() - start) * 1000)
        outputs.append(json.loads(proc.stdout) if proc.returncode == 0 else None)
    return outputs, latencies


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def percentile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-program", type=int, default=5, help="tables per program")
    parser.add_argument("--repeat", type=int, default=20, help="sandbox passes over the workload")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    items = workload(args.per_program)
    load_before = os.getloadavg()[0]  # other work on the machine skews the ratio

    # (a) one subprocess per run
    t0, c0 = time.perf_counter(), cpu_now()
    base_out, base_lat = run_baseline(items, timeout_s=10)
    base_s, base_cpu = time.perf_counter() - t0, cpu_now() - c0

    # cost of starting and closing the pool alone, to subtract from the per-run CPU figure
    c0 = cpu_now()
    with Sandbox(workers=args.workers) as sb:
        protections = sb.protections()
    idle_cpu = cpu_now() - c0

    # (b) the sandbox: same workload, repeated
    c0 = cpu_now()
    with Sandbox(workers=args.workers) as sb:
        sb.run_many(items[: 2 * args.workers])  # every worker has forked once
        t0 = time.perf_counter()
        results = []
        for _ in range(args.repeat):
            results += sb.run_many(items)
        sb_s = time.perf_counter() - t0
    sb_cpu = cpu_now() - c0 - idle_cpu

    mismatches = sum(r.output != base_out[i % len(items)] for i, r in enumerate(results))
    n_sb = len(results)
    figures = {
        "runs_baseline": len(items), "runs_sandbox": n_sb, "workers": args.workers,
        "baseline_runs_per_s": len(items) / base_s, "sandbox_runs_per_s": n_sb / sb_s,
        "ratio": (n_sb / sb_s) / (len(items) / base_s),
        "baseline_median_ms": statistics.median(base_lat),
        "baseline_p99_ms": percentile(base_lat, 0.99),
        "sandbox_median_ms": statistics.median(r.wall_ms for r in results),
        "sandbox_p99_ms": percentile([r.wall_ms for r in results], 0.99),
        "baseline_cpu_ms_per_run": base_cpu * 1000 / len(items),
        "sandbox_cpu_ms_per_run": sb_cpu * 1000 / n_sb,
        "sandbox_child_cpu_ms_median": statistics.median(r.cpu_ms for r in results),
        "cpu_ratio": base_cpu / len(items) / (sb_cpu / n_sb),
        "mismatches": mismatches, "cpus": os.cpu_count(), "load_before": load_before,
        "protections": {k: v for k, v in protections.items() if v is not False},
    }
    print(f"workload: {len(PROGRAMS)} programs x {args.per_program} tables = {len(items)} runs; "
          f"sandbox repeats it {args.repeat}x with {args.workers} workers on {os.cpu_count()} CPUs")
    print(f"{'':24}{'runs/s':>10}{'median ms':>11}{'p99 ms':>9}{'CPU ms/run':>12}")
    print(f"{'subprocess per run':24}{figures['baseline_runs_per_s']:10.1f}"
          f"{figures['baseline_median_ms']:11.2f}{figures['baseline_p99_ms']:9.2f}"
          f"{figures['baseline_cpu_ms_per_run']:12.2f}")
    print(f"{'sandbox':24}{figures['sandbox_runs_per_s']:10.1f}"
          f"{figures['sandbox_median_ms']:11.2f}{figures['sandbox_p99_ms']:9.2f}"
          f"{figures['sandbox_cpu_ms_per_run']:12.2f}")
    print(f"ratio: {figures['ratio']:.1f}x   output mismatches: {mismatches}   "
          f"load average before: {figures['load_before']:.2f}")
    print(f"CPU per run, baseline / sandbox: {figures['cpu_ratio']:.1f}x (the throughput ratio "
          f"approaches {args.workers} x this on {args.workers} idle cores)")
    active = sorted(k for k, v in protections.items() if v is True)
    print("protections on:", ", ".join(active))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(figures, fh, indent=2)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
