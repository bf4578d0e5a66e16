"""The GPU check: what this toolkit does on one GPU, measured in one prepared call.

Run by ``benchmarks/gpu/check.sh`` (which first installs the carried wheels); every stage is its own
process with its own time limit, so a stage that fails or hangs costs only its own time, and the
rest still run. Nothing is downloaded: the models are the tiny local one
(``tracegen.tiny_model``) and the Qwen3.5-4B architecture at full size with random weights, built
from ``qwen3_5_4b_config.json`` with a tokenizer trained on the Foofah prompts and padded to the
model's vocabulary (``pipeline_gpu.build_folder``). Random weights do the same arithmetic as
trained ones; every figure is throughput or memory, never accuracy.

Stages (``STAGES``): ``env`` (versions, the GPU, which packages import); ``hf_tiny`` and ``hf_4b``:
the hf backend (``tracegen.backends.hf``) on Foofah prompts, one prompt at a time (the pilot's way)
vs batched, tokens/s and peak GPU memory; ``build_4b``: the 4B folder; ``export``: an SFT export
traced by the synthesizer through the real CLI; ``sft_tiny`` and ``sft_4b``: ``live-tool-dagger
sft`` on it (s/step, memory); ``lora_4b``: the LoRA controller trained on the 4B architecture as a
run trains it (``train_lora_policy`` on the committed Foofah traces' states: time, memory);
``sandbox``: ``benchmarks/bench_sandbox.py`` with a worker per core. The limits add up to 420 s;
with the install before them the call stays under 8 minutes.

    python benchmarks/gpu/check.py --out DIR              # on the GPU machine (check.sh runs this)
    python benchmarks/gpu/check.py --out DIR --dry-run    # CPU, tiny sizes: every stage, quickly
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the toolkit of this tree, never an installed copy
HERE = Path(__file__).resolve().parent
CLI = REPO / "scripts" / "run_live_tool_dagger.py"
MARK = "CHECK_RESULT "  # a stage's last stdout line: this, then its JSON


@dataclass(frozen=True)
class Stage:
    name: str
    gpu_s: int  # its time limit on the GPU machine (all of them add up to 420 s)
    dry_s: int  # its time limit in the CPU dry run
    what: str


STAGES = (
    Stage("env", 20, 60, "versions, the GPU, which packages import"),
    Stage("hf_tiny", 30, 150, "hf backend, tiny model: one prompt at a time vs batched"),
    Stage("build_4b", 60, 180, "the Qwen3.5-4B architecture, random weights, saved as a model folder"),
    Stage("hf_4b", 65, 180, "hf backend, 4B architecture: one prompt at a time vs batched"),
    Stage("export", 45, 240, "an SFT export from a synthesizer run of the CLI"),
    Stage("sft_tiny", 40, 180, "live-tool-dagger sft, tiny model"),
    Stage("sft_4b", 75, 180, "live-tool-dagger sft, a few steps on the 4B architecture"),
    Stage("lora_4b", 60, 180, "the LoRA controller trained on the 4B architecture"),
    Stage("sandbox", 25, 120, "the sandbox's throughput with a worker per core"),
)


# ---- the stages (each runs in its own process: ``--stage NAME``) ----------------------------------

def _device(dry: bool) -> str:
    return "cpu" if dry else "cuda"


def _peak_gib(dry: bool) -> dict:
    if dry:
        import resource

        return {"peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}
    import torch

    return {"peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


def stage_env(work: Path, dry: bool) -> dict:
    import importlib.metadata as md
    import platform

    import torch

    names = ("torch", "transformers", "peft", "accelerate", "scikit-learn", "trl", "datasets", "pyarrow", "pandas",
             "jsonschema", "gguf", "statsmodels", "vllm", "flash-linear-attention", "causal-conv1d")
    versions = {}
    for n in names:
        try:
            versions[n] = md.version(n)
        except md.PackageNotFoundError:
            versions[n] = None
    out = {"python": platform.python_version(), "cpus": os.cpu_count(), "versions": versions,
           "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        out.update(gpu=p.name, gpu_gib=round(p.total_memory / 2**30, 1), gpus=torch.cuda.device_count())
    elif not dry:
        raise RuntimeError("no GPU visible to torch (run with --dry-run on a CPU machine)")
    for mod in ("trl", "datasets", "jsonschema", "gguf", "statsmodels.api"):  # what the toolkit imports
        __import__(mod)
    return out


def _requests(n: int):
    """Direct and write requests (alternating) on the first n Foofah cases, one per family first."""
    from tracegen.backends import GenerationRequest, Task

    sys.path.insert(0, str(HERE))
    from bench_gpu import build_prompts

    out = []
    for i, msgs in enumerate(build_prompts(n, 6000)):
        out.append(GenerationRequest("direct" if i % 2 == 0 else "write", msgs, Task(f"p/{i}", [], [], [])))
    return out


def _hf(folder: str, dry: bool, n: int, pilot: int, batch: int, new_tokens: int) -> dict:
    """The hf backend on ``folder``: ``pilot`` prompts one at a time, then ``n`` in batches."""
    import torch

    from tracegen.backends import BackendConfig, get_backend

    reqs = _requests(n)
    t0 = time.perf_counter()
    backend = get_backend(BackendConfig(name="hf", model=folder, device=_device(dry), max_new_tokens=new_tokens,
                                        batch_size=1, cache_dir=None))
    load_s = time.perf_counter() - t0
    sync = torch.cuda.synchronize if not dry else (lambda: None)
    backend.generate(reqs[:2])  # warm-up: kernels, allocator, lazy imports
    rows = []
    for name, size, subset in (("one prompt at a time (the pilot's way)", 1, reqs[:pilot]),
                               (f"batched ({batch} a call)", batch, reqs)):
        backend.config.batch_size = size
        sync()
        t = time.perf_counter()
        done = backend.generate(subset)
        sync()
        secs = time.perf_counter() - t
        tokens = sum(c.completion_tokens for c in done)
        rows.append({"way": name, "prompts": len(subset), "tokens": tokens, "seconds": round(secs, 2),
                     "tokens_per_s": round(tokens / secs, 1)})
    rows[1]["ratio"] = round(rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"], 1) if rows[0]["tokens_per_s"] else None
    params = sum(p.numel() for p in backend.loaded.model.parameters())
    backend.close()
    return {"model": folder, "params": params, "load_s": round(load_s, 1), "max_new_tokens": new_tokens,
            "rows": rows, **_peak_gib(dry)}


def stage_hf_tiny(work: Path, dry: bool) -> dict:
    from tracegen.tiny_model import build_tiny_model

    folder = build_tiny_model(str(work / "tiny"))
    return _hf(folder, dry, n=8 if dry else 64, pilot=2 if dry else 16, batch=32, new_tokens=8 if dry else 64)


def _folder_4b(work: Path) -> Path:
    return work / "qwen3_5_4b_random"


def stage_build_4b(work: Path, dry: bool) -> dict:
    sys.path.insert(0, str(HERE))
    from pipeline_gpu import build_folder

    info = build_folder(_folder_4b(work), HERE / "qwen3_5_4b_config.json", dry, 16, _device(dry))
    return {**info, "tiny_sizes": dry, **_peak_gib(dry)}


def stage_hf_4b(work: Path, dry: bool) -> dict:
    return _hf(str(_folder_4b(work)), dry, n=6 if dry else 32, pilot=2 if dry else 4, batch=32,
               new_tokens=8 if dry else 64)


def _cli(args: list, timeout: float) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                       cwd=REPO)
    print((r.stdout + r.stderr)[-4000:], flush=True)
    if r.returncode:
        raise RuntimeError(f"exit {r.returncode}: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    return r


def stage_export(work: Path, dry: bool) -> dict:
    root = work / "export"
    t = time.perf_counter()
    _cli(["--root", root, "--generate-traces", "--export-sft", "--limit-total", 12 if dry else 30, "--max-repairs",
          1, "--no-progress", "--cache-dir", "none", "--lora-frontier", "none", "--workers", os.cpu_count() or 2], 600)
    export = json.loads((root / "reports" / "sft" / "export.json").read_text())
    return {"seconds": round(time.perf_counter() - t, 1), "train_rows": export.get("train"),
            "dev_rows": export.get("dev"), "longest": export.get("longest")}


def _sft(model: str, out: Path, dry: bool, steps: int, batch: int, max_length: int) -> dict:
    args = ["sft", "--data", out.parent / "export" / "reports" / "sft", "--model", model, "--out", out,
            "--max-steps", steps, "--batch-size", batch, "--grad-accum", 1, "--logging-steps", 1,
            "--save-steps", 10_000, "--device", _device(dry)]
    if max_length:
        args += ["--max-length", max_length]
    _cli(args, 600)
    s = json.loads((out / "sft_summary.json").read_text())
    return {**s, "s_per_step": round(s["seconds"] / max(s["steps"], 1), 2)}


def stage_sft_tiny(work: Path, dry: bool) -> dict:
    from tracegen.tiny_model import build_tiny_model

    folder = build_tiny_model(str(work / "tiny"))
    return _sft(folder, work / "sft_tiny", dry, steps=3 if dry else 20, batch=4, max_length=0)


def stage_sft_4b(work: Path, dry: bool) -> dict:
    return _sft(str(_folder_4b(work)), work / "sft_4b", dry, steps=2 if dry else 4, batch=2 if dry else 4,
                max_length=2048)


def stage_lora_4b(work: Path, dry: bool) -> dict:
    """The pilot's LoRA controller design (``LoraPolicyConfig`` defaults but the step count) on the
    4B architecture, on the committed Foofah traces' states labelled as a run labels them."""
    from controller.learn.lora import LoraPolicyConfig, PolicyExample, train_lora_policy
    from controller.learn.training import full_state_pairs, labelled
    from tracegen.records import read_traces

    recs = [r for r in read_traces(REPO / "results" / "foofah" / "fresh_traces.jsonl.gz")
            if r["hidden"]["answer"] is not None]
    data = labelled(full_state_pairs(recs))
    examples = [PolicyExample(s.text, tuple(s.valid_actions), lab, w)
                for s, lab, w in zip(data.states, data.labels, data.weights)]
    # 30 of a run's 120 steps fit the stage's limit (gated DeltaNet may run on torch's reference
    # kernels there); a whole training's time is read off the step time
    cfg = LoraPolicyConfig(base_model=str(_folder_4b(work)), device=_device(dry), max_steps=3 if dry else 30,
                           batch_size=4 if dry else 16, eval_every=0)
    t = time.perf_counter()
    policy = train_lora_policy(examples, cfg, str(work / "lora_4b"), progress=False)
    meta = policy.meta
    return {"examples": len(examples), "steps": meta["steps"], "train_s": meta["train_s"],
            "s_per_step": round(meta["train_s"] / max(meta["steps"], 1), 3), "wall_s": round(time.perf_counter() - t, 1),
            "training_s_at_default_steps": round(meta["train_s"] / max(meta["steps"], 1) * LoraPolicyConfig().max_steps, 1),
            "peak_cuda_mb": meta.get("peak_cuda_mb"), "peak_rss_mb": meta.get("peak_rss_mb"),
            "score_mode": meta["score_mode"], "batch_size": cfg.batch_size, "max_length": cfg.max_length}


