"""Generate tool-use traces, train controllers, and report accuracy and tool budget.

Offline default (built-in synthesizer, tiny local LoRA base; no GPU, network or weights):

    live-tool-dagger --generate-traces --train-lora

Smoke run on a few cases:

    live-tool-dagger --generate-traces --limit-total 12 --max-repairs 1

Full study with a real model (weights already on disk or in the local HF cache):

    live-tool-dagger --root runs/qwen35_4b --generate-traces --train-lora \\
        --train-shuffled-lora --backend vllm --model Qwen/Qwen3.5-4B --max-repairs 2 \\
        --dagger-iters 3 --cv-folds 5 --resume

`python scripts/run_live_tool_dagger.py` is the same command from a checkout.
Outputs go to <root>/reports/ (final_summary.json, report.md, figures/, predictions/, viewer/index.html).
Exit status: 0 done, 2 bad input (one line names the file or flag), 130 interrupted.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("live-tool-dagger")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keep the epilog's layout; show each flag's default unless its help already says it (a None
    default's help says what happens instead) or the flag is a switch."""

    def _get_help_string(self, action):
        text = action.help or ""
        if ("default" in text or action.default in (None, False, argparse.SUPPRESS)
                or not action.option_strings or action.nargs == 0):
            return text
        shown = ",".join(map(str, action.default)) if isinstance(action.default, tuple) else action.default
        return f"{text} (default: {shown})"


