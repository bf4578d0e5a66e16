"""The ``openai`` backend: any OpenAI-compatible chat endpoint (vLLM, SGLang, llama.cpp, ...).

Standard library only (urllib + a thread pool). ``config.base_url`` names one endpoint or several
(comma-separated, or ``@FILE`` with one URL a line): replicas of one model (``vllm serve`` on
several GPUs or nodes, a router, a hosted provider). ``config.concurrency`` requests per endpoint
are in flight at once, and each request goes to the endpoint with the fewest outstanding
requests. A request that fails on one endpoint moves at once to an endpoint it has not tried;
``fail_threshold`` (3) failures in a row take an endpoint out of rotation for ``probe_after_s``
(10 s, ``--endpoint-cooldown``), after which single requests probe it back (a failed probe
doubles the wait). Per-endpoint requests, completions, failed attempts by kind, tokens and
throughput are in ``stats()`` (the summary's ``timing.generation``). Once a request has tried
every endpoint in rotation it is retried with exponential backoff and jitter (each wait is 50-100% of
``retry_base_s * 2**attempt``, capped at ``retry_max_s``, so many clients do not retry in step)
on 429, 5xx, timeouts, dropped connections, and a 200 whose body is not a whole chat completion
(not JSON, cut short, no choices), honouring a ``Retry-After`` header, up to
``config.max_retries`` retries. Other 4xx answers fail that request at once with the server's
message; the rest of the batch still runs, and the batch then raises ``PartialGeneration``
naming the failed case, kind and round, with the finished completions attached (the generation
cache stores them, so ``--resume`` pays only for what failed).

At start the backend asks every endpoint ``GET /models``: when none is reachable it raises
``ConnectionError`` naming them (some unreachable: they start out of rotation and are probed
later); a model an endpoint does not list raises ``ValueError`` listing the ones it does, and
endpoints serving different models (another root or context length) under the one name are
refused (servers without ``/models`` skip the check; a 404 on a chat request is reported the same
way). When every endpoint is out of rotation and a request gives up, its error names each
endpoint with its last error. The API key is read from the environment variable ``config.api_key_env``; with no key
set no ``Authorization`` header is sent (local servers need none).

``enable_thinking`` is sent as ``chat_template_kwargs`` (what vLLM and SGLang read for Qwen
models); ``config.chat_template_kwargs = False`` (``--no-chat-template-kwargs``) leaves it out
for servers that reject unknown fields. ``top_k`` is sent only when ``config.top_k`` is set, so
the server applies the model's generation config otherwise (as the offline backends do). The
served model's id, root and context length from ``/models`` are its ``identity()`` for the cache. A separate ``reasoning_content`` in the answer is kept as a leading ``<think>`` block.

Log-probabilities: every request asks for ``logprobs`` (the chosen tokens' log-probabilities);
their statistics ride on the completion (``backends/logprobs.py``). A server that refuses the
field (HTTP 400/422 naming it) is asked again without it, once for the run, and a server that
ignores it answers without them: either way the completion's ``logprobs`` says
``unavailable`` and why, never a made-up statistic.
Latency is each request's own wall time, retries included.
"""
from __future__ import annotations

import http.client
import json
import os
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .base import Backend, BackendConfig, Completion, GenerationRequest, PartialGeneration
from .logprobs import logprob_stats, unavailable
from tracegen.errors import ConfigError

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    """The endpoint answered with an error that retrying will not fix."""


class BatchError(PartialGeneration, EndpointError):
    """Some requests of a batch failed for good; the finished completions ride along."""


class _BadBody(ValueError):
    """A 200 whose body is not a whole chat completion: retried like a dropped connection."""


_TRANSIENT = (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, http.client.HTTPException, _BadBody)


