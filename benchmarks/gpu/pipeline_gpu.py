"""The whole pipeline on a GPU, end to end, with the Qwen3.5-4B architecture and random weights:
hf batched vs vLLM (one engine, and data parallel 2 when the machine has two GPUs).

Nothing is downloaded. The model folder is ``qwen3_5_4b_config.json`` (full size) with a
byte-level BPE tokenizer trained on the Foofah prompts and padded with filler tokens to the
model's whole vocabulary (248,320), so every id a random model emits decodes to text. The hf run
needs weights on disk: random ones are built with ``from_config`` on the GPU and saved once; vLLM
loads the same folder with ``--load-format dummy`` (random weights of its own, nothing read).

Each way is the real CLI (``live-tool-dagger --generate-traces``) on the same Foofah cases with
``--max-repairs 0``: a direct answer and a first program per case, so both backends get exactly
the same prompts (repair prompts would depend on each model's random output). Throughput is
generations and generated tokens per second of generation time (the records' ``gen_ms``), next
to each run's wall time; the table ends the output and ``pipeline_gpu.json`` keeps it all.

    python benchmarks/gpu/pipeline_gpu.py                  # on a GPU machine with vLLM installed
    python benchmarks/gpu/pipeline_gpu.py --dry-run        # CPU: tiny model, hf run real, vLLM runs planned
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
HERE = Path(__file__).resolve().parent
CLI = REPO / "scripts" / "run_live_tool_dagger.py"


def build_folder(folder: Path, config_path: Path, tiny: bool, n_cases: int, device: str) -> dict:
    """Config, padded tokenizer and random weights (saved for hf; vLLM ignores them)."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    from bench_gpu import build_prompts, make_folder
    from tracegen.backends._tokens import pick_model_class
    from tracegen.tiny_model import pad_vocabulary

    prompts = build_prompts(max(n_cases, 8) * 2, 1 << 30)
    texts = [m["content"] for p in prompts for m in p]
    cfg = json.loads(config_path.read_text())
    model_vocab = (cfg["text_config"]["vocab_size"] if not tiny else 4096)
    make_folder(folder, config_path, tiny, texts, min(8000, model_vocab - 64))
    added = pad_vocabulary(folder, model_vocab)
    tok = AutoTokenizer.from_pretrained(folder)
    assert len(tok) == model_vocab, (len(tok), model_vocab)
    config = AutoConfig.from_pretrained(folder)
    cls = getattr(transformers, pick_model_class(config))
    t0 = time.perf_counter()
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    with torch.device(device):
        model = cls.from_config(config, dtype=dtype)
    model.save_pretrained(folder, safe_serialization=True)
    params = sum(p.numel() for p in model.parameters())
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return {"params": params, "vocab": model_vocab, "filler_tokens": added, "model_class": cls.__name__,
            "build_and_save_s": round(time.perf_counter() - t0, 1)}


def run_args(way: dict, root: Path, folder: Path, args) -> list[str]:
    """The CLI command of one way: the same cases and generation settings for every way."""
    cmd = [sys.executable, str(CLI), "--root", str(root), "--cases", "foofah", "--limit-total", str(args.cases),
           "--generate-traces", "--max-repairs", "0", "--max-new-tokens", str(args.max_new_tokens),
           "--cache-dir", "none", "--no-progress", "--lora-frontier", "none", "--wave-size", str(args.cases),
           "--model", str(folder), "--backend", way["backend"]]
    return cmd + way["flags"]


def ways(args, n_gpus: int) -> list[dict]:
    device = "cpu" if args.dry_run else "cuda"
    out = [{"name": "hf batched", "backend": "hf",
            "flags": ["--device", device, "--gen-batch-size", str(args.batch_size)]}]
    vllm = ["--load-format", "dummy", "--max-model-len", str(args.max_model_len), "--gpu-memory-utilization",
            str(args.gpu_memory_utilization), "--language-model-only"]
    out.append({"name": "vllm, one engine", "backend": "vllm", "flags": vllm})
    dp = {"name": "vllm, data parallel 2", "backend": "vllm", "flags": vllm + ["--data-parallel-size", "2"]}
    if n_gpus >= 2 or args.dry_run:
        out.append(dp)
    else:
        out.append({**dp, "skip": f"{n_gpus} GPU(s): data parallel 2 needs two"})
    return out


def plan_check(cmd: list[str]) -> dict:
    """What the CLI makes of a command, without running it: the flags parse, pass ``check_flags``
    and become these vLLM engine arguments (the dry run's check of the plumbing)."""
    from controller import cli
    from controller.pipeline import check_flags
    from tracegen.backends.vllm_backend import engine_parallel_args

    cfg = cli.build_config(cli.make_parser().parse_args(cmd[2:]))
    check_flags(cfg)
    b = cfg.backend
    return {"engine_args": {**{k: b.extra[k] for k in sorted(b.extra)}, **engine_parallel_args(b)},
            "engine": "AsyncLLMEngine" if b.data_parallel_size > 1 else "LLM"}


def _run(cmd: list[str], timeout: int) -> tuple:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
        return proc.returncode, (proc.stdout + proc.stderr)[-3000:]
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return "timeout", (out.decode(errors="replace") if isinstance(out, bytes) else out)[-3000:]


