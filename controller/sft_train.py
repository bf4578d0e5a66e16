"""``live-tool-dagger sft``: train a coder on an SFT export with TRL's ``SFTTrainer`` (docs/sft.md).

The export (``--export-sft`` or the distillation recipe) is TRL's conversational prompt-completion
format, so the loss covers the completion only. ``SftConfig`` is the one source of the flags (the
main command's ``controller.args`` machinery: every field with help is a flag, ``--config FILE``
reads TOML). The run writes into ``--out``:

- ``checkpoints/checkpoint-N/``: TRL's checkpoints every ``--save-steps`` (model, optimizer,
  scheduler, RNG), the last ``--save-total-limit`` kept; ``--resume`` goes on from the latest;
- ``sft_config.json``: the config, the export's digest and the library versions (a resume under
  another config or export is refused);
- the trained model itself at the top (``config.json``, weights, tokenizer): a LoRA run is merged
  into its base first, so ``--backend hf --model OUT`` and vLLM load it like any model folder;
- ``train_log.jsonl``: one line per logging step (step, loss, the learning rate that step used, seconds
  per step) and one per evaluation (step, eval_loss);
- ``runs/``: TensorBoard's event files, with ``--report-to tensorboard``.

With a ``dev.jsonl`` the run evaluates its loss every ``--eval-steps`` and at the end, and the model
written at the top is the checkpoint with the lowest dev loss (``load_best_model_at_end``), not
necessarily the last. Warmup is a ratio of the steps, and its first step already trains (the
schedule's factor at step 1 is 1/(warmup + 1), not transformers' 0).

Defaults are the ones measured to work on a 2-core CPU (docs/sft.md): one thread
(``OMP_NUM_THREADS=1``; two were ~3x slower on a shared machine), batch 1 with 8 accumulated
rows, the export's own length, gradient checkpointing for rows over 1,024 tokens.
Exit status: 0 trained, 2 bad input (one line on stderr naming the flag or file).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tracegen.errors import ConfigError, check


def _f(default, help: str, **meta):
    return field(default=default, metadata={"help": help, **meta})


@dataclass
class SftConfig:
    data: str | None = _f(None, "export folder holding train.jsonl (and dev.jsonl, export.json), as --export-sft "
                                "writes it (default: none; required)")
    model: str = _f("smollm2", "base model: a packaged name (smollm2) or a local model folder")
    out: str = _f("runs/sft", "output folder: checkpoints/, the trained model (loadable with --backend hf "
                              "--model OUT), train_log.jsonl")
    method: str = _f("full", "full (every weight) or lora (an adapter, merged into the base at the end)",
                     choices=("full", "lora"))
    epochs: float = _f(1.0, "passes over train.jsonl (unless --max-steps is set)")
    max_steps: int = _f(0, "optimizer steps to train (0: --epochs decide)")
    batch_size: int = _f(1, "rows per forward pass")
    grad_accum: int = _f(8, "forward passes per optimizer step (rows per step: batch x this)")
    learning_rate: float = _f(0.0, "peak learning rate (0: 5e-5 for full, 2e-4 for lora)")
    max_length: int = _f(0, "tokens per row, longer rows truncated (0: the export's own length, export.json "
                            "max_tokens, so no row is cut)")
    gradient_checkpointing: str = _f("auto", "recompute activations to save memory: on, off, or auto (on when "
                                             "--max-length is over 1024)", choices=("auto", "on", "off"))
    threads: int = _f(1, "torch CPU threads (measured here: 1 was ~3x faster than 2 on a shared 2-core machine)")
    save_steps: int = _f(50, "optimizer steps between checkpoints")
    save_total_limit: int = _f(2, "checkpoints kept")
    logging_steps: int = _f(5, "optimizer steps between progress lines")
    eval_steps: int = _f(0, "optimizer steps between dev-loss evaluations, also at the end (0: every --save-steps); "
                            "--save-steps must be a multiple of it, so each checkpoint has a dev loss")
    warmup_ratio: float = _f(0.03, "share of the steps over which the learning rate rises to its peak (its first "
                                   "step already trains), then cosine decay")
    report_to: str = _f("none", "where the trainer also logs: none, or tensorboard (OUT/runs; needs the "
                                "tensorboard package)", choices=("none", "tensorboard"))
    seed: int = _f(0, "seed of the data order and of LoRA's initialisation")
    lora_r: int = _f(16, "lora: adapter rank")
    lora_alpha: int = _f(32, "lora: adapter alpha")
    resume: bool = _f(False, "go on from the latest checkpoint in OUT/checkpoints (the same config and export)")
    device: str = _f("auto", "auto (cuda when available), cpu or cuda")

    def __post_init__(self) -> None:
        check(bool(self.data), "data", "name the export folder (it holds train.jsonl)")
        for name in ("batch_size", "grad_accum", "save_steps", "save_total_limit", "logging_steps", "threads"):
            check(getattr(self, name) >= 1, name, f"must be at least 1, got {getattr(self, name)}")
        for name in ("max_steps", "max_length", "lora_r", "lora_alpha"):
            check(getattr(self, name) >= 0, name, f"must be >= 0, got {getattr(self, name)}")
        check(self.epochs > 0, "epochs", f"must be > 0, got {self.epochs}")
        check(self.learning_rate >= 0, "learning_rate", f"must be >= 0, got {self.learning_rate}")
        check(0 <= self.warmup_ratio < 1, "warmup_ratio", f"must be in [0, 1), got {self.warmup_ratio}")
        check(self.eval_steps >= 0, "eval_steps", f"must be >= 0, got {self.eval_steps}")
        check(self.save_steps % self.every_eval == 0, "eval_steps",
              f"`save_steps` ({self.save_steps}) must be a multiple of it ({self.every_eval}), so every checkpoint "
              "has a dev loss to pick the best by")
        if self.report_to == "tensorboard":
            import importlib.util

            check(importlib.util.find_spec("tensorboard") is not None, "report_to",
                  "tensorboard is not installed (pip install tensorboard, or --report-to none)")
        check(self.device in ("auto", "cpu", "cuda"), "device", f"must be auto, cpu or cuda, got {self.device!r}")

    @property
    def lr(self) -> float:
        return self.learning_rate or (5e-5 if self.method == "full" else 2e-4)

    @property
    def every_eval(self) -> int:
        return self.eval_steps or self.save_steps


def lr_factor(step: int, warmup: int, total: int) -> float:
    """The share of the peak learning rate optimizer step ``step`` (0-based) uses: a linear rise over
    ``warmup`` steps that starts at 1/(warmup + 1), not at 0 (transformers' warmup spends its first step
    at learning rate 0), then cosine decay to 0 over the rest."""
    import math

    if step < warmup:
        return (step + 1) / (warmup + 1)
    return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))


def warmup_steps(ratio: float, total: int) -> int:
    import math

    return math.ceil(total * ratio)


class SftInputError(ValueError):
    """Bad input found before training: one line naming the file."""


def _read_rows(path: Path) -> list[dict]:
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SftInputError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise SftInputError(f"{path}:{i}: not a JSON object") from None
        if not (isinstance(row, dict) and isinstance(row.get("prompt"), list) and isinstance(row.get("completion"), list)
                and row["completion"]):
            raise SftInputError(f"{path}:{i}: a row needs 'prompt' and 'completion' message lists "
                                "(TRL's prompt-completion format, as --export-sft writes)")
        rows.append({"prompt": row["prompt"], "completion": row["completion"]})
    return rows


def load_export(cfg: SftConfig) -> tuple[list[dict], list[dict], dict, str]:
    """(train rows, dev rows, export.json or {}, a digest of the rows); raises ``SftInputError``."""
    folder = Path(cfg.data)
    if not folder.is_dir():
        raise SftInputError(f"--data {folder}: no such folder")
    train_path = folder / "train.jsonl"
    if not train_path.is_file():
        raise SftInputError(f"--data {folder}: holds no train.jsonl (write one with --export-sft)")
    train = _read_rows(train_path)
    if not train:
        raise SftInputError(f"{train_path}: holds no rows")
    dev = _read_rows(folder / "dev.jsonl") if (folder / "dev.jsonl").is_file() else []
    meta = {}
    if (folder / "export.json").is_file():
        try:
            meta = json.loads((folder / "export.json").read_text(encoding="utf-8"))
        except ValueError:
            raise SftInputError(f"{folder / 'export.json'}: not JSON") from None
    digest = hashlib.sha256(train_path.read_bytes()).hexdigest()[:16]
    return train, dev, meta if isinstance(meta, dict) else {}, digest


def _fingerprint(cfg: SftConfig, digest: str) -> dict:
    """What a resume must share with the run it continues (threads, logging and saving may differ)."""
    keep = {k: v for k, v in asdict(cfg).items()
            if k not in ("resume", "threads", "logging_steps", "save_steps", "save_total_limit", "out", "device",
                         "eval_steps", "report_to")}
    return {**keep, "train_digest": digest}


def _latest_checkpoint(folder: Path) -> str | None:
    found = sorted((p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
                   key=lambda p: int(p.name.split("-")[-1]))
    return str(found[-1]) if found else None


def progress_line(step: int, total: int, logs: dict, per: float | None = None, best: float | None = None) -> str:
    """The one line a logging step (``loss``) or an evaluation (``eval_loss``) prints."""
    if "eval_loss" in logs:
        mark = " (best so far)" if best is not None and logs["eval_loss"] <= best else (
            f" (best {best:.4f})" if best is not None else "")
        return f"sft: step {step}/{total}, eval loss {logs['eval_loss']:.4f} on dev{mark}"
    left = (total - step) * (per or 0.0)
    return (f"sft: step {step}/{total}, train loss {logs['loss']:.4f}, lr {logs.get('learning_rate', 0.0):.2e}, "
            f"{per or 0.0:.1f} s/step, ~{left / 60:.0f} min left")


def _progress_callback(log_path: Path, total_hint: list):
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        """One line per logging step (train loss, the learning rate that step used, s/step, time left) and
        one per evaluation (dev loss); the same in train_log.jsonl. Replaces TRL's printed log dicts."""

        def on_train_begin(self, args, state, control, **kw):
            self.t0, self.step0 = time.perf_counter(), state.global_step
            total_hint[0] = state.max_steps

        def _write(self, row: dict) -> None:
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")

        def on_log(self, args, state, control, logs=None, **kw):
            if not logs or "loss" not in logs:
                return
            done = state.global_step - self.step0
            per = (time.perf_counter() - self.t0) / max(done, 1)
            print(progress_line(state.global_step, state.max_steps, logs, per), file=sys.stderr, flush=True)
            self._write({"step": state.global_step, "loss": logs["loss"], "lr": logs.get("learning_rate"),
                         "s_per_step": round(per, 2), "epoch": logs.get("epoch")})

        def on_evaluate(self, args, state, control, metrics=None, **kw):
            if not metrics or "eval_loss" not in metrics:
                return
            seen = [r["eval_loss"] for r in state.log_history if "eval_loss" in r]
            print(progress_line(state.global_step, state.max_steps, metrics, best=min(seen or [metrics["eval_loss"]])),
                  file=sys.stderr, flush=True)
            self._write({"step": state.global_step, "eval_loss": metrics["eval_loss"], "epoch": metrics.get("epoch")})

    return Progress()


