"""The LoRA controller policy: a causal LM, tuned with LoRA, picks the next action from the state.

The model reads the rendered visible state (``controller/env/state.py``) followed by ``"\\nAction:"``
and scores each valid action by the log-probability of its tokens as the continuation
(``controller/learn/lora_scoring.py``). Training minimises the cross-entropy of the labelled action
under a softmax restricted to that state's valid actions, weighted per example. Choosing is the
argmax of the same scores, so the policy never returns an invalid action.

Simplifications, stated:
* Examples with a single valid action carry no signal (their loss is identically zero) and are
  dropped from training; no trainable example left raises ``ValueError``. One label class is
  fine: the policy then learns to prefer it.
* The loss is ``sum(w_i * nll_i) / (n_batch * mean_w)``, ``mean_w`` over the whole training set,
  so a weight is relative importance and the weights' scale does not change the step size.
* Prompts longer than ``max_length`` keep their last tokens (the latest round and the cue).
* The default base is a tiny random Qwen3.5-architecture model (``tracegen.tiny_model``): it knows
  no language, so the adapter learns the mapping from scratch. ``base_model`` swaps in a real one
  (``--policy-model smollm2``: SmolLM2-135M-Instruct).
* Examples with the same prompt and valid actions are merged into one row whose target is the
  weighted label mix (the loss is the same sum; the states of one family repeat a lot, so this
  cuts the rows a step must score).
* With dev examples and ``eval_every`` > 0, the weighted dev loss is measured every
  ``eval_every`` steps; training stops after ``patience`` evaluations without improvement and the
  adapter weights of the best evaluation are restored (early stopping on dev).
* Only the positions that predict action tokens get logits (``lora_scoring``): the speed and memory
  figures of ``benchmarks/bench_lora.py`` compare that with computing them everywhere.

On CPU a training run is deterministic for a seed (and thread count): the RNG is forked and
seeded, batches come from a seeded generator, and deterministic algorithms are on for the run.
A tiny base runs on one CPU thread (``cpu_threads``): on a shared CPU, torch's spinning worker
threads made the same run 2-20x slower.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from tracegen.errors import check

from controller.learn.lora_scoring import (ACTIONS, action_token_ids, ensure_pad_token,
                                     render_tokens_estimate, resolve_score_mode, score_actions)

__all__ = ["LoraPolicyConfig", "PolicyExample", "LoraPolicy", "train_lora_policy",
           "render_tokens_estimate", "ACTIONS"]

POLICY_JSON = "lora_policy.json"
# Projection names across common decoder archs (Qwen3.5 attention + gated DeltaNet, Llama, Qwen3).
_TARGET_NAMES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                 "in_proj_qkv", "in_proj_z", "out_proj")


@dataclass
class LoraPolicyConfig:
    base_model: str | None = field(default=None, metadata={
        "help": "local base model for the LoRA policy (a folder, or a packaged name such as smollm2; default: a "
                "tiny Qwen3.5-architecture model built offline)", "flag": "--policy-model"})
    cache_dir: str = field(default="reports/cache/tiny_base", metadata={
        "help": "where the tiny default base is built (reused when already there)", "cli": False})
    max_steps: int = field(default=120, metadata={"help": "LoRA optimizer steps"})
    learning_rate: float = field(default=2e-3, metadata={
        "help": "LoRA AdamW peak learning rate (high because the tiny base starts from random)"})
    batch_size: int = field(default=16, metadata={"help": "LoRA batch size (examples per micro-batch)"})
    grad_accum: int = field(default=1, metadata={"help": "LoRA gradient accumulation steps (micro-batches per step)"})
    max_length: int = field(default=256, metadata={"help": "LoRA prompt length limit in tokens"})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling numerator"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    seed: int = field(default=0, metadata={"help": "seed for LoRA init, batch order, shuffling (the run's seed)",
                                           "cli": False})
    device: str = field(default="auto", metadata={"help": "LoRA training device: auto (cuda if available), cpu, cuda",
                                                  "flag": "--lora-device"})
    cpu_threads: int = field(default=0, metadata={
        "help": "torch threads on CPU; 0: one thread for bases under 10M parameters (their "
                "matrices gain nothing from threads, which stall on a busy CPU), else torch's default"})
    eval_batch_size: int = field(default=64, metadata={"help": "prompts per scoring batch"})
    shuffle_labels: bool = field(default=False, metadata={
        "help": "the shuffled-label control: permute labels across examples before training", "cli": False})
    lora_layers: int = field(default=0, metadata={
        "help": "adapt only the last N decoder layers (0: all); cuts the backward pass on a real base, e.g. 8 of "
                "SmolLM2's 30 (autograd stops below them)"})
    score_mode: str = field(default="auto", metadata={
        "help": "auto, first_token or sequence (see controller/learn/lora_scoring.py)"})
    eval_every: int = field(default=20, metadata={
        "help": "steps between dev-loss evaluations for early stopping (0: off; needs dev examples)"})
    prompt: str = field(default="state", metadata={
        "help": "state: the rendered visible features; task: the task before them (example tables, new input's "
                "shape, direct answer, the program's output on the example, feedback; controller/learn/task_prompt.py; "
                "raise --max-length, e.g. 768, or the task is cut)", "flag": "--lora-prompt",
        "choices": ("state", "task")})
    patience: int = field(default=1, metadata={
        "help": "evaluations without a better dev loss before training stops (1: stop at the first "
                "evaluation that does not improve; the best adapter is restored either way)"})

    def __post_init__(self) -> None:
        for name in ("max_steps", "batch_size", "grad_accum", "lora_r", "patience", "eval_batch_size"):
            check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        check(self.prompt in ("state", "task"), "prompt", f"must be state or task, got {self.prompt!r}")
        check(self.max_length >= 8, "max_length", f"must be >= 8, got {self.max_length}")
        check(self.learning_rate > 0, "learning_rate", f"must be > 0, got {self.learning_rate}")
        check(0 <= self.lora_dropout < 1, "lora_dropout", f"must be in [0, 1), got {self.lora_dropout}")
        for name in ("lora_layers", "eval_every", "cpu_threads"):
            check(getattr(self, name) >= 0, name, f"must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class PolicyExample:
    prompt: str  # the rendered visible state (plain text, written by controller/env/state.py)
    valid_actions: tuple[str, ...]  # subset of ACTIONS
    label: str  # the target action, one of valid_actions
    weight: float = 1.0


# ---------------------------------------------------------------- base model and labels

def _device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def _load_base(base_path: str, device: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base_path)
    ensure_pad_token(tok)
    # bf16 on GPU for real bases; fp32 on CPU, where bf16 is slow and less reproducible
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = AutoModelForCausalLM.from_pretrained(base_path, dtype=dtype).to(device)
    return model, tok


@contextmanager
def _cpu_threads(config: LoraPolicyConfig, model: Any):
    """Run the block with the configured number of torch CPU threads, then restore the old one."""
    import torch

    n = config.cpu_threads
    if n == 0:
        small = sum(p.numel() for p in model.parameters()) < 10_000_000
        on_cpu = next(model.parameters()).device.type == "cpu"
        n = 1 if (small and on_cpu) else torch.get_num_threads()
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _resolve_base(config: LoraPolicyConfig) -> tuple[str, bool]:
    """(path, is_tiny): the configured base, or the tiny default built under cache_dir."""
    if config.base_model:
        return config.base_model, False
    from tracegen.tiny_model import build_tiny_model

    return build_tiny_model(config.cache_dir), True


def lora_config(model: Any, config: "LoraPolicyConfig") -> Any:
    """peft's LoraConfig for ``model``: every projection, or those of the last ``lora_layers`` layers."""
    from peft import LoraConfig

    kw = {}
    n_layers = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    if config.lora_layers and n_layers and config.lora_layers < n_layers:
        kw["layers_to_transform"] = list(range(n_layers - config.lora_layers, n_layers))
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                      task_type="CAUSAL_LM", target_modules=_target_modules(model), **kw)


