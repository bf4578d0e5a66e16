"""The synth backend before and after, on the same cases, in one run: time, peak memory, outcomes.

    python benchmarks/bench_synth.py                          # all 250 Foofah files, K = 1
    python benchmarks/bench_synth.py --samples 3              # K = 3 (three program samples a case)
    python benchmarks/bench_synth.py --cases large --n 30     # 30 generated real-size tables (500-2,000 rows)
    python benchmarks/bench_synth.py --every 5 --pool         # every 5th file, and the new way with its pool

Each way traces the cases the way the rollout does, in waves of 64 cases: a direct wave, a WRITE
wave (every sample j < ``--samples`` of every case), then up to ``--max-repairs`` FIX waves for the
chains whose program still fails the public example; programs are checked in-process with the
synthesizer's own semantics (``run_program``, what the sandbox computes from the emitted code).
The old way is ``--ref`` (default ``54ae94c``, the merge base this synthesizer grew from) exported
with ``git archive`` into a temporary folder; the new way is this working tree. Both run as
subprocesses, serially (one process each, side by side: one core each on a 2-core machine), with
no wall-clock cap on a search (the old code's 20 s default would let load cut searches). With
``--pool`` the new way also runs alone with the backend's process pool (what a run waits for).

Printed, per way: wall and CPU seconds, peak resident memory (the process and its pool
workers), the median and 90th percentile of a case's seconds (its requests' latencies added up),
and over the scorable cases: chains whose program passes the public example, ``always_tool``
(the first passing program of sample 0 is right on the new input, else the direct answer is),
and right programs in any sample; then, per FIX round k, how many chains reached it, passed the
public example there and were right on the hidden answer (the repairs' pass rate). Then the ratios old/new, how many cases have the same text and
the same programs in every round (the text also holds the operators' source, which a faster
operator changes without changing any program), and every case whose ``always_tool`` outcome
changed. ``--cases large`` writes the generated cases
(``cases.generators.large``) to a temporary folder that both ways load. The machine's load
average at the start is printed: on a shared machine the ratios are the figure to quote.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from refs import ROOT, child_env, export_tree  # the old-vs-new helpers of every benchmark
DEFAULT_REF = "54ae94c"

# Runs inside a tree (old or new): only uses interfaces both have.
TRACER = r'''
import hashlib, json, resource, sys, time
from cases import load_cases, tables_equal
from tracegen.backends import BackendConfig, Feedback, GenerationRequest, Task
from tracegen.backends.synth import SynthBackend
from tracegen.synth import read_history, run_program

a = json.loads(sys.argv[1])
cases = load_cases(a["cases_dir"])[::a["every"]][:a["limit"] or None]
cfg = BackendConfig(synth_time_budget_s=a["time_budget"], extra={"synth_workers": a["workers"]})
if a["write_nodes"]:
    cfg.synth_write_nodes = a["write_nodes"]
if a["fix_nodes"]:
    cfg.synth_fix_nodes = a["fix_nodes"]
backend = SynthBackend(cfg)

def check(case, text):
    code = text.split("```python\n", 1)[1].rsplit("```", 1)[0] if "```python\n" in text else ""
    program, _ = read_history(code)
    def run(table):
        try:
            return run_program(table, program or ())
        except Exception:
            return None
    out, test = run(case.input_table), run(case.test_table)
    passed = out is not None and tables_equal(out, case.output_table)
    right = None if case.test_answer is None else (test is not None and tables_equal(test, case.test_answer))
    return code, passed, right, out

wall0, cpu0 = time.perf_counter(), time.process_time()
res = {}
for start in range(0, len(cases), 64):
    chunk = cases[start:start + 64]
    tasks = {c.case_id: Task.from_tables(c.case_id, c.input_table, c.output_table, c.test_table) for c in chunk}
    direct = backend.generate([GenerationRequest("direct", [], tasks[c.case_id]) for c in chunk])
    for c, comp in zip(chunk, direct):
        res[c.case_id] = {"direct_right": None if c.test_answer is None else
                          tables_equal(json.loads(comp.text), c.test_answer), "chains": [],
                          "seconds": comp.latency_ms / 1000.0}
    chains = [(c, j, {"rounds": [], "prev": None, "fb": None}) for j in range(a["samples"]) for c in chunk]
    active = chains
    for rnd in range(a["max_repairs"] + 1):
        if not active:
            break
        reqs = [GenerationRequest("write", [], tasks[c.case_id], sample=j) if rnd == 0 else
                GenerationRequest("fix", [], tasks[c.case_id], round=rnd, previous_code=st["prev"],
                                  feedback=st["fb"], sample=j) for c, j, st in active]
        comps = backend.generate(reqs)
        nxt = []
        for (c, j, st), comp in zip(active, comps):
            code, passed, right, out = check(c, comp.text)
            res[c.case_id]["seconds"] += comp.latency_ms / 1000.0
            st["rounds"].append({"sha": hashlib.sha1(comp.text.encode()).hexdigest()[:12],
                                 "program": json.dumps(read_history(code)[0] or [], sort_keys=True), "pass": passed,
                                 "right": right, "nodes": getattr(comp, "search_nodes", None),
                                 "finish": comp.finish_reason})
            if not passed:
                st["prev"] = code
                st["fb"] = Feedback("wrong_output" if out is not None else "exception", "wrong", out)
                nxt.append((c, j, st))
        active = nxt
    for c, j, st in chains:
        res[c.case_id]["chains"].append(st["rounds"])
backend.close()
wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_mb": peak_kb / 1024.0, "cases": res}))
'''


def _start(tree: Path, cases_dir: Path, args, workers: int, old: bool):
    payload = json.dumps({"cases_dir": str(cases_dir), "every": args.every, "limit": args.limit,
                          "workers": workers, "samples": args.samples, "max_repairs": args.max_repairs,
                          "time_budget": 1e9 if old else None,  # no cap: load must not cut a search
                          "write_nodes": None if old else args.write_nodes,
                          "fix_nodes": None if old else args.fix_nodes})
    env = child_env(tree)
    return tree, subprocess.Popen([sys.executable, "-c", TRACER, payload], cwd=tree, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(started) -> dict:
    tree, proc = started
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"bench_synth: tracing in {tree} failed:\n{err[-2000:]}")
    return json.loads(out.splitlines()[-1])


def always_tool(case: dict) -> bool | None:
    """The always-tool policy's outcome at K = 1: the first program of sample 0 that passes the
    public example, committed; else the direct answer. None for an unscored case."""
    if case["direct_right"] is None:
        return None
    for rnd in case["chains"][0]:
        if rnd["pass"]:
            return bool(rnd["right"])
    return bool(case["direct_right"])


def quality(run: dict) -> dict:
    scored = [c for c in run["cases"].values() if c["direct_right"] is not None]
    secs = sorted(c["seconds"] for c in run["cases"].values())
    return {
        "scorable": len(scored),
        "pass_example": sum(any(r["pass"] for r in c["chains"][0]) for c in scored),
        "always_tool": sum(bool(always_tool(c)) for c in scored),
        "right_any_sample": sum(any(r["pass"] and r["right"] for ch in c["chains"] for r in ch) for c in scored),
        "direct_right": sum(c["direct_right"] for c in scored),
        "case_s_median": statistics.median(secs) if secs else 0.0,
        "case_s_p90": secs[int(0.9 * (len(secs) - 1))] if secs else 0.0,
        "search_nodes": sum(r["nodes"] or 0 for c in run["cases"].values() for ch in c["chains"] for r in ch),
        "budget_rounds": sum(r["finish"] == "budget" for c in run["cases"].values() for ch in c["chains"] for r in ch),
    }


def fix_rounds(run: dict) -> list[dict]:
    """Per FIX round k (1, 2, ...), over every chain of every sample: how many chains reached it,
    how many passed the public example there, and how many of those are right on the hidden
    answer (scored cases only for ``right``)."""
    out: list[dict] = []
    for c in run["cases"].values():
        for ch in c["chains"]:
            for k, r in enumerate(ch[1:], 1):
                while len(out) < k:
                    out.append({"round": len(out) + 1, "reached": 0, "passed": 0, "right": 0})
                row = out[k - 1]
                row["reached"] += 1
                row["passed"] += bool(r["pass"])
                row["right"] += bool(r["pass"] and r["right"])
    return out


def compare(old: dict, new: dict) -> dict:
    """Cases whose always-tool outcome changed, and how many sample-0 chains are identical."""
    changed = {k: [always_tool(c), always_tool(new["cases"][k])] for k, c in old["cases"].items()
               if always_tool(c) != always_tool(new["cases"][k])}
    same = sum([r["sha"] for r in c["chains"][0]] == [r["sha"] for r in new["cases"][k]["chains"][0]]
               for k, c in old["cases"].items())
    # the programs of every round of every sample (the text also holds the operators' source,
    # which a faster helper changes without changing what a program does)
    programs = sum([[r["program"] for r in ch] for ch in c["chains"]] ==
                   [[r["program"] for r in ch] for ch in new["cases"][k]["chains"]] for k, c in old["cases"].items())
    return {"always_tool_changed": changed, "identical_sample0_chains": same, "identical_programs": programs}


def _cases_dir(args, tmp: Path) -> Path:
    if args.cases == "foofah":
        return ROOT / "cases" / "foofah"
    if args.cases == "large":
        sys.path.insert(0, str(ROOT))
        from cases.generators.large import write_cases

        write_cases(tmp / "large", args.n, args.seed)
        return tmp / "large"
    path = Path(args.cases)
    if not path.is_dir():
        sys.exit(f"--cases: {args.cases} is not foofah, large or a folder")
    return path.resolve()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--ref", default=DEFAULT_REF, help="git ref of the old way")
    p.add_argument("--cases", default="foofah", help="foofah, large (generated real-size tables) or a folder")
    p.add_argument("--n", type=int, default=30, help="--cases large: how many cases")
    p.add_argument("--seed", type=int, default=0, help="--cases large: generator seed")
    p.add_argument("--every", type=int, default=1, help="trace every k-th case file")
    p.add_argument("--limit", type=int, default=0, help="at most this many files (0: no limit)")
    p.add_argument("--max-repairs", type=int, default=2)
    p.add_argument("--samples", type=int, default=1, help="program samples per case (both ways)")
    p.add_argument("--write-nodes", type=int, default=None, help="new way's WRITE budget (default: the backend's)")
    p.add_argument("--fix-nodes", type=int, default=None, help="new way's FIX budget (default: the backend's)")
    p.add_argument("--pool", action="store_true", help="also run the new way with the backend's process pool")
    p.add_argument("--new-only", action="store_true", help="skip the old way")
    p.add_argument("--json", help="write every figure here, with each case's rounds")
    args = p.parse_args(argv)
    if min(args.every, args.samples, args.n) < 1 or min(args.max_repairs, args.limit) < 0:
        p.error("--every, --samples and --n must be >= 1; --max-repairs and --limit >= 0")
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} cores", flush=True)
    figures: dict = {"load_average_start": load, "args": vars(args)}
    runs: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_synth_") as tmp:
        tmp = Path(tmp)
        cases_dir = _cases_dir(args, tmp)
        started = {}
        if not args.new_only:
            started["old"] = _start(export_tree(args.ref, tmp), cases_dir, args, 1, old=True)
        started["new"] = _start(ROOT, cases_dir, args, 1, old=False)
        runs = {name: _finish(s) for name, s in started.items()}
        if args.pool:
            sys.path.insert(0, str(ROOT))
            from tracegen.backends import BackendConfig
            from tracegen.backends.synth import workers

            runs["new_pool"] = _finish(_start(ROOT, cases_dir, args, workers(BackendConfig()), old=False))
    n = len(runs["new"]["cases"])
    print(f"{n} cases ({args.cases}), samples {args.samples}, max repairs {args.max_repairs}")
    for name, run in runs.items():
        q = quality(run)
        figures[name] = {"wall_s": run["wall_s"], "cpu_s": run["cpu_s"], "peak_mb": run["peak_mb"], **q,
                         "cases": run["cases"]}
        print(f"  {name:8s} wall {run['wall_s']:7.1f} s  cpu {run['cpu_s']:7.1f} s  peak {run['peak_mb']:6.0f} MB  "
              f"case median {q['case_s_median']:.3f} s (p90 {q['case_s_p90']:.3f})  "
              f"pass {q['pass_example']}/{q['scorable']}  always_tool {q['always_tool']}  "
              f"right(any sample) {q['right_any_sample']}  direct {q['direct_right']}  "
              f"search nodes {q['search_nodes']}", flush=True)
        figures[name]["fix_rounds"] = rounds = fix_rounds(run)
        print("           " + "  ".join(f"FIX {r['round']}: reached {r['reached']}, passed {r['passed']}, "
                                        f"right {r['right']}" for r in rounds), flush=True)
    if "old" in runs:
        old, new = runs["old"], runs["new"]
        qo, qn = quality(old), quality(new)
        diff = compare(old, new)
        figures["ratios"] = {
            "cpu_old_over_new": old["cpu_s"] / max(new["cpu_s"], 1e-9),
            "wall_old_over_new": old["wall_s"] / max(new["wall_s"], 1e-9),
            "case_median_old_over_new": qo["case_s_median"] / max(qn["case_s_median"], 1e-9),
            "peak_mb_old_over_new": old["peak_mb"] / max(new["peak_mb"], 1e-9)}
        figures.update(diff)
        for k, v in figures["ratios"].items():
            print(f"  {k}: {v:.2f}x")
        print(f"  sample-0 chains identical (text): {diff['identical_sample0_chains']}/{n}")
        print(f"  cases whose every round's program is the same: {diff['identical_programs']}/{n}")
        print(f"  always_tool outcome changed (old -> new): {len(diff['always_tool_changed'])}")
        for k, (a, b) in sorted(diff["always_tool_changed"].items()):
            print(f"    {k}: {a} -> {b}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
