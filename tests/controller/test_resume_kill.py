"""A run killed with SIGKILL at random moments and resumed, several times over, ends with the same
trace file as an uninterrupted run: same records, none twice, none missing."""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tracegen.records import read_traces

from e2e_helpers import CLI, run_records, small_case_dir

SCRIPT = CLI


def _args(root, cases):
    return [sys.executable, str(SCRIPT), "--root", str(root), "--cases", str(cases), "--generate-traces",
            "--resume", "--max-repairs", "1", "--wave-size", "2", "--no-progress", "--synth-fix-nodes", "3000"]






def test_kill_and_resume_gives_the_uninterrupted_file(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=8, per_family=2)
    ref = tmp_path / "ref"
    subprocess.run(_args(ref, cases), check=True, capture_output=True, timeout=600)
    expected = run_records(ref)
    assert len(expected) == 16

    root, rng, kills = tmp_path / "killed", random.Random(7), 0
    trace = root / "reports" / "fresh_traces.jsonl"
    for _ in range(6):
        proc = subprocess.Popen(_args(root, cases), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        n0 = len(trace.read_text().splitlines()) if trace.exists() else 0
        deadline = time.monotonic() + 120
        want = n0 + rng.randint(1, 4)
        while proc.poll() is None and time.monotonic() < deadline:
            if trace.exists() and len(trace.read_text().splitlines()) >= want:
                time.sleep(rng.random() * 0.05)
                break
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
    # simulate a crash in the middle of a write: a torn last line
    with open(trace, "ab") as f:
        f.write(b'{"schema_version": 1, "case_id": "torn')
    final = subprocess.run(_args(root, cases), capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-2000:]
    assert "torn last line" in final.stdout + final.stderr
    assert kills >= 2
    got = run_records(root)
    assert [r["case_id"] for r in got] == [r["case_id"] for r in expected]  # none twice, none missing, same order
    assert got == expected


def test_sigterm_stops_cleanly_and_keeps_finishedrun_records(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=20, per_family=3)  # long enough to interrupt
    root = tmp_path / "run"
    trace = root / "reports" / "fresh_traces.jsonl"
    args = _args(root, cases)
    args[args.index("--synth-fix-nodes") + 1] = "40000"
    args[args.index("--wave-size") + 1] = "1"
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, workers = time.monotonic() + 120, set()
    while time.monotonic() < deadline and not (workers and trace.exists() and trace.read_text().count("\n") >= 2):
        workers |= set(_sandbox_workers(proc.pid))
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err and "--resume" in err
    kept = read_traces(trace)
    assert kept and len({r["case_id"] for r in kept}) == len(kept)
    assert workers, "the run should have had sandbox workers while tracing"
    time.sleep(0.5)
    assert not [pid for pid in workers if os.path.exists(f"/proc/{pid}")], "a sandbox worker outlived the run"


def _sandbox_workers(ppid: int) -> list[int]:
    ps = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(ppid)], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in ps.splitlines() if "zygote.py" in line]
