"""Helpers shared by the local-model backends (``hf``) and the generation benchmark.

Loading picks the model class from the checkpoint's config: multimodal checkpoints (a config
with a ``vision_config``, such as the released Qwen3.5 ones) load with
``AutoModelForImageTextToText`` and are used for text only; everything else, including
text-only ``qwen3_5_text`` checkpoints, loads with ``AutoModelForCausalLM``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    device: str
    stop_ids: list[int]
    model_class: str  # "AutoModelForCausalLM" or "AutoModelForImageTextToText"


def pick_model_class(config: Any) -> str:
    """The Auto class that loads a checkpoint with this config (see the module docstring)."""
    if getattr(config, "vision_config", None) is not None:
        return "AutoModelForImageTextToText"
    return "AutoModelForCausalLM"


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def resolve_dtype(dtype: str, device: str):
    """bf16 on a GPU, fp32 on CPU (bf16 matmuls are slow on most CPUs), unless named."""
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return getattr(torch, dtype)
    except AttributeError:
        raise ValueError(f"unknown dtype {dtype!r}: use auto, bfloat16, float16 or float32") from None


def load_model(path: str, *, device: str = "auto", dtype: str = "auto", load_in_4bit: bool = False) -> LoadedModel:
    """Load tokenizer (left padding) and model from a local folder or a cached hub name.

    Raises ValueError for a bad path, a 4-bit request without CUDA, or a tokenizer without a
    chat template; ImportError when ``load_in_4bit`` is set and bitsandbytes is missing.
    """
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    device = resolve_device(device)
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot load model config from {path!r}: {e}") from None
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{path}: tokenizer has no chat template; the hf backend needs one")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    kwargs: dict = {"dtype": resolve_dtype(dtype, device)}
    if load_in_4bit:
        if not device.startswith("cuda"):
            raise ValueError("--load-in-4bit needs a CUDA GPU (bitsandbytes 4-bit kernels)")
        try:
            import bitsandbytes  # noqa: F401
        except ImportError:
            raise ImportError("--load-in-4bit needs bitsandbytes: pip install bitsandbytes") from None
        import torch

        kwargs["quantization_config"] = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
        kwargs["device_map"] = {"": device}
    cls_name = pick_model_class(config)
    model = getattr(transformers, cls_name).from_pretrained(path, **kwargs)
    if not load_in_4bit:
        model.to(device)
    model.eval()
    return LoadedModel(model, tokenizer, device, stop_token_ids(tokenizer, model), cls_name)


def stop_token_ids(tokenizer: Any, model: Any) -> list[int]:
    """Every id that ends a turn: the tokenizer's eos, ChatML's ``<|im_end|>``, the model's eos."""
    ids: list[int] = []
    gen = getattr(model, "generation_config", None)
    candidates = [tokenizer.eos_token_id, getattr(gen, "eos_token_id", None)]
    if "<|im_end|>" in tokenizer.get_vocab():
        candidates.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    for c in candidates:
        for i in c if isinstance(c, (list, tuple)) else [c]:
            if i is not None and i not in ids:
                ids.append(int(i))
    return ids


def default_top_k(generation_config: Any) -> int:
    """The top-k a model's own generation config asks for; 0 (off) when it sets none.

    transformers falls back to top_k=50 for an unset value while vLLM and OpenAI-compatible
    servers use no top-k, so the hf backend passes this explicitly to sample the same way.
    """
    k = getattr(generation_config, "top_k", None) if generation_config is not None else None
    return int(k) if k is not None and int(k) > 0 else 0


def folder_identity(path: str) -> dict:
    """A model folder's identity for the generation cache: hashes of its config files and the
    names and sizes of its weight files (cheap; a re-converted or fine-tuned folder differs).
    A hub name that is not a folder is identified by the commit hash in its local cache."""
    import hashlib
    import os

    if not os.path.isdir(path):
        try:
            from transformers import AutoConfig

            return {"revision": getattr(AutoConfig.from_pretrained(path), "_commit_hash", None)}
        except (OSError, ValueError):
            return {}
    h = hashlib.sha256()
    weights = []
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name in ("config.json", "generation_config.json", "tokenizer_config.json", "chat_template.jinja"):
            with open(full, "rb") as fh:
                h.update(name.encode() + b"\0" + fh.read())
        elif name.endswith((".safetensors", ".bin", ".gguf")):
            weights.append([name, os.path.getsize(full)])
    return {"config_sha256": h.hexdigest()[:16], "weights": weights}


def render_chat(tokenizer: Any, messages: list[dict], enable_thinking: bool, template_kwargs: bool = True) -> str:
    """The prompt string from the model's own chat template, ready for the assistant's turn.

    ``enable_thinking`` goes to the template (Qwen3/3.5 read it; other templates ignore it)
    unless ``template_kwargs`` is off.
    """
    kwargs = {"enable_thinking": enable_thinking} if template_kwargs else {}
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)


def opens_thinking(prompt: str) -> bool:
    """True when the rendered prompt ends inside an open ``<think>`` block (the template opened
    it for the model), so a completion without tags is all reasoning."""
    tail = prompt.rstrip()
    return tail.rfind("<think>") > tail.rfind("</think>")


def split_completion(row: list[int], stop_ids: list[int]) -> tuple[list[int], int, str]:
    """(text ids, completion token count, finish reason) for one row of generated ids.

    The count includes the stop token, as servers count it; after it come only pad ids.
    Without a stop token the row was cut at ``max_new_tokens``: finish reason ``"length"``.
    """
    stops = set(stop_ids)
    for k, tok in enumerate(row):
        if tok in stops:
            return row[:k], k + 1, "stop"
    return row, len(row), "length"
