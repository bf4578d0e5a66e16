"""``live-tool-dagger sft``: a tiny model trained for a few steps on a real export, resumed, and
traced with ``--backend hf --model OUT``; bad input is one line and exit 2."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from controller.sft_train import SftConfig, lr_factor, training_args, warmup_steps
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
    assert [r["step"] for r in log if "loss" in r] == [1, 2]
    assert [r["step"] for r in log if "eval_loss" in r] == [1, 2]  # the export's dev.jsonl, at every checkpoint
    # a resume under other settings is refused; under the same ones it goes on from checkpoint-2
    assert sft_main([*map(str, common), "--max-steps", "3", "--learning-rate", "1e-3", "--resume"]) == 2
    assert "other settings (learning_rate, max_steps)" in capsys.readouterr().err
    # a run stopped after its first checkpoint (the second one never written) goes on from it
    import shutil

    shutil.rmtree(out / "checkpoints" / "checkpoint-2")
    assert sft_main([*map(str, common), "--max-steps", "2", "--resume"]) == 0
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-1") and summary["steps"] == 2
    assert [r["step"] for r in map(json.loads, (out / "train_log.jsonl").read_text().splitlines())
            if "loss" in r] == [1, 2, 2]
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



def _hand_export(folder: Path) -> Path:
    """Short copy-the-words conversations: a tiny model learns them within a few steps."""
    import random

    rng = random.Random(0)
    folder.mkdir()

    def row():
        words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "eps"]) for _ in range(6))
        return json.dumps({"prompt": [{"role": "user", "content": f"Repeat: {words}"}],
                           "completion": [{"role": "assistant", "content": words}]}) + "\n"

    (folder / "train.jsonl").write_text("".join(row() for _ in range(16)))
    (folder / "dev.jsonl").write_text("".join(row() for _ in range(4)))
    return folder


def test_sft_prints_train_and_dev_loss_and_keeps_the_best_checkpoint(tmp_path, tiny_model, capsys):
    """Dev loss at every checkpoint, the lowest one's weights written as the model (not the last step's),
    step 1 already trains (lr > 0), one line per log instead of the trainer's raw dicts on stdout.
    The learning rate is high on purpose: the dev loss goes up after a step, so best and last differ."""
    from safetensors.torch import load_file

    out = tmp_path / "o"
    assert sft_main(["--data", str(_hand_export(tmp_path / "data")), "--model", tiny_model, "--out", str(out),
                     "--max-steps", "2", "--batch-size", "2", "--grad-accum", "1", "--save-steps", "1",
                     "--logging-steps", "1", "--learning-rate", "3e-2", "--save-total-limit", "2"]) == 0
    cap = capsys.readouterr()
    assert "{'loss'" not in cap.out and "'eval_loss'" not in cap.out and cap.out.count("\n") == 1
    assert "sft: step 1/2, train loss " in cap.err and "sft: step 2/2, eval loss " in cap.err
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    train = [r for r in log if "loss" in r]
    evals = [r for r in log if "eval_loss" in r]
    assert [r["step"] for r in train] == [1, 2] and [r["step"] for r in evals] == [1, 2]
    assert train[0]["lr"] > 0  # transformers' warmup spent step 1 at learning rate 0
    best = min(evals, key=lambda r: r["eval_loss"])
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["best_checkpoint"].endswith(f"checkpoint-{best['step']}")
    assert summary["best_eval_loss"] == round(best["eval_loss"], 4) and summary["eval_loss"] == round(evals[-1]["eval_loss"], 4)
    assert best["step"] != 2, "the dev loss fell at every step: this run cannot show the best one kept"
    written = load_file(out / "model.safetensors")
    kept = load_file(Path(summary["best_checkpoint"]) / "model.safetensors")
    last = load_file(out / "checkpoints" / "checkpoint-2" / "model.safetensors")
    assert all((written[k] == kept[k]).all() for k in kept)
    assert any((written[k] != last[k]).any() for k in last)


def test_the_first_step_trains_and_warmup_is_a_ratio():
    """transformers' linear warmup gives step 1 a factor of 0; this one starts above it."""
    assert warmup_steps(0.03, 18) == 1 and warmup_steps(0.0, 18) == 0 and warmup_steps(0.1, 100) == 10
    for w, total in ((1, 18), (0, 18), (10, 100)):
        factors = [lr_factor(s, w, total) for s in range(total)]
        assert factors[0] > 0 and max(factors) == pytest.approx(1.0)
        assert factors[:w + 1] == sorted(factors[:w + 1]) and factors[w:] == sorted(factors[w:], reverse=True)


def test_training_args_evaluate_on_dev_and_keep_the_best(tmp_path):
    cfg = SftConfig(data="x", save_steps=10, eval_steps=5)
    kw = training_args(cfg, tmp_path, 512, False, False, False, has_dev=True)
    assert (kw["eval_strategy"], kw["eval_steps"], kw["load_best_model_at_end"], kw["metric_for_best_model"],
            kw["greater_is_better"], kw["report_to"]) == ("steps", 5, True, "eval_loss", False, [])
    assert training_args(SftConfig(data="x"), tmp_path, 512, False, False, False, has_dev=False)["eval_strategy"] == "no"
    assert training_args(SftConfig(data="x", save_steps=4), tmp_path, 512, False, False, False, True)["eval_steps"] == 4


@pytest.mark.parametrize("args, says", [
    (["--save-steps", "10", "--eval-steps", "3"], "--eval-steps: --save-steps (10) must be a multiple of it (3)"),
    (["--warmup-ratio", "1"], "--warmup-ratio: must be in [0, 1)"),
])
def test_eval_and_warmup_flags_are_checked(tmp_path, capsys, args, says):
    assert sft_main(["--data", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err


def test_report_to_tensorboard_needs_it_installed(tmp_path, capsys):
    import importlib.util

    if importlib.util.find_spec("tensorboard") is not None:
        pytest.skip("tensorboard is installed here")
    assert sft_main(["--data", str(tmp_path), "--report-to", "tensorboard"]) == 2
    assert "--report-to: tensorboard is not installed" in capsys.readouterr().err