def _target_modules(model: Any) -> list[str]:
    import torch

    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    found = sorted(names & set(_TARGET_NAMES))
    if not found:  # an unfamiliar arch: every linear layer except the output head
        found = sorted(names - {"lm_head"})
    return found


def shuffle_labels(examples: Sequence[PolicyExample], seed: int) -> list[PolicyExample]:
    """The shuffled-label control: each example takes the label *and weight* of a permuted partner.

    Labels and regret weights move together, so the control keeps the weighted label mix (its
    base rate is the weighted-majority action, ``majority_action``) and loses only the link to the
    state; keeping each state's own weight made the heavy states' labels (tool use) its base rate.
    A partner label that is invalid here keeps its meaning where it can: a tool action (WRITE,
    FIX, PROGRAM) becomes this state's tool action, since every state offers DIRECT plus at most
    one; otherwise a seeded choice among this example's valid actions.
    """
    rng = random.Random(seed)
    perm = list(range(len(examples)))
    rng.shuffle(perm)
    out = []
    for ex, j in zip(examples, perm):
        src = examples[j].label
        if src in ex.valid_actions:
            label = src
        else:
            tools = [a for a in ex.valid_actions if a != "DIRECT"]
            label = rng.choice(tools if (src != "DIRECT" and tools) else list(ex.valid_actions))
        out.append(PolicyExample(ex.prompt, ex.valid_actions, label, examples[j].weight))
    return out


