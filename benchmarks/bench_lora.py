#!/usr/bin/env python
"""LoRA policy training speed and memory: the old scoring against the new, in one run.

Old: one row per (state, action), logits over the whole vocabulary at every position (what the
trainer did when it was measured at 11.5 GB on SmolLM2), every example its own row.
New: the default scoring of ``controller/learn/lora_scoring.py`` (one row per state when the actions'
first tokens differ, logits only at the action position) on merged duplicate states.

Each (base, way) runs in a fresh subprocess so peak memory (max RSS) is its own. The states are
the visible states of a trace file (default: the committed ``results/foofah/fresh_traces.jsonl.gz``),
labelled by the oracle as in training.

    python benchmarks/bench_lora.py                     # tiny base and smollm2, 3 timed steps each
    python benchmarks/bench_lora.py --bases tiny --steps 20
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _examples(trace_file: str):
    from controller.learn.lora import PolicyExample
    from controller.learn.training import full_state_pairs, labelled
    from tracegen.records import read_traces

    recs = [r for r in read_traces(trace_file) if r["hidden"]["answer"] is not None]
    data = labelled(full_state_pairs(recs))
    return [PolicyExample(s.text, tuple(s.valid_actions), l, w)
            for s, l, w in zip(data.states, data.labels, data.weights) if len(s.valid_actions) > 1]


def one(base: str, way: str, steps: int, batch: int, trace_file: str) -> dict:
    """Time ``steps`` optimizer steps (after one warm-up step) of one (base, way)."""
    import resource

    import torch
    from peft import get_peft_model

    from controller.learn.lora import LoraPolicyConfig, _Row, _load_base, _resolve_base, lora_config, merge_examples
    from controller.learn.lora_scoring import action_token_ids, score_actions
    from tracegen.models import resolve_model

    torch.manual_seed(0)
    top = int(way[3:]) if way.startswith("top") else 0  # "top8": new scoring, LoRA on the last 8 layers
    cfg = LoraPolicyConfig(base_model=None if base == "tiny" else resolve_model(base), lora_layers=top,
                           cache_dir=str(REPO / "reports" / "cache" / "tiny_base"))
    path, _ = _resolve_base(cfg)
    model, tok = _load_base(path, "cpu")
    if sum(p.numel() for p in model.parameters()) < 10_000_000:
        torch.set_num_threads(1)  # as the trainer does for the tiny base
    model = get_peft_model(model, lora_config(model, cfg))
    ids = action_token_ids(tok)
    ex = _examples(trace_file)
    rows = merge_examples(ex) if way != "old" else [_Row(e.prompt, e.valid_actions, ((e.label, e.weight),)) for e in ex]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    mode, all_logits = ("auto", False) if way != "old" else ("sequence", True)
    times = []
    for step in range(steps + 1):
        batch_rows = [rows[(step * batch + i) % len(rows)] for i in range(batch)]
        t = time.perf_counter()
        scores = score_actions(model, tok, ids, [r.prompt for r in batch_rows],
                               [r.valid_actions for r in batch_rows], 256, mode=mode, all_logits=all_logits)
        loss = torch.stack([-torch.log_softmax(s, -1)[r.valid_actions.index(lab)] * w
                            for s, r in zip(scores, batch_rows) for lab, w in r.targets]).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step:  # the first step warms up allocators and kernels
            times.append(time.perf_counter() - t)
    return {"base": base, "way": way, "examples": len(ex), "rows": len(rows),
            "s_per_step": round(sum(times) / len(times), 3),
            "epoch_s": round(sum(times) / len(times) * len(rows) / batch, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    p.add_argument("--bases", default="tiny,smollm2", help="comma-separated: tiny and/or smollm2")
    p.add_argument("--steps", type=int, default=3, help="timed optimizer steps per (base, way)")
    p.add_argument("--batch", type=int, default=16, help="rows per step")
    p.add_argument("--traces", default=str(REPO / "results" / "foofah" / "fresh_traces.jsonl.gz"), help="trace file")
    p.add_argument("--ways", default="old,new", help="old, new, and/or topN (new scoring, LoRA on the last N "
                   "layers only); the first is the baseline of the printed ratios")
    p.add_argument("--one", nargs=2, metavar=("BASE", "WAY"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one[0], args.one[1], args.steps, args.batch, args.traces)))
        return 0
    results = {}
    for base in args.bases.split(","):
        for way in args.ways.split(","):
            out = subprocess.run([sys.executable, __file__, "--one", base, way, "--steps", str(args.steps),
                                  "--batch", str(args.batch), "--traces", args.traces],
                                 capture_output=True, text=True)
            if out.returncode:
                print(f"{base}/{way} failed: {out.stderr.strip().splitlines()[-1]}", file=sys.stderr)
                return 1
            results[(base, way)] = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(results[(base, way)]))
    ways = args.ways.split(",")
    for base in args.bases.split(","):
        o = results[(base, ways[0])]
        for way in ways[1:]:
            n = results[(base, way)]
            print(f"{base} {ways[0]} -> {way}: {o['s_per_step']} -> {n['s_per_step']} s/step "
                  f"({o['s_per_step'] / n['s_per_step']:.1f}x), epoch {o['epoch_s']} -> {n['epoch_s']} s "
                  f"({o['rows']} -> {n['rows']} rows, {o['epoch_s'] / max(n['epoch_s'], 1e-9):.1f}x), "
                  f"peak RSS {o['peak_rss_mb']} -> {n['peak_rss_mb']} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
