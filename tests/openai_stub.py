"""A deterministic OpenAI-compatible server for end-to-end tests, run as its own process so a test
can SIGKILL it mid-run and start it again on the same port.

    python tests/openai_stub.py [--port 0] [--delay 0.02] [--model stub]

prints ``PORT <n>`` once it listens. Every answer depends only on the request's messages, seed and
sampling settings (a sha256 of them picks one of a few programs or tables), so any number of
replicas answer alike and a run's traces do not depend on which replica served what. Direct
prompts get a JSON table, program prompts one of several ``transform`` functions (some right for
simple cases, some wrong, one crashing), so runs have repair rounds. ``GET /v1/stats`` gives the
number of chat completions served by this process.
"""
import argparse
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROGRAMS = [
    "def transform(table):\n    return [list(row) for row in table]",
    "def transform(table):\n    return [row[::-1] for row in table]",
    "def transform(table):\n    return [[c.strip() for c in row] for row in table[1:]]",
    "def transform(table):\n    return [[' '.join(row)] for row in table]",
    "def transform(table):\n    return table[0][99]",
    "def transform(table):\n    return [[c.upper() for c in row] for row in table]",
]


def answer(body: dict) -> tuple[str, int, int]:
    """(content, prompt_tokens, completion_tokens) for a chat request: a pure function of it."""
    key = json.dumps([body.get("messages"), body.get("seed"), body.get("temperature"), body.get("max_tokens")],
                     sort_keys=True)
    h = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    user = body["messages"][-1]["content"]
    if "```json" in user:  # the direct prompt asks for a json block, program prompts for python
        content = "```json\n" + json.dumps([[f"v{h % 7}", f"w{(h >> 8) % 5}"]]) + "\n```"
    else:
        content = "```python\n" + PROGRAMS[h % len(PROGRAMS)] + "\n```"
    prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
    return content, prompt_tokens, len(content.split())


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds per chat completion")
    ap.add_argument("--model", default="stub")
    args = ap.parse_args()
    served = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                return self._send(200, {"object": "list", "data": [{"id": args.model, "root": "/models/stub"}]})
            if self.path == "/v1/stats":
                return self._send(200, {"served": served[0]})
            self._send(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body.get("model") != args.model:
                return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
            time.sleep(args.delay)
            content, pt, ct = answer(body)
            with lock:
                served[0] += 1
            self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": pt, "completion_tokens": ct}})

    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    print(f"PORT {httpd.server_address[1]}", flush=True)
    httpd.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    sys.exit(main())
