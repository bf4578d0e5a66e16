"""A real OpenAI-compatible server: ``transformers serve`` on 127.0.0.1 with a tiny local model
folder, traced through ``--backend openai`` and compared with ``--backend hf`` on the same folder.

Slow (the server's start and its one-at-a-time decoding); needs the ``[serve]`` extra
(``pip install -e ".[serve]"``), skipped without it.
"""
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.tracegen.test_backend_hf import _noisy_copy, _requests
from tracegen.backends import BackendConfig, get_backend

pytestmark = pytest.mark.slow


def _serve_command() -> list[str]:
    exe = shutil.which("transformers")
    if not exe or importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip('transformers serve is not installed: pip install -e ".[serve]"')
    return [exe, "serve"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from tracegen.tiny_model import build_tiny_model

    cmd = _serve_command()
    root = tmp_path_factory.mktemp("serve")
    folder = _noisy_copy(build_tiny_model(str(root / "llama"), arch="llama"), root / "llama_noisy")
    port = _free_port()
    log = open(root / "serve.log", "w")
    # a session of its own, as docs/models.md starts it: stopping the group stops whatever it started
    proc = subprocess.Popen([*cmd, "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300  # a loaded 2-core machine imports slowly
        while True:
            try:
                urllib.request.urlopen(url + "/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"transformers serve did not come up: {(root / 'serve.log').read_text()[-800:]}")
                time.sleep(0.5)
        yield url, folder
    finally:
        _stop_group(proc)
        log.close()
    assert not _group_alive(proc.pid), "a process of the server's group outlived it"
    with pytest.raises(ConnectionRefusedError):  # nothing is left listening on the port
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def _stop_group(proc) -> None:
    """SIGTERM to the server's whole process group, then SIGKILL to what is left after 20 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 20
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _group_alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.5)


def test_greedy_outputs_equal_the_hf_backend_and_top_k_is_refused_before_the_run(served):
    url, folder = served
    reqs = _requests(5)
    hf = get_backend(BackendConfig(name="hf", model=folder, max_new_tokens=8, batch_size=1)).generate(reqs)
    oa = get_backend(BackendConfig(name="openai", model=folder, base_url=url, max_new_tokens=8, concurrency=1,
                                   cache_dir=None)).generate(reqs)
    assert [c.text for c in oa] == [c.text for c in hf]
    assert len({c.text for c in hf}) > 1  # the outputs depend on the prompt, so equality means something
    with pytest.raises(ValueError, match="top_k.*run without --top-k"):
        get_backend(BackendConfig(name="openai", model=folder, base_url=url, max_new_tokens=8, top_k=5))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-m", "slow", "-n0"]))
