"""Generation throughput: one prompt at a time vs the batched ``hf`` backend (and ``vllm``).

In one run, on the same model and the same prompts, it times
  1. the one-prompt-at-a-time baseline: one ``generate`` call per prompt (batch size 1),
  2. the ``hf`` backend: prompts sorted by length, left-padded batches of ``--batch-size``,
  3. with ``--vllm``, the ``vllm`` backend: the whole wave in one ``LLM.chat`` call,
and prints completion tokens per second for each and the ratio to the baseline. Decoding is
greedy with the same token limit everywhere, so every way does the same work.

Without ``--model`` it builds a tiny random model (tracegen.tiny_model) in ``--work-dir`` first;
no weights are downloaded. Examples:

    python benchmarks/bench_generation.py                          # CPU, tiny qwen3_5
    python benchmarks/bench_generation.py --arch llama --n-prompts 64 --batch-size 32
    python benchmarks/bench_generation.py --device cuda --vllm --json-out bench.json   # GPU machine
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tracegen.backends.base import BackendConfig, GenerationRequest, Task  # noqa: E402
from tracegen.prompts import direct_messages, write_messages  # noqa: E402


def make_requests(n: int, seed: int = 0) -> list[GenerationRequest]:
    """Deterministic direct and write prompts over small synthetic tables of varied size."""
    import random

    rng = random.Random(seed)
    words = ["alpha", "beta", "2020-01-05", "12.5", "Paris", "n/a", "Smith, J.", "x@y.org", "42"]
    reqs = []
    for i in range(n):
        rows, cols = rng.randint(2, 6), rng.randint(1, 4)
        table = lambda: [[rng.choice(words) for _ in range(cols)] for _ in range(rows)]
        task = Task.from_tables(f"bench/{i}", table(), table(), table())
        build = direct_messages if i % 2 == 0 else write_messages
        reqs.append(GenerationRequest("direct" if i % 2 == 0 else "write", build(task), task))
    return reqs


def _timed(fn, sync):
    """Run ``fn`` and return (its result, seconds), waiting for the GPU to finish first."""
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t0


def _row(name, completions, seconds, base_tps=None):
    tokens = sum(c.completion_tokens for c in completions)
    tps = tokens / seconds
    return {"name": name, "prompts": len(completions), "completion_tokens": tokens, "seconds": round(seconds, 3),
            "prompts_per_s": round(len(completions) / seconds, 3), "tokens_per_s": round(tps, 2),
            "ratio": round(tps / base_tps, 2) if base_tps else 1.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="model folder or cached hub name (default: build a tiny random one)")
    ap.add_argument("--arch", default="qwen3_5", choices=["qwen3_5", "llama"], help="tiny model architecture")
    ap.add_argument("--work-dir", default=os.path.join("reports", "cache", "bench_tiny"), help="where the tiny model is built")
    # 64 tokens is still far shorter than a real program; with fewer, per-call overhead dominates
    ap.add_argument("--n-prompts", type=int, default=64, help="prompts (rollout requests) to generate for")
    ap.add_argument("--batch-size", type=int, default=16, help="prompts per generate call in the batched way")
    ap.add_argument("--max-new-tokens", type=int, default=64, help="generation limit per prompt")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--vllm", action="store_true", help="also time the vllm backend (needs vLLM and a GPU)")
    ap.add_argument("--vllm-only", action="store_true", help="skip the hf batched run (baseline still runs)")
    ap.add_argument("--json-out", help="also write the results as JSON here")
    args = ap.parse_args(argv)

    import torch

    from tracegen.backends.hf import HFBackend

    model = args.model
    if not model:
        from tracegen.tiny_model import build_tiny_model

        model = build_tiny_model(os.path.join(args.work_dir, args.arch), arch=args.arch)
    cfg = BackendConfig(name="hf", model=model, max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                        device=args.device, dtype=args.dtype)
    reqs = make_requests(args.n_prompts)
    hf = HFBackend(cfg)
    dev = hf.loaded.device
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    print(f"model {model} ({hf.loaded.model_class}) on {dev}, {args.n_prompts} prompts, "
          f"max_new_tokens {args.max_new_tokens}, torch threads {torch.get_num_threads()}")
    hf.generate(reqs[: min(4, len(reqs))])  # warm-up: kernel selection, allocator, lazy imports
    sync()

    from tracegen.backends._tokens import render_chat

    prompts = [render_chat(hf.loaded.tokenizer, r.messages, False) for r in reqs]
    base, secs = _timed(lambda: [hf.generate_prompts([p])[0] for p in prompts], sync)
    rows = [_row("one-at-a-time (generate per prompt)", base, secs)]
    base_tps = rows[0]["tokens_per_s"]
    if not args.vllm_only:
        out, secs = _timed(lambda: hf.generate(reqs), sync)
        rows.append(_row(f"hf batched (batch {args.batch_size})", out, secs, base_tps))
    hf.close()
    if args.vllm or args.vllm_only:
        from tracegen.backends.vllm_backend import VLLMBackend

        vcfg = BackendConfig(name="vllm", model=model, max_new_tokens=args.max_new_tokens, dtype=args.dtype,
                             extra={"gpu_memory_utilization": 0.5, "max_model_len": 1024})
        v = VLLMBackend(vcfg)
        v.generate(reqs[:4])
        out, secs = _timed(lambda: v.generate(reqs), sync)
        rows.append(_row("vllm (one LLM.chat per wave)", out, secs, base_tps))
        v.close()

    width = max(len(r["name"]) for r in rows)
    print(f"{'way':<{width}}  {'tokens':>7}  {'seconds':>8}  {'tok/s':>9}  {'ratio':>6}")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['completion_tokens']:>7}  {r['seconds']:>8.3f}  {r['tokens_per_s']:>9.1f}  {r['ratio']:>5.1f}x")
    for r in rows[1:]:
        print(f"ratio {r['name']}: {r['ratio']:.1f}x the one-at-a-time baseline")
    if args.json_out:
        info = {"model": model, "device": dev, "platform": platform.platform(), "torch": torch.__version__,
                "args": vars(args), "rows": rows}
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(info, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
