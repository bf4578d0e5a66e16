"""The synth backend before and after, on the same Foofah cases, in one run.

    python scripts/bench_synth.py                       # all 250 Foofah files, old vs new
    python scripts/bench_synth.py --every 5             # every 5th file (quicker)
    python scripts/bench_synth.py --samples 3 --new-only  # the cost of K = 3 WRITE + FIX chains

Each way traces the cases the way the rollout does, in waves of 64 cases: a direct wave, a WRITE
wave (every sample j < ``--samples`` of every case), then up to ``--max-repairs`` FIX waves for
the chains whose program still fails the public example; programs are checked in-process with the
synthesizer's own semantics (``run_program``, what the sandbox computes from the emitted code).
The old way is ``--ref`` (default ``main``) exported with ``git archive`` and run serially, as it
always ran; the new way is this working tree, run (a) serially in one process (its CPU seconds,
which load on the machine barely moves: the search's own speedup) and (b) with the backend's
process pool (wall seconds: what a run waits for). The old way and the serial new way run side by
side (one core each); the pool runs alone afterwards. The searches' wall-clock safety net is off
by default (``--synth-time-budget``), so a loaded machine cannot cut a search short. It prints
seconds, ratios and quality counts over the scorable cases (a program passes the example / a
passing program is right on the new input / the direct answer is right), how many sample-0 chains
are identical, and the load average it started under. Other settings are the backend's defaults
(what the quickstart uses). With ``--samples K`` it also counts the chains that hit an
"exhausted" round and the search nodes spent.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs inside a tree (old or new): only uses interfaces both have.
TRACER = r'''
import hashlib, json, sys, time
from cases import load_cases, tables_equal
from tracegen.backends import BackendConfig, Feedback, GenerationRequest, Task
from tracegen.backends.synth import SynthBackend
from tracegen.synth import read_history, run_program

a = json.loads(sys.argv[1])
cases = load_cases(a["cases_dir"])[::a["every"]][:a["limit"] or None]
cfg = BackendConfig(synth_time_budget_s=a["time_budget"], extra={"synth_workers": a["workers"]})
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
    tasks = {c.case_id: Task(c.case_id, c.input_table, c.output_table, c.test_table) for c in chunk}
    direct = backend.generate([GenerationRequest("direct", [], tasks[c.case_id]) for c in chunk])
    for c, comp in zip(chunk, direct):
        res[c.case_id] = {"direct_right": None if c.test_answer is None else
                          tables_equal(json.loads(comp.text), c.test_answer), "chains": []}
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
            st["rounds"].append({"sha": hashlib.sha1(comp.text.encode()).hexdigest()[:12], "pass": passed,
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
print(json.dumps({"wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0, "cases": res}))
'''


def _export(ref: str, dest: Path) -> None:
    """``git archive ref`` unpacked into ``dest``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
    tar_path = dest / "tree.tar"
    tar_path.write_bytes(data)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest / "tree")


def _start(tree: Path, args, workers: int, samples: int) -> tuple:
    payload = json.dumps({"cases_dir": str(ROOT / "cases" / "foofah"), "every": args.every, "limit": args.limit,
                          "workers": workers, "samples": samples, "max_repairs": args.max_repairs,
                          "time_budget": args.synth_time_budget})
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen([sys.executable, "-c", TRACER, payload], cwd=tree, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return tree, proc


def _finish(started: tuple) -> dict:
    tree, proc = started
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"bench_synth: tracing in {tree} failed:\n{err[-2000:]}")
    return json.loads(out.splitlines()[-1])