def training_args(cfg: SftConfig, out: Path, max_length: int, checkpointing: bool, use_cuda: bool, bf16: bool,
                  has_dev: bool) -> dict:
    """``SFTConfig``'s keywords: evaluation on dev (every ``eval_steps`` and at the end) with the best
    checkpoint loaded at the end when there is a dev set; the scheduler is ``lr_factor``'s (set by the
    trainer, so no warmup keyword here)."""
    every = cfg.every_eval
    evaluate = dict(eval_strategy="steps", eval_steps=every, load_best_model_at_end=True,
                    metric_for_best_model="eval_loss", greater_is_better=False, prediction_loss_only=True,
                    per_device_eval_batch_size=cfg.batch_size) if has_dev else dict(eval_strategy="no")
    return dict(
        output_dir=str(out / "checkpoints"), num_train_epochs=cfg.epochs, max_steps=cfg.max_steps or -1,
        per_device_train_batch_size=cfg.batch_size, gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.lr, max_length=max_length,
        gradient_checkpointing=checkpointing, save_steps=cfg.save_steps, save_total_limit=cfg.save_total_limit,
        logging_steps=cfg.logging_steps, seed=cfg.seed, disable_tqdm=True,
        report_to=[] if cfg.report_to == "none" else [cfg.report_to],
        use_cpu=not use_cuda, bf16=bf16, dataloader_num_workers=0, **evaluate)