def stage_sandbox(work: Path, dry: bool) -> dict:
    out = work / "sandbox.json"
    workers = 2 if dry else (os.cpu_count() or 2)
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_sandbox.py"), "--workers", str(workers),
                        "--repeat", "1" if dry else "10", "--json", str(out)], capture_output=True, text=True,
                       timeout=600, cwd=REPO)
    print((r.stdout + r.stderr)[-3000:], flush=True)
    if r.returncode:
        raise RuntimeError(f"bench_sandbox.py exit {r.returncode}")
    figures = json.loads(out.read_text())
    new = figures["rounds"][-1]["new"]
    return {"workers": workers, "cpus": figures["cpus"], "runs_per_s": round(new["runs_per_s"], 1),
            "median_ms": round(new["median_ms"], 1), "vs_plain_subprocess": round(new["ratio"], 1),
            "mismatches": figures["mismatches"], "protections": figures["protections"]}


# ---- running the stages ------------------------------------------------------------------------

def _run_stage(stage: Stage, work: Path, dry: bool, log) -> dict:
    """One stage in its own process group, killed whole at its time limit; its output goes to the log."""
    limit = stage.dry_s if dry else stage.gpu_s
    cmd = [sys.executable, __file__, "--stage", stage.name, "--work", str(work)] + (["--dry-run"] if dry else [])
    log(f"== {stage.name}: {stage.what} (at most {limit}s)")
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            start_new_session=True)
    result, timer = None, None
    try:
        import threading

        timer = threading.Timer(limit, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        for line in proc.stdout:
            if line.startswith(MARK):
                result = json.loads(line[len(MARK):])
            else:
                log(f"   {line.rstrip()}")
        proc.wait()
    finally:
        timer.cancel()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the stage left running
        except ProcessLookupError:
            pass
    secs = round(time.perf_counter() - t, 1)
    if result is None:
        why = f"killed at its limit of {limit}s" if secs >= limit else f"exit {proc.returncode}"
        result = {"ok": False, "error": why}
    result["stage_s"] = secs
    log(f"   {stage.name}: {'ok' if result.get('ok') else 'FAILED (' + result.get('error', '?') + ')'} in {secs}s")
    return result


def _stage_main(name: str, work: Path, dry: bool) -> int:
    import traceback

    work.mkdir(parents=True, exist_ok=True)
    try:
        out = {"ok": True, **globals()[f"stage_{name}"](work, dry)}
    except Exception as e:  # reported in the JSON, not raised: the other stages still run
        traceback.print_exc()
        out = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:400]}"}
    print(MARK + json.dumps(out), flush=True)
    return 0


