"""Throughput of the sandbox against one subprocess per run, measured in one process and one run.

    python benchmarks/bench_sandbox.py                          # this code against the baseline
    python benchmarks/bench_sandbox.py --old 54ae94c --rounds 3 # ... and an older sandbox, alternately
    python benchmarks/bench_sandbox.py --json out.json --repeat 20

The workload is a fixed list of realistic ``transform`` programs (splitting, merging, regex
extraction, date reformatting, fill-down, pivoting ...) each paired with a few tables. It runs
(a) the baseline way, one ``subprocess.run([sys.executable, "-I", "-c", RUNNER])`` per
execution, in sequence, and (b) through ``Sandbox(workers=2)`` with every protection on; the
sandbox pass repeats the same workload ``--repeat`` times so its clock runs long enough to
measure. It prints runs/s of each and their ratio, median and p99 latency, and the CPU time per
run (parent + workers + children; the workers are closed gracefully so their children's time is
counted). Both ways must produce the same outputs, or it exits 1. The sandbox needs both cores
and the baseline one, so other load on the machine lowers the ratio: the script prints the load
average it started under, and the ratio of CPU per run, which load barely moves. The baseline
also moves with the interpreter's start (``.pth`` files in site-packages run at every ``-I``
start): the script prints an empty start with ``-I`` and with ``-I -S`` first, so a ratio can be
read against the machine it was measured on.

With ``--old REF`` the sandbox package of that git commit (``git archive``) is loaded beside
this one as ``sandbox_old``, and each of ``--rounds`` rounds measures, one after the other,
the baseline, the old sandbox and this one (the order of the two sandboxes alternates from
round to round), so all three see the same load; the ratios of each round are printed and
their medians summarise. Every protection is on in both (the default ``Sandbox``).
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from refs import ROOT, import_old  # the old-vs-new helpers of every benchmark

sys.path.insert(0, str(ROOT))

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


def interpreter_start_ms(flags: list[str], n: int = 15) -> float:
    """Median wall time of ``python FLAGS -c pass``: what the baseline pays before any work.

    Printed beside the baseline because it moves with the machine, not the sandbox: ``.pth``
    files in site-packages (an editable install's finder, a host's start-up hooks) run at every
    ``-I`` start and can double it; ``-S`` skips them."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *flags, "-c", "pass"], check=True)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def percentile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure_sandbox(cls, items, repeat: int, workers: int) -> dict:
    """Runs/s, latency and CPU per run of one ``Sandbox`` class over ``repeat`` passes."""
    c0 = cpu_now()
    with cls(workers=workers) as sb:
        protections = sb.protections()
    idle_cpu = cpu_now() - c0  # starting and closing the pool alone, subtracted below
    c0 = cpu_now()
    with cls(workers=workers) as sb:
        sb.run_many(items[: 2 * workers])  # every worker has forked once
        t0 = time.perf_counter()
        results = []
        for _ in range(repeat):
            results += sb.run_many(items)
        elapsed = time.perf_counter() - t0
    cpu = cpu_now() - c0 - idle_cpu
    return {"results": results, "runs_per_s": len(results) / elapsed,
            "median_ms": statistics.median(r.wall_ms for r in results),
            "p99_ms": percentile([r.wall_ms for r in results], 0.99),
            "cpu_ms_per_run": cpu * 1000 / len(results),
            "child_cpu_ms_median": statistics.median(r.cpu_ms for r in results),
            "protections": protections}


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--per-program", type=int, default=5, help="tables per program")
    parser.add_argument("--repeat", type=int, default=20, help="sandbox passes over the workload")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--old", metavar="REF", help="also measure the sandbox of this git commit")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.rounds < 1 or args.repeat < 1 or args.workers < 1 or args.per_program < 1:
        raise SystemExit("bench_sandbox.py: --rounds, --repeat, --workers and --per-program "
                         "must be at least 1")
    items = workload(args.per_program)
    folder = tempfile.mkdtemp(prefix="bench-sandbox-old-")
    atexit.register(shutil.rmtree, folder, True)
    kinds = [("new", Sandbox)]
    if args.old:
        kinds.append(("old", import_old(args.old, "sandbox", Path(folder), "sandbox_old").Sandbox))
    print(f"workload: {len(PROGRAMS)} programs x {args.per_program} tables = {len(items)} runs; "
          f"each sandbox repeats it {args.repeat}x with {args.workers} workers on "
          f"{os.cpu_count()} CPUs; {args.rounds} round(s)")
    start_ms = {"-I": interpreter_start_ms(["-I"]), "-I -S": interpreter_start_ms(["-I", "-S"])}
    print(f"an empty interpreter start: {start_ms['-I']:.1f} ms with -I (the baseline's), "
          f"{start_ms['-I -S']:.1f} ms with -I -S (without site-packages' .pth files)")
    print(f"{'round':>5} {'':10}{'runs/s':>9}{'median ms':>11}{'p99 ms':>9}{'CPU ms/run':>12}"
          f"{'ratio':>8}{'load':>7}")
    rounds, mismatches, protections = [], 0, {}
    for k in range(args.rounds):
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), cpu_now()
        base_out, base_lat = run_baseline(items, timeout_s=30)
        base_s, base_cpu = time.perf_counter() - t0, cpu_now() - c0
        row = {"load": load, "baseline_runs_per_s": len(items) / base_s,
               "baseline_median_ms": statistics.median(base_lat),
               "baseline_cpu_ms_per_run": base_cpu * 1000 / len(items)}
        print(f"{k + 1:5} {'subprocess':10}{row['baseline_runs_per_s']:9.1f}"
              f"{row['baseline_median_ms']:11.2f}{percentile(base_lat, 0.99):9.2f}"
              f"{row['baseline_cpu_ms_per_run']:12.2f}{'':8}{load:7.2f}")
        for name, cls in (kinds if k % 2 == 0 else kinds[::-1]):
            m = measure_sandbox(cls, items, args.repeat, args.workers)
            results = m.pop("results")
            mismatches += sum(r.output != base_out[i % len(items)] for i, r in enumerate(results))
            protections[name] = {p: v for p, v in m.pop("protections").items() if v is True}
            m["ratio"] = m["runs_per_s"] / row["baseline_runs_per_s"]
            m["cpu_ratio"] = row["baseline_cpu_ms_per_run"] / m["cpu_ms_per_run"]
            row[name] = m
            print(f"{'':5} {name:10}{m['runs_per_s']:9.1f}{m['median_ms']:11.2f}"
                  f"{m['p99_ms']:9.2f}{m['cpu_ms_per_run']:12.2f}{m['ratio']:7.1f}x")
        rounds.append(row)
    summary = {name: {"ratio_median": statistics.median(r[name]["ratio"] for r in rounds),
                      "ratio_min": min(r[name]["ratio"] for r in rounds),
                      "runs_per_s_median": statistics.median(r[name]["runs_per_s"] for r in rounds),
                      "cpu_ratio_median": statistics.median(r[name]["cpu_ratio"] for r in rounds)}
               for name, _ in kinds}
    for name, fig in summary.items():
        print(f"{name}: ratio median {fig['ratio_median']:.1f}x (min {fig['ratio_min']:.1f}x), "
              f"{fig['runs_per_s_median']:.0f} runs/s, CPU per run {fig['cpu_ratio_median']:.1f}x "
              "less than the baseline")
    print(f"output mismatches: {mismatches}; load average {rounds[0]['load']:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end")
    print("protections on (new):", ", ".join(sorted(protections["new"])))
    if args.old:
        print("protections on (old):", ", ".join(sorted(protections["old"])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rounds": rounds, "summary": summary, "mismatches": mismatches,
                       "workers": args.workers, "runs_per_pass": len(items),
                       "repeat": args.repeat, "cpus": os.cpu_count(),
                       "interpreter_start_ms": start_ms,
                       "protections": protections}, fh, indent=2)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
