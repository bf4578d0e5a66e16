"""A generation cache on disk, wrapping any backend, so reruns and resumed runs skip paid work.

The key is the sha256 of the JSON of: backend name, model name and identity (``identity()``:
a model folder's config hash and weight sizes, a served model's id and root), ``base_url``,
the chat messages, the sampling parameters (temperature, top_p, top_k, seed, max_new_tokens,
enable_thinking, chat_template_kwargs, load_in_4bit, dtype), the backend's ``extra`` engine
settings (retry and endpoint-health timings excepted: they change no output), vLLM's tensor and
pipeline parallel sizes when not 1 (a sharded model sums in another order, so its floating point
differs) and the sample index. Data-parallel replicas and the executor backend (mp or ray) are
left out: every replica is the same engine and a request's seed is its own. With several
``--base-url`` endpoints the key holds their sorted list (one URL: the URL, as before). An entry that
is unreadable, ``null`` or missing fields is a miss and is regenerated. Each entry is one small JSON file at ``<dir>/<key[:2]>/<key>.json``,
written to a temporary file in the same folder and moved into place with ``os.replace``, so a
killed run never leaves a torn entry and concurrent runs sharing a cache cannot corrupt it.

Hits come back with ``cached=True`` and the token counts and latency of the original
generation (what it cost when it was paid for). All misses of a call go to the wrapped
backend as one batch, so batching is preserved.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, fields
from typing import Iterator

from .base import Backend, Completion, GenerationRequest, PartialGeneration

CACHE_VERSION = 3  # v3: completions carry their logprobs (a v2 entry would trace without them)
_SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "seed", "max_new_tokens", "enable_thinking",
                    "chat_template_kwargs", "load_in_4bit", "dtype")
_TRANSPORT_ONLY = ("retry_base_s", "retry_max_s", "fail_threshold", "probe_after_s")  # change no output
_REQUIRED = {"text": str, "prompt_tokens": int, "completion_tokens": int, "latency_ms": (int, float),
             "finish_reason": str}
_KNOWN = {f.name for f in fields(Completion)}


def _endpoints_key(base_url: str | None):
    """One URL as given; several (comma-separated or ``@file``): their sorted list."""
    if not base_url or ("," not in base_url and not base_url.startswith("@")):
        return base_url
    from .openai_backend import parse_base_urls

    return sorted(parse_base_urls(base_url))


def _valid(data) -> bool:
    return isinstance(data, dict) and all(isinstance(data.get(k), t) and not isinstance(data.get(k), bool)
                                          for k, t in _REQUIRED.items())


class CachedBackend(Backend):
    """``inner`` with a disk cache in ``cache_dir``. ``hits`` and ``misses`` count requests."""

    def __init__(self, inner: Backend, cache_dir: str):
        super().__init__(inner.config)
        self.inner = inner
        self.name = inner.name
        self.cache_dir = cache_dir
        self.hits = 0
        self.misses = 0
        self._identity = inner.identity()
        os.makedirs(cache_dir, exist_ok=True)

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def key(self, request: GenerationRequest) -> str:
        sampling = {f: getattr(self.config, f) for f in _SAMPLING_FIELDS}
        payload = {
            "v": CACHE_VERSION,
            "backend": self.inner.name,
            "model": self.inner.model_name,
            "identity": self._identity,
            "base_url": _endpoints_key(self.config.base_url),
            "extra": {k: v for k, v in self.config.extra.items() if k not in _TRANSPORT_ONLY},
            "messages": request.messages,
            "sampling": sampling,
            "sample": request.sample,
        }
        parallel = {f: getattr(self.config, f, 1) for f in ("tensor_parallel_size", "pipeline_parallel_size")}
        if any(v != 1 for v in parallel.values()):  # absent at 1, so keys made before stay valid
            payload["parallel"] = parallel
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.cache_dir, key[:2], key + ".json")

    def _load(self, key: str) -> Completion | None:
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # unreadable entry: regenerate and overwrite it
        if not _valid(data):
            return None  # null, partial or mistyped entry: regenerate and overwrite it
        data = {k: v for k, v in data.items() if k in _KNOWN}
        data["cached"] = True
        return Completion(**data)

    def _store(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = asdict(completion)
        data["cached"] = False
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @property
    def streams(self) -> bool:
        return bool(getattr(self.inner, "streams", False))

    @property
    def on_request_done(self):  # one hook for both: the inner backend reports its misses as they finish
        return getattr(self.inner, "on_request_done", None)

    @on_request_done.setter
    def on_request_done(self, hook) -> None:
        self.inner.on_request_done = hook

    @property
    def on_decode_step(self):
        return getattr(self.inner, "on_decode_step", None)

    @on_decode_step.setter
    def on_decode_step(self, hook) -> None:
        self.inner.on_decode_step = hook

    def _lookup(self, requests: list[GenerationRequest]) -> tuple[list[str], list, list[int]]:
        """(keys, cached completion or None per request, indices of the misses); counts both."""
        keys = [self.key(r) for r in requests]
        out: list[Completion | None] = [self._load(k) for k in keys]
        missing = [i for i, c in enumerate(out) if c is None]
        self.hits += len(requests) - len(missing)
        self.misses += len(missing)
        return keys, out, missing

    def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        keys, out, missing = self._lookup(requests)
        self.report_done(len(requests) - len(missing))  # the hits are done already
        if missing:
            try:
                fresh = self.inner.generate([requests[i] for i in missing])
            except PartialGeneration as err:
                for i, c in zip(missing, err.completions):
                    if c is not None:
                        self._store(keys[i], c)  # keep what was paid for before failing
                raise
            if len(fresh) != len(missing):
                raise RuntimeError(f"{self.inner.name} backend returned {len(fresh)} completions for {len(missing)} requests")
            for i, c in zip(missing, fresh):
                self._store(keys[i], c)
                out[i] = c
        return out  # type: ignore[return-value]

    def generate_iter(self, requests: list[GenerationRequest]) -> Iterator[tuple[int, Completion]]:
        """The hits first, then the inner backend's answers as they finish, each stored as it comes."""
        if not self.streams:
            yield from enumerate(self.generate(requests))
            return
        keys, out, missing = self._lookup(requests)
        yield from ((i, c) for i, c in enumerate(out) if c is not None)
        if not missing:
            return
        got = 0
        for j, c in self.inner.generate_iter([requests[i] for i in missing]):
            self._store(keys[missing[j]], c)
            got += 1
            yield missing[j], c
        if got != len(missing):
            raise RuntimeError(f"{self.inner.name} backend returned {got} completions for {len(missing)} requests")

    def stats(self) -> dict:
        return {"cache_hits": self.hits, "cache_misses": self.misses, **self.inner.stats()}

    def close(self) -> None:
        self.inner.close()


def maybe_cached(backend: Backend, cache_dir: str | None) -> Backend:
    """``backend`` wrapped in a ``CachedBackend`` when ``cache_dir`` is set, else unchanged."""
    return CachedBackend(backend, cache_dir) if cache_dir else backend