def parse_base_urls(text: str) -> list[str]:
    """``base_url``: one URL, several separated by commas, or ``@FILE`` holding one URL a line
    (blank lines and ``#`` comments skipped; files and URLs may be mixed, comma-separated).
    Raises ``ConfigError`` naming the field (and the file)."""
    items, where = [], "`base_url`"
    for part in (u.strip() for u in (text or "").split(",")):
        if not part.startswith("@"):
            items.append(part)
            continue
        path = part[1:]
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"`base_url` @{path}: cannot read the endpoint file "
                              f"({getattr(e, 'strerror', None) or e})") from None
        items += [line.split("#", 1)[0].strip() for line in raw.splitlines()]
        where = f"`base_url` @{path}"
    urls = [u.rstrip("/") for u in items if u]
    if not urls:
        raise ConfigError(f"{where}: names no endpoint")
    for u in urls:
        parts = urllib.parse.urlsplit(u)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{where}: {u!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)")
    seen = set()
    for u in urls:
        if u in seen:
            raise ConfigError(f"{where}: {u} is listed twice")
        seen.add(u)
    return urls


@dataclass
class _Endpoint:
    """One server's health and counts; changed only under the pool's lock."""

    url: str
    cooldown_s: float
    in_flight: int = 0
    sent: int = 0
    ok: int = 0
    failures: int = 0
    errors: dict = field(default_factory=dict)  # error kind -> count
    prompt_tokens: int = 0
    completion_tokens: int = 0
    consecutive: int = 0
    down_until: float = 0.0  # time.monotonic() when it may be probed again; 0: in rotation
    taken_out: int = 0
    restored: int = 0
    last_error: str = ""


class _Pool:
    """The endpoints, spread by outstanding load, with a circuit breaker per endpoint.

    ``fail_threshold`` failures in a row take an endpoint out of rotation for ``probe_after_s``;
    then one request at a time probes it (a success puts it back, a failure doubles the wait, up
    to 16x). When every endpoint is out, requests go to the one due back first."""

    def __init__(self, urls: list[str], fail_threshold: int, probe_after_s: float):
        self.endpoints = [_Endpoint(u, probe_after_s) for u in urls]
        self.fail_threshold = max(1, fail_threshold)
        self.probe_after_s = probe_after_s
        self.lock = threading.Lock()

    def _usable(self, now: float) -> list[_Endpoint]:
        return [e for e in self.endpoints if not e.down_until or (now >= e.down_until and e.in_flight == 0)]

    def acquire(self, tried: set) -> _Endpoint:
        with self.lock:
            usable = self._usable(time.monotonic())
            if usable:
                fresh = [e for e in usable if e.url not in tried]
                ep = min(fresh or usable, key=lambda e: (e.in_flight, e.sent))
            else:
                ep = min(self.endpoints, key=lambda e: e.down_until)
            ep.in_flight += 1
            ep.sent += 1
            return ep

    def has_untried(self, tried: set) -> bool:
        with self.lock:
            return any(e.url not in tried for e in self._usable(time.monotonic()))

    def succeeded(self, ep: _Endpoint, c: Completion) -> None:
        with self.lock:
            ep.in_flight -= 1
            ep.ok += 1
            ep.prompt_tokens += c.prompt_tokens
            ep.completion_tokens += c.completion_tokens
            ep.consecutive = 0
            if ep.down_until:
                ep.restored += 1
                ep.down_until, ep.cooldown_s = 0.0, self.probe_after_s

    def answered(self, ep: _Endpoint, kind: str) -> None:
        """The server answered with a final error (a 4xx): alive, but this request failed."""
        with self.lock:
            ep.in_flight -= 1
            ep.errors[kind] = ep.errors.get(kind, 0) + 1
            ep.consecutive = 0

    def failed(self, ep: _Endpoint, kind: str, why: str) -> None:
        with self.lock:
            ep.in_flight -= 1
            ep.failures += 1
            ep.errors[kind] = ep.errors.get(kind, 0) + 1
            ep.consecutive += 1
            ep.last_error = why
            now = time.monotonic()
            if ep.down_until:  # a failed probe: out again, for longer
                ep.cooldown_s = min(ep.cooldown_s * 2, self.probe_after_s * 16)
                ep.down_until = now + ep.cooldown_s
            elif ep.consecutive >= self.fail_threshold:
                ep.taken_out += 1
                ep.down_until = now + ep.cooldown_s

    def all_failing(self) -> bool:
        """Every endpoint is out of rotation or failed its latest attempt."""
        with self.lock:
            return all(e.down_until or e.consecutive for e in self.endpoints)

    def stats(self, wall_s: float) -> list[dict]:
        with self.lock:
            return [{"url": e.url, "requests": e.sent, "completions": e.ok, "failed_attempts": e.failures,
                     "errors": dict(sorted(e.errors.items())), "prompt_tokens": e.prompt_tokens,
                     "completion_tokens": e.completion_tokens,
                     "completions_per_s": round(e.ok / wall_s, 3) if wall_s else 0.0,
                     "tokens_per_s": round(e.completion_tokens / wall_s, 1) if wall_s else 0.0,
                     "taken_out": e.taken_out, "restored": e.restored,
                     "in_rotation": not e.down_until} for e in self.endpoints]


