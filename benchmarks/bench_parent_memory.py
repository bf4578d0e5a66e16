"""Peak parent memory while grading one wave of hostile programs whose outputs are as costly as the
sandbox's limits allow, the old way and the new way, in one run.

    python benchmarks/bench_parent_memory.py                  # a wave of 64 programs, 2 runs each
    python benchmarks/bench_parent_memory.py --programs 16 --json out.json

Every program returns the output that costs the parent the most once decoded, within
``OutputLimits``: 100 rows x 1,000 cells (the 100,000-cell limit) of 35 characters, one of them
astral (U+1F600), so each cell decodes to a ``str`` of 4 bytes a character: 4.1 MB of JSON (under
the 4 MiB limit) and about 23 MB of objects per output.

- old: ``Sandbox.run_many`` of the wave's 2 x N runs, every result kept, as ``tracegen/rollout.py``
  did (its round records held every output of the wave until the chunk was written);
- new: ``tracegen.rollout.rollout`` of N cases whose every program is that one, one wave, writing
  its trace file: grading, records and all.

Each way runs in a child process of its own (``--way``), which reports its peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss``) and its RSS before the wave (its ``Sandbox`` started);
the parent prints both ways and the ratio. The time limit is 60 s of CPU a run, so a loaded
machine changes the time taken, not the outputs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROWS, COLS = 100, 1000
CODE = (f"def transform(table):\n"
        f"    return [['%03d%04d' % (r, c) + 'x' * 27 + '\\U0001F600' for c in range({COLS})]"
        f" for r in range({ROWS})]\n")
TIMEOUT_S = 60.0


def _rss_kb() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _old(n: int, sb) -> int:
    results = sb.run_many([(CODE, [["in"]])] * (2 * n), timeout_s=TIMEOUT_S, memory_mb=256)
    return sum(r.ok for r in results)  # (the results are held until here)


def _new(n: int, sb) -> int:
    from cases import Case
    from tracegen.backends import Backend, BackendConfig, Completion
    from tracegen.rollout import RolloutConfig, rollout

    class Hostile(Backend):
        name = "bench"

        def __init__(self):
            super().__init__(BackendConfig(name="bench", model="bench"))

        def generate(self, requests):
            return [Completion('[["x"]]' if r.kind == "direct" else f"```python\n{CODE}```", 0, 0, 0.0)
                    for r in requests]

    cases = [Case.from_tables(f"b{i}/b{i}_{i}", f"b{i}", [["in"]], [["no"]], [["new"]], [["no"]]) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        rollout(cases, {}, Hostile(), sb, path, RolloutConfig(max_repairs=0, wave_size=n, progress=False,
                                                             exec_timeout_s=TIMEOUT_S))
        ok = 0
        with open(path, encoding="utf-8") as fh:
            for line in fh:  # one record at a time
                rec = json.loads(line)
                ok += rec["rounds"][0]["visible"]["ok"] + rec["rounds"][0]["test"]["ok"]
        return ok


def child(way: str, n: int) -> None:
    from sandbox import Sandbox

    with Sandbox(workers=2, start_timeout_s=600) as sb:
        sb.run("def transform(t):\n    return t\n", [["a"]])
        before = _rss_kb()
        t0 = time.monotonic()
        ok = (_old if way == "old" else _new)(n, sb)
        seconds = time.monotonic() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"way": way, "runs_ok": ok, "before_kb": before, "peak_kb": peak, "seconds": seconds}))


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=64, help="programs in the wave (2 runs each)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--way", choices=("old", "new"), help=argparse.SUPPRESS)  # a child's part
    args = ap.parse_args()
    if args.way:
        return child(args.way, args.programs)
    out = {}
    load = os.getloadavg()[0]
    for way in ("old", "new"):
        proc = subprocess.run([sys.executable, __file__, "--way", way, "--programs", str(args.programs)],
                              capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{way}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        out[way] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"a wave of {args.programs} programs x 2 runs, each output {ROWS} x {COLS} cells of 35 characters "
          f"(~4.1 MB of JSON); load average {load:.1f} at the start")
    print(f"{'way':5}{'runs ok':>9}{'RSS before MB':>15}{'peak RSS MB':>13}{'seconds':>9}")
    for way, m in out.items():
        print(f"{way:5}{m['runs_ok']:9}{m['before_kb'] / 1024:15.0f}{m['peak_kb'] / 1024:13.0f}{m['seconds']:9.1f}")
    ratio = out["old"]["peak_kb"] / out["new"]["peak_kb"]
    growth = (out["old"]["peak_kb"] - out["old"]["before_kb"]) / max(1, out["new"]["peak_kb"] - out["new"]["before_kb"])
    print(f"peak RSS old / new: {ratio:.1f}x (growth over the RSS before the wave: {growth:.1f}x); "
          f"new peak {'under' if out['new']['peak_kb'] < 1 << 20 else 'OVER'} 1 GB")
    if args.json:
        Path(args.json).write_text(json.dumps({"programs": args.programs, "load": load, **out,
                                               "ratio": ratio, "growth_ratio": growth}, indent=2))


if __name__ == "__main__":
    main()