def measure(root: Path) -> dict:
    """Generations, generated tokens and generation seconds from the run's own records and summary."""
    from tracegen.records import read_traces

    recs = read_traces(root / "reports" / "fresh_traces.jsonl")
    gens = sum(1 + len(r["rounds"]) for r in recs)
    tokens = sum(r["totals"]["completion_tokens"] for r in recs)
    gen_s = sum(r["totals"]["gen_ms"] for r in recs) / 1000.0
    summary = json.loads((root / "reports" / "final_summary.json").read_text())
    return {"cases": len(recs), "generations": gens, "tokens": tokens, "gen_s": round(gen_s, 2),
            "gens_per_s": round(gens / gen_s, 2) if gen_s else 0.0,
            "tokens_per_s": round(tokens / gen_s, 1) if gen_s else 0.0,
            "traces_s": summary["timing"].get("traces_s"), "total_s": summary["timing"]["total_s"]}


def table(rows: list[dict]) -> str:
    base = next((r["tokens_per_s"] for r in rows if r.get("tokens_per_s") and r["backend"] == "hf"), None)
    lines = [f"{'way':<24} {'cases':>5} {'gens':>6} {'tokens':>8} {'gen s':>8} {'gens/s':>8} {'tok/s':>9} {'vs hf':>6}"]
    for r in rows:
        if "tokens_per_s" not in r:
            lines.append(f"{r['name']:<24} {r.get('status', '')}")
            continue
        ratio = f"{r['tokens_per_s'] / base:.1f}x" if base else "-"
        lines.append(f"{r['name']:<24} {r['cases']:>5} {r['generations']:>6} {r['tokens']:>8} {r['gen_s']:>8.2f} "
                     f"{r['gens_per_s']:>8.2f} {r['tokens_per_s']:>9.1f} {ratio:>6}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU: tiny model, the hf run for real, vLLM runs "
                    "checked and printed but not started")
    ap.add_argument("--config", default=str(HERE / "qwen3_5_4b_config.json"))
    ap.add_argument("--work-dir", default="/tmp/pipeline_gpu")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(REPO / "reports" / "device"))
    ap.add_argument("--cases", type=int, default=None, help="Foofah cases per way (default 64; dry run 4)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default 128; dry run 8")
    ap.add_argument("--batch-size", type=int, default=32, help="hf: prompts per generate call")
    ap.add_argument("--max-model-len", type=int, default=8192)
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    ap.add_argument("--run-timeout", type=int, default=240, help="seconds each way may take")
    args = ap.parse_args(argv)
    args.cases = args.cases or (4 if args.dry_run else 64)
    if args.cases < 3:
        ap.error("--cases: at least 3 (the run splits families into train, dev and test)")
    args.max_new_tokens = args.max_new_tokens or (8 if args.dry_run else 128)
    sys.path.insert(0, str(HERE))
    work, out = Path(args.work_dir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    n_gpus = 0
    if not args.dry_run:
        import torch

        n_gpus = torch.cuda.device_count()
        if not n_gpus:
            print("no GPU visible: run with --dry-run on a CPU machine", file=sys.stderr)
            return 2
    folder = work / ("tiny" if args.dry_run else "qwen3_5_4b_random")
    info = build_folder(folder, Path(args.config), args.dry_run, args.cases, "cpu" if args.dry_run else "cuda")
    info["gpus"] = n_gpus
    print(f"model folder {folder}: {info['model_class']}, {info['params'] / 1e9:.2f}B random parameters, "
          f"vocab {info['vocab']} ({info['filler_tokens']} filler tokens), built and saved in "
          f"{info['build_and_save_s']}s", flush=True)

    rows = []
    for way in ways(args, n_gpus):
        root = work / "runs" / way["name"].replace(" ", "_").replace(",", "")
        cmd = run_args(way, root, folder, args)
        row = {"name": way["name"], "backend": way["backend"], "command": shlex.join(cmd)}
        rows.append(row)
        if way.get("skip"):
            row["status"] = f"skipped: {way['skip']}"
            continue
        if way["backend"] == "vllm" and args.dry_run:
            row.update(plan_check(cmd), status="planned (dry run: not started)")
            print(f"[{way['name']}] planned: {row['command']}\n    engine {row['engine']}: {row['engine_args']}", flush=True)
            continue
        print(f"[{way['name']}] {row['command']}", flush=True)
        t0 = time.perf_counter()
        rc, tail = _run(cmd, args.run_timeout)
        if rc != 0 and "language_model_only" in tail and "--language-model-only" in cmd:
            # a vLLM without that engine argument: the vision tower is built but never used
            print(f"[{way['name']}] this vLLM lacks language_model_only; again without it", flush=True)
            cmd = [c for c in cmd if c != "--language-model-only"]
            row["command"] = shlex.join(cmd)
            rc, tail = _run(cmd, args.run_timeout)
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        (out / f"{root.name}.log").write_text(tail)
        if rc != 0:
            row["status"] = f"failed ({rc}) after {row['wall_s']}s; see {root.name}.log"
            print(tail[-1500:], flush=True)
            continue
        row.update(measure(root))
    result = {"info": info, "rows": rows, "args": vars(args)}
    (out / "pipeline_gpu.json").write_text(json.dumps(result, indent=1))
    print("\n" + table(rows))
    return 1 if any(r.get("status", "").startswith("failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
