"""Re-analysing a run with no flag beyond --root: a --limit-total run works on what it traced (its
run_config.json keeps the selection), an older run's folder on the cases its trace file holds, and
a split manifest that cannot place the cases is refused before anything is moved aside."""
import json
import os
import subprocess
import sys

import pytest

from e2e_helpers import CLI, small_case_dir


def cli(*args):
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """A run over 6 of 16 cases: --limit-total deals them round-robin over 8 families."""
    root = tmp_path_factory.mktemp("reanalysis")
    cases = small_case_dir(root / "cases", families=8, per_family=2)
    r = cli("--root", str(root), "--cases", str(cases), "--generate-traces", "--limit-total", "6",
            "--max-repairs", "1", "--no-progress", "--test-families", "1", "--dev-families", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    return root, cases


def predictions(root):
    folder = root / "reports" / "predictions"
    return {p.name: p.read_text() for p in sorted(folder.glob("*.jsonl"))}


def asides(root):
    return sorted(p for p in root.iterdir() if p.name.startswith("reports."))


def test_reanalysis_with_root_alone_keeps_the_traced_selection(smoke):
    root, cases = smoke
    before = predictions(root)
    r = cli("--root", str(root), "--cases", str(cases), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "the traced selection: limit_total 6" in r.stdout
    assert predictions(root) == before  # the same cases, the same split, the same answers
    summary = json.loads((root / "reports" / "final_summary.json").read_text())
    assert summary["n_records"] == 6
    # the folder aside holds the whole earlier run; its inputs are hard links, not copies
    aside = asides(root)[-1]
    traces = root / "reports" / "fresh_traces.jsonl"
    assert os.path.samefile(aside / "fresh_traces.jsonl", traces)
    assert (aside / "final_summary.json").exists() and (aside / "split_manifest.json").exists()


def test_the_sft_reexport_command_works_with_root_alone(smoke):
    root, cases = smoke
    r = cli("--root", str(root), "--cases", str(cases), "--export-sft", "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (root / "reports" / "sft" / "train.jsonl").exists()


def test_an_older_run_folder_reanalyses_the_cases_its_traces_hold(smoke, tmp_path):
    root, cases = smoke
    old = tmp_path / "old"
    (old / "reports").mkdir(parents=True)
    for name in ("fresh_traces.jsonl", "split_manifest.json"):
        (old / "reports" / name).write_bytes((root / "reports" / name).read_bytes())
    conf = json.loads((root / "reports" / "run_config.json").read_text())
    del conf["selection"]  # written before run_config.json kept it
    (old / "reports" / "run_config.json").write_text(json.dumps(conf))
    r = cli("--root", str(old), "--cases", str(cases), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert predictions(old) == predictions(root)


def test_a_manifest_that_places_no_traced_family_moves_nothing(smoke, tmp_path):
    root, cases = smoke
    manifest = tmp_path / "m.json"
    m = json.loads((root / "reports" / "split_manifest.json").read_text())
    m["split_families"] = {"train": ["zz1"], "dev": ["zz2"], "test": ["zz3"]}
    manifest.write_text(json.dumps(m))
    n_aside, listing = len(asides(root)), sorted(p.name for p in (root / "reports").iterdir())
    r = cli("--root", str(root), "--cases", str(cases), "--split-manifest", str(manifest), "--no-progress")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--split-manifest" in r.stderr and "no split for families" in r.stderr
    assert len(asides(root)) == n_aside and sorted(p.name for p in (root / "reports").iterdir()) == listing


def test_reanalysis_reads_no_case_file(smoke, tmp_path):
    """The records carry their tasks and hidden answers: a run whose case folder is gone (or a
    --cases that names another set) re-analyses to the same predictions, and the summary names
    the case set and backend the traces were made with, not the re-analysis's defaults."""
    root, cases = smoke
    moved = tmp_path / "moved"
    (moved / "reports").mkdir(parents=True)
    for name in ("fresh_traces.jsonl", "split_manifest.json", "run_config.json"):
        (moved / "reports" / name).write_bytes((root / "reports" / name).read_bytes())
    r = cli("--root", str(moved), "--cases", str(tmp_path / "no_such_folder"), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert predictions(moved) == predictions(root)
    summary = json.loads((moved / "reports" / "final_summary.json").read_text())
    assert summary["config"]["case_set"] == f"dir:{cases}" and summary["traces"]["backend"] == "synth"


def test_an_interrupted_run_is_not_analysed_as_if_whole(smoke, tmp_path):
    """5 of the 6 selected cases traced and a torn last line: refused in one line (how many, how to
    finish, how to analyse it anyway), nothing moved aside; --allow-partial analyses the 5."""
    root, cases = smoke
    part = tmp_path / "part"
    (part / "reports").mkdir(parents=True)
    for name in ("split_manifest.json", "run_config.json"):
        (part / "reports" / name).write_bytes((root / "reports" / name).read_bytes())
    lines = (root / "reports" / "fresh_traces.jsonl").read_bytes().splitlines(keepends=True)
    (part / "reports" / "fresh_traces.jsonl").write_bytes(b"".join(lines[:5]) + lines[5][:40])
    r = cli("--root", str(part), "--cases", str(cases), "--no-progress")
    assert r.returncode == 2, r.stderr[-3000:]
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "5 of the 6 selected cases are traced" in err and "--resume" in err and "--allow-partial" in err, err
    assert not asides(part) and not (part / "reports" / "final_summary.json").exists()
    r = cli("--root", str(part), "--cases", str(cases), "--no-progress", "--allow-partial")
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((part / "reports" / "final_summary.json").read_text())["n_records"] == 5
