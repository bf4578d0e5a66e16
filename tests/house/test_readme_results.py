"""README's Results block is the committed default study's summary, rendered (every figure in it
comes from ``results/foofah/final_summary.json``); and each figure in the rendering is one the
summary holds."""
import json
import re
from pathlib import Path

from controller.report.readme import (CODERS_END, CODERS_START, STUDY, coder_summaries, coders_block, read_block,
                                      results_block)

ROOT = Path(__file__).resolve().parents[2]


def test_readme_results_block_is_the_committed_summary():
    summary = json.loads((ROOT / STUDY / "final_summary.json").read_text())
    block = read_block((ROOT / "README.md").read_text())
    assert block, "README has no Results block"
    assert block == results_block(summary), (
        "README's Results block differs from the committed summary: run python -m controller.report.readme")


def test_every_table_figure_is_a_pooled_cv_number():
    summary = json.loads((ROOT / STUDY / "final_summary.json").read_text())
    pooled = summary["cv"]["pooled"]
    rows = [l for l in results_block(summary).splitlines() if l.startswith("| `")]
    assert rows
    for line in rows:
        name = re.match(r"\| `([^`]+)`", line).group(1)
        right, gens = re.search(r"\| (\d+)/(\d+) \| (\d+) \|", line).group(1, 3)
        assert (int(right), int(gens)) == (pooled[name]["exact"], pooled[name]["program_generations"])


def test_readme_coders_block_is_the_committed_coder_studies():
    """The real coders' row beside the synthesizer's, from their committed summaries."""
    summaries = coder_summaries(ROOT)
    assert "results/foofah" in summaries
    block = read_block((ROOT / "README.md").read_text(), CODERS_START, CODERS_END)
    assert block == coders_block(summaries), "README's coders table is stale: run python -m controller.report.readme"
    for where, s in summaries.items():
        pooled = s["cv"]["pooled"]
        row = next(l for l in block.splitlines() if f"(`{where}/`)" in l)
        assert f"{pooled['always_tool_visible']['exact']}/{pooled['always_tool_visible']['n']}, " \
               f"{pooled['always_tool_visible']['program_generations']}" in row


def test_the_renderer_refuses_a_checkout_without_a_summary_and_writes_nothing(tmp_path, capsys):
    """``--help`` used to be read as the checkout's path (a traceback); a missing summary is one line."""
    import pytest

    from controller.report.readme import main

    with pytest.raises(SystemExit) as ok:
        main(["--help"])
    assert ok.value.code == 0 and "root" in capsys.readouterr().out
    (tmp_path / "README.md").write_text("unchanged\n")
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "final_summary.json" in err and err.count("\n") == 1
    assert (tmp_path / "README.md").read_text() == "unchanged\n"
    (tmp_path / STUDY).mkdir(parents=True)
    (tmp_path / STUDY / "final_summary.json").write_text("{not json")
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / STUDY / 'final_summary.json'}: ") and err.count("\n") == 1
    assert (tmp_path / "README.md").read_text() == "unchanged\n"


def test_readme_quickstart_table_is_the_committed_quickstart_run():
    """The healthy-quickstart table is the default quickstart's own summary (it once showed best_fixed at
    106/41 while the quickstart printed 97/32)."""
    from controller.report.fmt import policy_table
    from controller.report.readme import QUICKSTART, QUICKSTART_END, QUICKSTART_START, quickstart_block

    s = json.loads((ROOT / QUICKSTART / "final_summary.json").read_text())
    block = read_block((ROOT / "README.md").read_text(), QUICKSTART_START, QUICKSTART_END)
    assert block == quickstart_block(s), "README's quickstart table is stale: run python -m controller.report.readme"
    assert policy_table(s) in block
    cfg = s["config"]  # the quickstart's command: defaults plus --generate-traces --train-lora
    assert cfg["cases"] == "foofah" and cfg["generate_traces"] and cfg["experiment"]["train_lora"]
    assert cfg["backend"]["name"] == "synth" and cfg["experiment"]["cv_folds"] == 0 and cfg.get("limit_total") is None