def _check_examples(examples: Sequence[PolicyExample]) -> list[PolicyExample]:
    for ex in examples:
        if not ex.valid_actions or any(a not in ACTIONS for a in ex.valid_actions):
            raise ValueError(f"valid_actions {ex.valid_actions!r} must be a subset of {ACTIONS}")
        if ex.label not in ex.valid_actions:
            raise ValueError(f"label {ex.label!r} is not among valid_actions {ex.valid_actions!r}")
        if not ex.weight >= 0:
            raise ValueError(f"example weight must be >= 0, got {ex.weight!r}")
    kept = [ex for ex in examples if len(ex.valid_actions) > 1 and ex.weight > 0]
    if not kept:
        raise ValueError("no trainable examples: need at least one with two or more valid "
                         "actions and a positive weight")
    return kept


# ---------------------------------------------------------------- training

@dataclass(frozen=True)
class _Row:
    """One distinct (prompt, valid actions) with the summed weight of each label seen for it."""

    prompt: str
    valid_actions: tuple[str, ...]
    targets: tuple[tuple[str, float], ...]

    @property
    def weight(self) -> float:
        return sum(w for _, w in self.targets)


def merge_examples(examples: Sequence[PolicyExample]) -> list[_Row]:
    """Merge examples with the same prompt and valid actions (first-seen order kept)."""
    acc: dict[tuple, dict[str, float]] = {}
    for ex in examples:
        t = acc.setdefault((ex.prompt, tuple(ex.valid_actions)), {})
        t[ex.label] = t.get(ex.label, 0.0) + ex.weight
    return [_Row(p, va, tuple(sorted(t.items()))) for (p, va), t in acc.items()]


def _rows_loss(model: Any, tok: Any, act_ids: dict, rows: Sequence[_Row], config: LoraPolicyConfig) -> Any:
    """Sum over rows and labels of weight * nll under the softmax over the row's valid actions."""
    import torch

    scores = score_actions(model, tok, act_ids, [r.prompt for r in rows], [r.valid_actions for r in rows],
                           config.max_length, mode=config.score_mode)
    terms = []
    for sc, r in zip(scores, rows):
        logp = torch.log_softmax(sc, -1)
        terms += [-logp[r.valid_actions.index(label)] * w for label, w in r.targets]
    return torch.stack(terms).sum()


