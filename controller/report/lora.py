"""The report's LoRA section: which base the policy's adapters sit on, how they were trained, and
what each training cost (``lora_training``, with the cross-validation folds' in ``cv``)."""
from __future__ import annotations

from typing import Mapping

from controller.report.fmt import num, table


def _base(name: str | None) -> str:
    if not name:  # controller.learn.lora builds it when no base_model is given
        return ("a tiny randomly initialised causal LM built locally (no language: the adapter learns the "
                "state -> action mapping from scratch)")
    from tracegen.models import PACKAGED_MODELS

    spec = PACKAGED_MODELS.get(name)
    if spec is None:
        return f"`{name}` (a local model folder)"
    return f"`{name}`, pretrained: `{spec.filename}` from the `{spec.package}` {spec.version} package, dequantized (quantized {spec.quantization})"


def lora_md(s: Mapping) -> list[str]:
    runs = {**(s.get("lora_training") or {}), **((s.get("cv") or {}).get("lora_training") or {})}
    if not runs:
        return []
    lc = (((s.get("config") or {}).get("experiment") or {}).get("lora") or {})
    layers = lc.get("lora_layers")
    out = ["## LoRA policy", "",
           f"Base: {_base(lc.get('base_model'))}. Adapter: rank {lc.get('lora_r', 'n/a')}, alpha "
           f"{lc.get('lora_alpha', 'n/a')}, on {'every layer' if not layers else f'the last {layers} layers'}; "
           f"at most {lc.get('max_steps', 'n/a')} steps of {lc.get('batch_size', 'n/a')} prompts (learning rate "
           f"{lc.get('learning_rate', 'n/a')}), prompt `{lc.get('prompt', 'n/a')}`, dev loss every "
           f"{lc.get('eval_every', 'n/a')} steps for early stopping.", ""]
    rows = [[f"`{tag}`", r.get("n_rows", "n/a"), r.get("n_dev_rows", "n/a"), r.get("steps", "n/a"),
             r.get("best_step") if r.get("best_step") is not None else "-", r.get("score_mode", "n/a"),
             num(r.get("train_s"), 1), num(r.get("peak_rss_mb"), 0)]
            for tag, r in runs.items()]
    n_seeds = (s.get("split_seeds") or {}).get("n_split_seeds") or 1
    more = (f" The other {n_seeds - 1} split seeds refit it in every fold the same way; their trainings are "
            "not listed." if n_seeds > 1 else "")
    out += [f"Trainings of this run (`lora_cvF`: cross-validation fold F at split seed "
            f"{(s.get('cv') or {}).get('split_seed', 'n/a')}).{more}", ""]
    return out + table(["training", "rows", "dev rows", "steps", "best step", "scoring", "seconds",
                        "peak RSS (MB, the process's high-water mark)"], rows)
