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
vision tower), ``load_format`` (``dummy``: random weights, for benchmarks). Bitsandbytes 4-bit is
refused before vLLM starts (see ``controller.pipeline.check_flags``): use a pre-quantized
AWQ/GPTQ checkpoint instead.

Parallelism is vLLM's own: ``tensor_parallel_size``, ``pipeline_parallel_size`` and
``distributed_executor_backend`` (``mp`` or ``ray``; Ray spans the nodes of a Ray cluster) go to
the engine arguments unchanged. ``data_parallel_size`` > 1 cannot go through ``LLM`` (vLLM
refuses single-process data parallelism), so the backend then drives vLLM's ``AsyncLLMEngine``
(what ``vllm serve --data-parallel-size N`` runs): vLLM starts the replicas and its coordinator
balances the requests over them; with the ``ray`` executor the replicas are placed by Ray
(``data_parallel_backend="ray"``). Nothing here starts processes of its own. The same sampling
parameters and per-request seeds apply; the chat template is rendered with the engine's own
tokenizer, as ``LLM.chat`` does.

Progress: while ``on_request_done`` is set, ``LLM.chat`` gets a stand-in for tqdm as ``use_tqdm``
(vLLM calls its ``update`` as each request finishes; it draws nothing), and the async engine
reports each request as its final output arrives.

