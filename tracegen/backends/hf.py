"""The ``hf`` backend: a transformers model, batched ``generate``, the model's chat template.

Requests are rendered with the model's own chat template (``enable_thinking`` passed through,
off by default), sorted by prompt length so each batch pads little, and generated in batches of
``config.batch_size`` with left padding, one ``generate`` call per batch. Results come back in
request order.

Counts: prompt tokens are the rendered prompt's tokens; completion tokens are the generated
tokens up to and including the stop token. Latency: a batch's wall time divided evenly across
its requests (a batch finishes together, so no single request has its own time).

Sampling (``temperature > 0``): a batch holds requests of one sample index only, and torch is
seeded from ``config.seed``, that index and the batch's prompts, so the same batch gives the same
outputs and independent samples of one prompt differ; a different batch split (another
``batch_size``) changes sampled outputs. ``top_k`` is ``config.top_k`` or else the model's
own generation config (0, no top-k, when it sets none: what vLLM and servers do; transformers
alone would fall back to 50). Greedy decoding does not depend on the split beyond padding numerics.

Log-probabilities: a logits processor that changes nothing keeps, at each decoding step, the
log-softmax of the model's next-token scores (after the generation config's own processors,
before temperature, top-k and top-p) at the token chosen, so each completion carries the
statistics of its answer's tokens, the stop token left out (``backends/logprobs.py``); one
gather per step, no full-vocabulary history is kept.

Progress: while ``on_request_done`` or ``on_decode_step`` is set (the rollout sets them), a
stopping criterion that never stops anything watches each decoding step: it reports every
sequence of the batch that has just produced a stop token, so a long batch shows its requests
finishing one by one, and the tokens decoded so far; the rows cut at ``max_new_tokens`` are
reported when the batch returns.

When the rendered prompt ends inside an open ``<think>`` (a template that opens the reasoning
block for the model), the completion text starts with that ``<think>`` tag, so the text is the
whole assistant turn and a completion cut off while thinking parses as ``truncated_thinking``.
"""
from __future__ import annotations

import hashlib
import time

from tracegen.models import check_hub_model, resolve_model

from ._tokens import default_top_k, folder_identity, load_model, opens_thinking, render_chat, split_completion
from .base import Backend, BackendConfig, Completion, GenerationRequest
from .logprobs import logprob_stats
from tracegen.errors import ConfigError


class HFBackend(Backend):
    name = "hf"
    loads_model = True

    @classmethod
    def preflight(cls, config: BackendConfig) -> None:
        check_hub_model(config.model)  # offline and not cached: fail now, not after the hub client's retries

    def __init__(self, config: BackendConfig):
        super().__init__(config)
        if not config.model:
            raise ConfigError("the hf backend needs one (a local folder or a cached hub name)", "model")
        if config.batch_size < 1:
            raise ConfigError("must be at least 1", "batch_size")
        self.path = resolve_model(config.model)  # a packaged name (smollm2) becomes its folder
        self.loaded = load_model(self.path, device=config.device, dtype=config.dtype,
                                 load_in_4bit=config.load_in_4bit)
        gen = getattr(self.loaded.model, "generation_config", None)
        self.top_k = config.top_k if config.top_k is not None else default_top_k(gen)

    def identity(self) -> dict:
        return folder_identity(self.path)

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        tok = self.loaded.tokenizer
        prompts = [render_chat(tok, r.messages, self.config.enable_thinking, self.config.chat_template_kwargs)
                   for r in requests]
        lengths = [len(tok(p, add_special_tokens=False).input_ids) for p in prompts]
        # one sample index per batch (its own seed), short prompts together (little padding)
        order = sorted(range(len(prompts)), key=lambda i: (requests[i].sample, lengths[i]))
        out: list[Completion | None] = [None] * len(prompts)
        size = self.config.batch_size
        start = 0
        while start < len(order):
            sample = requests[order[start]].sample
            idx = [i for i in order[start : start + size] if requests[i].sample == sample]
            for i, c in zip(idx, self.generate_prompts([prompts[i] for i in idx], sample)):
                out[i] = c
            start += len(idx)
        return out  # type: ignore[return-value]

    def generate_prompts(self, prompts: list[str], sample: int = 0) -> list[Completion]:
        """One ``generate`` call over already-rendered prompts (one batch)."""
        import torch

        m = self.loaded
        cfg = self.config
        enc = m.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(m.device)
        kwargs = dict(max_new_tokens=cfg.max_new_tokens, eos_token_id=m.stop_ids,
                      pad_token_id=m.tokenizer.pad_token_id)
        if cfg.temperature > 0:
            digest = hashlib.sha256("\x00".join(prompts).encode("utf-8")).digest()
            torch.manual_seed((cfg.seed + sample) * 1_000_003 + int.from_bytes(digest[:4], "big"))
            kwargs.update(do_sample=True, temperature=cfg.temperature, top_p=cfg.top_p, top_k=self.top_k)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        watching = self.on_request_done is not None or self.on_decode_step is not None
        watch = finish_watch(m.stop_ids, self.report_done,
                             lambda k: self.report_step(k, cfg.max_new_tokens)) if watching else None
        if watch is not None:
            from transformers import StoppingCriteriaList

            kwargs["stopping_criteria"] = StoppingCriteriaList([watch])
        from transformers import LogitsProcessorList

        lp_watch = logprob_watch()
        kwargs["logits_processor"] = LogitsProcessorList([lp_watch])
        t0 = time.perf_counter()
        with torch.inference_mode():
            generated = m.model.generate(**enc, **kwargs)
        per_ms = (time.perf_counter() - t0) * 1000.0 / len(prompts)
        self.report_done(len(prompts) - (watch.reported if watch is not None else 0))  # cut at the limit
        new_ids = generated[:, enc["input_ids"].shape[1] :]
        token_lp = lp_watch.finish(new_ids).tolist()  # [row][step]
        new = new_ids.tolist()
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        completions = []
        for prompt, row, n_prompt, lps in zip(prompts, new, prompt_tokens, token_lp):
            ids, n_done, finish = split_completion(row, m.stop_ids)
            text = m.tokenizer.decode(ids, skip_special_tokens=True)
            if opens_thinking(prompt) and not text.lstrip().startswith("<think>"):
                text = "<think>\n" + text  # the template opened it: the turn starts inside it
            completions.append(Completion(text, int(n_prompt), n_done, per_ms, finish,
                                          logprobs=logprob_stats(lps[:len(ids)], "hf")))
        return completions

    def close(self) -> None:
        loaded, self.loaded = getattr(self, "loaded", None), None
        if loaded is not None and loaded.device.startswith("cuda"):
            import torch

            del loaded
            torch.cuda.empty_cache()