def summary_lines(results: dict) -> list[str]:
    """The figures that answer the check's questions, one line each."""
    lines = []
    for key in ("hf_tiny", "hf_4b"):
        r = results.get(key, {})
        if r.get("ok"):
            one, batched = r["rows"]
            lines.append(f"{key}: {one['tokens_per_s']} tok/s one at a time, {batched['tokens_per_s']} tok/s batched "
                         f"({batched['ratio']}x); peak {r.get('peak_gpu_gib', r.get('peak_rss_gib'))} GiB")
    for key in ("sft_tiny", "sft_4b"):
        r = results.get(key, {})
        if r.get("ok"):
            lines.append(f"{key}: {r['s_per_step']} s/step over {r['steps']} steps; peak {r.get('peak_cuda_mb')} MB")
    r = results.get("lora_4b", {})
    if r.get("ok"):
        lines.append(f"lora_4b: {r['train_s']} s for {r['steps']} steps ({r['s_per_step']} s/step, a run's training "
                     f"~{r['training_s_at_default_steps']} s); peak {r['peak_cuda_mb']} MB")
    r = results.get("sandbox", {})
    if r.get("ok"):
        lines.append(f"sandbox: {r['workers']} workers on {r['cpus']} CPUs, {r['runs_per_s']} runs/s "
                     f"({r['vs_plain_subprocess']}x a plain subprocess per run)")
    failed = [k for k, v in results.items() if isinstance(v, dict) and not v.get("ok")]
    lines.append(f"stages failed: {', '.join(failed) if failed else 'none'}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "reports" / "device"),
                    help="where check.json goes (default: $OUT, else reports/device)")
    ap.add_argument("--work", default="/tmp/ltd_gpu_check", help="model folders and runs (default: /tmp/ltd_gpu_check)")
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes: every stage, with longer limits")
    ap.add_argument("--only", default="", help="comma-separated stages to run (default: all)")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    work = Path(args.work)
    if args.stage:
        return _stage_main(args.stage, work, args.dry_run)
    names = [s.name for s in STAGES]
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in names]
    if unknown:
        print(f"error: --only: unknown stage {unknown[0]} (stages: {', '.join(names)})", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = lambda line: print(line, flush=True)  # noqa: E731  (check.sh keeps stdout as the log)
    t0 = time.perf_counter()
    results: dict = {"dry_run": args.dry_run, "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for stage in STAGES:
        if not only or stage.name in only:
            results[stage.name] = _run_stage(stage, work, args.dry_run, log)
            (out / "check.json").write_text(json.dumps(results, indent=1))  # kept stage by stage
    results["total_s"] = round(time.perf_counter() - t0, 1)
    results["summary"] = summary_lines(results)
    (out / "check.json").write_text(json.dumps(results, indent=1))
    log("\n" + "\n".join(results["summary"]))
    return 0 if all(v.get("ok") for v in results.values() if isinstance(v, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())
