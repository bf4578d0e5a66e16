"""What a run leaves behind and what it prints: each run's reports/ is its own (the previous one
set aside whole, nothing outside reports/ touched), written files keep the umask, progress reads
as plain lines in a log, library warnings are summarised."""
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from controller.console import WarningSummary
from controller.report.outputs import atomic_write_text
from e2e_helpers import CLI, small_case_dir
from tracegen.progress import Progress

REPO = Path(__file__).resolve().parents[3]
SCRIPT = CLI


def cli(root, *args, cwd=None):
    cmd = [sys.executable, str(SCRIPT), *(["--root", str(root)] if root else []), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def inodes(d: Path) -> set[int]:
    """A moved file keeps its inode, a written one gets a new one (the moved ones still exist, so
    theirs are not reused): no shared inode means no file left over from the earlier run."""
    return {p.stat().st_ino for p in d.rglob("*") if p.is_file() and p.name != "README.md"}


# ---- umask ------------------------------------------------------------------------------------

@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_atomic_writes_keep_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        atomic_write_text(tmp_path / "sub" / "out.json", "{}\n")
        plain = tmp_path / "plain.txt"
        plain.write_text("x")  # what an ordinary open() gives under this umask
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "sub" / "out.json").stat().st_mode) == mode == stat.S_IMODE(plain.stat().st_mode)


# ---- one run per reports/ -----------------------------------------------------------------------

@pytest.mark.slow
def test_each_run_writes_a_fresh_reports_folder(tmp_path):
    cases = small_case_dir(tmp_path / "cases", families=4, per_family=1)
    root = tmp_path / "root"
    common = ["--cases", str(cases), "--no-progress", "--max-repairs", "1"]
    cli(root, *common, "--generate-traces", "--export-sft")
    reports = root / "reports"
    first, first_inodes = files(reports), inodes(reports)
    assert "sft/train.jsonl" in first and "fresh_traces.jsonl" in first

    # a fresh run without --export-sft: nothing of the first run stays, all of it is set aside
    cli(root, *common, "--generate-traces")
    second = files(reports)
    assert not (reports / "sft").exists()
    assert set(second) >= {"fresh_traces.jsonl", "final_summary.json", "report.md", "split_manifest.json"}
    assert not inodes(reports) & first_inodes
    [aside] = [p for p in root.iterdir() if p.name.startswith("reports.")]
    assert files(aside) == first and inodes(aside) == first_inodes  # the first run, whole and unchanged

    # a reporting-only run keeps what it reads (traces, run config, split) and replaces the rest
    trace = (reports / "fresh_traces.jsonl").read_bytes()
    cli(root, *common, "--export-sft")
    third = files(reports)
    assert third["fresh_traces.jsonl"] == trace and "sft/train.jsonl" in third
    asides = sorted(p for p in root.iterdir() if p.name.startswith("reports."))
    assert len(asides) == 2  # same second: the second name gets a suffix
    moved = files(asides[1])
    assert moved["fresh_traces.jsonl"] == trace and "report.md" in moved and "sft/train.jsonl" not in moved
    assert json.loads(moved["final_summary.json"]) == json.loads(second["final_summary.json"])