def _lambdas(text: str) -> tuple:
    """``0,0.5,0.75`` -> (0.0, 0.5, 0.75); ``none`` -> () (argparse turns a ValueError into exit 2)."""
    if text.strip().lower() in ("none", ""):
        return ()
    return tuple(float(w) for w in text.split(","))


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="live-tool-dagger", description=__doc__.split("\n\n")[0],
                                formatter_class=_HelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    g = p.add_argument_group("run")
    g.add_argument("--root", default=".", help="run directory; outputs go to ROOT/reports")
    g.add_argument("--cases", default="foofah", help="case set: foofah (the Foofah benchmark, 250 files in 50 families; "
                   "default), library (the generated library, 41 families), or a directory of Foofah-format case "
                   "files (*.json, *.txt, recursive)")
    g.add_argument("--generate-traces", action="store_true", help="trace the cases with the backend (else reuse the trace file)")
    g.add_argument("--resume", action="store_true", help="continue an existing trace file, skipping cases already in it")
    g.add_argument("--force", action="store_true", help="with --resume: continue even if trace-changing settings differ")
    g.add_argument("--tag", default=None, help="name the trace file fresh_traces_TAG.jsonl")
    g.add_argument("--limit-total", type=int, default=None, help="trace at most N cases (dealt round-robin over families)")
    g.add_argument("--cases-per-family", type=int, default=None, help="use at most K cases of each family")
    g.add_argument("--progress-every", type=int, default=0, help="print a status line every N traced cases")
    g.add_argument("--no-progress", action="store_true", help="hide progress (a bar on a terminal; otherwise a plain "
                   "line when the first case finishes, then every 10 s)")
    g.add_argument("--export-sft", action="store_true", help="write reports/sft/{train,dev}.jsonl: verified attempts "
                   "as prompt-completion conversations for TRL's SFTTrainer (nothing from the test split; docs/sft.md)")
    g.add_argument("--sft-max-tokens", type=int, default=1024, help="with --export-sft: leave out conversations "
                   "longer than N tokens (prompt + answer, as the backend counted them) and report how many; "
                   "TRL's default max_length; 0: no limit")

    g = p.add_argument_group("splits")
    g.add_argument("--split-seed", type=int, default=0, help="seed of the family-disjoint split")
    g.add_argument("--test-families", type=int, default=None, help="families in the test split (default ~25%%)")
    g.add_argument("--dev-families", type=int, default=None, help="families in the dev split (default ~20%%)")
    g.add_argument("--split-manifest", default=None, help="reuse the split of a saved split_manifest.json")
    g.add_argument("--headroom-probe", action="store_true", help="deal families where a program beats the direct "
                   "answer over the splits first; read from one probe case per family, which is then left out of "
                   "every score (default: the split depends on the seed and family names only)")

    g = p.add_argument_group("backend (how the model attempts cases)")
    g.add_argument("--backend", default="synth", help="synth (offline), hf, vllm, openai, replay")
    g.add_argument("--model", default=None, help="model name or local path (hf, vllm, openai)")
    g.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (0: greedy)")
    g.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling p")
    g.add_argument("--top-k", type=int, default=None, help="top-k sampling (hf, vllm, openai alike; default: the "
                   "model's generation config, or no top-k when it sets none; 0 turns it off)")
    g.add_argument("--seed", type=int, default=0, help="seed for sampling and for every learner")
    g.add_argument("--max-new-tokens", type=int, default=1024, help="generation limit per completion")
    g.add_argument("--gen-batch-size", type=int, default=8, help="hf: prompts per generate call")
    g.add_argument("--concurrency", type=int, default=8, help="openai: requests in flight per endpoint")
    g.add_argument("--enable-thinking", action="store_true", help="let Qwen3.5 think before answering (chat template flag)")
    g.add_argument("--load-in-4bit", action="store_true", help="hf: 4-bit weights with bitsandbytes (GPU only; "
                   "vllm refuses it: give vllm a pre-quantized AWQ/GPTQ checkpoint instead)")
    g.add_argument("--dtype", default="auto", help="hf, vllm: weight dtype auto (bf16 on GPU, fp32 on CPU), "
                   "bfloat16, float16 or float32")
    g.add_argument("--device", default="auto", help="hf: auto (cuda when available), cpu, cuda or cuda:N")
    g.add_argument("--max-model-len", type=int, default=None, help="vllm: context length to reserve (default: the "
                   "model's, 262144 for Qwen3.5; e.g. 8192 saves most KV-cache memory)")
    g.add_argument("--gpu-memory-utilization", type=float, default=None, help="vllm: share of GPU memory the "
                   "engine may take (default: 0.85)")
    g.add_argument("--enforce-eager", action="store_true", help="vllm: skip CUDA graph capture (faster start, slower decoding)")
    g.add_argument("--language-model-only", action="store_true", help="vllm: load only the language model of a "
                   "multimodal checkpoint (skips Qwen3.5's vision tower)")
    g.add_argument("--request-timeout", type=float, default=120.0, help="openai: seconds per HTTP request")
    g.add_argument("--no-chat-template-kwargs", action="store_true", help="do not pass enable_thinking to the chat "
                   "template (openai: omit the chat_template_kwargs field that some servers reject)")
    g.add_argument("--base-url", default=None, help="openai: endpoint, e.g. http://127.0.0.1:8000/v1; several: "
                   "comma-separated or @FILE (one URL a line), requests spread by outstanding load")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: environment variable holding the key")
    g.add_argument("--replay", default=None, help="replay: the trace file whose raw outputs are re-parsed and re-run")
    g.add_argument("--cache-dir", default=None, help="generation cache directory (default for model backends: "
                   "ROOT/reports/cache/generations; 'none' disables)")
    g.add_argument("--synth-write-nodes", type=int, default=100, help="synth: search nodes for WRITE")
    g.add_argument("--synth-fix-nodes", type=int, default=40000, help="synth: search nodes for each FIX "
                   "(the search behind a chain's repairs; see docs/synthesizer.md)")
    g.add_argument("--synth-time-budget", type=float, default=None, help="synth: wall-clock cap per search, "
                   "seconds (default: none, so traces do not depend on load; a search it stops is recorded as "
                   "finish_reason 'budget')")
    g.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm: GPUs one engine's layers are split "
                   "over (vLLM's tensor_parallel_size; changes floating point, so it is in the cache key)")
    g.add_argument("--pipeline-parallel-size", type=int, default=1, help="vllm: pipeline stages of one engine "
                   "(vLLM's pipeline_parallel_size; with Ray, stages may sit on different nodes)")
    g.add_argument("--data-parallel-size", type=int, default=1, help="vllm: engine replicas, each of tensor x "
                   "pipeline GPUs, that vLLM balances requests over (vLLM's data_parallel_size, run by its AsyncLLM)")
    g.add_argument("--distributed-executor-backend", choices=("mp", "ray"), default=None, help="vllm: how vLLM "
                   "starts its workers: mp (one node) or ray (a Ray cluster, several nodes); default: vLLM's choice")
    g.add_argument("--load-format", default=None, help="vllm: weight loading format passed to vLLM; 'dummy' "
                   "builds random weights (throughput checks without a checkpoint)")
    g.add_argument("--max-retries", type=int, default=5, help="openai: backoff retries per request once it has "
                   "tried every endpoint in rotation")
    g.add_argument("--endpoint-cooldown", type=float, default=None, help="openai: seconds an endpoint that failed "
                   "3 times in a row stays out of rotation before one request probes it, doubling while it fails "
                   "(default: 10)")

    g = p.add_argument_group("rollout and sandbox")
    g.add_argument("--max-repairs", type=int, default=2, help="repair rounds after the first program")
    g.add_argument("--exec-timeout", type=float, default=1.5, help="seconds per program run in the sandbox")
    g.add_argument("--memory-mb", type=int, default=256, help="memory limit per program run")
    g.add_argument("--workers", type=int, default=2, help="sandbox worker processes")
    g.add_argument("--program-samples", type=int, default=1, help="independent program samples per case (K), each "
                   "repaired while failing; K > 1 adds the RESAMPLE action and the cross_check and resample_visible "
                   "policies (resample_visible is matched to always-tool in program generations, not in work); model "
                   "backends need sampling (--temperature > 0)")
    g.add_argument("--repair-history", action="store_true", help="repair prompts show every earlier attempt and "
                   "its feedback, not only the latest (changes FIX prompts: new generations)")
    g.add_argument("--wave-size", type=int, default=64, help="cases per wave (a backend batch); a kill loses at most one wave")

    g = p.add_argument_group("controllers")
    g.add_argument("--train-lora", action="store_true", help="train the LoRA sequence policy (lora_seq_policy)")
    g.add_argument("--train-shuffled-lora", action="store_true", help="train the shuffled-label control (lora_shuffled_seq)")
    g.add_argument("--policy-model", default=None, help="local base model for the LoRA policy (default: a tiny "
                   "Qwen3.5-architecture model built offline)")
    g.add_argument("--max-steps", type=int, default=120, help="LoRA optimizer steps")
    g.add_argument("--learning-rate", type=float, default=None, help="LoRA learning rate (default: the config's)")
    g.add_argument("--batch-size", type=int, default=16, help="LoRA batch size")
    g.add_argument("--grad-accum", type=int, default=1, help="LoRA gradient accumulation steps")
    g.add_argument("--max-length", type=int, default=256, help="LoRA prompt length limit in tokens")
    g.add_argument("--lora-r", type=int, default=8, help="LoRA rank")
    g.add_argument("--lora-alpha", type=int, default=16, help="LoRA alpha")
    g.add_argument("--lora-dropout", type=float, default=0.05, help="LoRA dropout")
    g.add_argument("--lora-layers", type=int, default=0, help="adapt only the last N decoder layers (0: all); "
                   "cuts the backward pass on a real base, e.g. 8 of SmolLM2's 30")
    g.add_argument("--dagger-iters", type=int, default=0, help="DAgger iterations after the oracle-trajectory start")
    g.add_argument("--dagger-beta", type=float, default=0.5, help="DAgger initial oracle mixing rate (annealed to 0)")
    g.add_argument("--cv-folds", type=int, default=0, help="family-level cross-validation folds (0: off)")
    g.add_argument("--lora-frontier", type=_lambdas, default=(), metavar="W,W,...",
                   help="with --train-lora: trade-off weights at which the LoRA policy is retrained for its "
                        "accuracy-vs-cost frontier, e.g. 0,0.5,0.75 (one training each; default: none, the "
                        "quickstart trains the policy once)")
    g.add_argument("--policies", default=None, help="comma-separated policies to report (default: all that were run)")
    g.add_argument("--cost", default="generations", help="cost model for the oracle labels and the budget frontier: "
                   "generations (program rounds), tokens (completion tokens) or work (search nodes for synth, "
                   "completion tokens for model backends)")
    g.add_argument("--seeds", type=int, default=1, help="retrain every learned controller and the shuffled control "
                   "with seeds SEED..SEED+N-1 and report mean [min, max]")
    g.add_argument("--study", default=None, metavar="FILE", help="study file (TOML or JSON, e.g. studies/foofah.toml): "
                   "the primary hypotheses and cost unit; pre-registered only when committed before the traces "
                   "started (default: a built-in study, not registered)")
    g.add_argument("--split-seeds", type=int, default=1, help="with --cv-folds: repeat cross-validation with N fold "
                   "assignments (fold seeds SPLIT_SEED..SPLIT_SEED+N-1) and report every CV result's spread")
    return p


