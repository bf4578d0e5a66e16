"""The LoRA policy as a learner of the study: its training rows from labelled states, a ``fit``
that trains in the caller or in the side-process worker (``lora_worker``), and the adapter that
lets simulation treat it like any policy.

``cfg`` is the study's ``ExperimentConfig`` (``lora``, ``seed``, ``adapters_dir``, ``progress``).
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from controller.env.state import base_actions
from controller.learn.lora import PolicyExample, train_lora_policy
from controller.learn.task_prompt import prompt_for


def lora_examples(data, prompt: str = "state"):
    """LoRA rows over the base actions: its vocabulary has no PROGRAM:j, so it trains on labels of
    the majority-commit action space (``labelled(..., commit_any=False)``). ``prompt``: see
    ``controller/learn/task_prompt.py``."""
    return [PolicyExample(prompt_for(s, prompt), base_actions(s.valid_actions), l, w)
            for s, l, w in zip(data.states, data.labels, data.weights) if len(base_actions(s.valid_actions)) > 1]


def lora_fit(cfg, name: str, shuffle: bool, dev_data=None, meta_out: dict | None = None,
              worker=None, timing: dict | None = None, timing_key: str | None = None) -> Callable:
    """``fit(training_set, iteration)`` for the LoRA policy; ``dev_data`` (labelled dev states)
    drives early stopping; each training's timing and memory land in ``meta_out[tag]``, and its
    seconds (from sending it to its result) in ``timing[timing_key]``.

    With ``worker`` (a ``lora_worker.LoraWorker``) the training runs in the worker and ``fit``
    returns at once: the policy waits for it when first used, and ``meta_out[tag]`` and
    ``timing[timing_key]`` are filled in (at the place they were reserved) when its result is read."""
    dev_examples = lora_examples(dev_data, cfg.lora.prompt) if dev_data is not None else None

    def fit(data, iteration=None):
        lcfg = replace(cfg.lora, seed=cfg.seed, shuffle_labels=shuffle)  # cfg.seed: this seed's run
        tag = name if iteration is None else f"{name}_{iteration}"
        args = (lora_examples(data, lcfg.prompt), lcfg, f"{cfg.adapters_dir}/{tag}")
        row = meta_out.setdefault(tag, {}) if meta_out is not None else {}
        if timing is not None and timing_key:
            timing[timing_key] = None
        sent = time.monotonic()

        def trained(m: dict) -> None:
            row.update({k: m.get(k) for k in ("train_s", "steps", "n_rows", "n_dev_rows", "score_mode",
                                              "peak_rss_mb", "peak_cuda_mb", "tiny_base")})
            row["best_step"] = (m.get("early_stopping") or {}).get("best_step")
            if timing is not None and timing_key:
                timing[timing_key] = round(time.monotonic() - sent, 2)

        if worker is None:
            pol = train_lora_policy(*args, progress=cfg.progress, dev_examples=dev_examples)
            trained(pol.meta)
        else:
            pol = worker.train(*args, progress=cfg.progress, dev_examples=dev_examples, on_trained=trained)
        return LoraAdapter(pol, name, lcfg.prompt)

    return fit


class LoraAdapter:
    """A trained LoRA policy as a controller over ``State``s (base actions only)."""

    def __init__(self, inner, name, prompt: str = "state"):
        self.inner, self.name, self.prompt = inner, name, prompt

    def act(self, states):
        return self.inner.choose([prompt_for(s, self.prompt) for s in states], [base_actions(s.valid_actions) for s in states]) if states else []