class OpenAIBackend(Backend):
    name = "openai"

    @classmethod
    def check_config(cls, config: BackendConfig) -> None:
        if config.base_url:  # a bad endpoint list is refused before the case files are read
            parse_base_urls(config.base_url)

    def __init__(self, config: BackendConfig):
        super().__init__(config)
        if not config.base_url:
            raise ConfigError("the openai backend needs one (e.g. http://127.0.0.1:8000/v1)", "base_url")
        if not config.model:
            raise ConfigError("the openai backend needs one (the name the server serves)", "model")
        self.urls = parse_base_urls(config.base_url)
        self.base_url = self.urls[0]
        self.retry_base_s = float(config.extra.get("retry_base_s", 1.0))
        self.retry_max_s = float(config.extra.get("retry_max_s", 30.0))
        self.pool = _Pool(self.urls, int(config.extra.get("fail_threshold", 3)),
                          float(config.extra.get("probe_after_s", 10.0)))
        self._served: dict = {}
        self._wall_s = 0.0
        self._logprobs_refused: str | None = None  # why the server would not take ``logprobs``
        self._logprobs_said = False  # the line that the server gives none is printed once, at the first answer
        self._check_models()
        if config.top_k is not None:
            self._check_top_k()

    # ------------------------------------------------------------------ http

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _call(self, url: str, method: str, path: str, body: dict | None = None) -> dict:
        """One HTTP exchange; raises HTTPError/URLError/timeouts for the caller to sort out."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url + path, data=data, method=method, headers=self._headers())
        with urllib.request.urlopen(req, timeout=self.config.request_timeout_s) as resp:
            raw = resp.read()
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _BadBody(f"answer is not JSON ({len(raw)} bytes: {raw[:60]!r})") from None

    def _served_entry(self, url: str) -> dict | None:
        """What ``url``'s ``/models`` says of our model ({} without ``/models``); raises
        ``ConnectionError`` when unreachable, ``ValueError`` when the model is not served."""
        try:
            listing = self._call(url, "GET", "/models")
        except urllib.error.HTTPError as e:
            if e.code in (404, 405):
                return {}  # no /models on this server: the first chat request will tell
            raise ConnectionError(f"HTTP {e.code}: {_error_text(e)}") from None
        except _TRANSIENT as e:
            raise ConnectionError(str(getattr(e, "reason", e))) from None
        entries = [m for m in (listing.get("data") or []) if isinstance(m, dict)] if isinstance(listing, dict) else []
        served = [m.get("id") for m in entries]
        if served and self.config.model not in served:
            raise ValueError(f"model {self.config.model!r} is not served at {url}; it serves: {', '.join(map(str, served))}")
        for m in entries:
            if m.get("id") == self.config.model:
                return {k: m.get(k) for k in ("id", "root", "max_model_len") if m.get(k) is not None}
        return {}

    def _check_models(self) -> None:
        """Every endpoint must serve the same model; unreachable ones start out of rotation (and
        are probed later) unless none is reachable."""
        unreachable, served = {}, {}
        for url in self.urls:
            try:
                served[url] = self._served_entry(url)
            except ConnectionError as e:
                unreachable[url] = str(e)
        if not served:
            if len(self.urls) == 1:
                raise ConnectionError(f"cannot reach the OpenAI-compatible endpoint {self.urls[0]}: "
                                      f"{unreachable[self.urls[0]]}")
            raise ConnectionError(f"cannot reach any of the {len(self.urls)} OpenAI-compatible endpoints: "
                                  + "; ".join(f"{u} ({why})" for u, why in unreachable.items()))
        kinds = {json.dumps(s, sort_keys=True) for s in served.values() if s}
        if len(kinds) > 1:
            raise ValueError(f"the endpoints serve different models under {self.config.model!r}: "
                             + "; ".join(f"{u}: {s}" for u, s in served.items()))
        self._served = next((s for s in served.values() if s), {})
        now = time.monotonic()
        for ep in self.pool.endpoints:
            if ep.url in unreachable:
                ep.down_until, ep.last_error = now + ep.cooldown_s, unreachable[ep.url]
                ep.taken_out += 1
                print(f"warning: {ep.url} is unreachable ({unreachable[ep.url]}); starting without it, "
                      f"probing it again in {ep.cooldown_s:g}s", file=sys.stderr)

    def _check_top_k(self) -> None:
        """``top_k`` is not an OpenAI field: servers that follow the spec strictly (``transformers
        serve``) answer 422 at the first request. Ask once, for one token, before the run, so such a
        server is refused in one line instead of failing the run's first wave."""
        body = {"model": self.config.model, "messages": [{"role": "user", "content": "ok"}], "max_tokens": 1,
                "temperature": self.config.temperature, "top_k": self.config.top_k}
        # not through the pool: a probe is no request of the run (acquire would count it in flight)
        url = next((e.url for e in self.pool.endpoints if not e.down_until), self.urls[0])
        try:
            self._call(url, "POST", "/chat/completions", body)
        except urllib.error.HTTPError as e:
            text = _error_text(e)
            if e.code in (400, 422) and "top_k" in text:
                raise ConfigError(f"the server at {url} refuses this field (HTTP {e.code}: {text[:120]}); "
                                  "run without --top-k (the model's generation config applies)", "top_k") from None
        except (_BadBody, *_TRANSIENT):
            pass  # not about top_k: the run's own requests will meet it and say so

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), self.retry_max_s)
            except ValueError:
                pass
        return min(self.retry_base_s * (2 ** attempt), self.retry_max_s) * random.uniform(0.5, 1.0)

    def identity(self) -> dict:
        return dict(self._served)

    def stats(self) -> dict:
        return {"endpoints": self.pool.stats(self._wall_s), "generate_s": round(self._wall_s, 3)}

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
        if self._logprobs_refused is None:
            body["logprobs"] = True  # the chosen tokens' log-probabilities (the confidence signal)
        return body

    def _refuses_logprobs(self, code: int, text: str, body: dict) -> bool:
        """Did the server refuse the ``logprobs`` field? Then it is left out from now on."""
        if code not in (400, 422) or "logprobs" not in body or "logprob" not in text.lower():
            return False
        self._logprobs_refused = f"the server refused the logprobs field (HTTP {code}: {text[:120]})"
        body.pop("logprobs")
        return True

    def _give_up(self, url: str, attempts: int, why: str) -> EndpointError:
        if len(self.urls) == 1:
            return EndpointError(f"{url}: gave up after {attempts} attempts ({why})")
        eps = self.pool.endpoints
        head = f"all {len(eps)} endpoints are failing" if self.pool.all_failing() else f"{len(eps)} endpoints"
        return EndpointError(f"{head} (" + "; ".join(
            f"{e.url}: {e.last_error or 'no error'}{' [out of rotation]' if e.down_until else ''}" for e in eps)
            + f"); gave up after {attempts} attempts")

    def _one(self, request: GenerationRequest) -> Completion:
        """One request; a failure moves it at once to an endpoint it has not tried yet, and only
        when none is left does it back off (``max_retries`` such waits at most)."""
        body = self._body(request)
        t0 = time.perf_counter()
        tried: set[str] = set()
        attempts = waits = 0
        while True:
            ep = self.pool.acquire(tried)
            tried.add(ep.url)
            attempts += 1
            retry_after = None
            try:
                answer = _completion(self._call(ep.url, "POST", "/chat/completions", body), 0.0)
            except urllib.error.HTTPError as e:
                if e.code not in _RETRY_STATUS:
                    text = _error_text(e)
                    if self._refuses_logprobs(e.code, text, body):
                        tried.discard(ep.url)
                        continue  # the same request without logprobs: not a failure of the endpoint
                    self.pool.answered(ep, f"HTTP {e.code}")
                    if e.code == 404:
                        raise EndpointError(f"{ep.url}/chat/completions answered 404 (wrong model name "
                                            f"{self.config.model!r} or wrong --base-url?): {text}") from None
                    raise EndpointError(f"{ep.url}/chat/completions answered HTTP {e.code}: {text}") from None
                kind, why, retry_after = f"HTTP {e.code}", f"HTTP {e.code}", e.headers.get("Retry-After")
            except _TRANSIENT as e:
                reason = getattr(e, "reason", e)
                kind = type(reason).__name__ if isinstance(reason, BaseException) else type(e).__name__
                why = f"{type(e).__name__}: {reason}"
            else:
                self.pool.succeeded(ep, answer)
                break
            self.pool.failed(ep, kind, why)
            if self.pool.has_untried(tried):
                continue  # another endpoint, at once: this one's trouble says nothing about it
            if waits >= self.config.max_retries:
                raise self._give_up(ep.url, attempts, why)
            time.sleep(self._backoff(waits, retry_after))
            waits += 1
        answer.latency_ms = (time.perf_counter() - t0) * 1000.0
        if answer.logprobs is None:
            answer.logprobs = unavailable(self._logprobs_refused or "the server answered without logprobs", "openai")
            if not self._logprobs_said:
                self._logprobs_said = True
                print(f"warning: {ep.url} gives no log-probabilities ({answer.logprobs['unavailable']}): every "
                      "record's logprobs say unavailable, and no controller reads a confidence", file=sys.stderr)
        return answer

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        """All requests run to the end even when some fail; failures raise ``PartialGeneration``
        carrying the finished completions. ``config.concurrency`` requests per endpoint are in
        flight at once."""
        if not requests:
            return []
        t0 = time.perf_counter()
        workers = max(1, min(self.config.concurrency * len(self.urls), len(requests)))
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(self._one, r) for r in requests]
                for f in futures:  # progress hears each request as it ends (failed ones too)
                    f.add_done_callback(lambda _f: self.report_done(1))
        finally:
            self._wall_s += time.perf_counter() - t0
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
                      latency_ms, finish, logprobs=_choice_logprobs(choice))


def _choice_logprobs(choice: dict) -> dict | None:
    """The statistics of a choice's ``logprobs.content`` (None when the server sent none)."""
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if not isinstance(content, list) or not content:
        return None
    vals = [t.get("logprob") for t in content if isinstance(t, dict)]
    if not vals or any(not isinstance(v, (int, float)) for v in vals):
        return None
    return logprob_stats(vals, "openai")


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