def quality(run: dict, sample: int | None = 0) -> dict:
    """Counts over the scorable cases: a program passes the example, a passing one is right on the
    new input, the direct answer is right (``sample``: one sample's chain, None: any sample)."""
    scored = [c for c in run["cases"].values() if c["direct_right"] is not None]
    chains = [c["chains"] if sample is None else [c["chains"][sample]] for c in scored]
    return {
        "scorable": len(scored),
        "pass_example": sum(any(r["pass"] for ch in chs for r in ch) for chs in chains),
        "right_new_input": sum(any(r["pass"] and r["right"] for ch in chs for r in ch) for chs in chains),
        "direct_right": sum(c["direct_right"] for c in scored),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ref", default="main", help="git ref of the old way (default: main)")
    p.add_argument("--every", type=int, default=1, help="trace every k-th Foofah file (default 1: all)")
    p.add_argument("--limit", type=int, default=0, help="at most this many files (0: no limit)")
    p.add_argument("--max-repairs", type=int, default=2)
    p.add_argument("--samples", type=int, default=1, help="program samples per case for the new way")
    p.add_argument("--workers", type=int, default=0, help="pool size of the new way (0: the backend's default)")
    p.add_argument("--new-only", action="store_true", help="skip the old way and the serial new way")
    p.add_argument("--synth-time-budget", type=float, default=1e6,
                   help="the search's wall-clock safety net (default: off, so load cannot cut a search)")
    p.add_argument("--json", help="write every figure here, with each case's rounds")
    args = p.parse_args(argv)
    if args.every < 1 or args.samples < 1 or args.max_repairs < 0 or args.workers < 0 or args.limit < 0:
        p.error("--every and --samples must be >= 1; --max-repairs, --workers and --limit >= 0")
    if args.workers == 0:
        sys.path.insert(0, str(ROOT))
        from tracegen.backends import BackendConfig
        from tracegen.backends.synth import workers
        args.workers = workers(BackendConfig())
    load = os.getloadavg()[0]
    print(f"load average at start: {load:.2f} on {os.cpu_count()} cores")
    figures: dict = {"load_average_start": load, "args": vars(args)}
    runs = {}
    if not args.new_only:
        # the two serial ways side by side, one core each: their CPU seconds are the comparison
        with tempfile.TemporaryDirectory() as tmp:
            _export(args.ref, Path(tmp))
            old = _start(Path(tmp) / "tree", args, 1, 1)
            new = _start(ROOT, args, 1, args.samples)
            runs["old"], runs["new_serial"] = _finish(old), _finish(new)
    runs["new_pool"] = _finish(_start(ROOT, args, args.workers, args.samples))
    n = len(runs["new_pool"]["cases"])
    print(f"{n} Foofah files, max repairs {args.max_repairs}, samples {args.samples}, pool {args.workers}")
    for name, run in runs.items():
        q = quality(run)
        figures[name] = {"wall_s": run["wall_s"], "cpu_s": run["cpu_s"], "quality_sample0": q,
                         "cases": run["cases"]}
        print(f"  {name:10s} wall {run['wall_s']:7.1f} s  cpu(main process) {run['cpu_s']:7.1f} s  "
              f"pass {q['pass_example']}/{q['scorable']}  right {q['right_new_input']}  direct {q['direct_right']}")
    if "old" in runs:
        old, ser, pool = runs["old"], runs["new_serial"], runs["new_pool"]
        same = sum([r["sha"] for r in old["cases"][k]["chains"][0]] == [r["sha"] for r in ser["cases"][k]["chains"][0]]
                   for k in old["cases"])
        figures["ratios"] = {"cpu_old_over_new_serial": old["cpu_s"] / ser["cpu_s"],
                             "wall_old_over_new_pool": old["wall_s"] / pool["wall_s"],
                             "identical_sample0_chains": same}
        print(f"  search speedup (old cpu / new serial cpu): {old['cpu_s'] / ser['cpu_s']:.2f}x")
        print(f"  wall speedup (old / new with pool):        {old['wall_s'] / pool['wall_s']:.2f}x")
        print(f"  sample-0 chains identical to the old way's: {same}/{n}")
    if args.samples > 1:
        pool = runs["new_pool"]
        chains = [ch for c in pool["cases"].values() for ch in c["chains"]]
        exhausted = sum(any(r["finish"] == "exhausted" for r in ch) for ch in chains)
        nodes = sum(r["nodes"] or 0 for ch in chains for r in ch)
        q = quality(pool, None)
        figures["samples"] = {"chains": len(chains), "exhausted_chains": exhausted, "search_nodes": nodes,
                              "quality_any_sample": q}
        print(f"  K={args.samples}: {len(chains)} chains, {exhausted} with an exhausted round, {nodes} search nodes; "
              f"any sample: pass {q['pass_example']}  right {q['right_new_input']}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
