"""A real HTTP server on 127.0.0.1 (an ephemeral port) for the openai backend's tests."""
import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    """Serve ``handler`` in a background thread; ``url`` is the OpenAI-style base (``.../v1``)."""

    def start(self, handler) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