def logprob_watch():
    """A transformers ``LogitsProcessor`` that returns the scores unchanged and records, per row,
    the log-probability of each token generated; ``finish(new_ids)`` adds the last token's and
    returns a [rows, new tokens] tensor."""
    import torch
    from transformers import LogitsProcessor

    class LogprobWatch(LogitsProcessor):
        def __init__(self) -> None:
            self.prev = None
            self.steps: list = []

        def __call__(self, input_ids, scores):
            if self.prev is not None:  # the token chosen after the previous step's scores
                self.steps.append(self.prev.gather(1, input_ids[:, -1:]).squeeze(1))
            self.prev = torch.log_softmax(scores.float(), dim=-1)
            return scores

        def finish(self, new_ids):
            if self.prev is not None and len(self.steps) < new_ids.shape[1]:
                self.steps.append(self.prev.gather(1, new_ids[:, len(self.steps):len(self.steps) + 1]).squeeze(1))
            self.prev = None
            if not self.steps:
                return torch.zeros((new_ids.shape[0], 0))
            return torch.stack(self.steps, dim=1).cpu()

    return LogprobWatch()


def finish_watch(stop_ids: list[int], report, step=None):
    """A transformers ``StoppingCriteria`` that stops nothing: at each decoding step it calls
    ``report(n)`` with the number of rows whose newest token is, for the first time, a stop token
    (a row that finished gets pad tokens after it, so it is counted once), and ``step(k)`` with the
    tokens decoded so far. ``reported`` is the total reported."""
    import torch
    from transformers import StoppingCriteria

    class FinishWatch(StoppingCriteria):
        def __init__(self) -> None:
            self.stops = torch.tensor(sorted(set(stop_ids)), dtype=torch.long)
            self.seen = None
            self.reported = self.width = 0

        def __call__(self, input_ids, scores, **kwargs):
            if self.seen is None:
                self.width = input_ids.shape[1] - 1  # called first after the first new token
            if step is not None:
                step(input_ids.shape[1] - self.width)
            if self.stops.device != input_ids.device:
                self.stops = self.stops.to(input_ids.device)
            hit = torch.isin(input_ids[:, -1], self.stops)
            if self.seen is None:
                self.seen = torch.zeros_like(hit)
            new = hit & ~self.seen
            n = int(new.sum())
            if n:
                self.seen |= new
                self.reported += n
                report(n)
            return torch.zeros_like(hit)  # never stops a row: transformers stops it at its stop token

    return FinishWatch()
