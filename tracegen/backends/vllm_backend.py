"""The ``vllm`` backend: vLLM's offline ``LLM.chat`` over a whole wave at once (GPU).

vLLM is an optional extra (``pip install 'live-tool-dagger[vllm]'``) and is imported only when
this backend is built. Every request gets its own ``SamplingParams`` with seed
``config.seed + sample``, so a request's sampled output does not depend on which other requests
share its wave, and independent samples of one prompt differ. ``enable_thinking`` goes to the
chat template through ``chat_template_kwargs``.

Counts come from vLLM's own token ids (prompt and generated). Latency: the wave's wall time
divided evenly across its requests (the engine schedules them together).

Sampling starts from the model's own generation defaults (``LLM.get_default_sampling_params``,
what ``vllm serve`` applies too), then sets temperature, top-p, max tokens and the seed, and
``top_k`` when ``config.top_k`` is given.

Engine options read from ``config.extra``: ``gpu_memory_utilization`` (default 0.85),
``max_model_len``, ``enforce_eager``, ``language_model_only`` (skip a multimodal checkpoint's
vision tower), ``tensor_parallel_size``. Bitsandbytes 4-bit is refused before vLLM starts (see
``controller.pipeline.check_flags``): use a pre-quantized AWQ/GPTQ checkpoint instead.

A named packaged model (``smollm2``) resolves to its converted folder. When vLLM's rendered
prompt ends inside an open ``<think>``, the completion text starts with that tag (see hf).
"""
from __future__ import annotations

import time

from tracegen.models import resolve_model

from ._tokens import folder_identity, opens_thinking
from .base import Backend, BackendConfig, Completion, GenerationRequest


def _import_vllm():
    try:
        import vllm
    except ImportError:
        raise ImportError("the vllm backend needs vLLM (CUDA): pip install 'live-tool-dagger[vllm]'") from None
    return vllm


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(self, config: BackendConfig):
        super().__init__(config)
        if not config.model:
            raise ValueError("the vllm backend needs --model (a local folder or a cached hub name)")
        vllm = _import_vllm()
        self.path = resolve_model(config.model)
        kwargs: dict = {
            "model": self.path,
            "seed": config.seed,
            "gpu_memory_utilization": float(config.extra.get("gpu_memory_utilization", 0.85)),
        }
        if config.dtype != "auto":
            kwargs["dtype"] = config.dtype
        if config.load_in_4bit:
            raise ValueError("--load-in-4bit is bitsandbytes (hf only); for vllm use a pre-quantized "
                             "AWQ/GPTQ checkpoint as --model (vLLM reads its quantization config)")
        for opt in ("max_model_len", "enforce_eager", "tensor_parallel_size", "language_model_only"):
            if config.extra.get(opt) is not None:
                kwargs[opt] = config.extra[opt]
        self.llm = vllm.LLM(**kwargs)
        self._defaults = self.llm.get_default_sampling_params()

    def identity(self) -> dict:
        return folder_identity(self.path)

    def _params(self, request: GenerationRequest):
        cfg = self.config
        params = self._defaults.clone()
        params.temperature, params.top_p = cfg.temperature, cfg.top_p
        params.max_tokens, params.seed = cfg.max_new_tokens, cfg.seed + request.sample
        if cfg.top_k is not None:
            params.top_k = cfg.top_k
        return params

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if not requests:
            return []
        t0 = time.perf_counter()
        outputs = self.llm.chat(
            [r.messages for r in requests],
            sampling_params=[self._params(r) for r in requests],
            use_tqdm=False,
            chat_template_kwargs={"enable_thinking": self.config.enable_thinking}
            if self.config.chat_template_kwargs else None,
        )
        per_ms = (time.perf_counter() - t0) * 1000.0 / len(requests)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        completions = []
        for o in outputs:
            gen = o.outputs[0]
            finish = "length" if gen.finish_reason == "length" else "stop"
            text = gen.text
            if opens_thinking(getattr(o, "prompt", None) or "") and not text.lstrip().startswith("<think>"):
                text = "<think>\n" + text
            completions.append(Completion(text, len(o.prompt_token_ids or []), len(gen.token_ids), per_ms, finish))
        return completions

    def close(self) -> None:
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            del llm
            try:
                import torch

                torch.cuda.empty_cache()
            except ImportError:
                pass
