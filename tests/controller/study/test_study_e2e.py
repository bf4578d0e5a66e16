"""The study keys end to end: run_experiment on hand-built traces, the report's opening, the
figure, and a bad --study file refused by the CLI before anything is written."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from controller.study.experiment import ExperimentConfig, run_experiment
from controller.report.figures import cost_panels, write_figures
from controller.report.markdown import render_report
from tracefactory import ANSWER, WRONG, make_record

from e2e_helpers import CLI  # noqa: E402

SCRIPT = CLI


def _records():
    kinds = [dict(direct=WRONG, rounds=[(False, None), (True, ANSWER)]),
             dict(direct=ANSWER, rounds=[(True, ANSWER)]),
             dict(direct=WRONG, rounds=[(True, ANSWER)]),
             dict(direct=WRONG, rounds=[(False, None), (False, None), (False, None)])]
    return [make_record(f"fam{f}/fam{f}_{c}", f"fam{f}", "train" if f < 8 else "dev" if f < 11 else "test",
                        **kinds[(f + c) % 4]) for f in range(14) for c in range(3)]


def test_summary_report_and_figure_carry_the_study(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text('cost_unit = "generations"\n[[hypotheses]]\nname = "p1"\nprimary = true\n'
                     'kind = "cheaper_no_loss"\npolicies = ["learned_rule", "always_tool_visible"]\n'
                     'split = "cv_pooled"\nmargin = 0.05\n')
    cfg = ExperimentConfig(cv_folds=3, progress=False, frontier_lambdas=(0.0, 1.0), study=str(study))
    summary, _ = run_experiment(_records(), cfg, log=lambda *a: None)
    h = summary["headroom"]
    assert h["cells"]["pooled"]["n"] == 42 and h["cells"]["pooled"]["direct_right_commit_wrong"] == 0
    assert h["gap"]["cv_pooled"]["accuracy_gap"] == 0  # no headroom: always-tool equals the oracle
    (p1,) = summary["hypotheses"]
    assert p1["primary"] and p1["split"] == "cv_pooled" and p1["n_families"] == 14
    assert {"name", "primary", "statistic", "p_family", "p_holm", "verdict"} <= set(p1)
    # an untracked file in a temporary folder: its registration cannot be dated, so never "pre-registered"
    assert not summary["study"]["pre_registered"] and summary["study"]["registration"] == "unknown"
    assert summary["study"]["study_file_git"]["state"] in ("no git", "uncommitted")
    assert summary["power"][0]["hypothesis"] == "p1"
    r = summary["routing"]
    for split in ("dev", "test", "cv_pooled"):
        assert set(r[split]) == {"generations", "tokens", "work"}
    fr = r["test"]["generations"]["learners"]["learned_rule"]
    assert "apgr" in fr["frontier"] and "cpt50" in fr["frontier"] and "cpt80" in fr["frontier"]
    assert "cost_gap_recovered" in fr and fr["mixes"]
    md = render_report(dict(summary, n_records=42))
    assert md.index("## What the data can answer") < md.index("## Study hypotheses") < md.index("## Summary")
    assert "pre-registered" not in md.lower() and "registration unknown" in md
    assert "No case where a controller can beat always-tool on accuracy" in md
    paths = write_figures(summary, tmp_path / "fig")
    assert len(paths) == 5 and all(Path(p).stat().st_size > 1000 for p in paths)
    assert {(s, u) for s, u, _ in cost_panels(summary)} == {(s, u) for s in ("test", "cv_pooled")
                                                            for u in ("generations", "tokens", "work")}


def test_default_study_is_marked_not_pre_registered():
    summary, _ = run_experiment(_records(), ExperimentConfig(progress=False, frontier_lambdas=(0.0,)),
                                log=lambda *a: None)
    assert not summary["study"]["pre_registered"] and any(h["primary"] for h in summary["hypotheses"])
    assert all(h["split"] == "test" for h in summary["hypotheses"])  # no CV: the test split
    assert "not registered" in render_report(summary) and "pre-registered" not in render_report(summary).lower()


def test_bad_study_file_is_refused_before_anything_is_written(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[hypotheses]]\nname = "x"\nprimary = true\nkind = "accuracy_diff"\n'
                   'policies = ["learned_rule", "no_such_policy"]\n')
    root = tmp_path / "root"
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--no-progress", "--generate-traces",
                        "--limit-total", "4", "--study", str(bad)], capture_output=True, text=True, timeout=300)
    err = r.stderr.strip()
    assert r.returncode == 2 and "\n" not in err and "bad.toml" in err and "no_such_policy" in err
    assert not (root / "reports").exists()


def test_unknown_study_key_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "typo.toml"
    bad.write_text('[split_seeds]\nmin_suported = 4\n[[hypotheses]]\nname = "x"\nprimary = true\n'
                   'kind = "accuracy_diff"\npolicies = ["learned_rule", "direct_only"]\n')
    root = tmp_path / "root"
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--no-progress", "--generate-traces",
                        "--limit-total", "4", "--study", str(bad)], capture_output=True, text=True, timeout=300)
    err = r.stderr.strip()
    assert r.returncode == 2 and "\n" not in err and "typo.toml" in err and "'min_suported'" in err
    assert not (root / "reports").exists()