def build_config(args):
    from controller.study.experiment import ExperimentConfig
    from controller.learn.lora import LoraPolicyConfig
    from controller.pipeline import RunConfig
    from tracegen.backends import BackendConfig
    from tracegen.progress import is_terminal
    from tracegen.rollout import RolloutConfig

    root = Path(args.root)
    cache = args.cache_dir
    if cache is None and args.backend not in ("synth", "replay"):
        cache = str(root / "reports" / "cache" / "generations")
    if cache == "none":
        cache = None
    extra = {k: v for k, v in (("max_model_len", args.max_model_len),
                               ("gpu_memory_utilization", args.gpu_memory_utilization),
                               ("enforce_eager", args.enforce_eager or None),
                               ("language_model_only", args.language_model_only or None),
                               ("load_format", args.load_format),
                               ("probe_after_s", args.endpoint_cooldown))
             if v is not None}
    backend = BackendConfig(
        name=args.backend, model=args.model, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
        seed=args.seed, dtype=args.dtype, device=args.device, request_timeout_s=args.request_timeout,
        chat_template_kwargs=not args.no_chat_template_kwargs, extra=extra,
        max_new_tokens=args.max_new_tokens, batch_size=args.gen_batch_size, concurrency=args.concurrency,
        enable_thinking=args.enable_thinking, load_in_4bit=args.load_in_4bit, base_url=args.base_url,
        api_key_env=args.api_key_env, replay_path=args.replay, cache_dir=cache,
        synth_write_nodes=args.synth_write_nodes, synth_fix_nodes=args.synth_fix_nodes,
        synth_time_budget_s=args.synth_time_budget, max_retries=args.max_retries,
        tensor_parallel_size=args.tensor_parallel_size, pipeline_parallel_size=args.pipeline_parallel_size,
        data_parallel_size=args.data_parallel_size, distributed_executor_backend=args.distributed_executor_backend)
    lora_kw = dict(base_model=args.policy_model, cache_dir=str(root / "reports" / "cache" / "tiny_base"),
                   max_steps=args.max_steps, batch_size=args.batch_size, grad_accum=args.grad_accum,
                   max_length=args.max_length, lora_r=args.lora_r, lora_alpha=args.lora_alpha,
                   lora_dropout=args.lora_dropout, lora_layers=args.lora_layers, seed=args.seed)
    if args.learning_rate is not None:
        lora_kw["learning_rate"] = args.learning_rate
    experiment = ExperimentConfig(
        seed=args.seed, train_lora=args.train_lora, train_shuffled_lora=args.train_shuffled_lora,
        policies=tuple(p.strip() for p in args.policies.split(",") if p.strip()) if args.policies else None,
        dagger_iters=args.dagger_iters, dagger_beta=args.dagger_beta, cv_folds=args.cv_folds, cost=args.cost,
        lora_frontier_lambdas=args.lora_frontier,
        seeds=args.seeds, study=args.study, split_seed=args.split_seed, split_seeds=args.split_seeds,
        # the LoRA training bar is tqdm's: only on a terminal (a log file would get one line per step)
        progress=not args.no_progress and is_terminal(), lora=LoraPolicyConfig(**lora_kw), adapters_dir=str(root / "reports" / "adapters"))
    rollout = RolloutConfig(max_repairs=args.max_repairs, exec_timeout_s=args.exec_timeout, memory_mb=args.memory_mb,
                            wave_size=args.wave_size, program_samples=args.program_samples, repair_history=args.repair_history, progress_every=args.progress_every, progress=not args.no_progress)
    return RunConfig(root=str(root), cases=args.cases, generate_traces=args.generate_traces, resume=args.resume,
                     force=args.force, tag=args.tag, limit_total=args.limit_total,
                     cases_per_family=args.cases_per_family, split_seed=args.split_seed,
                     test_families=args.test_families, dev_families=args.dev_families,
                     split_manifest=args.split_manifest, headroom_probe=args.headroom_probe, workers=args.workers,
                     export_sft=args.export_sft, sft_max_tokens=args.sft_max_tokens, backend=backend, rollout=rollout,
                     experiment=experiment)


def print_table(summary: dict) -> None:
    res = summary["policy_results"]
    print(f"\n{'policy':24s} {'dev':>9s} {'test':>9s} {'test gens':>9s} {'repairs':>8s}")
    for name, r in res.items():
        d, t = r["dev"], r["test"]
        print(f"{name:24s} {d['exact']:>3d}/{d['n']:<5d} {t['exact']:>3d}/{t['n']:<5d} "
              f"{t['program_generations']:>9d} {t['repair_actions']:>8d}")


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)

    def _term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    from controller.console import quiet_libraries

    held_back = quiet_libraries()  # before transformers & co. are imported
    if hasattr(sys.stdout, "reconfigure"):  # a log file or pipe gets each line as it happens
        sys.stdout.reconfigure(line_buffering=True)
    from controller.pipeline import UsageError, run

    try:
        summary = run(build_config(args))
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished records are kept; rerun with --resume to continue", file=sys.stderr)
        return 130
    print_table(summary)
    if held_back is not None and held_back.line():
        print(held_back.line(), file=sys.stderr)
    print(f"\ntotal {summary['timing']['total_s']:.1f}s; report: {Path(args.root) / 'reports' / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
