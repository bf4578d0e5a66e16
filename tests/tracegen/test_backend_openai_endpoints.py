"""Many OpenAI-compatible endpoints, end to end: three deterministic stub servers on 127.0.0.1,
each its own process (tests/openai_stub.py), and the real CLI in a subprocess.

* one endpoint is SIGKILLed mid-run and started again on its port: the traces equal a one-server
  run, every case has exactly one record, and the restarted endpoint is probed back into use;
* the whole run is SIGKILLed at random moments and resumed: the same file as the one-server run;
* every endpoint dies: non-zero exit, one line naming each endpoint, finished records kept.
"""
import json
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


from e2e_helpers import CLI, run_records, small_case_dir

HERE = Path(__file__).resolve().parent
SCRIPT = CLI


class Stub:
    """One stub server process; ``kill`` is SIGKILL, ``start`` reuses the port."""

    def __init__(self, delay=0.01):
        self.delay, self.port, self.proc = delay, 0, None

    def start(self):
        for _ in range(50):  # the port of a killed server may take a moment to free
            self.proc = subprocess.Popen([sys.executable, str(HERE.parent / "openai_stub.py"), "--port", str(self.port),
                                          "--delay", str(self.delay)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
            line = self.proc.stdout.readline()
            if line.startswith("PORT "):
                self.port = int(line.split()[1])
                return self
            self.proc.wait()
            time.sleep(0.1)
        raise RuntimeError(f"stub did not start: {self.proc.stderr.read()}")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def served(self) -> int:
        with urllib.request.urlopen(self.url + "/stats", timeout=5) as r:
            return json.loads(r.read())["served"]

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


@pytest.fixture(scope="module")
def stubs():
    servers = [Stub(delay=0.05).start() for _ in range(3)]  # generation long enough to kill inside
    yield servers
    for s in servers:
        s.kill()


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return small_case_dir(tmp_path_factory.mktemp("cases"), families=8, per_family=2)


def _args(root, cases, urls, *extra):
    return [sys.executable, str(SCRIPT), "--root", str(root), "--cases", str(cases), "--generate-traces",
            "--backend", "openai", "--model", "stub", "--base-url", ",".join(urls), "--max-repairs", "1",
            "--wave-size", "2", "--no-progress", "--lora-frontier", "none", "--cache-dir", "none",
            "--concurrency", "2", "--endpoint-cooldown", "0.2", *extra]






def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.fixture(scope="module")
def reference(stubs, cases, tmp_path_factory):
    """The run on one endpoint."""
    root = tmp_path_factory.mktemp("one_server")
    subprocess.run(_args(root, cases, [stubs[0].url]), check=True, capture_output=True, timeout=600)
    recs = run_records(root)
    assert len(recs) == 16 and any(r["rounds"] and len(r["rounds"]) > 1 for r in recs)  # repairs happened
    return recs


@pytest.mark.slow
def test_one_endpoint_killed_and_restarted_mid_run(stubs, cases, reference, tmp_path):
    root = tmp_path / "three"
    trace = root / "reports" / "fresh_traces.jsonl"
    victim = stubs[1]
    proc = subprocess.Popen(_args(root, cases, [s.url for s in stubs]), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while _lines(trace) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before the endpoint could be killed"
    victim.kill()  # mid-run: its in-flight requests die with it
    victim.start()  # same port: the backend must probe it back
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    got = run_records(root)
    assert [r["case_id"] for r in got] == [r["case_id"] for r in reference]  # one record per case, same order
    assert len({r["case_id"] for r in got}) == len(got)
    assert got == reference
    timing = json.loads((root / "reports" / "final_summary.json").read_text())["timing"]["generation"]
    eps = {e["url"]: e for e in timing["endpoints"]}
    assert set(eps) == {s.url for s in stubs}
    assert all(e["completions"] > 0 and e["completions_per_s"] > 0 for e in eps.values())
    total = sum(r["rounds"].__len__() + 1 for r in got)  # one completion per direct answer and round
    assert sum(e["completions"] for e in eps.values()) == total  # nothing generated twice in the records' name
    assert victim.served() > 0, "the restarted endpoint was never probed back into rotation"
    # taken out only after 3 failures in a row: on a busy machine the restart can come first,
    # and then there is nothing to restore
    assert eps[victim.url]["restored"] >= 1 or eps[victim.url]["taken_out"] == 0


@pytest.mark.slow
def test_whole_run_sigkilled_and_resumed_gives_the_one_server_file(stubs, cases, reference, tmp_path):
    root = tmp_path / "killed"
    trace = root / "reports" / "fresh_traces.jsonl"
    rng, kills = random.Random(11), 0
    args = _args(root, cases, [s.url for s in stubs], "--resume")
    for _ in range(4):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        want = _lines(trace) + rng.randint(1, 4)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline and _lines(trace) < want:
            time.sleep(0.005)
        if proc.poll() is None:
            time.sleep(rng.random() * 0.05)
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    final = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-2000:]
    assert kills >= 2
    got = run_records(root)
    assert [r["case_id"] for r in got] == [r["case_id"] for r in reference]
    assert got == reference


@pytest.mark.slow
def test_all_endpoints_down_is_a_clear_error_and_keeps_finishedrun_records(cases, reference, tmp_path):
    own = [Stub(delay=0.02).start() for _ in range(3)]
    try:
        root = tmp_path / "down"
        trace = root / "reports" / "fresh_traces.jsonl"
        proc = subprocess.Popen(_args(root, cases, [s.url for s in own], "--max-retries", "1"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while _lines(trace) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        for s in own:
            s.kill()
        out, err = proc.communicate(timeout=300)
    finally:
        for s in own:
            s.kill()
    assert proc.returncode == 2, err[-2000:]
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: --backend openai:") and "rerun with --resume" in line
    assert "all 3 endpoints are failing" in line and all(s.url in line for s in own)
    kept = run_records(root)
    assert 2 <= len(kept) < 16 and len({r["case_id"] for r in kept}) == len(kept)
    assert kept == reference[:len(kept)]  # finished records are whole and right
    assert not (root / "reports" / "final_summary.json").exists()


@pytest.mark.slow
def test_a_server_without_logprobs_is_named_at_the_start_in_the_summary_and_the_report(stubs, cases, tmp_path):
    """The stub, like transformers serve, answers without log-probabilities: one line says so at
    the first answer, and the summary, report.md and the run's last lines say it again."""
    root = tmp_path / "nolp"
    r = subprocess.run(_args(root, cases, [stubs[0].url]), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    said = [l for l in r.stderr.splitlines() if "gives no log-probabilities" in l]
    assert len(said) == 1 and stubs[0].url in said[0], r.stderr[-2000:]
    summary = json.loads((root / "reports" / "final_summary.json").read_text())
    missing = summary["logprobs_unavailable"]
    assert missing["generations"] == missing["of"] > 16 and missing["reasons"] == ["the server answered without logprobs"]
    line = f"log-probabilities unavailable in {missing['generations']} of {missing['of']} generations"
    assert line in (root / "reports" / "report.md").read_text()
    assert line in r.stderr.strip().splitlines()[-1]
