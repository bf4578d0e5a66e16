"""The openai backend and the generation cache against a real 127.0.0.1 server that misbehaves on
purpose: bodies that are not JSON or are cut short, a 200 without choices, dropped connections,
answers slower than the timeout, and a request the server rejects with 400. Every misbehaviour is
bounded (once per request unless said otherwise) and the whole file runs in a few seconds."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest
from local_http import LocalServer

from tracegen.backends.base import BackendConfig, GenerationRequest, PartialGeneration, Task
from tracegen.backends.cache import CachedBackend
from tracegen.backends.openai_backend import EndpointError, OpenAIBackend


class HostileServer(LocalServer):
    """Reads the instruction from the user message: ``nonjson``, ``truncated``, ``nochoices``,
    ``drop``, ``slow`` misbehave on the first request carrying that message; ``reject`` answers
    400 while ``self.reject`` is set. ``root`` is what /models says the model was loaded from."""

    def __init__(self, root="/models/a"):
        self.seen: dict[str, int] = {}
        self.reject = True
        self.root = root
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _raw(self, code, data: bytes, length=None):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._raw(200, json.dumps({"data": [{"id": "tiny", "root": server.root, "created": time.time()}]}).encode())

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = body["messages"][-1]["content"]
                with server.lock:
                    n = server.seen[user] = server.seen.get(user, 0) + 1
                good = json.dumps({"choices": [{"message": {"content": f"ok:{user}"}, "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 3, "completion_tokens": 4}}).encode()
                if user == "reject" and server.reject:
                    return self._raw(400, b'{"error": {"message": "prompt too long for max_model_len"}}')
                if n == 1 and user == "nonjson":
                    return self._raw(200, b"<html>502 Bad Gateway</html>")
                if n == 1 and user == "truncated":
                    return self._raw(200, good[: len(good) // 2], length=len(good))  # then the socket closes
                if n == 1 and user == "nochoices":
                    return self._raw(200, b'{"object": "chat.completion"}')
                if n == 1 and user == "drop":
                    self.close_connection = True
                    return self.connection.shutdown(2)  # no status line at all
                if n == 1 and user == "slow":
                    time.sleep(0.8)  # past the 0.4 s timeout
                self._raw(200, good)

        self.start(Handler)


@pytest.fixture
def server():
    s = HostileServer()
    yield s
    s.close()


def _cfg(url, **kw):
    base = dict(name="openai", model="tiny", base_url=url, max_retries=3, request_timeout_s=0.4,
                concurrency=4, extra={"retry_base_s": 0.01, "retry_max_s": 0.05})
    base.update(kw)
    return BackendConfig(**base)


def _req(text, case="fam/c1"):
    return GenerationRequest("write", [{"role": "user", "content": text}], Task.from_tables(case, [["a"]], [["b"]], [["c"]]))


def test_bad_bodies_dropped_connections_and_slow_answers_are_retried(server):
    kinds = ["nonjson", "truncated", "nochoices", "drop", "slow", "fine"]
    out = OpenAIBackend(_cfg(server.url)).generate([_req(k) for k in kinds])
    assert [c.text for c in out] == [f"ok:{k}" for k in kinds]
    assert server.seen == {**dict.fromkeys(kinds[:-1], 2), "fine": 1}


def test_one_rejected_request_keeps_the_batch_and_its_finished_completions(server, tmp_path):
    cached = CachedBackend(OpenAIBackend(_cfg(server.url)), str(tmp_path))
    reqs = [_req(f"q{i}", case=f"fam/c{i}") for i in range(4)] + [_req("reject", case="fam/bad")]
    with pytest.raises(PartialGeneration) as err:
        cached.generate(reqs)
    msg = str(err.value)
    assert "fam/bad" in msg and "write, round 0" in msg and "HTTP 400" in msg and "max_model_len" in msg
    assert isinstance(err.value, EndpointError) and "4 finished" in msg
    assert server.seen["reject"] == 1  # a 400 is not retried
    server.reject = False
    out = cached.generate(reqs)  # the four finished ones come from the cache
    assert [c.cached for c in out] == [True] * 4 + [False]
    assert all(server.seen[f"q{i}"] == 1 for i in range(4)) and server.seen["reject"] == 2


def test_backoff_has_jitter(server):
    b = OpenAIBackend(_cfg(server.url, extra={"retry_base_s": 1.0, "retry_max_s": 100.0}))
    waits = [b._backoff(3, None) for _ in range(40)]
    assert all(4.0 <= w <= 8.0 for w in waits) and len(set(waits)) > 30
    assert b._backoff(3, "2") == 2.0  # the server's Retry-After is honoured as given


def test_cache_key_separates_servers_settings_and_served_models(tmp_path):
    a, other = HostileServer(root="/models/a"), HostileServer(root="/models/b")
    try:
        def key(url, **kw):
            return CachedBackend(OpenAIBackend(_cfg(url, **kw)), str(tmp_path)).key(_req("x"))

        k = key(a.url)
        assert key(a.url) == k
        assert key(a.url, extra={"retry_base_s": 0.5, "retry_max_s": 0.05}) == k  # retry timing changes no output
        assert key(other.url) != k  # another server, serving another folder under the same name
        assert key(a.url, top_k=20) != k
        assert key(a.url, chat_template_kwargs=False) != k
        assert key(a.url, extra={"retry_base_s": 0.01, "max_model_len": 4096}) != k
        a.root = "/models/a-v2"  # the same server restarted with another checkpoint
        assert key(a.url) != k
    finally:
        a.close()
        other.close()


@pytest.mark.parametrize("content", ["null", '{"text": "half"}', '{"text": 3, "prompt_tokens": 1}', "[]"])
def test_null_or_partial_cache_entries_regenerate(server, tmp_path, content):
    cached = CachedBackend(OpenAIBackend(_cfg(server.url)), str(tmp_path))
    req = _req("fine")
    path = tmp_path / cached.key(req)[:2] / (cached.key(req) + ".json")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    out = cached.generate([req])
    assert out[0].text == "ok:fine" and not out[0].cached and cached.misses == 1
    assert json.loads(path.read_text())["text"] == "ok:fine"
