"""Whole trace + analysis runs with the synth backend, old code vs new, in one run.

    python benchmarks/bench_tree.py                                   # all 250 Foofah files, K = 3
    python benchmarks/bench_tree.py --program-samples 1               # K = 1 (the quickstart's tracing)
    python benchmarks/bench_tree.py --program-samples 1 --train-lora --dagger-iters 0  # the quickstart
    python benchmarks/bench_tree.py --cases-per-family 1 --ref HEAD~3 # 50 files, against another commit

For each way it makes a fresh CLI run (``--generate-traces``, no generation cache, so every
program is searched for, then the controllers with ``--dagger-iters``) under a temporary root:
the old way is ``--ref`` (default ``54ae94c``, the merge base) exported with ``git archive`` and
run from there, the new way is this working tree. The two run one after the other, each alone.
Printed per way (then the ratios, and how many cases have the same program in every round): tracing seconds (the summary's ``traces_s``), total wall seconds, CPU seconds of
the run and its children, peak resident memory of the run's processes, program rounds and search
nodes in the traces, and the always-tool outcome (first program of sample 0 that passes the
public example, else the direct answer) over the scored cases; then the old/new ratios and every
case whose always-tool outcome changed. The machine's load average is printed with each run: on a
shared machine quote the ratios (and the CPU seconds), not the wall seconds alone.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from refs import child_env, trees  # the old-vs-new helpers of every benchmark
DEFAULT_REF = "54ae94c"

# runs the CLI as a child and reports its CPU seconds and peak memory (its own process tree only)
WRAP = r'''
import json, resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": proc.returncode, "err": proc.stderr[-1500:], "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_mb": ru.ru_maxrss / 1024.0}))
'''


def always_tool(rec: dict) -> bool | None:
    hidden = rec["hidden"]
    if hidden.get("answer") is None:
        return None
    for i, rnd in enumerate(rec["rounds"]):
        if rnd.get("visible_pass"):
            return bool(hidden["rounds"][i].get("hidden_exact"))
    return bool(hidden.get("direct_exact"))


def _run(tree: Path, root: Path, args) -> dict:
    cmd = [sys.executable, str(tree / "scripts" / "run_live_tool_dagger.py"), "--root", str(root),
           "--generate-traces", "--no-progress", "--cache-dir", "none", "--program-samples",
           str(args.program_samples), "--max-repairs", str(args.max_repairs), "--dagger-iters",
           str(args.dagger_iters), "--workers", str(args.workers)]
    if args.cases_per_family:
        cmd += ["--cases-per-family", str(args.cases_per_family)]
    if args.train_lora:
        cmd += ["--train-lora"]
    env = child_env(tree)
    load0, t0 = os.getloadavg()[0], time.monotonic()
    proc = subprocess.run([sys.executable, "-c", WRAP, *cmd], env=env, cwd=tree, capture_output=True, text=True)
    wall = time.monotonic() - t0
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    if info["rc"] != 0:
        sys.exit(f"bench_tree: the run in {tree} failed ({info['rc']}): {info['err'].strip().splitlines()[-1:]}")
    traces = [json.loads(line) for line in (root / "reports" / "fresh_traces.jsonl").read_text().splitlines()
              if line.strip()]
    summary = json.loads((root / "reports" / "final_summary.json").read_text())
    rounds = [r for rec in traces for ch in [rec["rounds"], *rec.get("samples", [])] for r in ch]
    timing = summary.get("timing") or {}
    outcomes = {rec["case_id"]: always_tool(rec) for rec in traces}
    # each round's program, read from its code's "# program:" line (the rest of the text holds
    # the operators' source, which can change without changing any program)
    programs = {rec["case_id"]: [[_program_line(r.get("code") or "") for r in ch]
                                 for ch in [rec["rounds"], *rec.get("samples", [])]] for rec in traces}
    return {"cases": len(traces), "traces_s": timing.get("traces_s"), "wall_s": round(wall, 1),
            "cpu_s": round(info["cpu_s"], 1), "peak_mb": round(info["peak_mb"], 1),
            "controllers_s": timing.get("controllers_total_s"), "program_rounds": len(rounds),
            "search_nodes": sum(r.get("search_nodes", 0) for r in rounds),
            "budget_rounds": sum(r.get("finish_reason") == "budget" for r in rounds),
            "always_tool": sum(bool(v) for v in outcomes.values()),
            "scored": sum(v is not None for v in outcomes.values()),
            "load_avg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)], "_outcomes": outcomes,
            "_programs": programs}


def _program_line(code: str) -> str:
    return next((line for line in code.splitlines() if line.startswith("# program:")), "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--ref", default=DEFAULT_REF, help="git ref of the old way")
    p.add_argument("--program-samples", type=int, default=3)
    p.add_argument("--max-repairs", type=int, default=2)
    p.add_argument("--dagger-iters", type=int, default=2)
    p.add_argument("--cases-per-family", type=int, default=None, help="default: every Foofah file (250)")
    p.add_argument("--workers", type=int, default=2, help="sandbox workers")
    p.add_argument("--train-lora", action="store_true", help="also train the LoRA policy (the quickstart's command)")
    p.add_argument("--new-only", action="store_true", help="skip the old way")
    p.add_argument("--json", help="write the figures here")
    args = p.parse_args(argv)
    if args.program_samples < 1 or args.max_repairs < 0:
        p.error("--program-samples must be >= 1 and --max-repairs >= 0")
    out: dict = {"cpus": os.cpu_count(), "args": vars(args)}
    with tempfile.TemporaryDirectory(prefix="bench_tree_") as tmp:
        tmp = Path(tmp)
        ways = trees(args.ref, tmp, new_only=args.new_only)
        for name, tree in ways.items():
            (tmp / name).mkdir()
            out[name] = _run(tree, tmp / name, args)
            print(name, json.dumps({k: v for k, v in out[name].items() if not k.startswith("_")}), flush=True)
    if "old" in out:
        old, new = out["old"], out["new"]
        out["ratios"] = {k: round(old[k] / max(new[k], 1e-9), 2) for k in ("traces_s", "wall_s", "cpu_s", "peak_mb")
                         if old.get(k) is not None and new.get(k) is not None}
        out["always_tool_changed"] = {k: [v, new["_outcomes"].get(k)] for k, v in old["_outcomes"].items()
                                      if v != new["_outcomes"].get(k)}
        out["same_programs"] = sum(v == new["_programs"].get(k) for k, v in old["_programs"].items())
        print("old/new:", json.dumps(out["ratios"]))
        print(f"cases whose every round has the same program: {out['same_programs']}/{len(old['_programs'])}")
        print(f"always_tool {old['always_tool']}/{old['scored']} -> {new['always_tool']}/{new['scored']}; "
              f"changed cases: {json.dumps(out['always_tool_changed'])}")
    for way in ("old", "new"):
        if way in out:
            out[way].pop("_outcomes")
            out[way].pop("_programs")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
