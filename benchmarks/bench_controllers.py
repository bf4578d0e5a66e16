"""The controller phase before and after, on the same trace file, in one run: time, memory, outputs.

    python benchmarks/bench_controllers.py                     # the quickstart's controllers, old vs new
    python benchmarks/bench_controllers.py --repeat 3          # alternate old/new 3 times, report medians
    python benchmarks/bench_controllers.py --flags "--seeds 3 --cv-folds 5"   # a heavier controller run

The controller phase is what ``live-tool-dagger --generate-traces --train-lora`` does after
tracing: it is run here as the same command without ``--generate-traces`` (the trace file is
reused), ``--train-lora --no-progress`` plus ``--flags``, in a fresh root per run, so each run also
builds its tiny LoRA base as a fresh quickstart does. The old way is ``--ref`` (default
``e4bc851``, the commit the faster controllers started from) exported with ``git archive`` into a
temporary folder; the new way is this working tree. Runs are serial (each may use both cores),
old and new alternating.

Printed, per way: wall seconds of the command, CPU seconds (user + system, the command and its
children), peak resident memory of its process tree (sampled every 50 ms with psutil when
installed, else the largest single process), and the summary's ``timing.controllers_total_s``;
then old/new ratios, and whether the outputs are the same: ``final_summary.json`` apart from
timing fields (keys ending in ``_s``/``_ms``, ``seconds``, the ``timing`` block), the run's root
path, the git commit and the measured peak memory of the LoRA training (``peak_*_mb``); ``report.md``
apart from the timing table and the commit; predictions and figures byte for byte. The machine's
load average at the start and end is printed: on a shared machine the ratios are the figure to quote.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from refs import ROOT, child_env, trees  # the old-vs-new helpers of every benchmark
DEFAULT_REF = "e4bc851"
DEFAULT_TRACES = ROOT / "results" / "foofah" / "fresh_traces.jsonl.gz"
MEASURED = ("peak_rss_mb", "peak_cuda_mb")  # memory figures: they vary between runs of the same code



def _tree_rss_mb(pid: int, stop: threading.Event, out: list) -> None:
    import psutil

    peak = 0
    while not stop.wait(0.05):
        try:
            procs = [psutil.Process(pid)]
            procs += procs[0].children(recursive=True)
            peak = max(peak, sum(p.memory_info().rss for p in procs))
        except psutil.Error:
            pass
    out.append(peak / 2**20)


def run_once(tree: Path, traces: Path, flags: list[str], work: Path) -> dict:
    """One controller phase from ``tree`` in a fresh root under ``work``."""
    root = Path(tempfile.mkdtemp(prefix="root_", dir=work))
    (root / "reports").mkdir()
    data = traces.read_bytes()
    if traces.suffix == ".gz":  # a committed study keeps its traces gzipped; a run reads them plain
        import gzip

        data = gzip.decompress(data)
    (root / "reports" / "fresh_traces.jsonl").write_bytes(data)
    cmd = [sys.executable, str(tree / "scripts" / "run_live_tool_dagger.py"), "--root", str(root), "--train-lora",
           "--no-progress", *flags]
    before, peak = resource.getrusage(resource.RUSAGE_CHILDREN), []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=child_env(tree),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stop = threading.Event()
    sampler = None
    try:
        import psutil  # noqa: F401

        sampler = threading.Thread(target=_tree_rss_mb, args=(proc.pid, stop, peak), daemon=True)
        sampler.start()
    except ImportError:
        pass
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    if sampler is not None:
        sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"bench_controllers: the run in {tree} failed:\n{out[-3000:]}")
    summary = json.loads((root / "reports" / "final_summary.json").read_text())
    return {"root": root, "wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_mb": peak[0] if peak else after.ru_maxrss / 1024, "peak_kind": "tree" if peak else "largest process",
            "controllers_total_s": summary["timing"].get("controllers_total_s"), "summary": summary}


def _strip(x, root: str):
    """The summary without timing fields, measured memory, the commit and the run's root path."""
    if isinstance(x, dict):
        return {k: ("<measured>" if k in MEASURED else _strip(v, root)) for k, v in x.items()
                if not (k in ("timing", "seconds", "git_commit") or k.endswith("_s") or k.endswith("_ms"))}
    if isinstance(x, list):
        return [_strip(v, root) for v in x]
    return x.replace(root, "<root>") if isinstance(x, str) else x


