"""What the traced coder is, and where it departs from its recipe: the ``deviations.coder`` key.

Read from data, never typed into a report: the packaged model's own entry (``tracegen.models``:
its file and quantization), and a model card (``--model-card FILE``, JSON; or the ``sft_config.json``
and ``sft_summary.json`` that ``live-tool-dagger sft`` writes into a model folder) with

* ``base``: the model it was trained from (a packaged name or a folder);
* ``training``: what ran (``steps``, ``rows_per_step``, ``train_rows``, ...);
* ``recipe``: what was planned (``epochs``) and ``why`` it ran otherwise;
* ``completion_tokens``: {kind: token counts of the training completions}
  (``scripts/completion_lengths.py --card``), counted here against the traces' ``max_new_tokens``.

Each departure is one row: what, the recipe, what ran. {} for the synthesizer.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

REAL_BACKENDS = ("hf", "vllm", "openai")


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def card_of(model: str, card_path: str | None) -> tuple[dict, str | None]:
    """(the model's card, where it was read); ``--model-card`` first, else what ``sft`` wrote into the folder."""
    if card_path:
        card = _read(Path(card_path))
        if card is None:
            raise ValueError(f"--model-card {card_path}: not a JSON object")
        return card, card_path
    conf, summ = _read(Path(model) / "sft_config.json"), _read(Path(model) / "sft_summary.json")
    if not conf or not summ:
        return {}, None
    c = conf.get("config") or {}
    return {"base": c.get("model"), "training": {
        "method": c.get("method"), "steps": summ.get("steps"), "rows_per_step": c.get("batch_size", 1) * c.get("grad_accum", 1),
        "train_rows": summ.get("rows_trained"), "max_length": summ.get("max_length"),
        "learning_rate": c.get("learning_rate"), "train_loss": summ.get("train_loss"),
        "best_eval_loss": summ.get("best_eval_loss")},
        "recipe": {"epochs": c.get("epochs")} if not c.get("max_steps") else {}}, str(Path(model) / "sft_config.json")


def _weights(name: str | None) -> str | None:
    from tracegen.models import PACKAGED_MODELS

    spec = PACKAGED_MODELS.get(name or "")
    if spec is None:
        return None
    return (f"`{spec.filename}` from the `{spec.package}` {spec.version} package, dequantized to float32: "
            f"quantized {spec.quantization}, not the original weights")


def coder_provenance(backend: dict, card_path: str | None = None) -> dict:
    """``backend``: the run's backend config (name, model, max_new_tokens)."""
    if backend.get("name") not in REAL_BACKENDS:
        return {}
    model = str(backend.get("model") or "")
    card, source = card_of(model, card_path)
    base = card.get("base") or model
    rows = []
    weights = _weights(base)
    if weights:
        rows.append({"what": "base weights", "recipe": f"`{base}`", "ran": weights})
    tr, plan = card.get("training") or {}, card.get("recipe") or {}
    if tr.get("steps") and tr.get("train_rows") and tr.get("rows_per_step") and plan.get("epochs"):
        planned = math.ceil(tr["train_rows"] / tr["rows_per_step"] * plan["epochs"])
        if tr["steps"] != planned:
            seen = tr["steps"] * tr["rows_per_step"]
            rows.append({"what": "training steps",
                         "recipe": f"{plan['epochs']:g} epoch{'s' if plan['epochs'] != 1 else ''}: {planned} steps "
                                   f"of {tr['rows_per_step']} rows",
                         "ran": f"{tr['steps']} steps ({min(seen, tr['train_rows'])} of {tr['train_rows']} rows, "
                                f"{seen / tr['train_rows']:.2f} epoch)" + (f"; {plan['why']}" if plan.get("why") else "")})
    lengths = (card.get("completion_tokens") or {}).get("kinds") or {}
    limit = backend.get("max_new_tokens")
    if lengths and limit:
        cut = {k: sum(n > limit for n in v) for k, v in lengths.items()}
        if sum(cut.values()):
            total = sum(len(v) for v in lengths.values())
            per = ", ".join(f"{cut[k]} of {len(v)} {k}" for k, v in lengths.items())
            rows.append({"what": "token limit",
                         "recipe": f"training completions of up to {max(max(v) for v in lengths.values() if v)} tokens",
                         "ran": f"traced with --max-new-tokens {limit}, shorter than {sum(cut.values())} of the {total} "
                                f"training completions ({per}): written right, they are still cut"})
    return {"model": model, "base": base, "card": source, "rows": rows} if rows or source else {}
