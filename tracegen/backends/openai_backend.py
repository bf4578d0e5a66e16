"""The ``openai`` backend: any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, ...).

Standard library only (urllib + a thread pool). ``config.concurrency`` requests are in flight at
once; each is retried with exponential backoff and jitter (each wait is 50-100% of
``retry_base_s * 2**attempt``, capped at ``retry_max_s``, so many clients do not retry in step)
on 429, 5xx, timeouts, dropped connections, and a 200 whose body is not a whole chat completion
(not JSON, cut short, no choices), honouring a ``Retry-After`` header, up to
``config.max_retries`` retries. Other 4xx answers fail that request at once with the server's
message; the rest of the batch still runs, and the batch then raises ``PartialGeneration``
naming the failed case, kind and round, with the finished completions attached (the generation
cache stores them, so ``--resume`` pays only for what failed).

At start the backend asks ``GET /models``: an unreachable endpoint raises ``ConnectionError``
naming the URL, and a model the server does not list raises ``ValueError`` listing the ones it
does (servers without ``/models`` skip the check; a 404 on a chat request is reported the same
way). The API key is read from the environment variable ``config.api_key_env``; with no key
set no ``Authorization`` header is sent (local servers need none).

``enable_thinking`` is sent as ``chat_template_kwargs`` (what vLLM and SGLang read for Qwen
models); ``config.chat_template_kwargs = False`` (``--no-chat-template-kwargs``) leaves it out
for servers that reject unknown fields. ``top_k`` is sent only when ``config.top_k`` is set, so
the server applies the model's generation config otherwise (as the offline backends do). The
served model's id, root and context length from ``/models`` are its ``identity()`` for the cache. A separate ``reasoning_content`` in the answer is kept as a leading ``<think>`` block.
Latency is each request's own wall time, retries included.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from .base import Backend, BackendConfig, Completion, GenerationRequest, PartialGeneration

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    """The endpoint answered with an error that retrying will not fix."""


class BatchError(PartialGeneration, EndpointError):
    """Some requests of a batch failed for good; the finished completions ride along."""


class _BadBody(ValueError):
    """A 200 whose body is not a whole chat completion: retried like a dropped connection."""


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, config: BackendConfig):
        super().__init__(config)
        if not config.base_url:
            raise ValueError("the openai backend needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        if not config.model:
            raise ValueError("the openai backend needs --model (the name the server serves)")
        self.base_url = config.base_url.rstrip("/")
        self.retry_base_s = float(config.extra.get("retry_base_s", 1.0))
        self.retry_max_s = float(config.extra.get("retry_max_s", 30.0))
        self._served: dict = {}
        self._check_model()

    # ------------------------------------------------------------------ http

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        """One HTTP exchange; raises HTTPError/URLError/timeouts for the caller to sort out."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=self._headers())
        with urllib.request.urlopen(req, timeout=self.config.request_timeout_s) as resp:
            raw = resp.read()
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _BadBody(f"answer is not JSON ({len(raw)} bytes: {raw[:60]!r})") from None

    def _check_model(self) -> None:
        try:
            listing = self._call("GET", "/models")
        except urllib.error.HTTPError as e:
            if e.code in (404, 405):
                return  # no /models on this server: the first chat request will tell
            raise EndpointError(f"{self.base_url}/models answered HTTP {e.code}: {_error_text(e)}") from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError, http.client.HTTPException, _BadBody) as e:
            reason = getattr(e, "reason", e)
            raise ConnectionError(f"cannot reach the OpenAI-compatible endpoint {self.base_url}: {reason}") from None
        entries = [m for m in (listing.get("data") or []) if isinstance(m, dict)] if isinstance(listing, dict) else []
        served = [m.get("id") for m in entries]
        for m in entries:
            if m.get("id") == self.config.model:
                self._served = {k: m.get(k) for k in ("id", "root", "max_model_len") if m.get(k) is not None}
        if served and self.config.model not in served:
            raise ValueError(f"model {self.config.model!r} is not served at {self.base_url}; it serves: {', '.join(served)}")

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.retry_max_s)
            except ValueError:
                pass
        return min(self.retry_base_s * (2 ** attempt), self.retry_max_s) * random.uniform(0.5, 1.0)

    def identity(self) -> dict:
        return dict(self._served)

    # ------------------------------------------------------------------ generation

    def _body(self, request: GenerationRequest) -> dict:
        cfg = self.config
        body = {
            "model": cfg.model,
            "messages": request.messages,
            "max_tokens": cfg.max_new_tokens,
            "temperature": cfg.temperature,
            "top_p": cfg.top_p,
            # one seed per sample index so independent samples differ but reruns repeat
            "seed": cfg.seed + request.sample,
        }
        if cfg.top_k is not None:
            body["top_k"] = cfg.top_k  # vLLM/SGLang extension; unset: the model's generation config
        if cfg.chat_template_kwargs and cfg.extra.get("send_chat_template_kwargs", True):
            body["chat_template_kwargs"] = {"enable_thinking": cfg.enable_thinking}
        return body

    def _one(self, request: GenerationRequest) -> Completion:
        body = self._body(request)
        t0 = time.perf_counter()
        attempt = 0
        while True:
            retry_after = None
            try:
                answer = _completion(self._call("POST", "/chat/completions", body), 0.0)
                break
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    raise EndpointError(f"{self.base_url}/chat/completions answered 404 (wrong model name "
                                        f"{self.config.model!r} or wrong --base-url?): {_error_text(e)}") from None
                if e.code not in _RETRY_STATUS:
                    raise EndpointError(f"{self.base_url}/chat/completions answered HTTP {e.code}: {_error_text(e)}") from None
                why, retry_after = f"HTTP {e.code}", e.headers.get("Retry-After")
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError,
                    http.client.HTTPException, _BadBody) as e:
                why = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
            if attempt >= self.config.max_retries:
                raise EndpointError(f"{self.base_url}: gave up after {attempt + 1} attempts ({why})")
            time.sleep(self._backoff(attempt, retry_after))
            attempt += 1
        answer.latency_ms = (time.perf_counter() - t0) * 1000.0
        return answer

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        """All requests run to the end even when some fail; failures raise ``PartialGeneration``
        carrying the finished completions."""
        if not requests:
            return []
        workers = max(1, min(self.config.concurrency, len(requests)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._one, r) for r in requests]
        out: list[Completion | None] = []
        errors: dict[int, str] = {}
        for i, f in enumerate(futures):
            err = f.exception()
            if err is None:
                out.append(f.result())
            elif isinstance(err, EndpointError):
                out.append(None)
                errors[i] = str(err)
            else:
                raise err
        if errors:
            i = min(errors)
            r = requests[i]
            raise BatchError(
                f"case {r.task.case_id!r} ({r.kind}, round {r.round}, sample {r.sample}): {errors[i]}"
                + (f" (and {len(errors) - 1} more failed requests)" if len(errors) > 1 else "")
                + f"; {len(requests) - len(errors)} finished completions were kept", out, errors)
        return out  # type: ignore[return-value]


def _completion(answer: dict, latency_ms: float) -> Completion:
    try:
        choice = answer["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _BadBody(f"malformed chat completion: {str(answer)[:200]}") from None
    text = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
    if reasoning and not text and finish == "length":
        text = f"<think>\n{reasoning}"  # cut off while reasoning: no closing tag, no answer
    elif reasoning:
        text = f"<think>\n{reasoning}\n</think>\n\n{text}"
    usage = answer.get("usage") or {}
    return Completion(text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                      latency_ms, finish)


def _error_text(e: urllib.error.HTTPError) -> str:
    try:
        raw = e.read().decode("utf-8", "replace")
    except Exception:  # the body is only decoration for the message
        return str(e.reason)
    try:
        err = json.loads(raw).get("error", raw)
        return str(err.get("message", err) if isinstance(err, dict) else err)[:300]
    except (ValueError, AttributeError):
        return raw[:300]