def _dev_loss(model: Any, tok: Any, act_ids: dict, rows: Sequence[_Row], config: LoraPolicyConfig) -> float:
    import torch

    total = sum(r.weight for r in rows)
    model.eval()
    with torch.inference_mode():
        loss = sum(_rows_loss(model, tok, act_ids, rows[i:i + config.eval_batch_size], config).item()
                   for i in range(0, len(rows), config.eval_batch_size))
    model.train()
    return loss / total


def _train_loop(model: Any, tok: Any, act_ids: dict, data: list[_Row], config: LoraPolicyConfig,
                gen: Any, progress: bool, dev: list[_Row] | None = None) -> tuple[list[float], dict]:
    """AdamW over seeded epochs of ``data``; returns (loss of each step, early-stopping record)."""
    import torch
    from tqdm.auto import tqdm

    mean_w = sum(r.weight for r in data) / len(data)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.0)
    warmup = max(1, config.max_steps // 20)
    # short linear warmup, then linear decay to zero
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(
        (s + 1) / warmup, max(0.0, (config.max_steps - s) / max(1, config.max_steps - warmup))))
    order: list[int] = []
    losses: list[float] = []
    early = {"evaluations": [], "best_step": None, "stopped_at": None}
    best, since = None, 0
    model.train()
    bar = tqdm(range(config.max_steps), desc="lora policy", disable=not progress)
    for step in bar:
        step_loss = 0.0
        for _ in range(config.grad_accum):
            if len(order) < config.batch_size:  # refill with a fresh seeded epoch
                order += torch.randperm(len(data), generator=gen).tolist()
            batch = [data[i] for i in order[:config.batch_size]]
            del order[:config.batch_size]
            loss = _rows_loss(model, tok, act_ids, batch, config) / (len(batch) * mean_w * config.grad_accum)
            loss.backward()
            step_loss += loss.item()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(step_loss)
        bar.set_postfix(loss=f"{step_loss:.3f}")
        if dev and config.eval_every and (step + 1) % config.eval_every == 0:
            dl = _dev_loss(model, tok, act_ids, dev, config)
            early["evaluations"].append([step + 1, round(dl, 5)])
            if best is None or dl < best[0] - 1e-6:
                best, since = (dl, [p.detach().clone() for p in params]), 0
                early["best_step"] = step + 1
            else:
                since += 1
                if since >= config.patience:
                    early["stopped_at"] = step + 1
                    break
    if best is not None:  # restore the adapter of the best dev evaluation
        with torch.no_grad():
            for p, b in zip(params, best[1]):
                p.copy_(b)
    model.eval()
    return losses, early


