"""The GPU pipeline check (benchmarks/gpu/pipeline_gpu.py) in its CPU dry-run mode: the model
folder is built (tiny Qwen3.5 architecture, tokenizer padded to the model's vocabulary), the hf
way runs the real CLI pipeline on Foofah cases, and the vLLM ways' commands parse, pass the CLI's
checks and become the expected vLLM engine arguments."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "pipeline_gpu.py"


@pytest.mark.slow
def test_dry_run_builds_runs_hf_and_plans_vllm(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--cases", "3", "--max-new-tokens", "4",
                           "--work-dir", str(tmp_path / "work"), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((out / "pipeline_gpu.json").read_text())
    rows = {r["name"]: r for r in result["rows"]}
    hf = rows["hf batched"]
    assert hf["cases"] == 3 and hf["generations"] == 6  # a direct answer and a first program per case
    assert hf["tokens"] == 6 * 4 and hf["tokens_per_s"] > 0  # random weights: every completion runs to the limit
    one, dp = rows["vllm, one engine"], rows["vllm, data parallel 2"]
    assert one["engine"] == "LLM" and one["engine_args"]["load_format"] == "dummy"
    assert dp["engine"] == "AsyncLLMEngine" and dp["engine_args"]["data_parallel_size"] == 2
    assert "--data-parallel-size 2" in dp["command"] and "planned" in dp["status"]
    # the same cases and generation settings for every way
    common = "--cases foofah --limit-total 3 --generate-traces --max-repairs 0 --max-new-tokens 4"
    assert all(common in r["command"] for r in rows.values())
    assert result["info"]["vocab"] == 4096 and result["info"]["filler_tokens"] > 0
    table = proc.stdout[proc.stdout.rindex("way "):]
    assert "hf batched" in table and "gens/s" in table and "planned" in table


def test_filler_tokens_fill_the_vocabulary_and_decode(tmp_path):
    from tracegen.tiny_model import _train_tokenizer, pad_vocabulary
    from transformers import AutoTokenizer

    tok = _train_tokenizer(["abc def ghi " * 20, "table rows and columns"], 400)
    tok.save_pretrained(tmp_path)
    before = len(tok)
    added = pad_vocabulary(tmp_path, 1000)
    tok2 = AutoTokenizer.from_pretrained(tmp_path)
    assert len(tok2) == 1000 and added == 1000 - before
    assert tok2("abc def").input_ids == tok("abc def").input_ids  # encoding unchanged: no merge makes a filler
    assert [tok2.convert_tokens_to_ids(t) for t in ("<think>", "</think>", "<|im_end|>")] == \
        [tok.convert_tokens_to_ids(t) for t in ("<think>", "</think>", "<|im_end|>")]  # special ids kept
    text = tok2.decode(list(range(990, 1000)))
    assert text.count(" ") == 10 and text.replace(" ", "").isalpha()  # every filler id reads as a word
