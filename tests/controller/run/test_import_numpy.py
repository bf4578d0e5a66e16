"""An import file's ``runtime`` (docs/import.md): numpy programs written for a harness that gave them
``np`` and the grid as an array run as they did there; the run's config records the runtime and the
export writes it back; without it the same programs fail as before; bad values, a mix of runtimes
and a missing numpy or scipy are one-line errors (exit 2) before anything is written; a scipy program runs
with numpy and scipy in the runtime."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from e2e_helpers import CLI

NUMPY_FILE = Path(__file__).resolve().parents[2] / "data" / "import" / "numpy_programs.jsonl"
RUNTIME = {"modules": ["numpy"], "globals": {"np": "numpy"}, "input": "array"}


def cli(*args):
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, timeout=900)


def records(root):
    from tracegen.records import read_traces

    return {r["case_id"]: r for r in read_traces(Path(root) / "reports" / "fresh_traces.jsonl")}


def lines(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def write(path, rows):
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    return path


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("numpy")
    r = cli("import", NUMPY_FILE, "--root", root, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    return root, r.stdout


def test_numpy_programs_pass_with_the_runtime(imported):
    root, out = imported
    assert "sandbox runtime numpy (np = numpy as a global, input as an array)" in out
    recs = records(root)
    flip, count = recs["flip/rows"], recs["count/colors"]
    assert flip["rounds"][0]["visible_pass"] and flip["rounds"][0]["test_output"] == [[9], [8], [7]]
    assert flip["hidden"]["rounds"][0]["hidden_exact"] is True
    assert count["task"]["value_type"] == "json"
    assert count["rounds"][0]["visible_pass"] and count["rounds"][0]["test_output"] == 3  # a numpy int, made int
    assert recs["double/cells"]["hidden"]["rounds"][0]["hidden_exact"] is True  # ``grid * 2``: an array back


def test_the_run_records_its_runtime_and_export_writes_it_back(imported, tmp_path):
    root, _ = imported
    config = tomllib.loads((root / "reports" / "config.toml").read_text())
    assert config["rollout"]["sandbox_runtime"] == RUNTIME
    settings = json.loads((root / "reports" / "run_config.json").read_text())
    assert settings["config"]["rollout"]["sandbox_runtime"] == RUNTIME
    assert settings["trace_config"]["sandbox_runtime"] == RUNTIME  # resuming under another runtime is refused
    out = tmp_path / "exported.jsonl"
    r = cli("export", "--root", root, out)
    assert r.returncode == 0, r.stderr[-3000:]
    assert all(x["runtime"] == RUNTIME for x in lines(out))
    # a re-analysis (its own config has no runtime) says what the traces' programs ran with
    again = tmp_path / "again"
    shutil.copytree(root, again)
    r = cli("--root", again, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    summary = json.loads((again / "reports" / "final_summary.json").read_text())
    assert summary["traces"]["sandbox_runtime"] == RUNTIME


def test_without_the_runtime_the_same_programs_fail_as_before(tmp_path):
    rows = lines(NUMPY_FILE)
    for x in rows:
        del x["runtime"]
    root = tmp_path / "root"
    r = cli("import", write(tmp_path / "plain.jsonl", rows), "--root", root, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sandbox runtime" not in r.stdout
    recs = records(root)
    flip, count = (recs[k]["rounds"][0]["visible"] for k in ("flip/rows", "count/colors"))
    assert flip["error"] == "exception" and "NameError: name 'np' is not defined" in flip["message"]
    assert count["error"] == "forbidden" and "import of 'numpy' is not allowed" in count["message"]
    config = tomllib.loads((root / "reports" / "config.toml").read_text())
    assert "sandbox_runtime" not in config["rollout"]
    assert "sandbox_runtime" not in json.loads((root / "reports" / "run_config.json").read_text())["trace_config"]


@pytest.mark.parametrize("runtime,problem", [
    ({"modules": ["torch"]}, "no optional module 'torch' (known: numpy, scipy)"),
    ({"modules": ["scipy"]}, "scipy needs numpy in modules too"),
    ({"modules": ["numpy"], "input": "tensor"}, "input must be 'json' or 'array', got 'tensor'"),
    ("numpy", "must be an object with modules, globals, input; got str"),
])
def test_a_bad_runtime_is_one_line_exit_2(tmp_path, runtime, problem):
    rows = lines(NUMPY_FILE)
    rows[0]["runtime"] = runtime
    bad = write(tmp_path / "bad.jsonl", rows)
    r = cli("import", bad, "--root", tmp_path / "root")
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: {bad}: line 1: key `runtime`: {problem}; nothing was imported"
    assert not (tmp_path / "root").exists()


def test_a_mix_of_runtimes_is_refused(tmp_path):
    rows = lines(NUMPY_FILE)
    del rows[1]["runtime"]
    bad = write(tmp_path / "mixed.jsonl", rows)
    r = cli("import", bad, "--root", tmp_path / "root")
    assert r.returncode == 2
    assert r.stderr.strip() == (f"error: {bad}: line 2: key `runtime`: differs from line 1's (one sandbox runtime "
                                "per file: give every line the same one, or none); nothing was imported")


def test_a_missing_numpy_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    import importlib.util

    from controller.importer import import_main

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else found(name, *a))
    assert import_main([str(NUMPY_FILE), "--root", str(tmp_path / "root")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the sandbox runtime needs numpy, which is not installed for ") and "\n" not in err
    assert err.endswith("(pip install numpy)")
    assert not (tmp_path / "root").exists()


SCIPY_RUNTIME = {"modules": ["numpy", "scipy"], "globals": {"np": "numpy"}, "input": "array"}
SCIPY_LINE = {"case_id": "count/objects", "family": "objects", "entry": "transform_grid", "runtime": SCIPY_RUNTIME,
              "examples": [{"input": [[1, 0, 1]], "output": 2}, {"input": [[1, 1], [0, 0]], "output": 1}],
              "test": {"input": [[1, 0, 0], [0, 0, 1], [1, 0, 1]], "output": 3},
              "programs": [[{"code": "from scipy import ndimage\n\ndef transform_grid(grid):\n"
                                     "    return ndimage.label(grid > 0)[1]\n", "model": "m"}]]}


def test_a_scipy_program_passes_with_numpy_and_scipy(tmp_path):
    root = tmp_path / "root"
    r = cli("import", write(tmp_path / "scipy.jsonl", [SCIPY_LINE]), "--root", root, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sandbox runtime numpy, scipy (np = numpy as a global, input as an array)" in r.stdout
    rec = records(root)["count/objects"]
    assert rec["rounds"][0]["visible_pass"] and rec["rounds"][0]["test_output"] == 3
    assert rec["hidden"]["rounds"][0]["hidden_exact"] is True
    assert tomllib.loads((root / "reports" / "config.toml").read_text())["rollout"]["sandbox_runtime"] == SCIPY_RUNTIME


def test_a_missing_scipy_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    import importlib.util

    from controller.importer import import_main

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else found(name, *a))
    assert import_main([str(write(tmp_path / "scipy.jsonl", [SCIPY_LINE])), "--root", str(tmp_path / "root")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the sandbox runtime needs scipy, which is not installed for ") and "\n" not in err
    assert err.endswith("(pip install scipy)")
    assert not (tmp_path / "root").exists()


GRADES = ("visible_pass", "test_output", "hidden_exact")


def test_a_replay_of_the_imported_run_grades_as_it_did(imported, tmp_path):
    """``--backend replay`` of an imported run: the cases come from the trace file itself (there is no
    case file), the given programs are taken as parsed, and the programs run with the runtime the
    replayed run recorded, so every round grades as imported."""
    root, _ = imported
    traces = Path(root) / "reports" / "fresh_traces.jsonl"
    r = cli("--backend", "replay", "--replay", traces, "--cases", traces, "--max-repairs", 0,
            "--generate-traces", "--root", tmp_path, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "replay: programs run with the sandbox runtime the replayed run recorded" in r.stdout
    before, after = records(root), records(tmp_path)
    assert sorted(after) == sorted(before)
    for cid, rec in before.items():
        again = after[cid]
        assert [{k: x.get(k) for k in (*GRADES, "code")} for x in again["rounds"]] == \
               [{k: x.get(k) for k in (*GRADES, "code")} for x in rec["rounds"]], cid
        assert again["rounds"][0]["parse"]["status"] == "given"
        assert again["hidden"] == rec["hidden"]
    assert any(x["visible_pass"] for rec in after.values() for x in rec["rounds"])


def test_a_replay_without_the_trace_file_as_cases_names_it(imported, tmp_path):
    root, _ = imported
    traces = Path(root) / "reports" / "fresh_traces.jsonl"
    r = cli("--backend", "replay", "--replay", traces, "--generate-traces", "--root", tmp_path, "--no-progress")
    assert r.returncode == 2
    last = r.stderr.strip().splitlines()[-1]
    assert "holds no record of" in last and f"(--cases {traces}, or --limit-total" in last, r.stderr
    assert not (tmp_path / "reports" / "fresh_traces.jsonl").exists()
