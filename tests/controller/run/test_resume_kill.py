"""A run killed with SIGKILL at random moments and resumed, several times over, ends with the same
trace file as an uninterrupted run: same records, none twice, none missing. Ctrl-C (SIGINT) or
SIGTERM in the middle of a wave writes the wave's finished cases first, so a resumed run traces
only the others and still ends with the uninterrupted run's file."""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracegen.records import read_traces

from e2e_helpers import CLI, run_records, small_case_dir

SCRIPT = CLI


def _args(root, cases):
    return [sys.executable, str(SCRIPT), "--root", str(root), "--cases", str(cases), "--generate-traces",
            "--resume", "--max-repairs", "1", "--wave-size", "2", "--no-progress", "--synth-fix-nodes", "3000"]






@pytest.mark.slow
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


# ---- Ctrl-C in the middle of a wave ------------------------------------------------------------

WRONG_PROGRAM = "```python\ndef transform(table):\n    return table\n```"
RIGHT_PROGRAM = "```python\ndef transform(table):\n    return [[row[0]] for row in table]\n```"


def _wave_cases():
    from cases import Case

    return [Case.from_tables(f"f{i}/f{i}_{i}", f"f{i}", [["a", "1"], ["b", "2"]], [["a"], ["b"]], [["c", "3"]], [["c"]])
            for i in range(6)]


def _answer(stop_at_fix=None):
    """Cases 0, 2 and 3 are right at once (done after WRITE); 1, 4 and 5 need a repair. With
    ``stop_at_fix`` = k, the k-th repair request raises KeyboardInterrupt, as Ctrl-C would."""
    fixes = []

    def answer(r):
        if r.kind == "direct":
            return '```json\n[["x"]]\n```'
        if r.kind == "fix":
            fixes.append(r.task.case_id)
            if stop_at_fix is not None and len(fixes) == stop_at_fix:
                raise KeyboardInterrupt
            return RIGHT_PROGRAM
        return RIGHT_PROGRAM if r.task.case_id[1] in "023" else WRONG_PROGRAM

    return answer


def _rollout(backend, path, done=frozenset()):
    from sandbox import Sandbox
    from tracegen.rollout import RolloutConfig, rollout

    cases = _wave_cases()
    with Sandbox(workers=1) as sb:
        return rollout(cases, {c.case_id: "train" for c in cases}, backend, sb, path,
                       RolloutConfig(max_repairs=2, wave_size=8, progress=False), done_ids=done)


def test_ctrl_c_mid_wave_writes_its_finished_cases_and_resume_traces_only_the_rest(tmp_path, capsys):
    import pytest

    from e2e_helpers import untimed
    from scripted import ScriptedBackend

    ref = tmp_path / "ref.jsonl"
    _rollout(ScriptedBackend(_answer()), ref)
    expected = [untimed(r) for r in read_traces(ref)]
    assert [r["case_id"] for r in expected] == [c.case_id for c in _wave_cases()]

    trace = tmp_path / "fresh_traces.jsonl"
    with pytest.raises(KeyboardInterrupt):  # in the repair wave: cases 0, 2 and 3 are finished
        _rollout(ScriptedBackend(_answer(stop_at_fix=2)), trace)
    kept = read_traces(trace)
    assert [r["case_id"] for r in kept] == ["f0/f0_0", "f2/f2_2", "f3/f3_3"]  # in case order
    assert [untimed(r) for r in kept] == [expected[0], expected[2], expected[3]]
    assert "tracing stopped: wrote the 3 finished of the 6 cases in the unfinished wave" in capsys.readouterr().err

    resumed = ScriptedBackend(_answer())
    counts = _rollout(resumed, trace, done=frozenset(r["case_id"] for r in kept))
    assert (counts["traced"], counts["skipped"]) == (3, 3)
    assert {r.task.case_id for batch in resumed.batches for r in batch} == {"f1/f1_1", "f4/f4_4", "f5/f5_5"}
    # the file is back in case order, and the same as the uninterrupted run's
    assert [untimed(r) for r in read_traces(trace)] == expected


def test_a_stop_before_any_case_finished_writes_nothing(tmp_path):
    import pytest

    from scripted import ScriptedBackend

    def answer(r):
        if r.kind == "write":
            raise KeyboardInterrupt
        return '```json\n[["x"]]\n```'

    trace = tmp_path / "fresh_traces.jsonl"
    with pytest.raises(KeyboardInterrupt):
        _rollout(ScriptedBackend(answer), trace)
    assert read_traces(trace) == []


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow  # ~40 s: the in-process stop above covers the logic; this one sends a real SIGINT
def test_sigint_mid_wave_through_the_command_keeps_the_wave_and_resume_ends_as_uninterrupted(tmp_path):
    """The command in a child process, one wave of 60 cases: SIGINT once the progress line shows
    cases finished in the wave (its repair round is seconds long). The finished cases are in the
    file, the resumed run traces only the others, and the file ends as an uninterrupted run's."""
    cases = small_case_dir(tmp_path / "cases", families=20, per_family=3)

    def args(root):
        a = _args(root, cases)
        a[a.index("--synth-fix-nodes") + 1] = "150000"  # repairs of a few hard cases take seconds
        a[a.index("--wave-size") + 1] = "64"
        a[a.index("--max-repairs") + 1] = "2"
        a[a.index("--no-progress")] = "--progress-every=1"
        return a

    ref = tmp_path / "ref"
    subprocess.run(args(ref), check=True, capture_output=True, timeout=600)
    expected = run_records(ref)
    assert len(expected) == 60

    root = tmp_path / "stopped"
    trace = root / "reports" / "fresh_traces.jsonl"
    # SIGINT as a terminal's Ctrl-C finds it: a test run started as a background job inherits it
    # ignored (POSIX shells do that to background commands), Python keeps an ignored SIGINT
    # ignored, and the command would then trace all 60 cases and exit 0
    proc = subprocess.Popen(args(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_sigint_default)
    lines = []
    for line in proc.stderr:  # progress lines: "tracing: 13/60 cases, ..."
        lines.append(line)
        if line.startswith("tracing: ") and not line.startswith(("tracing: 0/", "tracing: 60/")):
            assert not trace.exists() or trace.read_text() == "", "the wave is not over: nothing written yet"
            proc.send_signal(signal.SIGINT)
            break
    err = "".join(lines) + proc.stderr.read()
    assert proc.wait(timeout=300) == 130, err[-2000:]
    assert "tracing stopped: wrote the" in err and "interrupted" in err, err[-2000:]
    kept = run_records(root)
    done = int([l for l in err.splitlines() if l.startswith("tracing: ")][-1].split()[1].split("/")[0])
    # every case the progress counted as finished (one that finished as the signal came may be
    # written without having been counted)
    assert 0 < done <= len(kept) < 60, err[-2000:]
    by_id = {r["case_id"]: r for r in expected}
    assert all(r == by_id[r["case_id"]] for r in kept)
    order = [r["case_id"] for r in expected]
    assert [r["case_id"] for r in kept] == sorted((r["case_id"] for r in kept), key=order.index)

    final = subprocess.run(args(root), capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-2000:]
    rest = 60 - len(kept)
    assert f"tracing: {rest}/{rest} cases" in final.stderr, final.stderr[-2000:]  # only the others traced
    assert run_records(root) == expected  # same records, same order