@pytest.mark.slow
def test_a_default_run_leaves_the_repository_clean(tmp_path):
    """A copy of the tracked files as its own repository; the CLI runs there with its default root."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True)
    copy = tmp_path / "repo"
    for rel in filter(None, tracked.stdout.split("\0")):
        if (REPO / rel).is_file():
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, copy / rel)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "copy"]):
        subprocess.run(git + cmd, cwd=copy, check=True, capture_output=True)
    run = [sys.executable, str(copy / "scripts" / "run_live_tool_dagger.py"), "--generate-traces",
           "--limit-total", "6", "--max-repairs", "1", "--no-progress"]
    for i in range(2):
        r = subprocess.run(run, cwd=copy, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        assert r.returncode == 0, r.stderr[-2000:]
        status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=copy, capture_output=True,
                                text=True, check=True).stdout
        assert status == "", status
        if i == 0:
            first, first_inodes = files(copy / "reports"), inodes(copy / "reports")
    assert (copy / "reports" / "README.md").is_file()  # the tracked note stays in place
    [aside] = [p for p in copy.iterdir() if p.name.startswith("reports.")]
    assert files(aside) == {k: v for k, v in first.items() if k != "README.md"}
    assert "final_summary.json" in files(copy / "reports") and not inodes(copy / "reports") & first_inodes


# ---- progress and warnings ----------------------------------------------------------------------

def test_progress_off_a_terminal_is_plain_lines_as_cases_finish(tmp_path):
    """stdout and stderr are pipes: no bar, no carriage returns, a first line within 10 s of the
    tracing start and before the wave's records are written, the count rising line by line."""
    cases = small_case_dir(tmp_path / "cases", families=10, per_family=2)
    root = tmp_path / "root"
    trace = root / "reports" / "fresh_traces.jsonl"
    proc = subprocess.Popen([sys.executable, "-u", str(SCRIPT), "--root", str(root), "--cases", str(cases),
                             "--generate-traces", "--max-repairs", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: list[tuple[float, str, int]] = []  # (arrival, line, records in the trace file then)

    def read():
        for line in proc.stdout:
            n = len(trace.read_text().splitlines()) if trace.exists() else 0
            seen.append((time.monotonic(), line.rstrip("\n"), n))

    reader = threading.Thread(target=read)
    reader.start()
    assert proc.wait(timeout=600) == 0, "\n".join(l for _, l, _ in seen)
    reader.join()
    text = "\n".join(l for _, l, _ in seen)
    assert "\r" not in text and "it/s" not in text and "case/s" not in text, text
    start = next(t for t, l, _ in seen if l.startswith("tracing 20 cases"))
    progress = [(t, l, n) for t, l, n in seen if l.startswith("tracing: ")]
    assert progress, text
    assert progress[0][0] - start < 10, text
    counts = [int(l.split()[1].split("/")[0]) for _, l, _ in progress]
    assert counts == sorted(counts) and counts[-1] == 20, text
    assert 0 < counts[0] < 20 and progress[0][2] == 0, text  # cases finished before any record was written


def test_progress_plain_lines_every_n_and_at_the_end(capsys):
    import io

    out = io.StringIO()
    p = Progress(10, "tracing", every=4, stream=out, bar=False)
    for _ in range(10):
        p.update(1)
    p.close()
    lines = out.getvalue().splitlines()
    assert [l.split()[1] for l in lines] == ["1/10", "4/10", "8/10", "10/10"], lines
    assert "\r" not in out.getvalue()


def test_progress_heartbeat_names_the_stage_while_nothing_finishes():
    import io

    out = io.StringIO()
    p = Progress(5, "tracing", stream=out, bar=False, interval_s=0.3)
    p.set_stage("repair round 1")
    time.sleep(1.6)
    p.close()
    lines = out.getvalue().splitlines()
    assert lines and all(l.startswith("tracing: 0/5 cases") and "repair round 1" in l for l in lines), lines


def test_library_warnings_are_counted_not_shown(capsys):
    site = os.path.join("x", "lib", "python3", "site-packages")
    with warnings.catch_warnings():
        # the display the summary passes the project's own warnings to (pytest records warnings
        # with its own showwarning, which would otherwise swallow them)
        warnings.showwarning = lambda message, *a, **k: sys.stderr.write(f"{message}\n")
        summary = WarningSummary()
        warnings.showwarning = summary.showwarning
        warnings.simplefilter("always")
        for i in range(3):
            warnings.warn_explicit(f"deprecated {i}", FutureWarning, os.path.join(site, "transformers", "a.py"), 1)
        warnings.warn_explicit("old", DeprecationWarning, os.path.join(site, "sklearn", "b.py"), 2)
        warnings.warn_explicit("ours", UserWarning, str(REPO / "controller" / "x.py"), 3)
    err = capsys.readouterr().err
    assert "ours" in err and "deprecated" not in err and "old" not in err
    assert summary.line() == ("note: 4 warnings from libraries held back (transformers 3, sklearn 1); "
                              "set LIVE_TOOL_DAGGER_WARNINGS=1 to see them")


def test_waves_in_slices_report_cases_as_they_finish_and_change_no_record():
    from cases import Case
    from sandbox import Sandbox
    from tracegen.rollout import RolloutConfig, trace_cases

    from scripted import ScriptedBackend

    wrong = "```python\ndef transform(table):\n    return table\n```"
    right = "```python\ndef transform(table):\n    return [[row[0]] for row in table]\n```"

    def answer(r):  # sample 0 is right at once for case 0 only; every repair is right
        return ('[["x"]]' if r.kind == "direct" else
                right if r.kind == "fix" or (r.sample == 0 and r.task.case_id.endswith("_0")) else wrong)

    class Scripted(ScriptedBackend):
        def __init__(self):
            super().__init__(answer, model=None, tokens=(5, 5))  # .calls: each batch's size

    cases = [Case.from_tables(f"f{i}/f{i}_0" if i == 0 else f"f{i}/f{i}_{i}", f"f{i}", [["a", "1"], ["b", "2"]], [["a"], ["b"]],
                  [["c", "3"]], [["c"]]) for i in range(5)]
    class Streaming(Scripted):
        """The same answers, handed out last request first, the way a pool finishes them."""
        streams = True

        def generate_iter(self, requests):
            comps = self.generate(requests)
            yield from reversed(list(enumerate(comps)))

    records, reports = {}, {}
    with Sandbox(workers=1) as sb:
        for name, size, make in ((0, 0, Scripted), (3, 3, Scripted), ("stream", 3, Streaming)):
            backend, heard = make(), []
            cfg = RolloutConfig(max_repairs=2, program_samples=2, progress=False, request_slice=size)
            records[name] = trace_cases(cases, {}, backend, sb, cfg, lambda n, stage: heard.append((n, stage)))
            reports[name] = (backend.calls, heard)
    for r in records[0] + records[3] + records["stream"]:  # sandbox timings differ from run to run
        del r["totals"]["sandbox_ms"]
        for rnd in r["rounds"] + [x for s in r.get("samples", []) for x in s]:
            rnd["visible"]["wall_ms"] = rnd["test"]["wall_ms"] = 0
    assert records[0] == records[3] == records["stream"]
    calls, heard = reports[0]
    assert calls == [5, 10, 9]  # direct, WRITE for 2 samples x 5 cases, FIX for the 9 failing chains
    assert [s for _, s in heard].count("first programs") == 1 + 1  # the stage's start, then the whole round
    calls, heard = reports[3]
    assert calls == [3, 2, 3, 3, 3, 1, 3, 3, 3]
    # no case is done after WRITE (every case has a failing sample); all 5 are done after round 1
    assert sum(n for n, s in heard if s == "first programs") == 0
    assert sum(n for n, s in heard if s == "repair round 1") == 5 == sum(n for n, _ in heard)
    # a streaming backend gets each round whole and is checked 3 answers at a time as they come
    calls, heard = reports["stream"]
    assert calls == [3, 2, 10, 9]
    assert [s for _, s in heard].count("repair round 1") == 1 + 3  # the stage's start, then 9 answers by 3
    assert sum(n for n, _ in heard) == 5