def train(cfg: SftConfig) -> dict:
    """Train and save; returns a summary (steps, seconds, final loss, where the model is)."""
    train_rows, dev_rows, meta, digest = load_export(cfg)
    out = Path(cfg.out)
    ckpt = out / "checkpoints"
    fingerprint = _fingerprint(cfg, digest)
    conf_path = out / "sft_config.json"
    resume_from = None
    if cfg.resume:
        if not conf_path.is_file():
            raise SftInputError(f"--resume: {conf_path} is missing (no run to go on from in --out {out})")
        before = json.loads(conf_path.read_text(encoding="utf-8")).get("fingerprint", {})
        diff = sorted(k for k in set(before) | set(fingerprint) if before.get(k) != fingerprint.get(k))
        if diff:
            raise SftInputError(f"--resume: {conf_path} was made with other settings ({', '.join(diff)}); "
                                "repeat them, or train afresh into another --out")
        resume_from = _latest_checkpoint(ckpt)
    elif out.exists() and any(out.iterdir()):
        raise SftInputError(f"--out {out}: not empty (give --resume to go on, or another folder)")
    os.environ.setdefault("OMP_NUM_THREADS", str(cfg.threads))
    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from tracegen.models import resolve_model

    torch.set_num_threads(cfg.threads)
    base = resolve_model(cfg.model)
    if not Path(base).is_dir():
        raise SftInputError(f"--model {cfg.model}: no such model folder (a packaged name: smollm2)")
    max_length = cfg.max_length or int(meta.get("max_tokens") or 0) or 1024
    checkpointing = cfg.gradient_checkpointing == "on" or (cfg.gradient_checkpointing == "auto" and max_length > 1024)
    use_cuda = cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available())
    out.mkdir(parents=True, exist_ok=True)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__}
    conf_path.write_text(json.dumps({"config": asdict(cfg), "fingerprint": fingerprint, "base": base,
                                     "max_length": max_length, "versions": versions,
                                     "rows": {"train": len(train_rows), "dev": len(dev_rows)}}, indent=1) + "\n")
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    peft_config = None
    if cfg.method == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0, task_type="CAUSAL_LM",
                                 target_modules="all-linear")
    args = SFTConfig(**training_args(cfg, out, max_length, checkpointing, use_cuda,
                                     bool(use_cuda and torch.cuda.is_bf16_supported()), bool(dev_rows)))
    if cfg.report_to == "tensorboard":  # transformers 5 takes TensorBoard's folder from the environment only
        os.environ["TENSORBOARD_LOGGING_DIR"] = str(out / "runs")
    log_path = out / "train_log.jsonl"
    total = [0]

    class Trainer(SFTTrainer):
        def create_scheduler(self, num_training_steps, optimizer=None):
            if self.lr_scheduler is None:
                w = warmup_steps(cfg.warmup_ratio, num_training_steps)
                self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                    optimizer or self.optimizer, lambda s: lr_factor(s, w, num_training_steps))
                self._created_lr_scheduler = True
            return self.lr_scheduler

    trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_list(train_rows),
                      eval_dataset=Dataset.from_list(dev_rows) if dev_rows else None,
                      processing_class=tok, peft_config=peft_config,
                      callbacks=[_progress_callback(log_path, total)])
    trainer.remove_callback(PrinterCallback)  # its raw dicts on stdout: the Progress lines say the same
    kept = len(trainer.train_dataset)
    print(f"sft: {kept} of {len(train_rows)} rows to train on (TRL drops a row whose completion the length cuts "
          f"away entirely), {max_length} tokens each at most, {cfg.batch_size * cfg.grad_accum} rows a step"
          + (f"; dev loss on {len(trainer.eval_dataset)} dev rows every {cfg.every_eval} steps and at the end, "
             "the best checkpoint kept" if dev_rows else "; no dev.jsonl rows: no evaluation, the last step kept")
          + (f"; resuming from {resume_from}" if resume_from else ""), file=sys.stderr, flush=True)
    if not kept:
        raise SftInputError(f"--max-length {max_length}: every row's completion lies past it (give a longer one, "
                            "or 0 for the export's own)")
    t0 = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume_from)
    seconds = time.perf_counter() - t0
    final = trainer.model
    if cfg.method == "lora":  # a plain model folder: what --backend hf and vLLM load without peft
        final = final.merge_and_unload()
    final.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    summary = {"steps": trainer.state.global_step, "seconds": round(seconds, 1),
               "train_loss": round(float(result.training_loss), 4), "model": str(out), "resumed_from": resume_from,
               "max_length": max_length, "gradient_checkpointing": checkpointing, "rows": len(train_rows),
               "rows_trained": kept, "dev_rows": len(dev_rows),
               "eval_loss": _last_eval(trainer.state.log_history),
               "best_eval_loss": None if trainer.state.best_metric is None else round(trainer.state.best_metric, 4),
               "best_checkpoint": trainer.state.best_model_checkpoint}
    if torch.cuda.is_available() and str(next(final.parameters()).device).startswith("cuda"):
        summary["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    (out / "sft_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _last_eval(history: list[dict]) -> float | None:
    losses = [r["eval_loss"] for r in history if "eval_loss" in r]
    return round(losses[-1], 4) if losses else None


def make_parser():
    from controller.args import HelpFormatter, Parser, add_flags, flags

    table = flags(SftConfig)
    p = Parser(prog="live-tool-dagger sft", formatter_class=HelpFormatter, flag_table=table,
               description="Train a coder on an SFT export with TRL's SFTTrainer (LoRA or full, CPU or GPU);\n"
                           "the result loads with --backend hf --model OUT. See docs/sft.md.")
    p.add_argument("--config", metavar="FILE", help="TOML file of these flags without the dashes (default: none)")
    add_flags(p, table, {"": "training"})
    return p, table


def main(argv: list[str]) -> int:
    from controller.args import build, flag_of, values

    parser, table = make_parser()
    args = parser.parse_args(argv)
    try:
        cfg = build(SftConfig, values(table, args))
        summary = train(cfg)
    except ConfigError as err:
        print(f"error: {err.render(flag_of(table))}", file=sys.stderr)
        return 2
    except SftInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    kept = (f"; dev loss {summary['eval_loss']} at the end, best {summary['best_eval_loss']} "
            f"({Path(summary['best_checkpoint']).name}, the model written)" if summary["best_checkpoint"] else "")
    print(f"sft: {summary['steps']} steps in {summary['seconds']:.0f} s, train loss {summary['train_loss']}{kept}; "
          f"the model is in {summary['model']} (--backend hf --model {summary['model']})")
    return 0