def _peak_memory_mb(device: str) -> dict:
    import resource

    import torch

    out = {"peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if device.startswith("cuda"):
        out["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return out


def train_lora_policy(
    examples: Sequence[PolicyExample],
    config: LoraPolicyConfig,
    out_dir: str,
    *,
    progress: bool = True,
    dev_examples: Sequence[PolicyExample] | None = None,
) -> "LoraPolicy":
    """Train a LoRA adapter on ``examples``, save it to ``out_dir``, return the loaded policy.

    ``dev_examples`` (labelled dev states) drive early stopping when ``config.eval_every`` > 0.
    Raises ValueError on invalid examples or when none is trainable (see module docstring).
    """
    import torch
    from peft import get_peft_model

    data = _check_examples(examples)
    if config.shuffle_labels:
        data = shuffle_labels(data, config.seed)
    rows = merge_examples(data)
    dev_data = [ex for ex in dev_examples or () if len(ex.valid_actions) > 1 and ex.weight > 0]
    if config.shuffle_labels and dev_data:  # the control stops on dev labels as uninformative as its own
        dev_data = shuffle_labels(dev_data, config.seed + 1)
    dev_rows = merge_examples(dev_data)
    base_path, is_tiny = _resolve_base(config)
    device = _device(config.device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    prev_det = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with torch.random.fork_rng(devices=[]):  # seed without disturbing the caller's RNG
            torch.manual_seed(config.seed)
            model, tok = _load_base(base_path, device)
            model = get_peft_model(model, lora_config(model, config))
            gen = torch.Generator().manual_seed(config.seed)
            with _cpu_threads(config, model):
                losses, early = _train_loop(model, tok, action_token_ids(tok), rows, config, gen, progress,
                                            dev=dev_rows or None)
    finally:
        torch.use_deterministic_algorithms(prev_det)

    train_s = time.perf_counter() - t0
    model.save_pretrained(out_dir)
    meta = dict(config=asdict(config), base_model=os.path.abspath(base_path), tiny_base=is_tiny,
                n_examples=len(examples), n_trained=len(data), n_rows=len(rows), n_dev_rows=len(dev_rows),
                label_counts=dict(Counter(ex.label for ex in data)), steps=len(losses), early_stopping=early,
                score_mode=resolve_score_mode(config.score_mode, action_token_ids(tok)),
                final_loss=sum(losses[-10:]) / len(losses[-10:]), train_s=round(train_s, 3),
                **_peak_memory_mb(device))
    with open(os.path.join(out_dir, POLICY_JSON), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1, sort_keys=True)
    return LoraPolicy(model, tok, config, meta)


# ---------------------------------------------------------------- the policy

class LoraPolicy:
    """A trained adapter on its base; scores and chooses actions for batches of states."""

    def __init__(self, model: Any, tokenizer: Any, config: LoraPolicyConfig, meta: dict) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.meta = meta  # what lora_policy.json holds: config, base path, counts, train time
        self._act_ids = action_token_ids(tokenizer)

    def scores(self, prompts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[dict[str, float]]:
        """Log-probs of each valid action as the continuation of each prompt."""
        import torch

        if len(prompts) != len(valid_actions):
            raise ValueError(f"{len(prompts)} prompts but {len(valid_actions)} valid-action lists")
        out: list[dict[str, float]] = []
        n = self.config.eval_batch_size
        self.model.eval()
        with torch.inference_mode(), _cpu_threads(self.config, self.model):
            for i in range(0, len(prompts), n):
                va = [tuple(v) for v in valid_actions[i:i + n]]
                got = score_actions(self.model, self.tokenizer, self._act_ids, list(prompts[i:i + n]),
                                    va, self.config.max_length, mode=self.config.score_mode)
                out += [dict(zip(v, s.tolist())) for v, s in zip(va, got)]
        return out

    def choose(self, prompts: Sequence[str], valid_actions: Sequence[Sequence[str]]) -> list[str]:
        """The highest-scoring valid action per prompt (ties go to the first listed)."""
        return [max(s, key=s.__getitem__) for s in self.scores(prompts, valid_actions)]

    @classmethod
    def load(cls, adapter_dir: str, config: LoraPolicyConfig) -> "LoraPolicy":
        """Reload a saved adapter onto its base.

        The base is ``config.base_model`` when set, else the one recorded at training; a recorded
        tiny base that has since been removed is rebuilt under ``config.cache_dir`` (the build is
        deterministic). Scoring settings come from ``config``.
        """
        from peft import PeftModel

        path = os.path.join(adapter_dir, POLICY_JSON)
        try:
            with open(path, encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a saved LoRA policy ({exc})") from None
        base = config.base_model or meta["base_model"]
        if not config.base_model and meta.get("tiny_base") and not os.path.isdir(base):
            base, _ = _resolve_base(config)
        model, tok = _load_base(base, _device(config.device))
        model = PeftModel.from_pretrained(model, adapter_dir)
        model.eval()
        return cls(model, tok, config, meta)

