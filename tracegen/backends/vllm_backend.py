"""The ``vllm`` backend: vLLM's offline ``LLM.chat`` over a whole wave at once (GPU).

vLLM is an optional extra (``pip install 'live-tool-dagger[vllm]'``) and is imported only when
this backend is built. Every request gets its own ``SamplingParams`` with seed
``config.seed + sample``, so a request's sampled output does not depend on which other requests
share its wave, and independent samples of one prompt differ. ``enable_thinking`` goes to the
chat template through ``chat_template_kwargs``.

Counts come from vLLM's own token ids (prompt and generated). Latency: the wave's wall time
divided evenly across its requests (the engine schedules them together).

Engine options read from ``config.extra``: ``gpu_memory_utilization`` (default 0.85),
``max_model_len``, ``enforce_eager``, ``tensor_parallel_size``.
"""
from __future__ import annotations

import time

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
        self._sampling_params = vllm.SamplingParams
        kwargs: dict = {
            "model": config.model,
            "seed": config.seed,
            "gpu_memory_utilization": float(config.extra.get("gpu_memory_utilization", 0.85)),
        }
        if config.dtype != "auto":
            kwargs["dtype"] = config.dtype
        if config.load_in_4bit:
            kwargs["quantization"] = "bitsandbytes"
        for opt in ("max_model_len", "enforce_eager", "tensor_parallel_size"):
            if opt in config.extra:
                kwargs[opt] = config.extra[opt]
        self.llm = vllm.LLM(**kwargs)

    def _params(self, request: GenerationRequest):
        cfg = self.config
        return self._sampling_params(
            temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_new_tokens,
            seed=cfg.seed + request.sample)

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if not requests:
            return []
        t0 = time.perf_counter()
        outputs = self.llm.chat(
            [r.messages for r in requests],
            sampling_params=[self._params(r) for r in requests],
            use_tqdm=False,
            chat_template_kwargs={"enable_thinking": self.config.enable_thinking},
        )
        per_ms = (time.perf_counter() - t0) * 1000.0 / len(requests)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        completions = []
        for o in outputs:
            gen = o.outputs[0]
            finish = "length" if gen.finish_reason == "length" else "stop"
            completions.append(Completion(gen.text, len(o.prompt_token_ids or []), len(gen.token_ids), per_ms, finish))
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
