"""The ``openai`` backend: any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, ...).

Standard library only (urllib + a thread pool). ``config.concurrency`` requests are in flight at
once; each is retried with exponential backoff on 429, 5xx, timeouts and dropped connections,
honouring a ``Retry-After`` header, up to ``config.max_retries`` retries. Other 4xx answers fail
at once with the server's message.

At start the backend asks ``GET /models``: an unreachable endpoint raises ``ConnectionError``
naming the URL, and a model the server does not list raises ``ValueError`` listing the ones it
does (servers without ``/models`` skip the check; a 404 on a chat request is reported the same
way). The API key is read from the environment variable ``config.api_key_env``; with no key
set no ``Authorization`` header is sent (local servers need none).

``enable_thinking`` is sent as ``chat_template_kwargs`` (what vLLM and SGLang read for Qwen
models); set ``extra["send_chat_template_kwargs"] = False`` for servers that reject unknown
fields. A separate ``reasoning_content`` in the answer is kept as a leading ``<think>`` block.
Latency is each request's own wall time, retries included.
"""
from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from .base import Backend, BackendConfig, Completion, GenerationRequest

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    """The endpoint answered with an error that retrying will not fix."""


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
            return json.loads(resp.read().decode("utf-8"))

    def _check_model(self) -> None:
        try:
            listing = self._call("GET", "/models")
        except urllib.error.HTTPError as e:
            if e.code in (404, 405):
                return  # no /models on this server: the first chat request will tell
            raise EndpointError(f"{self.base_url}/models answered HTTP {e.code}: {_error_text(e)}") from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ConnectionError(f"cannot reach the OpenAI-compatible endpoint {self.base_url}: {reason}") from None
        served = [m.get("id") for m in listing.get("data", []) if isinstance(m, dict)]
        if served and self.config.model not in served:
            raise ValueError(f"model {self.config.model!r} is not served at {self.base_url}; it serves: {', '.join(served)}")

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.retry_max_s)
            except ValueError:
                pass
        return min(self.retry_base_s * (2 ** attempt), self.retry_max_s)

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
        if cfg.extra.get("send_chat_template_kwargs", True):
            body["chat_template_kwargs"] = {"enable_thinking": cfg.enable_thinking}
        return body

    def _one(self, request: GenerationRequest) -> Completion:
        body = self._body(request)
        t0 = time.perf_counter()
        attempt = 0
        while True:
            retry_after = None
            try:
                answer = self._call("POST", "/chat/completions", body)
                break
            except urllib.error.HTTPError as e:
                if e.code == 404:
                    raise EndpointError(f"{self.base_url}/chat/completions answered 404 (wrong model name "
                                        f"{self.config.model!r} or wrong --base-url?): {_error_text(e)}") from None
                if e.code not in _RETRY_STATUS:
                    raise EndpointError(f"{self.base_url}/chat/completions answered HTTP {e.code}: {_error_text(e)}") from None
                why, retry_after = f"HTTP {e.code}", e.headers.get("Retry-After")
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError) as e:
                why = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
            if attempt >= self.config.max_retries:
                raise EndpointError(f"{self.base_url}: gave up after {attempt + 1} attempts ({why})")
            time.sleep(self._backoff(attempt, retry_after))
            attempt += 1
        return _completion(answer, (time.perf_counter() - t0) * 1000.0)

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        if not requests:
            return []
        workers = max(1, min(self.config.concurrency, len(requests)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._one, requests))  # map keeps input order


def _completion(answer: dict, latency_ms: float) -> Completion:
    try:
        choice = answer["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError):
        raise EndpointError(f"malformed chat completion: {str(answer)[:200]}") from None
    text = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        text = f"<think>\n{reasoning}\n</think>\n\n{text}"
    usage = answer.get("usage") or {}
    finish = "length" if choice.get("finish_reason") == "length" else "stop"
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
