"""The checkout travels to the GPU machine (64 MiB with the carried wheels): its files stay within
their budget and every committed study keeps its large files gzipped (scripts/slim_study.py)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_tree_fits_its_budget_and_the_script_prints_it():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu" / "tree_size.py")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tree " in r.stdout and "of 64.0 MiB" in r.stdout


def test_every_committed_study_is_slimmed():
    studies = sorted(p for p in (ROOT / "results").iterdir() if (p / "final_summary.json").is_file())
    assert len(studies) >= 5
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "slim_study.py"), "--check", *map(str, studies)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_slimming_is_byte_stable_and_readers_take_either_form(tmp_path):
    import shutil

    from controller.report.runs import load_run
    from controller.report.viewer import load_run as load_viewer_run

    study = tmp_path / "s"
    shutil.copytree(ROOT / "results" / "smollm2_coder", study, ignore=shutil.ignore_patterns("index.html"))
    for gz in list(study.rglob("*.jsonl.gz")):  # back to the plain form a fresh run writes
        import gzip

        gz.with_name(gz.name[:-3]).write_bytes(gzip.decompress(gz.read_bytes()))
        gz.unlink()
    plain = load_viewer_run(study)
    plain_rows = load_run(study).predictions("best_fixed")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "slim_study.py"), str(study)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not list(study.rglob("*.jsonl")) and list((study / "predictions").glob("*.jsonl.gz"))
    assert load_viewer_run(study) == plain and load_run(study).predictions("best_fixed") == plain_rows
    for gz in study.glob("predictions/**/*.jsonl.gz"):  # the same bytes as committed: slimming is deterministic
        assert gz.read_bytes() == (ROOT / "results" / "smollm2_coder" / gz.relative_to(study)).read_bytes()