A named packaged model (``smollm2``) resolves to its converted folder. When vLLM's rendered
prompt ends inside an open ``<think>``, the completion text starts with that tag (see hf).
"""
from __future__ import annotations

import asyncio
import functools
import threading
import time

from tracegen.models import resolve_model

from ._tokens import folder_identity, opens_thinking
from .logprobs import logprob_stats
from .base import Backend, BackendConfig, Completion, GenerationRequest
from tracegen.errors import ConfigError


def _token_logprobs(gen) -> dict | None:
    """The statistics of the chosen tokens' log-probabilities of one vLLM output (vLLM returns
    them before temperature and top-k by default), the stop token left out; None without any."""
    steps, ids = getattr(gen, "logprobs", None), list(gen.token_ids or [])
    if not steps:
        return None
    vals = []
    for tok, step in zip(ids, steps):
        entry = step.get(tok) if isinstance(step, dict) else None
        if entry is None:
            return None
        vals.append(getattr(entry, "logprob", entry))
    if gen.finish_reason == "stop" and not isinstance(getattr(gen, "stop_reason", None), str) and vals:
        vals = vals[:-1]  # stopped at a stop token (an EOS or stop_token_ids), which is not the answer
    return logprob_stats(vals, "vllm")


def _import_vllm():
    try:
        import vllm
    except ImportError:
        raise ImportError("the vllm backend needs vLLM (CUDA): pip install 'live-tool-dagger[vllm]'") from None
    return vllm


class VLLMBackend(Backend):
    name = "vllm"
    loads_model = True

    def __init__(self, config: BackendConfig):
        super().__init__(config)
        if not config.model:
            raise ConfigError("the vllm backend needs one (a local folder or a cached hub name)", "model")
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
            raise ConfigError("bitsandbytes (hf only); for vllm use a pre-quantized AWQ/GPTQ checkpoint as `model` "
                              "(vLLM reads its quantization config)", "load_in_4bit")
        for opt in ("max_model_len", "enforce_eager", "tensor_parallel_size", "language_model_only", "load_format"):
            if config.extra.get(opt) is not None:
                kwargs[opt] = config.extra[opt]
        kwargs.update(engine_parallel_args(config))
        self.llm = self._engine = None
        if config.data_parallel_size > 1:
            self._engine = _AsyncEngine(vllm, kwargs)
            self._defaults = self._engine.default_params
        else:
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
        params.logprobs = 0  # the chosen token's log-probability per step (the confidence signal)
        return params

    def _template_kwargs(self) -> dict | None:
        return {"enable_thinking": self.config.enable_thinking} if self.config.chat_template_kwargs else None

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if not requests:
            return []
        t0 = time.perf_counter()
        watching = self.on_request_done is not None
        if self._engine is not None:
            outputs = self._engine.chat([r.messages for r in requests], [self._params(r) for r in requests],
                                        self._template_kwargs(), on_done=self.report_done if watching else None)
        else:
            outputs = self.llm.chat(
                [r.messages for r in requests],
                sampling_params=[self._params(r) for r in requests],
                use_tqdm=functools.partial(CountingBar, report=self.report_done) if watching else False,
                chat_template_kwargs=self._template_kwargs(),
            )
        per_ms = (time.perf_counter() - t0) * 1000.0 / len(requests)
        if len(outputs) != len(requests):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        completions = []
        rendered = self._engine.last_prompts if self._engine is not None else [None] * len(outputs)
        for o, prompt in zip(outputs, rendered):
            gen = o.outputs[0]
            finish = "length" if gen.finish_reason == "length" else "stop"
            text = gen.text
            # LLM.chat reports the rendered prompt on its output; the async engine path keeps its own
            if opens_thinking(prompt or getattr(o, "prompt", None) or "") and not text.lstrip().startswith("<think>"):
                text = "<think>\n" + text
            completions.append(Completion(text, len(o.prompt_token_ids or []), len(gen.token_ids), per_ms, finish,
                                          logprobs=_token_logprobs(gen)))
        return completions

    def close(self) -> None:
        engine, self._engine = getattr(self, "_engine", None), None
        if engine is not None:
            engine.close()
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None or engine is not None:
            del llm
            try:
                import torch

                torch.cuda.empty_cache()
            except ImportError:
                pass


class CountingBar:
    """What ``LLM.chat(use_tqdm=...)`` calls in place of ``tqdm``: it draws nothing and passes each
    finished request (``update(n)``) to ``report``. vLLM builds it twice a call: around the prompts
    it adds (an iterable, passed through) and as the bar of the requests it runs (``total=``), whose
    ``format_dict["elapsed"]``, ``postfix``, ``n``, ``refresh`` and ``close`` it uses."""

    def __init__(self, iterable=None, *args, report=None, total=None, **kwargs):
        self.iterable, self.total, self.report = iterable, total, report
        self.n, self.postfix, self.t0 = 0, kwargs.get("postfix"), time.monotonic()

    def __iter__(self):
        return iter(self.iterable if self.iterable is not None else ())

    def __len__(self) -> int:
        return len(self.iterable) if self.iterable is not None else int(self.total or 0)

    @property
    def format_dict(self) -> dict:
        return {"n": self.n, "total": self.total, "elapsed": max(time.monotonic() - self.t0, 1e-6)}

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.report is not None:
            self.report(n)

    def set_postfix(self, *args, **kwargs) -> None:
        pass

    def set_postfix_str(self, *args, **kwargs) -> None:
        pass

    def set_description(self, *args, **kwargs) -> None:
        pass

    def refresh(self, *args, **kwargs) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def engine_parallel_args(config: BackendConfig) -> dict:
    """The parallelism settings as vLLM engine arguments; defaults are left to vLLM."""
    out: dict = {}
    if config.tensor_parallel_size != 1:
        out["tensor_parallel_size"] = config.tensor_parallel_size
    if config.pipeline_parallel_size != 1:
        out["pipeline_parallel_size"] = config.pipeline_parallel_size
    if config.data_parallel_size != 1:
        out["data_parallel_size"] = config.data_parallel_size
    if config.distributed_executor_backend:
        out["distributed_executor_backend"] = config.distributed_executor_backend
        if config.data_parallel_size > 1:
            out["data_parallel_backend"] = config.distributed_executor_backend
    return out


async def _maybe_await(value):
    return await value if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future) else value


class _AsyncEngine:
    """vLLM's ``AsyncLLMEngine`` (data parallel) behind a blocking ``chat`` like ``LLM.chat``.

    The engine lives on an event loop in one background thread for the backend's whole life, so
    its output handler persists between waves; each wave submits every request at once and vLLM
    balances them over its replicas. Outputs come back in request order.
    """

    def __init__(self, vllm, kwargs: dict):
        self.vllm = vllm
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="vllm-async-engine", daemon=True)
        self.thread.start()
        self._ids = 0
        self.last_prompts: list[str] = []
        try:
            from vllm.sampling_params import RequestOutputKind

            self.final_only = RequestOutputKind.FINAL_ONLY
        except ImportError:  # an older vLLM: every step's output arrives, the last one is kept
            self.final_only = None
        try:
            self.engine, self.tokenizer, self.default_params = self._run(self._start(kwargs))
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def _start(self, kwargs: dict):
        vllm = self.vllm
        engine = vllm.AsyncLLMEngine.from_engine_args(vllm.AsyncEngineArgs(**kwargs))
        # vLLM versions differ in whether these are coroutines or attributes
        tokenizer = await _maybe_await(engine.get_tokenizer())
        model_config = getattr(engine, "model_config", None) or await _maybe_await(engine.get_model_config())
        diff = model_config.get_diff_sampling_param()  # the model's generation defaults, as LLM uses
        return engine, tokenizer, vllm.SamplingParams(**diff) if diff else vllm.SamplingParams()

    def chat(self, conversations: list, params: list, template_kwargs: dict | None, on_done=None) -> list:
        prompts = []
        for messages in conversations:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                      **(template_kwargs or {}))
            prompts.append((text, self.tokenizer.encode(text, add_special_tokens=False)))
        if self.final_only is not None:
            for p in params:  # one output per request at its end, not one per decoding step
                p.output_kind = self.final_only
        base = self._ids
        self._ids += len(prompts)
        self.last_prompts = [text for text, _ in prompts]
        return self._run(self._wave(prompts, params, base, on_done))

    async def _one(self, text: str, ids: list, params, request_id: str, on_done=None):
        final = None
        async for out in self.engine.generate({"prompt_token_ids": ids}, params, request_id):
            final = out
        if final is None:
            raise RuntimeError(f"vLLM returned nothing for request {request_id}")
        if on_done is not None:
            on_done(1)
        return final

    async def _wave(self, prompts: list, params: list, base: int, on_done=None) -> list:
        return list(await asyncio.gather(*(self._one(text, ids, p, f"ltd-{base + i}", on_done)
                                           for i, ((text, ids), p) in enumerate(zip(prompts, params)))))

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)

    def close(self) -> None:
        try:
            self.engine.shutdown()
        finally:
            self._stop_loop()
