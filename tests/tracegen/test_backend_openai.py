"""The openai backend against a real HTTP server on 127.0.0.1 started by the test."""
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

import pytest
from local_http import LocalServer

from tracegen.backends.base import BackendConfig, GenerationRequest, Task
from tracegen.backends.openai_backend import EndpointError, OpenAIBackend

TASK = Task.from_tables("c", [["a"]], [["b"]], [["c"]])


class FakeServer(LocalServer):
    """An OpenAI-compatible server: scripted failures, in-flight counting, a model list."""

    def __init__(self, models=("tiny",), has_models=True):
        self.models, self.has_models = list(models), has_models
        self.refuse_top_k = False  # answer 422 naming the field, as transformers serve does
        self.failures = []  # statuses (or "sleep") to answer before succeeding, in order
        self.bodies, self.headers = [], []
        self.in_flight = self.max_in_flight = 0
        self.delay_s = 0.0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj, headers=()):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models" and server.has_models:
                    self._send(200, {"object": "list", "data": [{"id": m} for m in server.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.bodies.append(body)
                    server.headers.append(dict(self.headers))
                    fail = server.failures.pop(0) if server.failures else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                counted = [True]

                def leave():  # the request stops counting before its answer is sent: a client that
                    with server.lock:  # reads the answer may send the next one at once
                        if counted[0]:
                            server.in_flight -= 1
                            counted[0] = False

                try:
                    if server.refuse_top_k and "top_k" in body:
                        return self._send(422, {"detail": [{"loc": ["body", "top_k"], "msg": "Extra inputs are not "
                                                                                            "permitted"}]})
                    if fail == "sleep":
                        time.sleep(0.6)
                        return self._send(200, {"choices": []})
                    if fail:
                        return self._send(fail, {"error": {"message": f"scripted {fail}"}}, [("Retry-After", "0")] if fail == 429 else ())
                    if body["model"] not in server.models:
                        return self._send(404, {"error": {"message": f"The model `{body['model']}` does not exist."}})
                    time.sleep(server.delay_s)
                    user = body["messages"][-1]["content"]
                    finish = "length" if "long" in user else "stop"
                    message = {"role": "assistant", "content": f"echo:{user}"}
                    if "think" in user:
                        message["reasoning_content"] = "pondering"
                    leave()
                    self._send(200, {"choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                     "usage": {"prompt_tokens": len(user), "completion_tokens": 7}})
                finally:
                    leave()

        self.start(Handler)


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def _cfg(url, **kw):
    base = dict(name="openai", model="tiny", base_url=url, max_retries=3, request_timeout_s=5.0,
                extra={"retry_base_s": 0.01})
    base.update(kw)
    return BackendConfig(**base)


def _req(text, sample=0):
    return GenerationRequest("direct", [{"role": "user", "content": text}], TASK, sample=sample)


def test_generates_in_order_with_counts(server):
    b = OpenAIBackend(_cfg(server.url, temperature=0.7, seed=5, max_new_tokens=33))
    out = b.generate([_req(f"q{i}") for i in range(6)] + [_req("long one", sample=2)])
    assert [c.text for c in out[:6]] == [f"echo:q{i}" for i in range(6)]
    assert out[0].prompt_tokens == 2 and out[0].completion_tokens == 7 and out[0].latency_ms > 0
    assert out[-1].finish_reason == "length" and out[0].finish_reason == "stop"
    body = next(b for b in server.bodies if b["messages"][-1]["content"] == "long one")
    assert body["max_tokens"] == 33 and body["temperature"] == 0.7 and body["seed"] == 7
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_reasoning_content_becomes_think_block(server):
    out = OpenAIBackend(_cfg(server.url)).generate([_req("think hard")])
    assert out[0].text.startswith("<think>\npondering\n</think>") and out[0].text.endswith("echo:think hard")


def test_many_requests_in_flight(server):
    server.delay_s = 0.15
    b = OpenAIBackend(_cfg(server.url, concurrency=8))
    out = b.generate([_req(str(i)) for i in range(16)])
    # the server saw several requests at once (counted there, not timed: this machine is noisy)
    assert server.max_in_flight >= 4 and [c.text for c in out] == [f"echo:{i}" for i in range(16)]


def test_retries_429_500_and_timeouts_then_succeeds(server):
    server.failures = [429, 500, "sleep", 503]
    b = OpenAIBackend(_cfg(server.url, request_timeout_s=0.3, max_retries=5, concurrency=1))
    out = b.generate([_req("x")])
    assert out[0].text == "echo:x" and len(server.bodies) == 5


def test_gives_up_after_max_retries(server):
    server.failures = [500] * 10
    b = OpenAIBackend(_cfg(server.url, max_retries=2))
    with pytest.raises(EndpointError, match="gave up after 3 attempts"):
        b.generate([_req("x")])
    assert len(server.bodies) == 3


def test_client_error_is_not_retried(server):
    server.failures = [400]
    with pytest.raises(EndpointError, match="HTTP 400.*scripted 400"):
        OpenAIBackend(_cfg(server.url)).generate([_req("x")])
    assert len(server.bodies) == 1


def test_wrong_model_is_named(server):
    with pytest.raises(ValueError, match="'nope' is not served.*it serves: tiny"):
        OpenAIBackend(_cfg(server.url, model="nope"))


def test_wrong_model_without_models_endpoint():
    s = FakeServer(has_models=False)
    try:
        b = OpenAIBackend(_cfg(s.url, model="nope"))
        with pytest.raises(EndpointError, match="404.*wrong model name 'nope'.*does not exist"):
            b.generate([_req("x")])
    finally:
        s.close()


def test_unreachable_endpoint_is_clear():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ConnectionError, match=f"cannot reach .*127.0.0.1:{port}"):
        OpenAIBackend(_cfg(f"http://127.0.0.1:{port}/v1"))


def test_api_key_from_environment(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sekrit")
    OpenAIBackend(_cfg(server.url, api_key_env="MY_KEY")).generate([_req("x")])
    assert server.headers[-1]["Authorization"] == "Bearer sekrit"
    monkeypatch.delenv("MY_KEY")
    OpenAIBackend(_cfg(server.url, api_key_env="MY_KEY")).generate([_req("y")])
    assert "Authorization" not in server.headers[-1]


def test_chat_template_kwargs_can_be_turned_off(server):
    OpenAIBackend(_cfg(server.url, extra={"send_chat_template_kwargs": False})).generate([_req("x")])
    assert "chat_template_kwargs" not in server.bodies[-1]


def test_missing_flags():
    with pytest.raises(ValueError, match="base_url"):  # the field (the CLI names it --base-url)
        OpenAIBackend(BackendConfig(name="openai", model="m"))


def test_top_k_only_when_given_and_template_kwargs_flag(server):
    OpenAIBackend(_cfg(server.url)).generate([_req("x")])
    assert "top_k" not in server.bodies[-1]  # the server applies the model's generation config
    OpenAIBackend(_cfg(server.url, top_k=20, chat_template_kwargs=False)).generate([_req("y")])
    assert server.bodies[-1]["top_k"] == 20 and "chat_template_kwargs" not in server.bodies[-1]


def test_reasoning_cut_off_stays_open():
    from tracegen.backends.openai_backend import _completion
    from tracegen.parsing import parse_code

    c = _completion({"choices": [{"message": {"content": "", "reasoning_content": "def transform(t): ..."},
                                  "finish_reason": "length"}]}, 1.0)
    assert c.text == "<think>\ndef transform(t): ..." and parse_code(c.text).status == "truncated_thinking"


# ---- several endpoints ------------------------------------------------------------------------

@pytest.fixture
def three():
    servers = [FakeServer() for _ in range(3)]
    yield servers
    for s in servers:
        s.close()


def _multi(servers, **kw):
    extra = {"retry_base_s": 0.01, "retry_max_s": 0.05, "probe_after_s": 0.3, **kw.pop("extra", {})}
    return OpenAIBackend(_cfg(",".join(s.url for s in servers), extra=extra, **kw))


def test_requests_spread_by_outstanding_load(three):
    for s in three:
        s.delay_s = 0.05
    b = _multi(three, concurrency=2)
    out = b.generate([_req(f"q{i}") for i in range(30)])
    assert [c.text for c in out] == [f"echo:q{i}" for i in range(30)]
    # 6 workers over 3 endpoints, each to the least loaded: never more than 2 on one server
    assert all(s.max_in_flight <= 2 for s in three) and all(len(s.bodies) >= 5 for s in three)
    stats = {e["url"]: e for e in b.stats()["endpoints"]}
    assert [stats[s.url]["completions"] for s in three] == [len(s.bodies) for s in three]
    assert all(e["failed_attempts"] == 0 and e["in_rotation"] for e in stats.values())


def test_failing_endpoint_is_retried_elsewhere_taken_out_and_probed_back(three):
    bad = three[1]
    bad.failures = [503] * 5
    # a cooldown the first 12 requests cannot outlast on a busy machine (0.3 s was: a probe
    # then came before they ended and counted a fourth failed attempt)
    cool = 1.0
    b = _multi(three, concurrency=1, extra={"probe_after_s": cool})
    out = b.generate([_req(f"a{i}") for i in range(12)])
    assert [c.text for c in out] == [f"echo:a{i}" for i in range(12)]  # none lost
    e = {x["url"]: x for x in b.stats()["endpoints"]}[bad.url]
    assert e["errors"] == {"HTTP 503": e["failed_attempts"]} and e["taken_out"] == 1 and not e["in_rotation"]
    assert e["failed_attempts"] == 3  # taken out after three in a row, then left alone
    n_bad = len(bad.bodies)
    b.generate([_req("b0")])
    assert len(bad.bodies) == n_bad  # still out of rotation: not asked
    time.sleep(cool + 0.05)  # the cooldown passes: one request probes it; two more 503s, then it answers
    for i in range(6):
        b.generate([_req(f"c{i}")])
        time.sleep(0.02)
    e = {x["url"]: x for x in b.stats()["endpoints"]}[bad.url]
    assert len(bad.bodies) > n_bad  # probed
    bad.failures = []
    time.sleep(6.5 * cool)  # failed probes double the wait (2 and 4 cooldowns)
    b.generate([_req("d0"), _req("d1"), _req("d2")])
    e = {x["url"]: x for x in b.stats()["endpoints"]}[bad.url]
    assert e["restored"] == 1 and e["in_rotation"] and e["completions"] >= 1


def test_an_endpoint_down_at_start_is_left_out_then_probed(three, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    b = OpenAIBackend(_cfg(f"{three[0].url},{dead}", extra={"retry_base_s": 0.01, "probe_after_s": 0.1}))
    warning = capsys.readouterr().err
    assert "unreachable" in warning and dead in warning
    assert [c.text for c in b.generate([_req(str(i)) for i in range(4)])] == [f"echo:{i}" for i in range(4)]
    time.sleep(0.15)
    assert [c.text for c in b.generate([_req("later")])] == ["echo:later"]  # the probe fails over at once
    e = {x["url"]: x for x in b.stats()["endpoints"]}[dead]
    assert e["completions"] == 0 and e["errors"] and not e["in_rotation"]


def test_all_endpoints_unreachable_at_start_names_each():
    urls = []
    socks = [socket.socket() for _ in range(2)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
        urls.append(f"http://127.0.0.1:{s.getsockname()[1]}/v1")
    for s in socks:
        s.close()
    with pytest.raises(ConnectionError, match="cannot reach any of the 2") as err:
        OpenAIBackend(_cfg(",".join(urls)))
    assert all(u in str(err.value) for u in urls)


def test_endpoints_serving_different_models_are_refused(three):
    three[2].models = ["other"]
    with pytest.raises(ValueError, match=f"not served at {three[2].url}"):
        _multi(three)


def test_all_endpoints_failing_names_each(three):
    for s in three:
        s.failures = [500] * 50
    b = _multi(three, max_retries=1)
    with pytest.raises(EndpointError, match="all 3 endpoints are failing") as err:
        b.generate([_req("x")])
    assert all(s.url in str(err.value) for s in three)


def test_base_url_lists_and_files(tmp_path):
    from tracegen.backends.openai_backend import parse_base_urls

    assert parse_base_urls(" http://a:1/v1/ , http://b:2/v1") == ["http://a:1/v1", "http://b:2/v1"]
    f = tmp_path / "eps.txt"
    f.write_text("# replicas\nhttp://a:1/v1\n\nhttp://b:2/v1  # node 2\n")
    assert parse_base_urls(f"@{f}") == ["http://a:1/v1", "http://b:2/v1"]
    for bad, msg in ((f"@{tmp_path / 'none.txt'}", "cannot read the endpoint file"), ("http://a:1/v1,a:2", "not an http"),
                     ("http://a:1/v1,http://a:1/v1/", "listed twice"), (" , ", "names no endpoint")):
        with pytest.raises(ValueError, match=msg):
            parse_base_urls(bad)
    f.write_text("# nothing\n")
    with pytest.raises(ValueError, match=rf"base_url @{f}: names no endpoint"):
        parse_base_urls(f"@{f}")


def test_bad_base_url_is_one_line_exit_2(tmp_path, capsys):
    from controller import cli

    code = cli.main(["--root", str(tmp_path), "--generate-traces", "--backend", "openai", "--model", "m",
                     "--base-url", f"@{tmp_path / 'missing.txt'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: --base-url @") and "\n" not in err
    assert not (tmp_path / "reports").exists()  # nothing written


def test_each_finished_request_is_reported_while_the_batch_runs(server):
    """Progress: ``on_request_done`` hears every request as it ends, before the batch returns;
    one request in flight, so at the k-th report the server has seen exactly k requests."""
    b = OpenAIBackend(_cfg(server.url, concurrency=1))
    heard = []
    b.on_request_done = lambda n: heard.append((n, len(server.bodies)))
    out = b.generate([_req(f"q{i}") for i in range(3)])
    assert heard == [(1, 1), (1, 2), (1, 3)] and len(out) == 3


def test_a_server_that_refuses_top_k_is_refused_before_the_run_in_one_line(server):
    server.refuse_top_k = True
    with pytest.raises(ValueError, match=r"top_k.*refuses this field \(HTTP 422.*run without --top-k"):
        OpenAIBackend(_cfg(server.url, top_k=20))
    assert len(server.bodies) == 1 and server.bodies[0]["max_tokens"] == 1  # one probe, one token
    server.refuse_top_k = False
    ok = OpenAIBackend(_cfg(server.url, top_k=20))  # a server that takes it: the probe leaves no load behind
    assert [e.in_flight for e in ok.pool.endpoints] == [0] and [e.sent for e in ok.pool.endpoints] == [0]
    OpenAIBackend(_cfg(server.url)).generate([_req("x")])  # without --top-k nothing is asked
    assert len(server.bodies) == 3  # the refused probe, the accepted probe, the request
