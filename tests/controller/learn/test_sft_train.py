"""``live-tool-dagger sft``: a tiny model trained for a few steps on a real export, resumed, and
traced with ``--backend hf --model OUT``; bad input is one line and exit 2."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from controller.sft_train import main as sft_main

pytest.importorskip("trl")


def _export(folder: Path, run_cli) -> Path:
    """A real export: the synthesizer's compact traces of a few generated cases, every split."""
    res = run_cli("--root", folder, "--cases", "library", "--limit-total", "12", "--generate-traces",
                  "--synth-compact", "--export-sft", "--sft-splits", "all", "--no-progress")
    assert res.returncode == 0, res.stderr
    out = folder / "reports" / "sft"
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert rows and all("# program:" not in m["content"] for r in rows for m in r["prompt"] + r["completion"])
    return out


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    import subprocess
    import sys

    cli = Path(__file__).resolve().parents[3] / "scripts" / "run_live_tool_dagger.py"

    def run(*args):
        return subprocess.run([sys.executable, str(cli), *map(str, args)], capture_output=True, text=True, timeout=900)

    return _export(tmp_path_factory.mktemp("export"), run)


@pytest.mark.slow
def test_train_resume_and_trace_with_the_result(tmp_path, export, tiny_model, run_cli, capsys):
    out = tmp_path / "coder"
    common = ["--data", export, "--model", tiny_model, "--out", out, "--save-steps", "1", "--logging-steps", "1",
              "--grad-accum", "1"]
    assert sft_main([*map(str, common), "--max-steps", "2"]) == 0
    err = capsys.readouterr().err
    assert "sft: step 2/2" in err
    assert (out / "config.json").is_file() and (out / "checkpoints" / "checkpoint-2").is_dir()
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2]
    # a resume under other settings is refused; under the same ones it goes on from checkpoint-2
    assert sft_main([*map(str, common), "--max-steps", "3", "--learning-rate", "1e-3", "--resume"]) == 2
    assert "other settings (learning_rate, max_steps)" in capsys.readouterr().err
    # a run stopped after its first checkpoint (the second one never written) goes on from it
    import shutil

    shutil.rmtree(out / "checkpoints" / "checkpoint-2")
    assert sft_main([*map(str, common), "--max-steps", "2", "--resume"]) == 0
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 2
    assert [json.loads(line)["step"] for line in (out / "train_log.jsonl").read_text().splitlines()] == [1, 2, 2]
    # the trained folder is an ordinary model folder the hf backend loads
    res = run_cli("--root", tmp_path / "run", "--cases", "library", "--limit-total", "4", "--generate-traces",
                  "--backend", "hf", "--model", out, "--max-new-tokens", "8", "--max-repairs", "0", "--no-progress")
    assert res.returncode == 0, res.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "reports" / "fresh_traces.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["model"] == str(out) for r in records)


@pytest.mark.slow
def test_lora_is_merged_into_a_plain_folder(tmp_path, export, tiny_model):
    out = tmp_path / "lora"
    assert sft_main(["--data", str(export), "--model", tiny_model, "--out", str(out), "--method", "lora",
                     "--max-steps", "1", "--grad-accum", "1"]) == 0
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()


@pytest.mark.parametrize("args, says", [
    ([], "--data: name the export folder"),
    (["--data", "/nonexistent/x"], "--data /nonexistent/x: no such folder"),
    (["--data", "{tmp}"], "holds no train.jsonl"),
    (["--data", "{bad}"], "train.jsonl:1: not a JSON object"),
    (["--data", "{tmp}", "--batch-size", "0"], "--batch-size: must be at least 1"),
    (["--data", "{tmp}", "--method", "qlora"], "invalid choice"),
    (["--data", "{tmp}", "--resume"], "holds no train.jsonl"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, says):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.jsonl").write_text("not json\n")
    args = [a.format(tmp=tmp_path, bad=bad) for a in args]
    with pytest.raises(SystemExit) if "invalid choice" in says else contextlib.nullcontext():
        assert sft_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


@pytest.mark.slow
def test_resume_without_a_run_and_a_full_out_folder_are_refused(tmp_path, export, capsys):
    out = tmp_path / "o"
    assert sft_main(["--data", str(export), "--out", str(out), "--resume"]) == 2
    assert "sft_config.json is missing" in capsys.readouterr().err
    out.mkdir()
    (out / "x").write_text("")
    assert sft_main(["--data", str(export), "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err

