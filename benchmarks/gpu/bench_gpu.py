"""Generation throughput of the real Qwen3.5-4B architecture: the pilot's way vs batched hf vs vLLM.

Nothing can be downloaded, so the model is the published architecture with random weights:
``qwen3_5_4b_config.json`` beside this script (or ``--config`` with a real checkpoint's
config.json) is written into a model folder with a tokenizer trained locally on the prompts;
transformers builds it with ``from_config`` directly on the GPU and vLLM loads the same folder
with ``load_format="dummy"``. Random weights do the same arithmetic as trained ones, and every
way generates exactly ``--max-new-tokens`` tokens per prompt (end-of-turn ignored), so the work
is fixed and the rates compare.

In one run, on prompts built from Foofah cases by the toolkit's own prompt builders:
  1. the pilot's way: one ``generate`` call per prompt (first ``--pilot-prompts`` prompts),
  2. hf batched: prompts sorted by length, left-padded batches of ``--batch-size``,
  3. vLLM (when importable): all prompts in one ``LLM.generate`` call,
and it prints tokens per second and each way's ratio to the pilot's. Warnings that transformers
logs while building and running the model (notably that gated DeltaNet falls back to slow torch
kernels without ``flash-linear-attention`` / ``causal-conv1d``) are printed, not hidden, and
recorded in the JSON with which of those packages were importable.

    python benchmarks/gpu/bench_gpu.py --tiny --device cpu     # smoke test of the whole script
    python benchmarks/gpu/bench_gpu.py --device cuda           # on a GPU (vLLM when installed)
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

HERE = Path(__file__).resolve().parent
TINY = {  # the same architecture, small enough for a CPU smoke test
    "text_config": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
                    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "vocab_size": 4096,
                    "max_position_embeddings": 4096},
    "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64},
}


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        msg = record.getMessage()
        if msg not in self.messages:
            self.messages.append(msg)
            print(f"[transformers {record.levelname.lower()}] {msg}", flush=True)


def build_prompts(n: int, max_prompt_chars: int) -> list[list[dict]]:
    """Direct and write prompts (alternating) for the first n Foofah cases, one per family first."""
    from cases import load_cases, resolve_case_set
    from controller.pipeline import select_cases
    from tracegen.backends.base import Task
    from tracegen.prompts import direct_messages, write_messages

    cases = select_cases(load_cases(resolve_case_set("foofah")[1]), None, None)
    by_family: dict[str, list] = {}
    for c in cases:
        by_family.setdefault(c.family, []).append(c)
    order = [cs[d] for d in range(max(len(v) for v in by_family.values())) for cs in by_family.values() if d < len(cs)]
    out = []
    for c in order:
        task = Task.from_tables(c.case_id, c.input_table, c.output_table, c.test_table)
        msgs = (direct_messages if len(out) % 2 == 0 else write_messages)(task)
        if sum(len(m["content"]) for m in msgs) <= max_prompt_chars:
            out.append(msgs)
        if len(out) == n:
            break
    return out


def make_folder(folder: Path, config_path: Path, tiny: bool, texts: list[str], vocab: int) -> dict:
    """config.json (+ tiny overrides) and a locally trained tokenizer with a chat template."""
    from tracegen.tiny_model import _train_tokenizer

    cfg = json.loads(config_path.read_text())
    cfg.pop("_comment", None)
    if tiny:
        for part, over in TINY.items():
            cfg[part].update(over)
    folder.mkdir(parents=True, exist_ok=True)
    tok = _train_tokenizer(texts, vocab)
    tok.model_max_length = 1 << 20
    tok.save_pretrained(folder)
    # the tokenizer is smaller than the model's vocabulary: every id it makes is a valid input
    cfg["text_config"]["eos_token_id"] = tok.eos_token_id
    cfg["text_config"]["pad_token_id"] = tok.pad_token_id
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": tok.eos_token_id,
                                                               "pad_token_id": tok.pad_token_id}))
    return cfg


def _rate(name, n_prompts, tokens, seconds, base=None):
    tps = tokens / seconds if seconds else 0.0
    return {"name": name, "prompts": n_prompts, "tokens": tokens, "seconds": round(seconds, 3),
            "tokens_per_s": round(tps, 1), "ratio": round(tps / base, 2) if base else 1.0}


def run_hf(folder: Path, ids: list[list[int]], pad_id: int, args, warnings: _Collect) -> tuple[list, dict]:
    import torch
    import transformers
    from transformers import AutoConfig

    from tracegen.backends._tokens import pick_model_class, resolve_device, resolve_dtype

    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    config = AutoConfig.from_pretrained(folder)
    cls = getattr(transformers, pick_model_class(config))
    t0 = time.perf_counter()
    torch.manual_seed(0)
    with torch.device(device):
        model = cls.from_config(config, dtype=dtype)
    model.eval()
    build_s = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    built = type(model).__name__
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    gen = dict(max_new_tokens=args.max_new_tokens, min_new_tokens=args.max_new_tokens, do_sample=False,
               temperature=None, top_p=None, top_k=None, pad_token_id=pad_id)

    def batch(rows):
        width = max(len(r) for r in rows)
        x = torch.full((len(rows), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            x[i, width - len(r):] = torch.tensor(r)
            mask[i, width - len(r):] = 1
        with torch.inference_mode():
            out = model.generate(input_ids=x.to(device), attention_mask=mask.to(device), **gen)
        return (out.shape[1] - width) * len(rows)

    batch(ids[:2])  # warm-up: kernels, allocator, lazy imports (and the fallback warning)
    sync()
    t0 = time.perf_counter()
    pilot_tokens = sum(batch([r]) for r in ids[: args.pilot_prompts])
    sync()
    pilot = _rate("pilot: one generate per prompt", min(args.pilot_prompts, len(ids)), pilot_tokens,
                  time.perf_counter() - t0)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    t0 = time.perf_counter()
    tokens = sum(batch([ids[i] for i in order[s: s + args.batch_size]]) for s in range(0, len(order), args.batch_size))
    sync()
    batched = _rate(f"hf batched (batch {args.batch_size})", len(ids), tokens, time.perf_counter() - t0,
                    pilot["tokens_per_s"])
    info = {"device": device, "dtype": str(dtype), "model_class": built, "params": n_params,
            "build_s": round(build_s, 1)}
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(0)
        info["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return [pilot, batched], info


def run_vllm(folder: Path, ids: list[list[int]], args, base_tps: float) -> dict:
    import vllm

    kwargs = dict(model=str(folder), load_format="dummy", skip_tokenizer_init=True, seed=0,
                  max_model_len=args.max_model_len, gpu_memory_utilization=args.gpu_memory_utilization,
                  dtype="bfloat16" if args.dtype == "auto" else args.dtype)
    try:
        llm = vllm.LLM(language_model_only=True, **kwargs)
    except TypeError:  # a vLLM without that option: the vision tower is built but never used
        llm = vllm.LLM(**kwargs)
    except Exception as e:  # e.g. no image processor for the multimodal config: try text-only
        print(f"vllm on the multimodal config failed ({type(e).__name__}: {str(e)[:200]}); "
              "retrying with the text-only Qwen3_5ForCausalLM config", flush=True)
        text = folder.parent / (folder.name + "_text")
        text.mkdir(exist_ok=True)
        cfg = json.loads((folder / "config.json").read_text())["text_config"]
        cfg.update(architectures=["Qwen3_5ForCausalLM"], model_type="qwen3_5_text")
        (text / "config.json").write_text(json.dumps(cfg, indent=1))
        for f in folder.iterdir():
            if f.name != "config.json" and f.is_file():
                (text / f.name).write_bytes(f.read_bytes())
        llm = vllm.LLM(**{**kwargs, "model": str(text)})
    params = vllm.SamplingParams(temperature=0.0, max_tokens=args.max_new_tokens, min_tokens=args.max_new_tokens,
                                 ignore_eos=True, detokenize=False)
    prompts = [{"prompt_token_ids": r} for r in ids]
    llm.generate(prompts[:2], params, use_tqdm=False)  # warm-up
    t0 = time.perf_counter()
    outs = llm.generate(prompts, params, use_tqdm=False)
    secs = time.perf_counter() - t0
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    return _rate("vllm (one generate call)", len(ids), tokens, secs, base_tps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(HERE / "qwen3_5_4b_config.json"), help="model config.json to build")
    ap.add_argument("--tiny", action="store_true", help="shrink the architecture (CPU smoke test)")
    ap.add_argument("--work-dir", default="/tmp/bench_gpu_model", help="where the model folder is written")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto", help="auto: bf16 on GPU, fp32 on CPU")
    ap.add_argument("--n-prompts", type=int, default=None, help="prompts for hf batched and vLLM (default 64; tiny 6)")
    ap.add_argument("--pilot-prompts", type=int, default=None, help="prompts for the pilot's way (default 8; tiny 2)")
    ap.add_argument("--batch-size", type=int, default=32, help="hf batched: prompts per generate call")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="tokens generated per prompt (default 128; tiny 8)")
    ap.add_argument("--max-prompt-chars", type=int, default=6000, help="skip cases whose prompt is longer")
    ap.add_argument("--max-model-len", type=int, default=8192, help="vLLM context to reserve")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    ap.add_argument("--vocab", type=int, default=8000, help="size of the locally trained tokenizer")
    ap.add_argument("--vllm", choices=["auto", "yes", "no"], default="auto", help="time vLLM (auto: when importable)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    small = args.tiny
    args.n_prompts = args.n_prompts or (6 if small else 64)
    args.pilot_prompts = args.pilot_prompts or (2 if small else 8)
    args.max_new_tokens = args.max_new_tokens or (8 if small else 128)

    warnings = _Collect()
    logging.getLogger("transformers").addHandler(warnings)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").addHandler(warnings)
    kernels = {m: importlib.util.find_spec(m) is not None for m in ("fla", "causal_conv1d", "vllm")}
    print(f"fast-kernel packages importable: {kernels}", flush=True)

    prompts = build_prompts(args.n_prompts, args.max_prompt_chars)
    texts = [m["content"] for p in prompts for m in p]
    folder = Path(args.work_dir) / ("tiny" if small else "full")
    make_folder(folder, Path(args.config), small, texts, args.vocab)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    ids = [tok(tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True), add_special_tokens=False).input_ids
           for p in prompts]
    print(f"{len(ids)} prompts from Foofah cases, {min(map(len, ids))}-{max(map(len, ids))} tokens "
          f"(mean {sum(map(len, ids)) / len(ids):.0f}); {args.max_new_tokens} new tokens each", flush=True)

    rows, info = run_hf(folder, ids, tok.pad_token_id, args, warnings)
    print(f"built {info['model_class']} with {info['params'] / 1e9:.2f}B random parameters on {info['device']} "
          f"in {info['build_s']}s", flush=True)
    want_vllm = args.vllm == "yes" or (args.vllm == "auto" and kernels["vllm"] and info["device"].startswith("cuda"))
    if want_vllm:
        try:
            rows.append(run_vllm(folder, ids, args, rows[0]["tokens_per_s"]))
        except Exception as e:  # reported, not hidden: the hf rows still stand
            print(f"vllm failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            info["vllm_error"] = f"{type(e).__name__}: {e}"[:500]
    else:
        print("vllm: skipped (not importable or no GPU)", flush=True)

    width = max(len(r["name"]) for r in rows)
    print(f"\n{'way':<{width}}  {'prompts':>7}  {'tokens':>7}  {'seconds':>8}  {'tok/s':>9}  {'ratio':>6}")
    for r in rows:
        print(f"{r['name']:<{width}}  {r['prompts']:>7}  {r['tokens']:>7}  {r['seconds']:>8.2f}  "
              f"{r['tokens_per_s']:>9.1f}  {r['ratio']:>5.1f}x")
    slow = [m for m in warnings.messages if "fast path" in m.lower() or "flash-linear-attention" in m or "causal-conv1d" in m]
    print(f"\ngated-DeltaNet fallback warning: {'YES: ' + slow[0][:200] if slow else 'none logged'}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({
            "info": info, "rows": rows, "kernels": kernels, "transformers_warnings": warnings.messages,
            "args": vars(args), "platform": platform.platform()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