def _report_lines(path: Path, root: str) -> list[str]:
    timing_row = re.compile(r"^\| [\w.]+_s \| [-\d.]+ \|$")
    return [ln.replace(root, "<root>") for ln in path.read_text().splitlines()
            if not timing_row.match(ln) and not ln.startswith("- versions: ")]


def differences(a: dict, b: dict) -> list[str]:
    """What differs between two runs' outputs, beyond timing and the measured fields."""
    ra, rb = str(a["root"]), str(b["root"])
    out = []
    if json.dumps(_strip(a["summary"], ra), sort_keys=False) != json.dumps(_strip(b["summary"], rb), sort_keys=False):
        out.append("final_summary.json")
    if _report_lines(a["root"] / "reports" / "report.md", ra) != _report_lines(b["root"] / "reports" / "report.md", rb):
        out.append("report.md")
    for sub in ("predictions", "figures"):
        fa, fb = (sorted(p.name for p in (r["root"] / "reports" / sub).iterdir()) for r in (a, b))
        if fa != fb:
            out.append(f"{sub}/ (file names)")
        out += [f"{sub}/{n}" for n in fa if n in fb and (a["root"] / "reports" / sub / n).read_bytes()
                != (b["root"] / "reports" / sub / n).read_bytes()]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--ref", default=DEFAULT_REF, help="git ref of the old way")
    p.add_argument("--traces", default=str(DEFAULT_TRACES), help="trace file both ways reuse")
    p.add_argument("--flags", default="", help="further CLI flags for both ways, e.g. \"--seeds 3 --cv-folds 5\"")
    p.add_argument("--repeat", type=int, default=1, help="runs per way (alternating old, new); medians are compared")
    p.add_argument("--new-only", action="store_true", help="skip the old way")
    p.add_argument("--json", help="write every figure here")
    args = p.parse_args(argv)
    traces = Path(args.traces)
    if not traces.is_file() or args.repeat < 1:
        p.error("--traces must be a file and --repeat >= 1")
    flags = shlex.split(args.flags)
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_controllers_") as tmp:
        tmp = Path(tmp)
        ways = trees(args.ref, tmp, new_only=args.new_only)
        runs: dict[str, list[dict]] = {name: [] for name in ways}
        for i in range(args.repeat):
            for name, tree in ways.items():
                r = run_once(tree, traces, flags, tmp)
                runs[name].append(r)
                print(f"  {name} #{i + 1}: wall {r['wall_s']:6.1f} s  cpu {r['cpu_s']:6.1f} s  peak {r['peak_mb']:5.0f} MB "
                      f"({r['peak_kind']})  controllers_total_s {r['controllers_total_s']}", flush=True)
        med = {name: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "peak_mb", "controllers_total_s")}
               for name, rs in runs.items()}
        figures = {"load_average_start": load, "load_average_end": os.getloadavg(), "args": vars(args), "median": med}
        for name, m in med.items():
            print(f"{name:4s} median: wall {m['wall_s']:6.1f} s  cpu {m['cpu_s']:6.1f} s  peak {m['peak_mb']:5.0f} MB  "
                  f"controllers_total_s {m['controllers_total_s']:.2f}")
        if "old" in med:
            figures["ratios_old_over_new"] = {k: med["old"][k] / max(med["new"][k], 1e-9) for k in med["new"]}
            print("old/new: " + "  ".join(f"{k} {v:.2f}x" for k, v in figures["ratios_old_over_new"].items()))
            diffs = sorted({d for a in runs["old"] for b in runs["new"] for d in differences(a, b)})
            figures["outputs_differ"] = diffs
            print("outputs identical apart from timing" if not diffs else f"OUTPUTS DIFFER: {', '.join(diffs)}")
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
